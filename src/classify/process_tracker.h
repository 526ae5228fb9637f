// Keeps the kernel's view of classes in step with the processes that exist:
// scans /proc, classifies each process (Classifier), writes its class through
// the hooks, and in partial mode moves its threads into SCHED_EXT; when the
// process exits, or the daemon stops, it undoes both.
//
// A process is known by its pid and its start time (in clock ticks: a pid
// reused within one tick would look the same), so a reused pid is a new
// process, never an old one's. Each thread is handled on its own: real-time
// threads (SCHED_FIFO, SCHED_RR, SCHED_DEADLINE) are left alone, and on
// release every thread the tracker moved gets back its own policy (the last
// one it chose itself, e.g. after leaving SCHED_EXT on its own);
// one it first saw already in SCHED_EXT (born from a moved thread, or put
// there by someone else) gets SCHED_OTHER.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "classify/classifier.h"

namespace akts {

// The scheduling policy number of SCHED_EXT (sched.h has no name for it before glibc knows sched_ext).
inline constexpr int kSchedExt = 7;

// The scheduling-policy calls, behind an interface so that tests can run the
// tracker on a fake /proc without root.
class SchedPolicyOps {
 public:
  virtual ~SchedPolicyOps() = default;
  // The thread's policy without SCHED_RESET_ON_FORK, or -errno.
  virtual int get(pid_t tid) = 0;
  // 0 or -errno (-EAGAIN: a thread still being created, to try again on a later pass).
  virtual int set(pid_t tid, int policy) = 0;
};

// sched_getscheduler / sched_setscheduler.
SchedPolicyOps& system_sched_policy_ops();

class ProcessTracker {
 public:
  struct Hooks {
    std::function<Status(uint32_t tgid, uint32_t cls)> set_class;
    std::function<Status(uint32_t tgid)> clear_class;
  };

  // move_to_ext: put managed processes' threads in SCHED_EXT (partial mode).
  ProcessTracker(Classifier& classifier, Hooks hooks, bool move_to_ext, std::string proc_root = "/proc",
                 SchedPolicyOps& ops = system_sched_policy_ops(), uint32_t self = 0);

  // One pass over /proc: new, changed and vanished processes. Stops early,
  // leaving the rest for the next pass, once *cancel becomes true. Between
  // two processes it calls pause() (if given), where a caller that owns the
  // tracker's lock may let others in.
  void scan(const std::atomic<bool>* cancel = nullptr, const std::function<void()>& pause = {});
  // The two halves of scan(): read /proc (touches no state of the tracker,
  // so it may run while another thread holds the tracker), then apply it.
  using Listing = std::map<uint32_t, ProcInfo>;
  std::optional<Listing> list_processes(const std::atomic<bool>* cancel = nullptr) const;
  // `since`: event_seq() when the listing began to be read; a process an event handled after that is read
  // from /proc again rather than judged by the listing (which may show it before its exec or exit).
  void apply(const Listing& alive, uint64_t since, const std::atomic<bool>* cancel = nullptr,
             const std::function<void()>& pause = {});
  // Grows with every refresh() and exited().
  uint64_t event_seq() const { return event_seq_; }
  // One process now, as a pass would handle it (an event named it: a fork, an exec, a new name, an exit):
  // managed if a rule names it, released if it is gone, its pid reused, or no rule names it any more.
  // Processes no event names wait for the next pass.
  void refresh(uint32_t tgid);
  // A thread of process `tgid` exited (its exit event): the process is released if that was its end, i.e.
  // it is gone, or it is a zombie with no thread left but its leader (the kernel reports an exit before the
  // parent reaps). A process whose leader alone exited, its other threads running, stays.
  void exited(uint32_t tgid);
  // An explicit classification (akts run, v1.classify), applied at once.
  // Refuses what cannot be honoured: a thread id, pid 1, a kernel thread, the daemon.
  Status classify_explicit(uint32_t tgid, uint32_t cls);
  Status unclassify(uint32_t tgid);
  // Back to how things were: every moved thread's own policy, no classes.
  void restore_all();
  // Writes every managed process's class again (a reloaded scheduler's map starts empty).
  void reapply_classes();
  // New class rules (a reload of the daemon's config). Nothing moves now: the next pass judges every process by
  // them (managed, reclassified, or released when no rule names it any more); explicit classes outrank rules and
  // stay. A listing read before the change must not be applied after it (rules_generation() tells).
  void set_rules(std::vector<Matcher> rules);
  // Grows with every set_rules(); read without the tracker's lock.
  uint64_t rules_generation() const { return rules_gen_.load(std::memory_order_acquire); }

