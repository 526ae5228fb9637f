// One telemetry window: what the reasoning plane sees each period (kernel
// waits and the guard's view, the host's CPU contention, the application's
// metrics where present). Controllers read it; nothing in it needs a kernel.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "akts.h"

namespace akts {

struct Window {
  double t_s = 0;       // end of the window, seconds since the daemon started
  double period_s = 0;  // its length
  std::array<double, AKTS_NR_CLASSES> wait_p99_ms{};    // over the window (histogram deltas)
  std::array<double, AKTS_NR_CLASSES> oldest_wait_ms{};  // waiting right now
  std::array<uint64_t, AKTS_NR_CLASSES> waits{};         // waits that ended in the window
  double cpu_pressure = 0;  // share of wall time some task stalled for a CPU (0..1)
  double cpu_util = 0;      // share of CPU time busy (0..1)
  uint32_t effective_slot = AKTS_SLOT_NONE;
  // From the application's metrics endpoint, when one is configured.
  std::optional<double> app_requests_processing;
  std::optional<double> app_prompt_tokens_per_s;
};

}  // namespace akts
