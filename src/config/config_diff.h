// Which of the daemon's config keys a reload may change, and which of them differ between two configs
// (src/daemon/reload.h applies the difference).
#pragma once

#include <string>
#include <vector>

#include "config/daemon_config.h"

namespace akts {

// The config's top-level keys, by whether a reload may change them. A new key belongs in one (diff_configs
// compares it; config_test checks that each list's keys are told apart).
inline constexpr const char* kLiveKeys[] = {"classes", "objective", "controller", "telemetry", "decision_log"};
inline constexpr const char* kRestartKeys[] = {
    "socket",           "socket_mode",    "socket_group", "audit_log", "repository", "state_file",
    "metrics_listen",   "policies",       "initial",      "switch_all", "scan_interval_ms",
    "process_events",   "rescan_interval_ms", "guard",    "breaker",   "restart"};

struct ConfigDiff {
  std::vector<std::string> restart;  // of kRestartKeys, in its order
  std::vector<std::string> live;     // of kLiveKeys, in its order
};
// The keys whose values differ between two checked configs (defaults filled in: a key written out with its
// default value equals the key left out).
ConfigDiff diff_configs(const DaemonConfig& running, const DaemonConfig& next);
// `c` with the detector's policies named by their slot numbers ("latency" and "0" are one policy).
ControllerConfig resolved(ControllerConfig c, const std::vector<std::string>& policies);

}  // namespace akts
