// The daemon's configuration file (JSON): every key, its default, its checks. The class rules' own parsing is
// classify/matcher.h's.
//
//   {
//     "socket": "/run/akts/akts.sock",   "socket_mode": "0600",
//     "socket_group": "akts",                       // optional: this group may use the socket too (mode "0660")
//     "audit_log": "/var/log/akts/audit.jsonl",    // every accepted control action and who asked; "" turns it off
//     "state_file": "/run/akts/state.json",        // classes, own policies, selection across restarts; "" turns it off
//     "policies": ["latency", "throughput"],       // slot order
//     "initial": "throughput",                     // a policy name or slot number
//     "switch_all": false,                         // manage every task, not only matched ones
//     "scan_interval_ms": 100,
//     "guard": {"max_wait": "200ms", "rescue_slice": "2ms", "period": "20ms"},  // bounded wait (bpf/akts.h)
//               // and "quantum_timer": "250us" (50us-100ms; "off", the default): sub-tick preemption
//     "breaker": {"armed": true, "class": "lc", "safe_slot": "default",      // the circuit breaker (bpf/akts.h);
//                 "oldest_wait": "150ms", "wait_p99": "off", "window": "1s",  // these are the defaults (oldest_wait:
//                                                 // 3/4 of the guard's max_wait, two guard periods below it at most)
//                 "min_samples": 20, "rescues": 1, "cooldown": "5s", "calm": "1s"},
//     "restart": {"on_request": true, "on_eject": false, "max": 3, "window": "10m"},  // when the kernel ends it
//     "telemetry": {...}, "objective": {...}, "controller": {...}, "decision_log": {...},
//                                                  // the reasoning plane (src/reasoning/reasoning_config.h)
//     "classes": [
//       {"class": "lc", "comm": "llama-server"},
//       {"class": "lc", "cgroup": "/serving"},     // that cgroup and everything below it
//       {"class": "be", "pid": 4242}
//     ]
//   }
//
// Unknown keys, wrong types and impossible values are errors that name the
// offending key; a file that fails to parse changes nothing.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "classify/matcher.h"
#include "common/result.h"
#include "reasoning/reasoning_config.h"
#include "safety/breaker.h"
#include "telemetry/guard.h"

namespace akts {

inline BreakerParams armed_breaker() {
  BreakerParams b;
  b.armed = true;
  return b;
}

// What the daemon does when the kernel ends the scheduler (src/daemon/daemon.h).
struct RestartPolicy {
  bool on_request = true;   // the kernel asks for a restart (SCX_ECODE_ACT_RESTART, e.g. CPU hotplug): load and attach again
  bool on_eject = false;    // an ejection (an error, a watchdog stall, sysrq-S): attach again on the breaker's safe slot
  uint32_t max = 3;         // at most this many restarts of either kind ...
  std::chrono::seconds window{600};  // ... within this long; one more and the daemon stops

  bool operator==(const RestartPolicy&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

struct DaemonConfig {
  std::string socket_path = "/run/akts/akts.sock";
  mode_t socket_mode = 0600;
  std::string socket_group;  // "": root only; else a group name or number given the socket (with socket_mode 0660)
  std::string audit_log = "/var/log/akts/audit.jsonl";  // "": no audit log (src/control/audit.h)
  std::string repository = "/var/lib/akts/policies";  // "": none (src/repository/policy_repository.h)
  std::string state_file = "/run/akts/state.json";       // "": no restart state, no reaper (src/daemon/state_file.h)
  // Where /metrics is served over HTTP ("HOST:PORT", or "PORT" on 127.0.0.1); "": not served (src/metrics/).
  std::string metrics_listen;
  std::vector<std::string> policies = {"latency", "throughput"};
  std::string initial = "0";
  bool switch_all = false;
  uint32_t scan_interval_ms = 100;     // the /proc scan's period without process events
  bool process_events = true;          // follow forks, execs and exits through the proc connector (if it opens)
  // With them, the scan's period. Unset: 30 s with switch_all (a safety net), and scan_interval_ms in partial
  // mode, where a thread that sets its own policy back (as cyclictest's do) leaves SCHED_EXT with no event and
  // only a scan moves it again. effective_rescan_ms() says which.
  std::optional<uint32_t> rescan_interval_ms;
  uint32_t effective_rescan_ms() const {
    return rescan_interval_ms ? *rescan_interval_ms : switch_all ? 30000 : scan_interval_ms;
  }
  GuardParams guard;
  BreakerParams breaker = armed_breaker();  // armed by default; safe_slot resolved from breaker_safe_slot
  std::string breaker_safe_slot = "default";
  bool breaker_oldest_given = false;  // else breaker.oldest follows the guard's max_wait
  RestartPolicy restart;
  ReasoningConfig reasoning;
  std::vector<Matcher> matchers;
};

// The slot a policy's name or a slot number ("latency", "0") names among `policies`; nullopt: none.
std::optional<size_t> policy_slot(const std::vector<std::string>& policies, std::string_view name_or_slot);

// `known_policies`: the names a config may use.
Result<DaemonConfig> parse_config(std::string_view text, const std::vector<std::string>& known_policies);
Result<DaemonConfig> load_config(const std::string& path, const std::vector<std::string>& known_policies);
// The config file as a JSON object, not yet checked beyond that (flags are merged into it, then parse_config).
Result<nlohmann::json> read_config_document(const std::string& path);

}  // namespace akts
