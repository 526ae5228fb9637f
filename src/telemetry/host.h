// What the host says about CPU contention, parsed from /proc text: pressure
// stall information (/proc/pressure/cpu), CPU time and runnable counts
// (/proc/stat), and the rates between two readings. Pure parsers: a test
// feeds them text, the telemetry window feeds them the files.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/result.h"

namespace akts {

// One line of /proc/pressure/cpu: "some avg10=0.12 avg60=0.05 avg300=0.01 total=12345".
struct Pressure {
  double avg10 = 0, avg60 = 0, avg300 = 0;  // percent of wall time with a task stalled
  uint64_t total_us = 0;                    // cumulative stall time
};
// The "some" line ("full" is always zero system-wide for the CPU, so it is not read).
Result<Pressure> parse_cpu_pressure(std::string_view file);

// The aggregate "cpu" line and the runnable counts of /proc/stat.
struct CpuTimes {
  uint64_t busy = 0;   // user + nice + system + irq + softirq + steal, in USER_HZ ticks
  uint64_t total = 0;  // busy + idle + iowait
  uint32_t procs_running = 0;
  uint32_t procs_blocked = 0;
};
Result<CpuTimes> parse_proc_stat_cpu(std::string_view file);

// Between two readings: the share of CPU time that was busy (0..1), and the
// share of wall time some task stalled for a CPU (0..1). nullopt when the
// readings cannot be compared (no time passed, or a counter went backwards).
std::optional<double> cpu_utilisation(const CpuTimes& before, const CpuTimes& after);
std::optional<double> pressure_share(const Pressure& before, const Pressure& after, double wall_seconds);

}  // namespace akts
