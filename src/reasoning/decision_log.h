// The decision log: every decision (a controller's proposal, a refused
// answer, an operator's switch, hold or release) as one JSON line, and later
// lines that refer to a decision's id with the objective one and five
// periods after it. Written to a file that rotates by size (path, path.1, ...
// path.N), so it cannot fill a disk; the latest records are also kept in
// memory, outcomes merged, for `akts log` (v1.log).
//
//   {"type":"decision","id":7,"time":"2026-11-30T10:15:02.113Z","t_s":12.3,"source":"detector",
//    "window":{...summary...},"raw":null,"proposed":0,"applied":true,"verdict":"applied: slot 1 -> 0",
//    "why":"burst: ...","selected_after":0,"dry_run":false}
//   {"type":"outcome","ref":7,"after_periods":1,"observed_ms":31.5,"met":false,"reward":0.27,"batch_share":0.1}
#pragma once

#include <cstdint>
#include <deque>
#include <fstream>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts {

struct DecisionLogOptions {
  std::string path;             // empty: memory only
  uint64_t max_bytes = 16 << 20;  // per file
  uint32_t keep = 3;            // rotated files kept (path.1 .. path.keep)
  size_t memory = 2000;         // records kept for v1.log
};

class DecisionLog {
 public:
  explicit DecisionLog(DecisionLogOptions o);
  // Opens (appending to) the file; an error leaves the log in memory only.
  Status open();
  // Stamps id, type and time, writes the line, keeps it; returns the id.
  uint64_t decision(nlohmann::json record);
  // An outcome line for decision `ref`; merged into its in-memory record.
  void outcome(uint64_t ref, nlohmann::json record);
  // The latest `limit` decisions (oldest first), with their outcomes.
  nlohmann::json recent(size_t limit) const;
  uint64_t written_bytes() const;
  uint64_t write_errors() const;

 private:
  void write_line(const nlohmann::json& j);  // mu_ held
  void rotate();                             // mu_ held

  DecisionLogOptions o_;
  mutable std::mutex mu_;
  std::ofstream file_;
  uint64_t file_bytes_ = 0, written_ = 0, write_errors_ = 0;
  uint64_t next_id_ = 1;
  std::deque<nlohmann::json> recent_;
};

// Wall-clock time as RFC 3339 UTC with milliseconds.
std::string utc_now_rfc3339();

}  // namespace akts
