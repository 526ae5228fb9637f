// The execution plane: the dispatcher and the policy library in the kernel.
//
//   auto plane = ExecutionPlane::load(opts);   // open, verify every program, fill the prog arrays
//   plane->attach();                           // register the dispatcher, wait until enabled
//   plane->select(1);                          // one 32-bit store through the mmap'd selector
//   plane->read_stats();
//   plane->detach();                           // unregister, wait until the kernel says disabled
//
// All verification happens in load(): after it, nothing a caller passes to
// select() or set_override() can make unverified code run; an index that names
// no policy makes the dispatcher run its built-in default.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "akts.h"
#include "common/result.h"
#include "params/params.h"
#include "safety/breaker.h"
#include "telemetry/guard.h"
#include "telemetry/stats.h"

struct akts_dispatcher_bpf;
struct bpf_link;

namespace akts {

class PolicyObject;
struct PolicySpec;

struct PlaneOptions {
  // Policies by name, one per slot from slot 0; a name may repeat.
  std::vector<std::string> policies = {"latency", "throughput"};
  bool switch_all = false;    // manage every task, not only SCHED_EXT ones (partial mode)
  uint32_t initial_slot = 0;  // what `selected` holds when the scheduler attaches
  GuardParams guard;          // the bounded-wait guard's settings (bpf/akts.h)
  BreakerParams breaker;      // the circuit breaker's settings (disarmed unless asked)
  // The kernel's watchdog (ops.timeout_ms): a runnable task that waits this
  // long ejects the scheduler. 0: the kernel's default and maximum, 30 s.
  uint32_t watchdog_timeout_ms = 0;
};

struct LoadedPolicy {
  std::string name;
  uint32_t slot = 0;
  // Program id per callback in its prog array; 0 where the policy lacks one.
  std::array<uint32_t, AKTS_NR_CALLBACKS> prog_ids{};
  std::array<int, AKTS_NR_CALLBACKS> prog_fds{};
  std::vector<ParamDesc> params;  // its live parameters (bpf/akts.h, Parameters)
};

struct ExitInfo {
  int64_t kind = 0;  // enum scx_exit_kind; 0 = has not exited
  std::string kind_name;
  int64_t exit_code = 0;
  std::string reason;
  std::string message;
  std::string dump;
};

class ExecutionPlane {
 public:
  static Result<std::unique_ptr<ExecutionPlane>> load(const PlaneOptions& opts);
  ~ExecutionPlane();
  ExecutionPlane(const ExecutionPlane&) = delete;
  ExecutionPlane& operator=(const ExecutionPlane&) = delete;

