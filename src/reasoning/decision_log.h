// The decision log: every decision (a controller's proposal, a refused
// answer, an operator's switch, hold or release) as one JSON line, and later
// lines that refer to a decision's id with the objective one and five
// periods after it. The latest records are kept in memory, outcomes merged,
// for `akts log` (v1.log). Lines go to a file on a writer thread of its own,
// so a slow disk never holds up a switch or a period; the file rotates by
// size (path, path.1, ... path.keep), so it cannot fill a disk. A line the
// disk refuses is counted (write_errors), a line that finds the queue full
// (10,000 lines behind) is counted (dropped); after a failure the file is
// reopened at the next line; a line cut short is ended before the next one is
// written, so every line after it parses. A file moved or deleted from under
// the log (logrotate) is started afresh at the next line; if the rename that
// rotates the live file fails, nothing is shifted, the file keeps growing
// (rotate_errors counts it) and the rotation is tried again after another
// max_bytes.
//
//   {"type":"decision","id":7,"time":"2026-11-30T10:15:02.113Z","t_s":12.3,"source":"detector",
//    "window":{...summary...},"raw":null,"proposed":0,"applied":true,"verdict":"applied: slot 1 -> 0",
//    "why":"burst: ...","selected_after":0,"dry_run":false}
//   {"type":"outcome","ref":7,"after_periods":1,"observed_ms":31.5,"binding":"lc_wait_p99",
//    "limits":[{"signal":"lc_wait_p99","max_ms":20,"observed_ms":31.5,"margin_ms":-11.5,"met":false,...}],
//    "met":false,"reward":0.27,"batch_share":0.1}
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"

namespace akts {

struct DecisionLogOptions {
  std::string path;             // empty: memory only
  uint64_t max_bytes = 16 << 20;  // per file
  uint32_t keep = 3;            // rotated files kept (path.1 .. path.keep)
  size_t memory = 2000;         // records kept for v1.log

  bool operator==(const DecisionLogOptions&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

class DecisionLog {
 public:
  explicit DecisionLog(DecisionLogOptions o);
  ~DecisionLog();  // writes what is queued, then joins the writer
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;
  // Opens (appending to) the file, creating its folder, and starts the
  // writer; an error leaves the log in memory only (and says so in state()).
  Status open();
  // Opens `o.path` for appending (creating its folder), as open() would: the first half of retarget(), which a
  // caller that must be able to refuse does before it changes anything. An empty path needs no file.
  static Result<Fd> open_file(const DecisionLogOptions& o);
  // From now on the log writes to `fd` (open_file(o)'s; none: memory only) with o's limits, once the lines
  // already queued have reached the old file (it waits for them). The records kept in memory and the ids stay.
  // (A file moved away under the same path needs none of this: the writer follows it, see write_io.)
  void retarget(DecisionLogOptions o, Fd fd);
  // Stamps id, type and time, writes the line, keeps it; returns the id.
  uint64_t decision(nlohmann::json record);
  // An outcome line for decision `ref`; merged into its in-memory record.
  void outcome(uint64_t ref, nlohmann::json record);
  // The latest `limit` decisions (oldest first), with their outcomes.
  nlohmann::json recent(size_t limit) const;
  uint64_t written_bytes() const;
  uint64_t write_errors() const;
  nlohmann::json state() const;  // {path, open, written_bytes, write_errors, dropped, rotate_errors}
  // Blocks until the writer has handled every queued line (tests).
  void flush();

  static constexpr size_t kMaxQueued = 10000;

 private:
  void enqueue(const nlohmann::json& j);  // mu_ held
  void writer();                          // the writer thread
  void write_io(const std::string& line);  // writer thread only
  bool moved_io() const;                   // writer thread only
  void rotate_io();                        // writer thread only
  bool reopen_io(bool truncate);           // writer thread only

  DecisionLogOptions o_;
  mutable std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::string> queue_;
  bool stop_ = false, busy_ = false, open_ = false;
  uint64_t written_ = 0, write_errors_ = 0, dropped_ = 0, rotate_errors_ = 0;
  uint64_t next_id_ = 1;
  std::deque<nlohmann::json> recent_;
  // The writer's own.
  Fd fd_;
  uint64_t file_bytes_ = 0;
  bool newline_pending_ = false;  // the file ends in a piece of a line
  std::thread thread_;
};

// Wall-clock time as RFC 3339 UTC with milliseconds.
std::string utc_now_rfc3339();

}  // namespace akts
