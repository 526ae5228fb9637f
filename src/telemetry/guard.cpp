// The bounded-wait guard's settings, state and bound, for the user side.
#include "telemetry/guard.h"

#include <fmt/format.h>

#include "telemetry/stats.h"

namespace akts {
namespace {
using std::chrono::nanoseconds;
double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }
}  // namespace

Status GuardParams::validate() const {
  if (max_wait < std::chrono::milliseconds(1) || max_wait > std::chrono::seconds(10))
    return errorf(ErrorKind::kInvalidArgument, "max_wait must be from 1 ms to 10 s (the kernel's watchdog is at most 30 s), not {} ms",
                  ms(max_wait.count()));
  if (rescue_slice < std::chrono::microseconds(50) || rescue_slice > std::chrono::seconds(1))
    return errorf(ErrorKind::kInvalidArgument, "rescue_slice must be from 50 us to 1 s, not {} ms", ms(rescue_slice.count()));
  if (period < std::chrono::milliseconds(1) || period > std::chrono::seconds(1))
    return errorf(ErrorKind::kInvalidArgument, "guard_period must be from 1 ms to 1 s, not {} ms", ms(period.count()));
  if (period > max_wait)
    return errorf(ErrorKind::kInvalidArgument, "guard_period ({} ms) must not exceed max_wait ({} ms)",
                  ms(period.count()), ms(max_wait.count()));
  if (quantum_timer.count() != 0 && (quantum_timer.count() < static_cast<int64_t>(AKTS_QUANTUM_MIN_PERIOD_NS) ||
                                     quantum_timer.count() > static_cast<int64_t>(AKTS_QUANTUM_MAX_PERIOD_NS)))
    return errorf(ErrorKind::kInvalidArgument, "quantum_timer must be 0 (off) or from 50 us to 100 ms, not {} ms",
                  ms(quantum_timer.count()));
  if (rescue_slice > period)
    return errorf(ErrorKind::kInvalidArgument, "rescue_slice ({} ms) must not exceed guard_period ({} ms)",
                  ms(rescue_slice.count()), ms(period.count()));
  return {};
}

akts_guard_params GuardParams::to_kernel() const {
  akts_guard_params k{};
  k.max_wait_ns = enabled ? static_cast<uint64_t>(max_wait.count()) : AKTS_GUARD_OFF;
  k.rescue_slice_ns = static_cast<uint64_t>(rescue_slice.count());
  k.period_ns = static_cast<uint64_t>(period.count());
  k.quantum_period_ns = static_cast<uint64_t>(quantum_timer.count());
  return k;
}

GuardParams GuardParams::from_kernel(const akts_guard_params& k) {
  GuardParams p;
  p.enabled = k.max_wait_ns != AKTS_GUARD_OFF;
  if (k.max_wait_ns && p.enabled) p.max_wait = nanoseconds(k.max_wait_ns);
  if (k.rescue_slice_ns) p.rescue_slice = nanoseconds(k.rescue_slice_ns);
  if (k.period_ns) p.period = nanoseconds(k.period_ns);
  p.quantum_timer = nanoseconds(k.quantum_period_ns);
  return p;
}

nanoseconds GuardParams::bound(uint32_t tasks_per_cpu, nanoseconds lateness, nanoseconds tick) const {
  if (tick.count() <= 0) tick = std::chrono::milliseconds(10);
  uint32_t others = tasks_per_cpu > 0 ? tasks_per_cpu - 1 : 0;
  return max_wait + period + lateness + others * (rescue_slice + tick);
}

nanoseconds GuardParams::local_bound(uint32_t depth, nanoseconds lateness, nanoseconds tick) const {
  if (tick.count() <= 0) tick = std::chrono::milliseconds(10);
  const bool holds = rescue_slice + tick + lateness <= period;
  return max_wait + ((holds ? 1 : 2) * depth + 2) * (period + lateness) + tick;
}

nlohmann::json GuardParams::to_json() const {
  return {{"enabled", enabled},
          {"max_wait_ms", ms(max_wait.count())},
          {"rescue_slice_ms", ms(rescue_slice.count())},
          {"period_ms", ms(period.count())},
          {"quantum_timer_ms", ms(quantum_timer.count())}};
}

LongestWaits LongestWaits::max_over(std::span<const akts_wait_max> per_cpu) {
  LongestWaits w;
  for (const auto& c : per_cpu)
    for (uint32_t cls = 0; cls < AKTS_NR_CLASSES; ++cls)
      if (c.max_ns[cls] > w.ns[cls]) {
        w.ns[cls] = c.max_ns[cls];
        w.pid[cls] = c.pid[cls];
      }
  return w;
}

nlohmann::json GuardReport::to_json() const {
  nlohmann::json per_class = nlohmann::json::object();
  for (uint32_t cls = 0; cls < AKTS_NR_CLASSES; ++cls)
    per_class[std::string(class_name(cls))] = {
        {"oldest_waiting_ms", ms(state.oldest_wait_ns[cls])},
        {"longest_wait_ms", ms(longest.ns[cls])},
        {"longest_wait_pid", longest.pid[cls] ? nlohmann::json(longest.pid[cls]) : nlohmann::json(nullptr)},
        {"rescues", state.rescues[cls]}};
  return {{"params", params.to_json()},
          {"classes", per_class},
          {"local_kicks", state.local_kicks},
          {"local_kicks_finished_by_tick", state.local_kicks_finished},
          {"rescue_failed", state.rescue_failed},
          {"timer",
           {{"runs", state.runs},
            {"mean_run_us", state.runs ? static_cast<double>(state.run_ns_total) / state.runs / 1e3 : 0.0},
            {"max_run_us", static_cast<double>(state.run_ns_max) / 1e3},
            {"late_max_ms", ms(state.late_max_ns)},
            {"kernel_tick_ms", ms(state.tick_ns)},
            {"tasks_scanned_last", state.scanned}}}};
}

}  // namespace akts
