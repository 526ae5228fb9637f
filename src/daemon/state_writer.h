// The daemon's side of its state file (daemon/state_file.h): writing it as the daemon runs, and reading back what
// the last daemon left (its selection, and whether to keep it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/reaper.h"
#include "daemon/state_file.h"
#include "daemon/tracker_worker.h"
#include "exec/execution_plane.h"

namespace akts {

// Writes the state file when the tracker's record changed (by generation: serialised once), and the small
// selection file beside it when the selection changed: a switch costs one pwrite, not the record of a thousand
// processes. A failed write is logged once (until one succeeds) and tried again at the next save.
class StateWriter {
 public:
  explicit StateWriter(std::string path) : path_(std::move(path)), selection_(path_) {}
  bool enabled() const { return !path_.empty(); }
  // `clean`: the daemon gave every thread back itself (its last save).
  void save(const ExecutionPlane& plane, const TrackerWorker::Record& rec, bool clean);

 private:
  bool write(const std::string& text);
  std::string path_;
  SelectionFile selection_;
  bool written_ = false, warned_ = false, clean_ = false;
  uint64_t gen_ = 0;
  uint32_t slot_ = 0;
};

// What a starting daemon holds of the state file. Destroyed in reverse: the lock goes before the reaper is
// waited for.
struct StateTakeover {
  std::optional<Reaper> reaper;
  std::optional<StateLock> lock;
  std::optional<nlohmann::json> previous;  // the last daemon's state, its "selected" from the selection file
};

// Takes the lock (waiting 5 s at most), reads what the last daemon left (a file that fails to load is set aside
// as STATE.bad, and the daemon starts without it), forks the reaper (call it before any thread starts), and
// writes this daemon's first state naming the last one's record and selection: should this daemon die before
// its first tick (a verifier error, another SIGKILL), its reaper gives those threads back. An error names what
// failed (the daemon stops).
Result<StateTakeover> take_over_state(const std::string& state_file);

// The last daemon's selection: its selection file when that is the same daemon's (written at every switch),
// else what its state file says.
nlohmann::json last_selection(const nlohmann::json& prev, const std::string& state_path);

// The slot a restarted daemon selects: the dead one's, if it did not stop cleanly and its policy is still
// configured (by name: slots may move).
std::optional<uint32_t> restored_selection(const nlohmann::json& prev, const nlohmann::json& sel,
                                           const std::vector<std::string>& policies);

}  // namespace akts
