// The control API (method set v1) over an abstract backend: the daemon backs it
// with the execution plane; unit tests back it with a fake. Validation lives
// here, so every transport (socket, CLI, MCP later) refuses the same inputs.
//
//   v1.version                     -> {api_version, akts_version, methods}
//   v1.policies                    -> {slots, policies: [{slot, name, summary, pick_when}], selected, effective}
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
//   v1.log {limit?}                -> {decisions}: the last 1..500 decisions (default 50), outcomes merged.
//   v1.push {latency_ms}           -> {accepted, dropped}: request latencies (1..10000 finite
//        numbers in [0, 3600000] ms) an application or proxy measured; the
//        window's app latency percentiles. All refused if one is bad.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "control/jsonrpc.h"

namespace akts::control {

inline constexpr int kApiVersion = 1;

struct PolicyView {
  uint32_t slot = 0;
  std::string name;
  std::string summary;
  std::string pick_when;
};

class ControlBackend {
 public:
  virtual ~ControlBackend() = default;
  virtual std::vector<PolicyView> policies() const = 0;  // the filled slots
  virtual uint32_t slot_count() const = 0;
  virtual uint32_t selected() const = 0;
  virtual uint32_t effective() const = 0;
  virtual Status select(uint32_t slot) = 0;
  virtual json status() const = 0;
  virtual Result<json> stats(bool reset_longest) = 0;
  virtual Status classify(uint32_t pid, uint32_t cls) = 0;
  virtual Status unclassify(uint32_t pid) = 0;
  virtual Result<json> class_of(uint32_t pid) = 0;
  // The reasoning plane.
  virtual Status hold(uint32_t slot, std::chrono::milliseconds duration) = 0;
  virtual bool release() = 0;
  virtual Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) = 0;
  virtual json telemetry(size_t last) const = 0;
  virtual json decisions(size_t limit) const = 0;
  // Returns how many were kept; the rest were dropped (the window is full).
  virtual Result<size_t> push_latencies(const std::vector<double>& ms) = 0;
};

// Resolves what a person or an agent asked to switch to. Refuses anything that
// is not exactly a filled slot's number or a policy's name (unless force).
Result<uint32_t> resolve_switch_target(const json& target, const std::vector<PolicyView>& policies,
                                       uint32_t slot_count, bool force);

// Parses "lc" / "be" (any case is refused: exactly these two words).
Result<uint32_t> parse_class(std::string_view text);

void register_v1(Dispatcher& d, ControlBackend& backend);

}  // namespace akts::control
