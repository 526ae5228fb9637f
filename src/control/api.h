// The control API (method set v1) over an abstract backend: the daemon backs it
// with the execution plane; unit tests back it with a fake. Validation lives
// here, so every transport (socket, CLI, MCP later) refuses the same inputs.
//
//   v1.version                     -> {api_version, akts_version, commit, methods}
//   v1.policies {docs?}            -> {slots, policies: [{slot, name, summary, pick_when, doc?, parameters?,
//        results?}], selected, effective}. docs: true adds each policy's documentation (its source's opening
//        essay) and, from the policy repository, its parameters and its last 10 results.
//   v1.result {policy, result}     -> {policy, results}: appends a benchmark result to the policy's
//        record (result: {workload, metrics: {name: number}, source?, kernel?, emulated?, time?};
//        src/repository/policy_repository.h); refused when the repository is off or has no such policy.
//   v1.switch {target, force?}     -> {previous, selected, policy}
//        target: a slot number (integer or decimal string) or a policy name.
//        An empty or out-of-range slot is refused unless force is true (then
//        the dispatcher falls through to its default: inert by design).
//   v1.status                      -> scheduler state, selection, managed processes, exit info
//   v1.stats {reset_longest?}      -> cumulative counters and wait histograms, the latest
//        telemetry window and the reasoning plane's state, and the
//        bounded-wait guard: settings, oldest waiter and longest wait per class
//        (exact), rescues. reset_longest: true starts the longest waits afresh
//        after this reading.
//   v1.classify {pid, class}       -> class is "lc" or "be"; the process and its threads and children
//   v1.hint {pid, remaining?, clear?} -> {pid, remaining_ns, exec_at_ns} or {pid, cleared}: a thread's
//        (pid: its tid) estimate of the CPU time its current work still needs, "30ms" or whole ns,
//        1us..3600s (bpf/akts.h, Hints; the srpt policy orders by it); clear: true removes it. The thread
//        must be scheduled by akts (SCHED_EXT, or any thread in --switch-all mode). Audited like any change.
//   v1.unclassify {pid}
//   v1.class {pid}                 -> {pid, kernel_class, kernel_entry, managed}: the class the
//        kernel applies right now (its map, which a fork fills at once; "be"
//        with kernel_entry false when the pid has no entry) and what the
//        daemon's tracker holds ({class, reason} or null).
//
// The reasoning plane (src/reasoning/reasoning_plane.h for the precedence):
//   v1.hold {target, duration}     -> {slot, policy, duration_s}: select target (as v1.switch,
//        never forced) and refuse every other switch, and a hold on another
//        slot, until duration ("30s", at most 24h) passes or v1.release; a
//        hold on the held slot sets a new end.
//   v1.release                     -> {released}: ends a hold and an operator's grace.
//   v1.controller {name?, dry_run?} -> the reasoning state; name (none, detector, bandit,
//        llm, oracle) changes the controller at run time; dry_run logs its
//        decisions without applying them.
//   v1.telemetry {last?}           -> {period_s, objective, health, windows}: the last 1..600
//        windows; health counts metrics scrapes (ok, failed), kernel read
//        errors and pushed samples dropped (also in v1.stats as telemetry_health).
//   v1.objective {goal? | objective?} -> {objective, changed}: without parameters the current
//        objective; goal: the operator's goal in words (Objective::from_words);
//        objective: {signal, max} or {SIGNAL: LIMIT, ...} as in the config. Logged in the decision log.
//   v1.admit {object, name?, slot?, record?, force_untested?, description?, pick_when?, canary?, replace?}
//        -> {admitted, slot, name, sha256, refused_at, gates: [static, dynamic, verifier], took_ms}:
//        a compiled policy object (an absolute path on the daemon's machine)
//        into a free slot of the running scheduler, through admission's gates
//        (src/admission/): static checks, gate 3's record for this exact
//        object (unless force_untested), the kernel's verifier. A candidate a
//        gate refuses is a result with admitted false and that gate's evidence;
//        nothing is loaded or changed. Malformed parameters are errors.
//        canary: a duration ("10s", 1s to 10m) starts gate 5 after the load: the new policy is held
//        selected for that long with the breaker armed (armed for the canary if the configuration has
//        it disarmed; refused while a trip holds the safe slot), and reverted (the previous slot selected
//        again, the new one evicted) if the breaker trips or the bounded wait or the objective degrades;
//        an operator who releases the hold and switches away ends it as failed without a revert, and a
//        reload of the scheduler (kernel restart) ends it as failed (admitted policies go); the result has
//        canary {state: running}, and v1.admission follows it. replace: true (with slot, without
//        canary) replaces that slot's policy, never the selected, effective or breaker-safe one; the
//        old programs are put back if a step fails.
//   v1.admission                   -> the last admission's result, its canary state brought up to date
//        ({state: running|passed|failed, reason, windows, ...}); null before any.
//   v1.evict {target}              -> {slot, name}: takes a policy out of its slot while the
//        scheduler runs; refused for the selected, effective or breaker-safe slot.
//   v1.params {target?}            -> {policies: [{slot, name, params: [{index, name, type, default, min,
//        max, unit, description, value, text}]}]}: the live parameters of every filled slot, or of one
//        (a slot number or a policy's name), with the values in force.
//   v1.set {target, value}         -> {slot, policy, param, previous, value, text}: target "POLICY.PARAM"
//        (a name or a slot number before the dot); value a JSON number, bool or string as the
//        parameter's type takes it ("5ms", "40%", true); refused out of range, nothing changed.
//   v1.log {limit?}                -> {decisions}: the last 1..500 decisions (default 50), outcomes merged.
//   v1.reload                      -> {ok, changed: [keys], at, source, took_ms}: the daemon's config file read
//        again with its flags, and what changed applied (src/daemon/reload.h: the keys a reload may change, the
//        ones it refuses). A file that fails a check, or changes a key read at start only, is an error that
//        says why; nothing changes. v1.status's "reload" keeps the last outcome, SIGHUP's too.
//   v1.push {latency_ms?, tpot_ms?, decode_ms?, waiting_ms?, phase?} -> {accepted, dropped,
//        tpot_accepted, tpot_dropped, waiting_ms, phase}: request latencies to the first token
//        (1..10000 finite numbers in [0, 3600000] ms) an application or proxy measured (the
//        window's app latency percentiles), times per output token of requests that ended with how
//        long each decoded (two lists of one length, as checked; the window's app TPOT percentiles
//        and their span), how long its oldest request still without a
//        first token has waited (a number in [0, 3600000] ms; 0: none; Window::
//        app_waiting_oldest_ms), and the name of the load's phase that begins now (1 to 64
//        bytes of UTF-8 text, no control characters; null: the load is over, no phase holds;
//        Window::app_phase, which an oracle following phases reads). At least one; a result
//        field per part given. All refused, nothing taken, if one value is bad.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/jsonrpc.h"
#include "params/params.h"
#include "reasoning/objective.h"
#include "repository/policy_repository.h"

