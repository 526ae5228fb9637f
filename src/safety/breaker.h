// The in-kernel circuit breaker as the user side sees it: its settings
// (validated against the guard's, so that it trips before the guard rescues),
// what it did, and both as JSON. No kernel needed (bpf/akts.h, "Circuit breaker").
#pragma once

#include <chrono>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "akts.h"
#include "common/result.h"
#include "telemetry/guard.h"

namespace akts {

struct BreakerParams {
  bool armed = false;                     // the plane's default; the daemon's config arms it
  uint32_t safe_slot = AKTS_SLOT_NONE;    // the slot a trip forces; AKTS_SLOT_NONE: the built-in default
  uint32_t cls = AKTS_CLASS_LC;           // the protected class
  std::chrono::nanoseconds oldest{AKTS_BREAKER_DEFAULT_OLDEST_NS};
  std::chrono::nanoseconds p99{0};        // 0: the p99 input is off
  std::chrono::nanoseconds window{AKTS_BREAKER_DEFAULT_WINDOW_NS};
  uint64_t min_samples = AKTS_BREAKER_DEFAULT_MIN_SAMPLES;
  uint32_t rescues = 1;                   // 0: the rescue input is off
  std::chrono::nanoseconds cooldown{AKTS_BREAKER_DEFAULT_COOLDOWN_NS};
  std::chrono::nanoseconds calm{AKTS_BREAKER_DEFAULT_CALM_NS};

  // Refuses what BPF would misread, and an oldest-wait threshold the guard
  // would beat: a waiter crosses it between two firings, so it must stay a
  // period below max_wait, or the guard rescues the task before the breaker sees it.
  Status validate(const GuardParams& guard) const;
  akts_breaker_params to_kernel() const;
  static BreakerParams from_kernel(const akts_breaker_params& k);
  nlohmann::json to_json() const;

  bool operator==(const BreakerParams&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

const char* trip_reason_name(uint32_t reason);

struct BreakerReport {
  BreakerParams params;
  akts_breaker_state state{};
  uint64_t now_ns = 0;  // CLOCK_MONOTONIC when read (ages below are against it)
  bool tripped() const { return state.tripped_at_ns != 0; }
  nlohmann::json to_json() const;
};

}  // namespace akts
