// `akts daemon`'s composition: the checks before anything is loaded, the state the last daemon left, the plane,
// the workers, the control socket and /metrics, and the event loop that serves them until a signal or the end.
#include "daemon/daemon.h"

#include <grp.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "classify/process_tracker.h"
#include "common/build_info.h"
#include "common/fd.h"
#include "common/http_url.h"
#include "common/parse.h"
#include "control/api.h"
#include "control/audit.h"
#include "control/unix_server.h"
#include "daemon/backend.h"
#include "daemon/breaker_watch.h"
#include "daemon/event_loop.h"
#include "daemon/reaper.h"
#include "daemon/reasoning_worker.h"
#include "daemon/restart.h"
#include "daemon/state_file.h"
#include "daemon/state_writer.h"
#include "daemon/tracker_worker.h"
#include "exec/btf_rodata.h"
#include "exec/execution_plane.h"
#include "exec/policy_library.h"
#include "exec/sched_ext_sysfs.h"
#include "metrics/exposition.h"
#include "metrics/http_endpoint.h"

namespace akts {
namespace {

using control::json;

// A group by number or name, or why not.
Result<gid_t> group_id(const std::string& name) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec == std::errc() && end == name.data() + name.size()) {
    if (n == UINT32_MAX) return errorf(ErrorKind::kInvalidArgument, "socket_group {} is not a group", name);
    return static_cast<gid_t>(n);
  }
  std::vector<char> buf(16384);
  for (int tries = 0; tries < 8; ++tries, buf.resize(buf.size() * 4)) {
    group g{};
    group* out = nullptr;
    int rc = getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &out);
    if (rc == ERANGE) continue;
    if (rc != 0) return sys_error("socket_group " + name, rc);
    if (!out) return errorf(ErrorKind::kInvalidArgument, "socket_group {}: no such group on this system", name);
    return out->gr_gid;
  }
  return errorf(ErrorKind::kSystem, "socket_group {}: its entry is too large to read", name);
}

Result<uint32_t> initial_slot(const DaemonConfig& cfg) {
  for (size_t i = 0; i < cfg.policies.size(); ++i)
    if (cfg.policies[i] == cfg.initial) return static_cast<uint32_t>(i);
  auto n = parse_u32(cfg.initial, "initial");
  if (!n || *n >= cfg.policies.size())
    return errorf(ErrorKind::kInvalidArgument, "initial: '{}' is not a configured policy or slot", cfg.initial);
  return *n;
}

}  // namespace

