// The audit log: every accepted control action, with who asked (the peer's uid, gid and pid from the socket) and
// what it changed, one JSON line each.
//
//   {"time": "2026-11-30T15:00:00.123Z", "uid": 0, "gid": 0, "pid": 4242,
//    "method": "v1.switch", "params": {"target": "latency"}, "result": {...}}
//
// The caller is the process that connected to the socket (SO_PEERCRED, taken
// at accept): a descriptor handed to another process keeps that identity.
// Opened never through a symbolic link and never blocking on a FIFO, only as a
// regular file, made 0600, in a directory that only this user may write.
// Appended with one write() per line; a short write (a full disk) is ended with
// a newline so the next record starts its own line. Past max_bytes the file is
// moved to PATH.1 (replacing the previous one) and a new one begun, also when
// something else moved or removed it. Write and rotation failures are counted
// (state(): in v1.status) and logged; they never undo the change recorded nor
// stop the daemon. Results larger than 4 KiB are replaced by {"truncated":
// BYTES}. The writes happen on the daemon's loop: a disk that hangs delays the
// socket's answers (a writer thread is future work).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"
#include "control/jsonrpc.h"

namespace akts::control {

class AuditLog {
 public:
  // Opens (creating it, and its directory, 0700, when missing) or refuses with the reason.
  static Result<std::unique_ptr<AuditLog>> open(const std::string& path, uint64_t max_bytes = uint64_t{8} << 20);
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void record(const Caller& who, std::string_view method, const nlohmann::json& params,
              const nlohmann::json& result) noexcept;
  uint64_t records() const;
  uint64_t write_errors() const;
  nlohmann::json state() const;  // {"path", "records", "write_errors", "rotate_errors"}
  const std::string& path() const { return path_; }

  static constexpr size_t kMaxResultBytes = 4096;

 private:
  AuditLog(std::string path, Fd fd, uint64_t size, uint64_t max_bytes)
      : path_(std::move(path)), fd_(std::move(fd)), size_(size), max_bytes_(max_bytes) {}
  void rotate();
  std::string path_;
  Fd fd_;
  uint64_t size_, max_bytes_;
  uint64_t records_ = 0, errors_ = 0, rotate_errors_ = 0;
  mutable std::mutex mu_;
};

// The methods whose accepted requests are audited: the ones that change something (v1.controller only when it is
// given a name or a dry-run setting; v1.push, telemetry, is not a control action).
const std::set<std::string, std::less<>>& audited_methods();

// Has `d` record every accepted control action in `log`, with the caller's credentials: audited_methods(), less
// the readings among them (v1.controller and v1.objective without params, v1.stats unless it resets the longest
// waits, which is then recorded as that reset and not the figures). `log` outlives `d`.
void audit_dispatcher(Dispatcher& d, AuditLog& log);

}  // namespace akts::control
