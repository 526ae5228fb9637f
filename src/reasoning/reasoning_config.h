// The reasoning plane's part of the daemon's config, checked when the file is
// read (a bad value names its key and changes nothing), and the factory that
// builds the chosen controller from it.
//
//   "telemetry": {"period": "100ms", "metrics_url": "http://127.0.0.1:8080/metrics",
//                 "metrics": {"preset": "auto"}},     // or llama-server, vllm, sglang, tgi; names and labels by hand
//   "objective": {"signal": "lc_wait_p99", "max": "20ms"},
//   "controller": {"name": "detector",                 // none, detector, bandit, learner, llm, oracle
//                  "dry_run": false, "min_dwell": "1s", "max_switches_per_minute": 30,
//                  "operator_grace": "30s",
//                  "detector": {"burst": "latency", "calm": "throughput", "enter": 1.0, "leave": 0.4,
//                               "confirm": 2, "min_dwell": 5, "alpha_up": 0.8, "alpha_down": 0.15,
//                               "app_busy_requests": 1, "lc_busy_share": 0.25},
//                  "bandit": {"alpha": 0.05, "gamma": 0.998, "switch_penalty": 0.02, "seed": 1},
//                  "learner": {"state": "/var/lib/akts/learner.json", "miss_rate": 0.1, "min_evidence": 5},
//                  "llm": {"endpoint": "http://127.0.0.1:8081", "timeout": "10s", "decide_every": 10},
//                  "oracle": {"schedule": "/etc/akts/schedule.json"}},
//   "decision_log": {"path": "/var/log/akts/decisions.jsonl", "max_bytes": 16777216, "keep": 3}
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reasoning/bandit.h"
#include "reasoning/learner.h"
#include "reasoning/detector.h"
#include "reasoning/llm.h"
#include "reasoning/reasoning_plane.h"
#include "telemetry/app_metrics.h"

namespace akts {

struct TelemetryConfig {
  std::chrono::milliseconds period{100};
  std::string metrics_url;  // empty: no application metrics are scraped
  // A scrape's budget (connecting, each read, the whole answer). A server the
  // scheduler starves answers slowly, and that is when its figures matter: a
  // window carries a scrape younger than this plus a period. 0: four periods.
  std::chrono::milliseconds metrics_timeout{0};
  // Which of its series mean what (telemetry/app_metrics.h): "auto" by default.
  AppMetricsChoice metrics;

  bool operator==(const TelemetryConfig&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

struct ControllerConfig {
  std::string name = "none";
  std::string detector_burst = "latency", detector_calm = "throughput";  // policy names or slots
  DetectorOptions detector;
  BanditOptions bandit;
  // The daemon's learner keeps what it learns across restarts by default ("state": "" keeps it in memory).
  LearnerOptions learner = [] {
    LearnerOptions o;
    o.state_path = "/var/lib/akts/learner.json";
    return o;
  }();
  LlmOptions llm;
  std::string oracle_schedule;  // a file

  bool operator==(const ControllerConfig&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

struct ReasoningConfig {
  TelemetryConfig telemetry;
  Objective objective;
  ArbiterOptions arbiter;
  ControllerConfig controller;
  DecisionLogOptions log;
};

// One top-level key of the config ("telemetry", "objective", "controller",
// "decision_log"); false if `key` is none of them.
Result<bool> parse_reasoning_key(const std::string& key, const nlohmann::json& v, ReasoningConfig& out);
// Checks what needs the whole config: the detector's policies exist, the
// oracle's schedule reads and names configured policies.
Status check_reasoning_config(const ReasoningConfig& c, const std::vector<std::string>& policies);

// Builds controllers by name from the config, against the filled slots.
ControllerFactory make_controller_factory(ControllerConfig c);

}  // namespace akts
