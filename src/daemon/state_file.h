// The daemon's state under /run (default /run/akts/state.json): what a daemon
// leaves for the next one and, if it dies without cleaning up, for its reaper.
//
//   {"version": 1, "daemon_pid": 812, "clean": false, "reaped": false,
//    "selected": {"slot": 1, "policy": "throughput"},
//    "tracker": {"processes": [{"pid": 4242, "start_time": 1234, "class": "lc",
//                               "explicit": true, "threads": [[4242, 0], [4243, 3]]}]}}
//
// The selection also goes to a small file beside it at every switch (selection_path).
// "threads" are the threads the daemon moved into SCHED_EXT with each one's
// own policy; "clean" says the daemon gave them back itself, "reaped" that its
// reaper did. One daemon at a time holds the lock file beside it (flock); the
// lock goes with the process, however it ends.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"

namespace akts {

inline constexpr int kStateVersion = 1;

class StateLock {
 public:
  // Waits up to `timeout` for the lock on `state_path`.lock (created 0600, its
  // folder 0700 if missing); refused when another daemon keeps it.
  static Result<StateLock> acquire(const std::string& state_path, std::chrono::milliseconds timeout);
  // Tries once, without waiting.
  static Result<StateLock> try_acquire(const std::string& state_path);
  StateLock(StateLock&& o) noexcept = default;
  StateLock& operator=(StateLock&&) = delete;
  // Closing the last descriptor of the open file drops the flock.
  void release() { fd_.reset(); }
  int fd() const { return fd_.get(); }

 private:
  explicit StateLock(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

// The state file, checked for its version and the types of its top-level
// fields (the record inside is checked where it is used); nullopt when there is none.
Result<std::optional<nlohmann::json>> load_state(const std::string& path);
// Replaces the state file with `json_text` (the state serialised: the writer thread serialises it once, off the
// tracker's lock) atomically and durably, 0600, its folder made 0700 if missing (common/atomic_file.h).
Status save_state(const std::string& path, const std::string& json_text);
// The selection file beside the state file (`state.json.selected`): {"daemon_pid", "slot", "policy"},
// rewritten at every switch; newer than the state file's "selected" when it names the same daemon.
std::string selection_path(const std::string& state_path);
// Its contents, or nullopt when it is missing or not JSON.
std::optional<nlohmann::json> load_selection(const std::string& state_path);

// The selection file, kept open: each write is one pwrite of a fixed-size
// block at offset 0 (the JSON padded with spaces), which a process kill
// cannot tear, so a switch costs one system call.
class SelectionFile {
 public:
  explicit SelectionFile(const std::string& state_path) : path_(selection_path(state_path)) {}
  Status write(const nlohmann::json& sel);
  static constexpr size_t kBlock = 512;

 private:
  std::string path_;
  Fd fd_;
};

}  // namespace akts
