// The circuit breaker's settings, validation and report for the user side.
#include "safety/breaker.h"

#include <fmt/format.h>

#include "telemetry/stats.h"

namespace akts {
namespace {
using std::chrono::nanoseconds;
double ms(uint64_t ns) { return static_cast<double>(ns) / 1e6; }
double ms(nanoseconds ns) { return ms(static_cast<uint64_t>(ns.count())); }
}  // namespace

Status BreakerParams::validate(const GuardParams& guard) const {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  if (safe_slot != AKTS_SLOT_NONE && safe_slot >= AKTS_MAX_SLOTS)
    return errorf(ErrorKind::kInvalidArgument, "breaker.safe_slot {} is not a slot (0-{}) or the built-in default",
                  safe_slot, AKTS_MAX_SLOTS - 1);
  if (cls >= AKTS_NR_CLASSES) return errorf(ErrorKind::kInvalidArgument, "breaker.class {} is not a class", cls);
  if (oldest < milliseconds(1) || oldest > seconds(10))
    return errorf(ErrorKind::kInvalidArgument, "breaker.oldest_wait must be from 1 ms to 10 s, not {} ms", ms(oldest));
  if (guard.enabled && oldest + guard.period >= guard.max_wait)
    return errorf(ErrorKind::kInvalidArgument,
                  "breaker.oldest_wait ({} ms) plus the guard's period ({} ms) must stay below the guard's max_wait "
                  "({} ms): otherwise the guard rescues a starved task before the breaker sees it wait",
                  ms(oldest), ms(guard.period), ms(guard.max_wait));
  if (p99.count() != 0 && (p99 < milliseconds(1) || p99 > seconds(10)))
    return errorf(ErrorKind::kInvalidArgument, "breaker.wait_p99 must be off or from 1 ms to 10 s, not {} ms", ms(p99));
  if (window < milliseconds(100) || window > seconds(60))
    return errorf(ErrorKind::kInvalidArgument, "breaker.window must be from 100 ms to 60 s, not {} ms", ms(window));
  if (min_samples < 1 || min_samples > 1000000)
    return errorf(ErrorKind::kInvalidArgument, "breaker.min_samples must be from 1 to 1000000, not {}", min_samples);
  if (rescues > 1000000) return errorf(ErrorKind::kInvalidArgument, "breaker.rescues must be at most 1000000");
  if (cooldown < milliseconds(100) || cooldown > std::chrono::hours(1))
    return errorf(ErrorKind::kInvalidArgument, "breaker.cooldown must be from 100 ms to 1 h, not {} ms", ms(cooldown));
  if (calm < milliseconds(1) || calm > std::chrono::hours(1))
    return errorf(ErrorKind::kInvalidArgument, "breaker.calm must be from 1 ms to 1 h, not {} ms", ms(calm));
  return {};
}

akts_breaker_params BreakerParams::to_kernel() const {
  akts_breaker_params k{};
  k.armed = armed ? 1 : 0;
  k.safe_slot = safe_slot;
  k.cls = cls;
  k.rescues = rescues;
  k.oldest_ns = static_cast<uint64_t>(oldest.count());
  k.p99_ns = static_cast<uint64_t>(p99.count());
  k.window_ns = static_cast<uint64_t>(window.count());
  k.min_samples = min_samples;
  k.cooldown_ns = static_cast<uint64_t>(cooldown.count());
  k.calm_ns = static_cast<uint64_t>(calm.count());
  return k;
}

BreakerParams BreakerParams::from_kernel(const akts_breaker_params& k) {
  BreakerParams p;
  p.armed = k.armed != 0;
  p.safe_slot = k.safe_slot < AKTS_MAX_SLOTS ? k.safe_slot : AKTS_SLOT_NONE;
  p.cls = k.cls < AKTS_NR_CLASSES ? k.cls : static_cast<uint32_t>(AKTS_CLASS_BE);
  p.rescues = k.rescues;
  if (k.oldest_ns) p.oldest = nanoseconds(k.oldest_ns);
  p.p99 = nanoseconds(k.p99_ns);
  if (k.window_ns) p.window = nanoseconds(k.window_ns);
  if (k.min_samples) p.min_samples = k.min_samples;
  if (k.cooldown_ns) p.cooldown = nanoseconds(k.cooldown_ns);
  if (k.calm_ns) p.calm = nanoseconds(k.calm_ns);
  return p;
}

nlohmann::json BreakerParams::to_json() const {
  return {{"armed", armed},
          {"safe_slot", safe_slot == AKTS_SLOT_NONE ? nlohmann::json("default") : nlohmann::json(safe_slot)},
          {"class", std::string(class_name(cls))},
          {"oldest_wait_ms", ms(oldest)},
          {"wait_p99_ms", p99.count() ? nlohmann::json(ms(p99)) : nlohmann::json(nullptr)},
          {"window_ms", ms(window)},
          {"min_samples", min_samples},
          {"rescues", rescues ? nlohmann::json(rescues) : nlohmann::json(nullptr)},
          {"cooldown_ms", ms(cooldown)},
          {"calm_ms", ms(calm)}};
}

const char* trip_reason_name(uint32_t reason) {
  switch (reason) {
    case AKTS_TRIP_OLDEST: return "oldest_wait";
    case AKTS_TRIP_P99: return "wait_p99";
    case AKTS_TRIP_RESCUES: return "rescues";
    case AKTS_TRIP_LOCAL: return "local_stall";
    default: return "unknown";
  }
}

nlohmann::json BreakerReport::to_json() const {
  nlohmann::json by_reason = nlohmann::json::object();
  for (uint32_t r = 0; r < AKTS_NR_TRIP_REASONS; ++r) by_reason[trip_reason_name(r)] = state.trips_by_reason[r];
  auto slot_json = [](uint32_t s) {
    return s < AKTS_MAX_SLOTS ? nlohmann::json(s) : nlohmann::json("default");
  };
  nlohmann::json last = nullptr;
  if (state.trips) {
    const bool count = state.last_reason == AKTS_TRIP_RESCUES;
    last = {{"reason", trip_reason_name(state.last_reason)},
            {"culprit_slot", slot_json(state.last_slot)},
            {count ? "rescues" : "wait_ms", count ? nlohmann::json(state.last_value) : nlohmann::json(ms(state.last_value))},
            {"latency_ms", state.last_reason == AKTS_TRIP_OLDEST || state.last_reason == AKTS_TRIP_LOCAL
                               ? nlohmann::json(ms(state.last_latency_ns))
                               : nlohmann::json(nullptr)},
            {"ago_s", now_ns > state.last_trip_ns ? static_cast<double>(now_ns - state.last_trip_ns) / 1e9 : 0.0},
            {"ended", state.last_release_ns > state.last_trip_ns}};
  }
  const bool tr = tripped();
  return {{"params", params.to_json()},
          {"tripped", tr},
          {"holding_slot", tr ? slot_json(state.word & AKTS_OVERRIDE_SLOT_MASK) : nlohmann::json(nullptr)},
          {"tripped_for_s", tr && now_ns > state.tripped_at_ns
                                ? nlohmann::json(static_cast<double>(now_ns - state.tripped_at_ns) / 1e9)
                                : nlohmann::json(nullptr)},
          {"trips", state.trips},
          {"trips_by_reason", by_reason},
          {"last_trip", last},
          {"window", {{"p99_ms", state.win_p99_ns ? nlohmann::json(ms(state.win_p99_ns)) : nlohmann::json(nullptr)},
                      {"samples", state.win_samples}}}};
}

}  // namespace akts
