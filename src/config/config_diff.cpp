// Two daemon configs compared key by key, defaults filled in.
#include "config/config_diff.h"

#include <fmt/format.h>

#include "common/http_url.h"

namespace akts {
namespace {

// Where /metrics is served: "9100" and "127.0.0.1:9100" are one address ("" none; text that does not parse, as given).
std::string listen_address(const std::string& text) {
  if (text.empty()) return "";
  auto a = parse_listen_address(text, "metrics_listen", "127.0.0.1");
  return a ? fmt::format("{}|{}", a->host, a->port) : text;
}

}  // namespace

ControllerConfig resolved(ControllerConfig c, const std::vector<std::string>& policies) {
  for (std::string* p : {&c.detector_burst, &c.detector_calm})
    if (auto slot = policy_slot(policies, *p)) *p = std::to_string(*slot);
  return c;
}

ConfigDiff diff_configs(const DaemonConfig& a, const DaemonConfig& b) {
  ConfigDiff d;
  auto restart = [&d](const char* key, bool same) {
    if (!same) d.restart.emplace_back(key);
  };
  restart("socket", a.socket_path == b.socket_path);
  restart("socket_mode", a.socket_mode == b.socket_mode);
  restart("socket_group", a.socket_group == b.socket_group);
  restart("audit_log", a.audit_log == b.audit_log);
  restart("repository", a.repository == b.repository);
  restart("state_file", a.state_file == b.state_file);
  restart("metrics_listen", listen_address(a.metrics_listen) == listen_address(b.metrics_listen));
  restart("policies", a.policies == b.policies);
  restart("initial", policy_slot(a.policies, a.initial) == policy_slot(b.policies, b.initial));  // "latency" is "0"
  restart("switch_all", a.switch_all == b.switch_all);
  restart("scan_interval_ms", a.scan_interval_ms == b.scan_interval_ms);
  restart("process_events", a.process_events == b.process_events);
  // Left out, it follows switch_all and scan_interval_ms: named when written otherwise than before, or written
  // to another value than the one it had.
  restart("rescan_interval_ms", a.rescan_interval_ms == b.rescan_interval_ms ||
                                    (a.switch_all == b.switch_all && a.scan_interval_ms == b.scan_interval_ms &&
                                     a.effective_rescan_ms() == b.effective_rescan_ms()));
  restart("guard", a.guard == b.guard);
  // The breaker's oldest_wait follows the guard's max_wait unless given: a new guard alone is not a new breaker.
  // Its safe slot as resolved (a name and its slot number are one slot).
  BreakerParams bb = b.breaker;
  if (!a.breaker_oldest_given && !b.breaker_oldest_given) bb.oldest = a.breaker.oldest;
  restart("breaker", a.breaker == bb && a.breaker_oldest_given == b.breaker_oldest_given);
  restart("restart", a.restart == b.restart);
  const ReasoningConfig &ra = a.reasoning, &rb = b.reasoning;
  auto live = [&d](const char* key, bool same) {
    if (!same) d.live.emplace_back(key);
  };
  live("classes", a.matchers == b.matchers);
  live("objective", ra.objective == rb.objective);
  // The detector's policies by slot, when the slots hold the same policies (else the reload is refused anyway).
  const bool same_slots = a.policies == b.policies;
  live("controller", (same_slots ? resolved(ra.controller, a.policies) == resolved(rb.controller, b.policies)
                                 : ra.controller == rb.controller) &&
                         ra.arbiter == rb.arbiter);
  live("telemetry", ra.telemetry == rb.telemetry);
  live("decision_log", ra.log == rb.log);
  return d;
}

}  // namespace akts
