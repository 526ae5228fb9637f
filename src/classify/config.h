// The daemon's configuration file (JSON) and the class matchers in it.
//
//   {
//     "socket": "/run/akts/akts.sock",   "socket_mode": "0600",
//     "socket_group": "akts",                       // optional: this group may use the socket too (mode "0660")
//     "audit_log": "/var/log/akts/audit.jsonl",    // every accepted control action and who asked; "" turns it off
//     "policies": ["latency", "throughput"],       // slot order
//     "initial": "throughput",                     // a policy name or slot number
//     "switch_all": false,                         // manage every task, not only matched ones
//     "scan_interval_ms": 100,
//     "guard": {"max_wait": "200ms", "rescue_slice": "2ms", "period": "20ms"},  // bounded wait (bpf/akts.h)
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

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "reasoning/reasoning_config.h"
#include "telemetry/guard.h"

namespace akts {

struct Matcher {
  enum class Kind { kPid, kCgroup, kComm };
  Kind kind = Kind::kComm;
  uint32_t pid = 0;   // kPid
  std::string value;  // kCgroup: an absolute path; kComm: a command name (<= 15 bytes)
  uint32_t cls = 0;   // enum akts_class

  std::string describe() const;  // "comm llama-server", "cgroup /serving", "pid 42"
};

struct DaemonConfig {
  std::string socket_path = "/run/akts/akts.sock";
  mode_t socket_mode = 0600;
  std::string socket_group;  // "": root only; else a group name or number given the socket (with socket_mode 0660)
  std::string audit_log = "/var/log/akts/audit.jsonl";  // "": no audit log (src/control/audit.h)
  std::vector<std::string> policies = {"latency", "throughput"};
  std::string initial = "0";
  bool switch_all = false;
  uint32_t scan_interval_ms = 100;
  GuardParams guard;
  ReasoningConfig reasoning;
  std::vector<Matcher> matchers;
};

// `known_policies`: the names a config may use.
Result<DaemonConfig> parse_config(std::string_view text, const std::vector<std::string>& known_policies);
Result<DaemonConfig> load_config(const std::string& path, const std::vector<std::string>& known_policies);

}  // namespace akts
