// The kernel's per-CPU counters (struct akts_cpu_stats), summed over CPUs, and
// what can be computed from them without a kernel: deltas, totals, wait
// percentiles from the log2 histograms, JSON.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "akts.h"

namespace akts {

inline constexpr uint32_t kNumCallbacks = AKTS_NR_CALLBACKS;
inline constexpr uint32_t kMaxSlots = AKTS_MAX_SLOTS;
inline constexpr uint32_t kNumClasses = AKTS_NR_CLASSES;
inline constexpr uint32_t kWaitBuckets = AKTS_WAIT_BUCKETS;

std::string_view callback_name(uint32_t cb);  // "select_cpu", ...
std::string_view class_name(uint32_t cls);    // "be", "lc"

struct Stats {
  std::array<uint64_t, kNumCallbacks> entries{};
  std::array<std::array<uint64_t, kMaxSlots>, kNumCallbacks> calls{};
  std::array<uint64_t, kNumCallbacks> fallthrough{};
  std::array<std::array<uint64_t, kWaitBuckets>, kNumClasses> wait_hist{};
  std::array<uint64_t, kNumClasses> run_ns{};   // CPU time per class, counted at ticks and run ends
  std::array<uint64_t, kNumClasses> wait_ns{};  // time per class runnable but not running, counted as waits end
  // Quanta (bpf/akts.h, Quantum timer): slices that ran out, by how far each
  // run went past its slice (log2 buckets, as the waits); the largest is
  // since the scheduler's load (a delta keeps the later one).
  std::array<uint64_t, kWaitBuckets> quantum_hist{};
  uint64_t quantum_ends = 0;
  uint64_t quantum_overrun_ns = 0;
  uint64_t quantum_overrun_max_ns = 0;
  uint64_t quantum_kicks = 0;  // the quantum timer's preemptions
  uint64_t quantum_cut = 0;    // slices that ended before their quantum had passed (kicks, yields)

  // Sums one struct akts_cpu_stats per CPU.
  static Stats sum(std::span<const akts_cpu_stats> per_cpu);
  // Counter growth since an earlier snapshot (counters only grow).
  Stats operator-(const Stats& earlier) const;

  uint64_t total_entries() const;
  uint64_t total_fallthrough() const;
  uint64_t total_calls(uint32_t slot) const;
  uint64_t total_calls_all_slots() const;
  uint64_t waits(uint32_t cls) const;
  // Wait percentile in ns (q in [0, 1]); the geometric middle of the bucket the
  // q-th sample falls in, so at most a factor of sqrt(2) off. nullopt when empty.
  std::optional<double> wait_percentile_ns(uint32_t cls, double q) const;
  // The same for the quanta's overruns.
  std::optional<double> overrun_percentile_ns(double q) const;

  nlohmann::json to_json() const;
  // The inverse of to_json (counters and histograms); refuses a malformed document.
  static std::optional<Stats> from_json(const nlohmann::json& j);
};

}  // namespace akts