namespace akts::control {

inline constexpr int kApiVersion = 1;

struct PolicyView {
  uint32_t slot = 0;
  std::string name;
  std::string summary;
  std::string pick_when;
  std::string doc;  // what it does, its limits, when to pick it (markdown-ish text)
  std::vector<ParamDesc> params;  // its live parameters (bpf/akts.h, Parameters)
};

class ControlBackend {
 public:
  virtual ~ControlBackend() = default;
  virtual std::vector<PolicyView> policies() const = 0;  // the filled slots
  virtual uint32_t slot_count() const = 0;
  virtual uint32_t selected() const = 0;
  virtual uint32_t effective() const = 0;
  // An operator's switch; returns the slot selected before it (the decision log's "previous" for it).
  virtual Result<uint32_t> select(uint32_t slot) = 0;
  virtual json status() const = 0;
  virtual Result<json> stats(bool reset_longest) = 0;
  virtual Status classify(uint32_t pid, uint32_t cls) = 0;
  virtual Status unclassify(uint32_t pid) = 0;
  virtual Result<json> class_of(uint32_t pid) = 0;
  // A thread's size estimate (v1.hint); nullopt clears it.
  virtual Result<json> hint(uint32_t tid, std::optional<std::chrono::nanoseconds> remaining) = 0;
  // The reasoning plane.
  virtual Status hold(uint32_t slot, std::chrono::milliseconds duration) = 0;
  virtual bool release() = 0;
  virtual Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) = 0;
  virtual json telemetry(size_t last) const = 0;
  virtual json objective() const = 0;  // Objective::to_json()
  // The policy repository: a policy's record (PolicyRecord::to_json), null when there is none or no repository.
  virtual json policy_record(const std::string& name) const = 0;
  struct AdmitRequest {
    std::string object, name, record, description, pick_when;
    std::optional<uint32_t> slot;
    bool force_untested = false;
    bool replace = false;                 // the slot's policy is replaced (never the running slot)
    std::chrono::milliseconds canary{0};  // 0: no canary (admitted, not selected)
  };
  virtual Result<json> admit(const AdmitRequest& r) = 0;
  virtual json admission() const = 0;
  virtual Result<json> evict(uint32_t slot) = 0;
  // Live parameters: the values in force in a slot, and one changed (checked by register_v1 against the
  // descriptor; the backend writes it and logs the change).
  virtual Result<std::array<uint64_t, AKTS_MAX_PARAMS>> param_values(uint32_t slot) const = 0;
  virtual Status set_param(uint32_t slot, const ParamDesc& d, uint64_t value) = 0;
  // Appends a result; returns how many results the record holds now.
  virtual Result<size_t> record_result(const std::string& policy, const ResultRecord& r) = 0;
  virtual Status set_objective(const Objective& objective) = 0;
  virtual json decisions(size_t limit) const = 0;
  // Returns how many were kept; the rest were dropped (the window is full).
  virtual Result<size_t> push_latencies(const std::vector<double>& ms) = 0;
  // Times per output token of requests that ended, with how long each decoded (PushedSamples::push_tpot); as
  // push_latencies.
  virtual Result<size_t> push_tpot(const std::vector<double>& ms, const std::vector<double>& decode_ms) = 0;
  // The age of the oldest request still waiting for its first token, now (PushedSamples::report_waiting).
  virtual Status push_waiting(double waiting_ms) = 0;
  // The load's phase that begins now (PushedSamples::report_phase); "": the load is over (clear_phase).
  virtual Status push_phase(const std::string& name) = 0;
  // The daemon's config read again, what changed applied (src/daemon/reload.h); a refusal is an error.
  virtual Result<json> reload() = 0;
};

// Resolves what a person or an agent asked to switch to. Refuses anything that
// is not exactly a filled slot's number or a policy's name (unless force).
Result<uint32_t> resolve_switch_target(const json& target, const std::vector<PolicyView>& policies,
                                       uint32_t slot_count, bool force);

// Parses "lc" / "be" (any case is refused: exactly these two words).
Result<uint32_t> parse_class(std::string_view text);

void register_v1(Dispatcher& d, ControlBackend& backend);

}  // namespace akts::control
