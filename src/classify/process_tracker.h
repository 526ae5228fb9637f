// Keeps the kernel's view of classes in step with the processes that exist:
// scans /proc, classifies each process (Classifier), writes its class through
// the hooks, and in partial mode moves its threads into SCHED_EXT; when the
// process exits, or the daemon stops, it undoes both.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "classify/classifier.h"

namespace akts {

class ProcessTracker {
 public:
  struct Hooks {
    std::function<Status(uint32_t tgid, uint32_t cls)> set_class;
    std::function<Status(uint32_t tgid)> clear_class;
  };

  // move_to_ext: put managed processes' threads in SCHED_EXT (partial mode).
  ProcessTracker(Classifier& classifier, Hooks hooks, bool move_to_ext, std::string proc_root = "/proc");

  // One pass over /proc: new, changed and vanished processes.
  void scan();
  // An explicit classification (akts run, v1.classify), applied at once.
  Status classify_explicit(uint32_t tgid, uint32_t cls);
  Status unclassify(uint32_t tgid);
  // Back to how things were: SCHED_OTHER for every managed thread, no classes.
  void restore_all();

  size_t managed_count() const { return managed_.size(); }
  nlohmann::json to_json() const;

 private:
  struct Managed {
    uint32_t cls = 0;
    std::string reason;
    std::string comm;
    int original_policy = 0;
  };
  Result<ProcInfo> read_proc(uint32_t tgid) const;
  Status manage(const ProcInfo& p, const Decision& d);
  void unmanage(uint32_t tgid, bool alive);
  // Moves threads of a managed process that run a normal policy into SCHED_EXT.
  void adopt_threads(uint32_t tgid) const;
  // Sets the scheduling policy of every thread of tgid; returns the leader's previous one.
  Result<int> set_policy_all_threads(uint32_t tgid, int policy) const;

  Classifier& classifier_;
  Hooks hooks_;
  bool move_to_ext_;
  std::string proc_root_;
  uint32_t self_;
  std::unordered_map<uint32_t, Managed> managed_;
  std::unordered_map<uint32_t, bool> warned_;  // live processes we could not move, reported once
};

}  // namespace akts
