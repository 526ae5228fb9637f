// The daemon's parts made from the configuration: the tracking and the reasoning.
#include "daemon/parts.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "exec/policy_library.h"

namespace akts {

Tracking Tracking::make(const DaemonConfig& cfg, ExecutionPlane& ep, const std::optional<nlohmann::json>& prev_state) {
  Tracking t;
  t.classifier = std::make_unique<Classifier>(cfg.matchers);
  t.tracker = std::make_unique<ProcessTracker>(
      *t.classifier,
      ProcessTracker::Hooks{[&ep](uint32_t tgid, uint32_t cls) { return ep.set_class(tgid, cls); },
                            [&ep](uint32_t tgid) { return ep.clear_class(tgid); }},
      /*move_to_ext=*/!cfg.switch_all);
  if (prev_state && prev_state->contains("tracker")) {
    const nlohmann::json& prev = *prev_state;
    if (auto st = t.tracker->adopt_record(prev["tracker"]); !st)
      spdlog::warn("{}; the previous daemon's classes are forgotten", st.error().to_string());
    else
      spdlog::info("picked up the previous daemon's state (pid {}, {}): its explicit classes and its threads' own "
                   "policies",
                   prev["daemon_pid"].get<uint64_t>(),
                   prev.value("clean", false)    ? "stopped cleanly"
                   : prev.value("reaped", false) ? "ended uncleanly, its reaper gave its threads back"
                                                 : "ended uncleanly");
  }
  // Forks, execs and exits as they happen, with a slow scan as a safety net; scans alone if the connector
  // does not open (no CONFIG_PROC_EVENTS, no CAP_NET_ADMIN) or the config turns it off.
  std::unique_ptr<ProcConnector> proc_events;
  if (cfg.process_events) {
    auto pc = ProcConnector::open();
    if (pc)
      proc_events = std::move(*pc);
    else
      spdlog::warn("{}: scanning /proc every {} ms instead", pc.error().to_string(), cfg.scan_interval_ms);
  }
  const auto rescan = rescan_period(cfg);
  if (proc_events)
    spdlog::info("following processes by the kernel's events, with a scan every {} ms{}",
                 std::max<int64_t>(cfg.scan_interval_ms, rescan.count()),
                 any_cgroup_rule(cfg.matchers) ? " (cgroup rules: moves between cgroups raise no event)"
                                               : " as a safety net");
  t.worker = std::make_unique<TrackerWorker>(*t.tracker, std::chrono::milliseconds(cfg.scan_interval_ms),
                                             std::move(proc_events), rescan);
  t.worker->publish_now();  // the record taken up counts from here, before the first scan
  return t;
}

std::chrono::milliseconds Tracking::rescan_period(const DaemonConfig& cfg) {
  return std::chrono::milliseconds(any_cgroup_rule(cfg.matchers) ? cfg.scan_interval_ms : cfg.effective_rescan_ms());
}

Result<Telemetry> Telemetry::make(const TelemetryConfig& tc, ExecutionPlane& ep, ReasoningPlane& rp,
                                  PushedSamples& pushed) {
  Telemetry t;
  std::unique_ptr<MetricsScraper> scraper;
  if (!tc.metrics_url.empty()) {
    auto s = MetricsScraper::start(tc.metrics_url, tc.period, tc.metrics_timeout);
    if (!s) return s.error();
    scraper = std::move(*s);
  }
  t.source = std::make_unique<PlaneSource>(ep, std::move(scraper));
  t.worker = std::make_unique<ReasoningWorker>(rp, *t.source, pushed, tc.period);
  // A scrape counts while younger than its budget (by default four periods) plus a period.
  t.worker->set_app_max_age((tc.metrics_timeout.count() > 0 ? tc.metrics_timeout : 4 * tc.period) + tc.period);
  t.worker->set_app_metrics(tc.metrics);
  return t;
}

Result<Reasoning> Reasoning::make(const DaemonConfig& cfg, ExecutionPlane& ep, PushedSamples& pushed) {
  Reasoning r;
  // The reasoning plane: controllers propose, the arbiter decides, the log remembers.
  ReasoningOptions ro;
  ro.objective = cfg.reasoning.objective;
  ro.arbiter = cfg.reasoning.arbiter;
  ro.log = cfg.reasoning.log;
  auto slot_infos = [&ep] {
    std::vector<SlotInfo> out;
    for (const auto& s : ep.policies()) {
      const PolicySpec* spec = find_policy(s.name);
      out.push_back({s.slot, s.name, std::string(spec ? spec->summary : ""), std::string(spec ? spec->pick_when : "")});
    }
    return out;
  };
  r.plane = std::make_unique<ReasoningPlane>(
      ro,
      Arbiter::Plane{[&ep] { return ep.selected(); }, [&ep](uint32_t s) { ep.select(s); },
                     [&ep] { return (ep.override_word() & AKTS_OVERRIDE_ACTIVE) != 0; }},
      slot_infos, make_controller_factory(cfg.reasoning.controller));
  if (auto st = r.plane->open_log(); !st) spdlog::warn("{}; decisions are kept in memory only", st.error().to_string());
  if (cfg.reasoning.controller.name != "none")
    if (auto st = r.plane->set_controller(cfg.reasoning.controller.name, "config"); !st)
      return errorf(ErrorKind::kInvalidArgument, "controller {}: {}", cfg.reasoning.controller.name,
                    st.error().to_string());
  auto t = Telemetry::make(cfg.reasoning.telemetry, ep, *r.plane, pushed);
  if (!t) return t.error();
  r.telemetry = std::move(*t);
  return r;
}

}  // namespace akts
