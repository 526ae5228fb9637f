// Named benchmark scenarios: fixed programs from Debian (rt-tests, stress-ng,
// sysbench) started with fixed arguments, no shell, each process classified
// for akts (LC or BE) before it executes, stopped on cancellation, its output
// parsed into metrics. MCP's run_workload runs them; the arguments are
// checked here.
//
//   wakeup_latency  cyclictest (LC) beside stress-ng --cpu <ncpu> (BE):
//                   {lc_wakeup_us: {min, avg, max, p50, p99, samples, overflows}, be_bogo_ops_per_s}
//                   (p50/p99 from cyclictest's 1 us histogram, -h 30000; null past its 30 ms)
//   hackbench       hackbench -g 4 -l <loops> (BE): {seconds}
//   cpu_throughput  sysbench cpu --threads <ncpu> (BE): {events_per_s}
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::workload {

using json = nlohmann::json;

struct ScenarioArgs {
  std::string scenario;
  int seconds = 5;
};

// {scenario, seconds?}: a known scenario, seconds a whole number in [1, 60].
Result<ScenarioArgs> parse_args(const json& arguments);
const std::vector<std::string>& scenario_names();

struct Hooks {
  // Classifies a started (not yet executing) process: "lc" or "be".
  std::function<Status(pid_t pid, const std::string& cls)> classify;
  // The selected policy's name now (for the report), or nullopt.
  std::function<std::optional<std::string>()> policy;
};

// The node's counters since boot, all CPUs: context switches (/proc/stat ctxt), rescheduling and function-call
// IPIs and irq_work interrupts (/proc/interrupts RES, CAL and IWI: a sched_ext kick is an irq_work, on the
// kicking CPU, even when it kicks itself). Zero where a file or line is missing.
struct SystemCounters {
  uint64_t context_switches = 0;
  uint64_t resched_ipis = 0;
  uint64_t call_ipis = 0;
  uint64_t irq_work = 0;
};
SystemCounters read_system_counters(const std::string& proc = "/proc");

// Runs one scenario to its end (or until cancelled: then an error, every
// process killed). The result: {scenario, seconds, policy (effective at the
// start), policy_at_end, metrics, system, processes}; system is the node's
// context switches and IPIs per second over the run (SystemCounters).
Result<json> run(const ScenarioArgs& args, const Hooks& hooks, const std::atomic<bool>& cancelled);

// The parsers, for unit tests: the programs' own output.
std::optional<json> parse_cyclictest(const std::string& out);
std::optional<double> parse_stress_ng_bogo_ops_per_s(const std::string& out);
std::optional<double> parse_hackbench_seconds(const std::string& out);
std::optional<double> parse_sysbench_events_per_s(const std::string& out);

// Metrics as one level of named numbers ("lc_wakeup_us.max"), as the policy repository keeps them.
json flatten_metrics(const json& metrics);

}  // namespace akts::workload