int run_daemon(const DaemonConfig& cfg) {
  auto state = read_sched_ext_state();
  if (!state.supported) {
    spdlog::error("this kernel has no sched_ext (/sys/kernel/sched_ext is missing)");
    return 1;
  }
  if (state.state != "disabled") {
    spdlog::error("another sched_ext scheduler is active: '{}' ({}); stop it first", state.ops, state.state);
    return 1;
  }
  auto slot = initial_slot(cfg);
  if (!slot) {
    spdlog::error("{}", slot.error().to_string());
    return 2;
  }
  // The socket's group and the audit log, before anything is loaded: a mistake here changes nothing.
  gid_t socket_gid = static_cast<gid_t>(-1);
  if (!cfg.socket_group.empty()) {
    auto g = group_id(cfg.socket_group);
    if (!g) {
      spdlog::error("{}", g.error().to_string());
      return 2;
    }
    socket_gid = *g;
  }
  std::unique_ptr<control::AuditLog> audit;
  if (!cfg.audit_log.empty()) {
    auto a = control::AuditLog::open(cfg.audit_log);
    if (!a) {
      spdlog::error("{} (set \"audit_log\": \"\" to run without one)", a.error().to_string());
      return 2;
    }
    audit = std::move(*a);
  }

  // The state a previous daemon left, and this one's reaper (forked now: no thread, nothing loaded yet).
  std::optional<StateTakeover> taken;  // the lock and the reaper, until this function returns
  if (!cfg.state_file.empty()) {
    auto t = take_over_state(cfg.state_file);
    if (!t) {
      spdlog::error("{}", t.error().to_string());
      return 1;
    }
    taken.emplace(std::move(*t));
  }
  std::optional<json> prev_state = taken ? std::move(taken->previous) : std::nullopt;

  // Signals arrive through a descriptor so shutdown runs in the loop, not in a handler.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);  // a closing terminal: a clean stop, not a death the reaper has to clean up after
  // Never left blocked: the old mask comes back however this function ends, after both descriptors closed.
  struct MaskBack {
    sigset_t old;
    ~MaskBack() { sigprocmask(SIG_SETMASK, &old, nullptr); }
  } mask_back{};
  sigprocmask(SIG_BLOCK, &mask, &mask_back.old);
  Fd sig_fd(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sig_fd) {
    spdlog::error("{}", sys_error("signalfd", errno).to_string());
    return 1;
  }
  // The loop's clock: ejection checks and idle-client sweeps (scans run on their own thread).
  Fd timer_fd(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!timer_fd) {
    spdlog::error("{}", sys_error("timerfd_create", errno).to_string());
    return 1;
  }

  PlaneOptions po;
  po.policies = cfg.policies;
  po.switch_all = cfg.switch_all;
  po.initial_slot = *slot;
  if (prev_state)
    if (auto r = restored_selection(*prev_state, (*prev_state)["selected"], cfg.policies)) {
      po.initial_slot = *r;
      spdlog::info("the previous daemon (pid {}) did not stop cleanly: its selection, slot {}, is kept",
                   (*prev_state)["daemon_pid"].get<uint64_t>(), *r);
    }
  po.guard = cfg.guard;
  po.breaker = cfg.breaker;
  (void)remove_stale_pins();  // a crashed selftest's, named in the log
  if (!cfg.repository.empty()) {
    // The built-in policies' records (their results kept). A broken record is named and left for a person.
    auto records = builtin_records();
    if (!records)
      spdlog::warn("policy repository {}: not seeded: {}", cfg.repository, records.error().message);
    else if (auto st = PolicyRepository(cfg.repository).seed(*records); !st)
      spdlog::warn("policy repository {}: {}", cfg.repository, st.error().message);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto plane = ExecutionPlane::load(po);
  if (!plane) {
    spdlog::error("{}", plane.error().to_string());
    return 1;
  }
  spdlog::info("verified the dispatcher and {} policies in {:.0f} ms", (*plane)->policies().size(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

  Classifier classifier(cfg.matchers);
  ProcessTracker tracker(
      classifier,
      {[&](uint32_t tgid, uint32_t cls) { return (*plane)->set_class(tgid, cls); },
       [&](uint32_t tgid) { return (*plane)->clear_class(tgid); }},
      /*move_to_ext=*/!cfg.switch_all);
  if (prev_state && prev_state->contains("tracker")) {
    const json& prev = *prev_state;
    if (auto st = tracker.adopt_record(prev["tracker"]); !st)
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
  // A move to another cgroup raises no process event: with cgroup rules the scan keeps its own period.
  const uint32_t rescan_ms = classifier.uses_cgroups() ? cfg.scan_interval_ms : cfg.effective_rescan_ms();
  if (proc_events)
    spdlog::info("following processes by the kernel's events, with a scan every {} ms{}",
                 std::max(cfg.scan_interval_ms, rescan_ms),
                 classifier.uses_cgroups() ? " (cgroup rules: moves between cgroups raise no event)" : " as a safety net");
  TrackerWorker worker(tracker, std::chrono::milliseconds(cfg.scan_interval_ms), std::move(proc_events),
                       std::chrono::milliseconds(rescan_ms));
  worker.publish_now();  // the record taken up counts from here, before the first scan
  StateWriter state_writer(cfg.state_file);
  auto persist = [&] { state_writer.save(**plane, worker.record_snapshot(), /*clean=*/false); };

  // The reasoning plane: controllers propose, the arbiter decides, the log remembers.
  ReasoningOptions ro;
  ro.objective = cfg.reasoning.objective;
  ro.arbiter = cfg.reasoning.arbiter;
  ro.log = cfg.reasoning.log;
  ExecutionPlane& ep = **plane;
  auto slot_infos = [&ep] {
    std::vector<SlotInfo> out;
    for (const auto& p : ep.policies()) {
      const PolicySpec* spec = find_policy(p.name);
      out.push_back({p.slot, p.name, std::string(spec ? spec->summary : ""), std::string(spec ? spec->pick_when : "")});
    }
    return out;
  };
  ReasoningPlane reasoning(ro,
                           {[&ep] { return ep.selected(); }, [&ep](uint32_t s) { ep.select(s); },
                            [&ep] { return (ep.override_word() & AKTS_OVERRIDE_ACTIVE) != 0; }},
                           slot_infos, make_controller_factory(cfg.reasoning.controller));
  if (auto st = reasoning.open_log(); !st) spdlog::warn("{}; decisions are kept in memory only", st.error().to_string());
  if (cfg.reasoning.controller.name != "none")
    if (auto st = reasoning.set_controller(cfg.reasoning.controller.name, "config"); !st) {
      spdlog::error("controller {}: {}", cfg.reasoning.controller.name, st.error().to_string());
      return 2;
    }
  PushedSamples pushed;
  std::unique_ptr<MetricsScraper> scraper;
  if (!cfg.reasoning.telemetry.metrics_url.empty()) {
    auto s = MetricsScraper::start(cfg.reasoning.telemetry.metrics_url, cfg.reasoning.telemetry.period,
                                   cfg.reasoning.telemetry.metrics_timeout);
    if (!s) {
      spdlog::error("{}", s.error().to_string());
      return 2;
    }
    scraper = std::move(*s);
  }
  PlaneSource source(ep, std::move(scraper));
  ReasoningWorker reasoner(reasoning, source, pushed, cfg.reasoning.telemetry.period);
  // A scrape counts while younger than its budget (by default four periods) plus a period.
  {
    const auto& tc = cfg.reasoning.telemetry;
    reasoner.set_app_max_age((tc.metrics_timeout.count() > 0 ? tc.metrics_timeout : 4 * tc.period) + tc.period);
    reasoner.set_app_metrics(tc.metrics);
  }
  auto health = [&] {
    json h = source.health();
    h["kernel_read_errors"] = reasoner.read_errors();
    h["pushed_dropped"] = pushed.dropped();
    h["audit"] = audit ? audit->state() : json(nullptr);
    return h;
  };
  DaemonBackend backend(**plane, worker, reasoning, pushed, health, cfg, persist);
  control::Dispatcher dispatcher;
  control::register_v1(dispatcher, backend);
  // Every accepted control action, with the connecting process's credentials, before the socket opens.
  if (audit) {
    dispatcher.set_audit(control::audited_methods(), [&audit](const control::Caller& who, std::string_view method,
                                                              const json& params, const json& result) {
      if ((method == "v1.controller" || method == "v1.objective") && params.empty()) return;  // a reading
      if (method == "v1.stats") {
        // A reading, unless it resets the longest waits: then the reset is the change, not the figures.
        if (!params.is_object() || !params.value("reset_longest", false)) return;
        audit->record(who, method, params, json{{"reset_longest", true}});
        return;
      }
      audit->record(who, method, params, result);
    });
  }

  auto server = control::UnixServer::listen(cfg.socket_path, cfg.socket_mode, dispatcher, {}, socket_gid);
  if (!server) {
    spdlog::error("{}", server.error().to_string());
    return 1;
  }
  // /metrics, answered on this thread like a socket request (metrics/http_endpoint.h); bound before the
  // scheduler attaches, so an address in use changes nothing.
  std::unique_ptr<metrics::MetricsEndpoint> metrics_http;
  metrics::EndpointOptions metrics_at;  // its address, the port as bound (so a restart keeps it)
  metrics::RelistenSchedule relisten;
  constexpr auto kListening = std::chrono::steady_clock::time_point::max();
  auto relisten_at = kListening;  // while the listener is down: when to try again
  const metrics::BuildInfo build{std::string(build_version()), std::string(build_commit())};
  auto render_metrics = [&](metrics::Format f) -> Result<std::string> {
    auto st = backend.stats(false);
    if (!st) return st.error();
    return metrics::render(*st, build, f);
  };
  if (!cfg.metrics_listen.empty()) {
    auto addr = parse_listen_address(cfg.metrics_listen, "metrics_listen", "127.0.0.1");
    if (!addr) {
      spdlog::error("{}", addr.error().to_string());
      return 2;
    }
    metrics_at = {addr->host, addr->port};
    auto m = metrics::MetricsEndpoint::start(metrics_at);
    relisten.started(std::chrono::steady_clock::now());
    if (!m) {
      spdlog::error("metrics: {}", m.error().to_string());
      return 1;
    }
    metrics_http = std::move(*m);
    metrics_at.port = metrics_http->port();
    spdlog::info("metrics at {}{}", metrics_http->url(),
                 addr->host == "127.0.0.1" || addr->host == "::1" || addr->host == "localhost"
                     ? ""
                     : " (not a loopback address: anyone who reaches it can read them)");
  }
  if (auto st = (*plane)->attach(); !st) {
    spdlog::error("{}", st.error().to_string());
    return 1;
  }
  spdlog::info("scheduler attached ({}), slot {} ({}); listening on {}",
               cfg.switch_all ? "all tasks" : "partial mode", po.initial_slot,
               po.initial_slot < cfg.policies.size() ? cfg.policies[po.initial_slot] : "the built-in default",
               cfg.socket_path);

  itimerspec its{};
  its.it_interval.tv_nsec = 100 * 1000000;
  its.it_value.tv_nsec = 1000000;
  if (timerfd_settime(timer_fd.get(), 0, &its, nullptr) != 0) {
    spdlog::error("{}", sys_error("timerfd_settime", errno).to_string());
    return 1;  // the plane's destructor detaches
  }

  BreakerWatch breaker_watch;
  RestartGate restarts(cfg.restart);
  // The exit code's "restart" action bit (CPU hotplug sets it); 0 when this kernel does not name it.
  const int64_t restart_flag = [] {
    auto v = kernel_enum_value("SCX_ECODE_ACT_RESTART");
    return v ? *v : int64_t{0};
  }();
  ExecutionPlaneControl plane_control(ep);
  const RestartHooks restart_hooks{.pause =
                                       [&] {
                                         reasoner.stop();
                                         worker.stop();
                                       },
                                   .reapply =
                                       [&] {
                                         worker.read_tracker([](ProcessTracker& t) {
                                           t.reapply_classes();
                                           return 0;
                                         });
                                       },
                                   .reloaded =
                                       [&] {
                                         breaker_watch = BreakerWatch{};
                                         backend.plane_reloaded();
                                       },
                                   .resume =
                                       [&] {
                                         worker.start();
                                         reasoner.start();
                                       }};

  // The loop's event sources, each with its handler.
  EventLoop loop;
  // /metrics: a scrape waits on the endpoint's descriptor for this thread to render it.
  std::function<void()> watch_metrics = [&] {
    loop.add("metrics", metrics_http->fd(), [&] {
      metrics_http->serve(render_metrics);
      if (metrics_http->failed()) {  // its socket failed (an accept error): another, on the same address
        const std::string url = metrics_http->url();
        loop.remove("metrics");
        metrics_http->stop();
        metrics_http.reset();
        relisten_at = relisten.listener_failed(std::chrono::steady_clock::now());
        spdlog::warn("metrics: the listener on {} failed (an accept error); listening again in {} s", url,
                     relisten.delay().count());
      }
    });
  };
  if (metrics_http) watch_metrics();
  // SIGINT, SIGTERM, SIGHUP: a clean stop.
  loop.add("signals", sig_fd.get(), [&] {
    signalfd_siginfo si{};
    (void)!::read(sig_fd.get(), &si, sizeof(si));
    spdlog::info("signal {}: shutting down",
                 si.ssi_signo == SIGINT ? "SIGINT" : si.ssi_signo == SIGHUP ? "SIGHUP" : "SIGTERM");
    loop.stop(0);
  });
  // The tick (100 ms): the kernel's exit (a restart, or the end), the breaker, the canary, the state file, idle
  // clients, and a metrics listener to open again.
  loop.add("tick", timer_fd.get(), [&] {
    uint64_t ticks;
    (void)!::read(timer_fd.get(), &ticks, sizeof(ticks));
    if (auto ei = ep.exit_info(); ei.kind != 0) {
      // The kernel ended the scheduler: it asked for a restart (CPU hotplug), or ejected it.
      auto r = restart_after_exit(ei, restart_flag, cfg.restart, restarts, plane_control, po, cfg.breaker.safe_slot,
                                  restart_hooks);
      if (!r.restarted) return loop.stop(1);
      reasoning.note("kernel", r.requested ? "restart" : "reattach", r.why,
                     {{"exit", {{"kind", ei.kind_name}, {"reason", ei.reason}, {"message", ei.message}}},
                      {"took_ms", r.took_ms}});
      persist();
      return loop.end_round();  // the others' readiness is from before the reload: poll again
    }
    breaker_watch.poll(plane_control, reasoning);
    backend.poll_canary();
    persist();  // a controller's switches and the tracker's scans, at most a tick late
    (*server)->sweep(control::UnixServer::Clock::now());
    if (const auto now = std::chrono::steady_clock::now(); now >= relisten_at) {
      Result<std::unique_ptr<metrics::MetricsEndpoint>> m = errorf(ErrorKind::kSystem, "not started");
      try {
        m = metrics::MetricsEndpoint::start(metrics_at);
      } catch (const std::exception& e) {  // no thread or no memory: a failed start, not the daemon's end
        m = errorf(ErrorKind::kSystem, "{}", e.what());
      }
      if (m) {
        metrics_http = std::move(*m);
        relisten.started(now);
        relisten_at = kListening;
        watch_metrics();
        spdlog::info("metrics: listening again at {}", metrics_http->url());
      } else {
        relisten_at = relisten.start_failed(now);
        spdlog::warn("metrics: cannot listen again yet ({}); trying in {} s", m.error().to_string(),
                     relisten.delay().count());
      }
    }
  });
  // The control socket: its listener and clients. Requests already received but not yet answered (a client's
  // turn ran out) make the loop poll without blocking.
  loop.add_group("control", {.fds = [&] { return (*server)->poll_fds(); },
                             .ready = [&](const std::vector<pollfd>& fds) { (*server)->on_ready(fds); },
                             .busy = [&] { return (*server)->backlog(); }});

  worker.start();
  reasoner.start();
  spdlog::info("reasoning: controller {}{}, objective {}, telemetry every {} ms", reasoning.controller_name(),
               cfg.reasoning.arbiter.dry_run ? " (dry run)" : "", cfg.reasoning.objective.describe(),
               cfg.reasoning.telemetry.period.count());
  int exit_code = loop.run();

  reasoner.stop();
  worker.stop();
  // Every thread gets its own policy back; the state keeps the explicit classes for the next daemon.
  json final_record = tracker.record();
  tracker.restore_all();
  for (auto& p : final_record["processes"]) p["threads"] = json::array();
  state_writer.save(**plane, {UINT64_MAX, std::make_shared<const std::string>(final_record.dump())}, /*clean=*/true);
  server->reset();
  // Scrapes that came during the clean-up waited for no one: they are answered 503 now (stop() waits at most
  // for a kept-alive connection's second of idleness).
  if (metrics_http) metrics_http->stop();
  auto ei_before = (*plane)->exit_info();
  if (auto st = (*plane)->detach(); !st) {
    spdlog::error("detach: {}", st.error().to_string());
    exit_code = 1;
  } else if (!ei_before.kind) {
    auto ei = (*plane)->exit_info();
    spdlog::info("detached: {} ({})", ei.kind_name, ei.reason);
  }
  return exit_code;
}

}  // namespace akts