  // Registers the dispatcher. Once only: the kernel accepts a struct_ops map a
  // single time, so attaching again after detach() needs a freshly loaded plane.
  Status attach(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  Status detach(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  bool attached() const { return link_ != nullptr; }
  // After the kernel ended the scheduler (a restart request, an ejection):
  // everything is released and loaded again in place, not attached, so that
  // the caller can write classes before it attaches. References to the plane
  // stay valid; nothing else may use it while this runs. On failure the plane
  // is empty: only release (the destructor) may follow.
  Status reload(const PlaneOptions& opts);

  // Admits a policy into an empty slot while the scheduler runs: open, point
  // its maps at the library's, load and verify, fill the slot in every array
  // (undone if any step fails). A policy that fails to verify changes nothing.
  Status admit(const PolicySpec& spec, uint32_t slot);
  // The same from a compiled object file (admission's gate 4, the kernel's
  // verifier): its programs must be named <name>_<callback>. With replace,
  // the slot's current policy is replaced: the new one is loaded and verified
  // first, then each array entry is overwritten, and the old programs are put
  // back if one step fails; refused for the selected, effective and
  // breaker-safe slot, like evict().
  // `bytes` is the object itself (read once by the caller, who judged these very bytes); `what` names it in logs.
  Status admit_object(std::string bytes, const std::string& what, const std::string& name, uint32_t slot,
                      bool replace = false);
  // Takes a policy out of its slot while the scheduler runs: its entry goes
  // from every callback's array (restored if one removal fails) and its object
  // is released. Refused for the selected slot, the effective slot and the
  // circuit breaker's safe slot. A controller that selects the slot afterwards
  // selects an empty slot: inert, the built-in default runs. Policies own no
  // queues today (the frame's shared DSQs outlive every policy), so no queue
  // is destroyed.
  Status evict(uint32_t slot);

  // The switch path: one release store into the mmap'd selector. Any value is
  // accepted by design: an index that names no policy is inert.
  void select(uint32_t slot);
  // Writes the override word (AKTS_OVERRIDE_ACTIVE | slot, or AKTS_OVERRIDE_OFF)
  // through the akts_set_override syscall program: only BPF writes it.
  Status set_override(uint32_t word);
  uint32_t selected() const;
  uint32_t override_word() const;
  uint32_t effective_slot() const;
  // Raw pointer to the selector's `selected` word, for benchmarks of the store itself.
  volatile uint32_t* selected_word() const;

  // Class of a process (tgid; its threads share it): AKTS_CLASS_LC or AKTS_CLASS_BE.
  Status set_class(uint32_t tgid, uint32_t cls);
  Status clear_class(uint32_t tgid);
  // The kernel's entry for a process; nullopt when it has none (it runs as BE).
  Result<std::optional<uint32_t>> get_class(uint32_t tgid) const;

  // A thread's size estimate (akts.h, Hints): `remaining` CPU time from the moment its sum_exec_runtime was
  // `exec_at` ns. Refused outside [AKTS_HINT_MIN_NS, AKTS_HINT_MAX_NS]; the map full is an error.
  Status set_hint(uint32_t tid, uint64_t remaining_ns, uint64_t exec_at_ns);
  // Returns whether there was one.
  Result<bool> clear_hint(uint32_t tid);

  // Pins the selector, counters, classes, shared state and the prog arrays
  // under `dir` in bpffs (for tools and the selftest; the daemon pins nothing:
  // a killed daemon's scheduler goes with it, docs/guarantees.md); unpin() removes them.
  Status pin(const std::string& dir);
  void unpin();

  Result<Stats> read_stats() const;

  // Live parameters (bpf/akts.h, Parameters): the values in force in `slot`
  // (indexed like akts_param_values.v), and one new value, already checked by
  // the caller against the slot's descriptor (parse_param_value); written as
  // one word of the slot's entry. Refused for a slot without that parameter.
  Result<std::array<uint64_t, AKTS_MAX_PARAMS>> param_values(uint32_t slot) const;
  Status set_param(uint32_t slot, uint32_t index, uint64_t value);

  // The bounded-wait guard: its settings (validated; changed at run time by
  // one map update the timer reads at its next firing), what it saw, and the
  // exact longest waits since reset_longest_waits().
  Status set_guard(const GuardParams& params);
  Result<GuardReport> read_guard() const;
  Status reset_longest_waits();
  // The circuit breaker: its settings (validated against the guard's; read by
  // the timer at its next firing) and what it did.
  Status set_breaker(const BreakerParams& params);
  Result<BreakerReport> read_breaker() const;
  // Tasks waiting right now in akts's shared DSQs and every CPU's local DSQ.
  Result<uint64_t> count_queued() const;
  // Tasks waiting in one slot's private queues (akts.h, Queues).
  Result<uint64_t> slot_queued(uint32_t slot) const;
  ExitInfo exit_info() const;

  // A copy: admission and eviction change the list while other threads read it.
  std::vector<LoadedPolicy> policies() const {
    std::lock_guard lock(policies_mu_);
    return policies_;
  }
  int prog_array_fd(uint32_t cb) const;
  // The dispatcher's own program for a dispatched callback (bpf_stats land on it).
  int dispatcher_prog_fd(uint32_t cb) const;
  // The frame's ops.tick (the guard's rescue-slice cap), never dispatched.
  int tick_prog_fd() const;
  // Switch through the akts_switch syscall program; kick preempts every CPU.
  Status switch_via_syscall(uint32_t slot, bool kick);
  // Raw per-CPU counters (for fields that are not summed, e.g. slot_seen_ns).
  Result<std::vector<akts_cpu_stats>> read_cpu_stats() const;
  int classes_map_fd() const;
  int selector_map_fd() const;
  // Id of the program in slot `slot` of callback `cb`'s array, 0 when empty.
  Result<uint32_t> slot_prog_id(uint32_t cb, uint32_t slot) const;

 private:
  ExecutionPlane() = default;
  Status init(const PlaneOptions& opts);
  void release();
  Status load_dispatcher(const PlaneOptions& opts);
  Status check_free_slot(uint32_t slot) const;
  Status check_replaceable(uint32_t slot) const;  // filled, not selected, not effective, not the breaker's safe slot
  Status load_policy(const std::string& name, std::unique_ptr<PolicyObject> pol, uint32_t slot, bool replacing);

  akts_dispatcher_bpf* skel_ = nullptr;
  bpf_link* link_ = nullptr;
  akts_selector* selector_ = nullptr;  // mmap'd entry 0 of akts_selector
  bool was_attached_ = false;          // a struct_ops map registers once only
  std::vector<std::unique_ptr<PolicyObject>> objects_;  // parallel to policies_
  akts_param_values* params_ = nullptr;  // akts_params, mapped (bpf/akts.h, Parameters)
  mutable std::mutex policies_mu_;                       // policies_ (written only by the admitting thread)
  std::vector<LoadedPolicy> policies_;
};

// Pins left by a process that died before it could remove them (the only
// pins akts makes are the selftest's, under bpffs/akts-selftest-<pid>): each
// folder whose pid is gone is removed, and named in the log. Returns them.
std::vector<std::string> remove_stale_pins(const std::string& bpffs = "/sys/fs/bpf");

// Routes libbpf's printer into the logger (idempotent).
void route_libbpf_logging();

}  // namespace akts