  // What a restarted daemon needs (src/daemon/state_file.h): every managed
  // process with its start time, class, whether it was explicit, and the
  // threads this tracker moved with each one's own policy; and what it took
  // up from a previous record and has not handled yet.
  nlohmann::json record() const { return record(state()); }
  // A previous daemon's record: explicit classes of processes still alive
  // (same pid and start time) come back; the recorded own policies of their
  // threads are kept for whichever rule manages them again; after the next
  // complete pass, recorded threads no rule manages get their own policy
  // back. A malformed record is refused whole (nothing changes).
  Status adopt_record(const nlohmann::json& rec);
  // A dead daemon's record without a tracker (its reaper): every recorded
  // thread still in SCHED_EXT, of a process still alive, gets its own policy
  // back. Returns how many threads moved.
  static Result<size_t> release_record(const nlohmann::json& rec, const std::string& proc_root = "/proc",
                                       SchedPolicyOps& ops = system_sched_policy_ops());

  size_t managed_count() const { return managed_.size(); }
  // Grows whenever record() would say something else (a process managed,
  // released or reclassified, a thread moved or gone, a record taken up).
  uint64_t version() const { return version_; }

  // What to_json() and record() are made from, as plain data: copied under the caller's lock in a fraction
  // of the time building JSON takes, so a caller can build it after letting the tracker go.
  struct State {
    struct Entry {
      uint32_t pid = 0;
      uint64_t start_time = 0;
      uint32_t cls = 0;
      bool is_explicit = false;
      bool pending = false;  // taken up from a previous record, not managed (yet)
      std::string comm, reason;
      std::unordered_map<uint32_t, int> moved;
    };
    std::vector<Entry> entries;  // managed ones by pid, then pending ones by pid
    uint64_t version = 0;
  };
  State state() const;
  static nlohmann::json to_json(const State& s);  // the managed processes (status)
  static nlohmann::json record(const State& s);   // see record()
  nlohmann::json to_json() const { return to_json(state()); }

 private:
  struct Managed {
    uint64_t start_time = 0;
    uint32_t cls = 0;
    std::string reason;
    std::string comm;
    // Threads this tracker moved into SCHED_EXT, with the policy each had.
    std::unordered_map<uint32_t, int> moved;
  };
  Result<ProcInfo> read_proc(uint32_t tgid) const;
  void handle(const ProcInfo& p);  // classify a live process, then manage or release it
  bool ended(const ProcInfo& p) const;  // a zombie with no thread but its leader left
  Status manage(const ProcInfo& p, const Decision& d);
  void unmanage(uint32_t tgid, bool alive);
  // Moves the process's threads that run a normal policy into SCHED_EXT,
  // remembering each one's policy (new threads, and threads that set
  // themselves back, as cyclictest does). Real-time threads stay as they are.
  Status adopt_threads(uint32_t tgid, Managed& m) const;

  Classifier& classifier_;
  Hooks hooks_;
  bool move_to_ext_;
  std::string proc_root_;
  SchedPolicyOps& ops_;
  uint32_t self_;
  std::unordered_map<uint32_t, Managed> managed_;
  std::unordered_map<uint32_t, bool> warned_;  // live processes we could not move, reported once
  // From a previous daemon's record, until a pass manages them or gives them back.
  struct Pending {
    uint64_t start_time = 0;
    uint32_t cls = 0;
    bool is_explicit = false;
    std::unordered_map<uint32_t, int> moved;
  };
  std::unordered_map<uint32_t, Pending> pending_;
  uint64_t version_ = 0;
  std::atomic<uint64_t> rules_gen_{0};
  uint64_t event_seq_ = 0;
  std::unordered_map<uint32_t, uint64_t> touched_;  // tgid -> the event_seq_ of the last event that named it
};

}  // namespace akts
