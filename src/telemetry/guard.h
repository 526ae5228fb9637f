// The bounded-wait guard as the user side sees it: its settings, what its
// timer last saw, the longest waits since the last reset, and the bound the
// contract promises (bpf/akts.h, "Bounded wait"). No kernel needed.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

#include "akts.h"
#include "common/result.h"

namespace akts {

struct GuardParams {
  std::chrono::nanoseconds max_wait{AKTS_GUARD_DEFAULT_MAX_WAIT_NS};
  std::chrono::nanoseconds rescue_slice{AKTS_GUARD_DEFAULT_RESCUE_SLICE_NS};
  std::chrono::nanoseconds period{AKTS_GUARD_DEFAULT_PERIOD_NS};
  bool enabled = true;  // false only for tests that show what happens without it
  // The quantum timer's period (bpf/akts.h, Quantum timer): 0 leaves it off.
  std::chrono::nanoseconds quantum_timer{0};

  // Refuses settings BPF would clamp, or that make the bound meaningless.
  Status validate() const;
  akts_guard_params to_kernel() const;
  static GuardParams from_kernel(const akts_guard_params& k);
  // W + P + J + (N - 1) * R' for N tasks that may run on one CPU, J the
  // timer's lateness plus its longest run, R' = R + one tick (tick 0:
  // unknown, taken as 10 ms, HZ=100); the bound of a task in a registered queue.
  std::chrono::nanoseconds bound(uint32_t tasks_per_cpu, std::chrono::nanoseconds lateness,
                                 std::chrono::nanoseconds tick) const;
  // W + (d + 2) * (P + J) + one tick for a task a policy put d-deep in a local DSQ (a kick that found a higher
  // class on the CPU is finished as the run resumes, the tick its backstop). A tick of 0 counts as 10 ms, as in
  // bound(). It holds while R + tick + J <= P; past that a firing may find the next run short of R and kick
  // nothing, so each of the d kicks may take a period more: W + (2d + 2) * (P + J) + one tick is returned
  // (R <= P, so two firings suffice while tick + J <= P). J is the worst lateness of any one firing: a timer
  // late by more than P - tick at every firing could skip more, which this does not bound (TCG has shown one
  // firing 22 ms late in a 20 ms period, and no run of them).
  std::chrono::nanoseconds local_bound(uint32_t depth, std::chrono::nanoseconds lateness,
                                       std::chrono::nanoseconds tick) const;
  nlohmann::json to_json() const;

  bool operator==(const GuardParams&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

// Longest wait per class since the last reset, the maximum over CPUs.
struct LongestWaits {
  std::array<uint64_t, AKTS_NR_CLASSES> ns{};
  std::array<uint32_t, AKTS_NR_CLASSES> pid{};
  static LongestWaits max_over(std::span<const akts_wait_max> per_cpu);
};

struct GuardReport {
  GuardParams params;
  akts_guard_state state{};
  LongestWaits longest;
  nlohmann::json to_json() const;
};

}  // namespace akts
