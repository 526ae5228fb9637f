// `akts selftest`: the execution plane's guarantees, checked on the running
// kernel. Each check is named, reports the counts it judged, and passes or fails.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace akts {

struct SelftestOptions {
  int workers = 8;                           // gate 3 and the invalid-index check
  int iterations = 150;                      // spin + sleep rounds per worker per phase
  uint64_t invalid_min_invocations = 60000;  // across the three invalid values
  std::chrono::milliseconds storm_duration{20000};
  int storm_hz = 1000;
  // bounded_wait: each switch is held this long, past a watchdog this short,
  // so that a task left waiting would get the scheduler ejected.
  std::chrono::milliseconds hold{3200};
  uint32_t watchdog_ms = 2000;
  bool guard = true;  // false: run without the guard, to show the check can fail
  bool breaker = true;  // false: the breaker checks run it disarmed, to show they can fail
  bool preempt_kick = true;  // false: preempt_wakeup runs preempt with its kick off, to show the check can fail
  std::vector<std::string> only;  // run only these checks (empty: all)
};

struct CheckResult {
  std::string name;
  std::string title;
  std::string status;  // "pass", "fail", "skip"
  std::string detail;
  nlohmann::json counts = nlohmann::json::object();
};

struct SelftestReport {
  std::vector<CheckResult> checks;
  bool passed() const;
  nlohmann::json to_json() const;
  std::string to_text() const;
};

SelftestReport run_selftest(const SelftestOptions& opts);

// Names of the checks, in the order they run.
const std::vector<std::string>& selftest_check_names();

}  // namespace akts
