// `akts daemon` as one object: its parts made in order (init), served on one event loop (run), taken down again.
#include "daemon/daemon.h"

#include <signal.h>

#include <chrono>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "classify/process_tracker.h"
#include "common/build_info.h"
#include "control/api.h"
#include "control/unix_server.h"
#include "daemon/backend.h"
#include "daemon/breaker_watch.h"
#include "daemon/event_loop.h"
#include "daemon/metrics_listener.h"
#include "daemon/parts.h"
#include "daemon/preflight.h"
#include "daemon/reasoning_worker.h"
#include "daemon/restart.h"
#include "daemon/state_file.h"
#include "daemon/state_writer.h"
#include "daemon/tracker_worker.h"
#include "exec/btf_rodata.h"
#include "exec/execution_plane.h"
#include "exec/policy_library.h"

namespace akts {

using control::json;

// Every part, in the order it is made (and so taken down in reverse).
struct Daemon::Parts {
  explicit Parts(Reloader::Loader load) : reloader(std::move(load)) {}
  Reloader reloader;
  TerminalWatch terminal;  // which of 0, 1, 2 were terminals at start
  Preflight pre;
  std::optional<StateTakeover> taken;  // the lock and the reaper
  std::optional<json> prev_state;
  std::optional<SignalFd> signals;
  std::optional<TimerFd> ticker;
  PlaneOptions po;
  std::unique_ptr<ExecutionPlane> plane;
  Tracking tracking;
  std::unique_ptr<StateWriter> state_writer;
  PushedSamples pushed;
  Reasoning reasoning;
  std::unique_ptr<DaemonBackend> backend;
  control::Dispatcher dispatcher;
  std::unique_ptr<control::UnixServer> server;
  std::unique_ptr<MetricsListener> metrics;
  BreakerWatch breaker_watch;
  std::optional<RestartGate> restarts;
  int64_t restart_flag = 0;  // the exit code's "restart" action bit (CPU hotplug sets it); 0 when unnamed
  std::unique_ptr<ExecutionPlaneControl> plane_control;
  RestartHooks restart_hooks;
  EventLoop loop;

  void persist() { state_writer->save(*plane, tracking.worker->record_snapshot(), /*clean=*/false); }
};

namespace {

// A part made, moved into its place; or its error logged. True when made.
template <class T, class Into>
bool made(Result<T> r, Into& into) {
  if (!r) spdlog::error("{}", r.error().to_string());
  else if constexpr (requires { into.emplace(std::move(*r)); }) into.emplace(std::move(*r));  // SignalFd: no assignment
  else into = std::move(*r);
  return static_cast<bool>(r);
}

}  // namespace

Daemon::Daemon(DaemonConfig cfg, Reloader::Loader reload)
    : cfg_(std::move(cfg)), p_(std::make_unique<Parts>(std::move(reload))) {}
Daemon::~Daemon() = default;

int Daemon::init() {
  if (int rc = preflight(cfg_, p_->pre)) return rc;
  if (int rc = load()) return rc;
  track();
  if (int rc = reason()) return rc;
  if (int rc = serve()) return rc;
  if (auto st = p_->plane->attach(); !st) {
    spdlog::error("{}", st.error().to_string());
    return 1;
  }
  const uint32_t s = p_->po.initial_slot;
  spdlog::info("scheduler attached ({}), slot {} ({}); listening on {}", cfg_.switch_all ? "all tasks" : "partial mode",
               s, s < cfg_.policies.size() ? cfg_.policies[s] : "the built-in default", cfg_.socket_path);
  wire();
  return 0;
}

int Daemon::load() {
  Parts& p = *p_;
  // The state a previous daemon left, and this one's reaper (forked now: no thread, nothing loaded yet).
  if (!cfg_.state_file.empty()) {
    if (!made(take_over_state(cfg_.state_file), p.taken)) return 1;
    p.prev_state = std::move(p.taken->previous);
  }
  // SIGINT, SIGTERM (a clean stop, not a death the reaper has to clean up after) and SIGHUP (a reload, or a
  // clean stop when the terminal closed), read in the loop; never left blocked (SignalFd puts the mask back).
  if (!made(SignalFd::open({SIGINT, SIGTERM, SIGHUP}), p.signals)) return 1;
  // The loop's clock (100 ms): ejection checks and idle-client sweeps (scans run on their own thread). Its ticks
  // before the loop runs only pile up.
  if (!made(TimerFd::open(std::chrono::milliseconds(1), std::chrono::milliseconds(100)), p.ticker)) return 1;
  p.po.policies = cfg_.policies;
  p.po.switch_all = cfg_.switch_all;
  p.po.initial_slot = p.pre.initial_slot;
  if (p.prev_state)
    if (auto r = restored_selection(*p.prev_state, (*p.prev_state)["selected"], cfg_.policies)) {
      p.po.initial_slot = *r;
      spdlog::info("the previous daemon (pid {}) did not stop cleanly: its selection, slot {}, is kept",
                   (*p.prev_state)["daemon_pid"].get<uint64_t>(), *r);
    }
  p.po.guard = cfg_.guard;
  p.po.breaker = cfg_.breaker;
  (void)remove_stale_pins();  // a crashed selftest's, named in the log
  if (!cfg_.repository.empty()) {
    // The built-in policies' records (their results kept). A broken record is named and left for a person.
    auto records = builtin_records();
    if (!records)
      spdlog::warn("policy repository {}: not seeded: {}", cfg_.repository, records.error().message);
    else if (auto st = PolicyRepository(cfg_.repository).seed(*records); !st)
      spdlog::warn("policy repository {}: {}", cfg_.repository, st.error().message);
  }
  auto t0 = std::chrono::steady_clock::now();
  if (!made(ExecutionPlane::load(p.po), p.plane)) return 1;
  spdlog::info("verified the dispatcher and {} policies in {:.0f} ms", p.plane->policies().size(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

void Daemon::track() {
  p_->tracking = Tracking::make(cfg_, *p_->plane, p_->prev_state);
  p_->state_writer = std::make_unique<StateWriter>(cfg_.state_file);
}

int Daemon::reason() {
  return made(Reasoning::make(cfg_, *p_->plane, p_->pushed), p_->reasoning) ? 0 : 2;
}

int Daemon::serve() {
  Parts& p = *p_;
  auto health = [&p] {
    json h = p.reasoning.telemetry.source->health();
    h["kernel_read_errors"] = p.reasoning.telemetry.worker->read_errors();
    h["pushed_dropped"] = p.pushed.dropped();
    h["audit"] = p.pre.audit ? p.pre.audit->state() : json(nullptr);
    return h;
  };
  p.backend = std::make_unique<DaemonBackend>(*p.plane, *p.tracking.worker, *p.reasoning.plane, p.pushed, health, cfg_,
                                              [&p] { p.persist(); });
  p.backend->set_reload({[this] { return reload("socket"); }, [&p] { return p.reloader.state(); }});
  control::register_v1(p.dispatcher, *p.backend);
  // Every accepted control action, with the connecting process's credentials, before the socket opens.
  if (p.pre.audit) control::audit_dispatcher(p.dispatcher, *p.pre.audit);
  if (!made(control::UnixServer::listen(cfg_.socket_path, cfg_.socket_mode, p.dispatcher, {}, p.pre.socket_gid),
            p.server))
    return 1;
  // /metrics, answered on the loop's thread like a socket request; bound before the scheduler attaches, so an
  // address in use changes nothing.
  if (!cfg_.metrics_listen.empty()) {
    const metrics::BuildInfo build{std::string(build_version()), std::string(build_commit())};
    auto m = MetricsListener::start(cfg_.metrics_listen, [&p, build](metrics::Format f) -> Result<std::string> {
      auto st = p.backend->stats(false);
      if (!st) return st.error();
      return metrics::render(*st, build, f);
    });
    if (!m) {
      spdlog::error("{}", m.error().to_string());
      return m.error().kind == ErrorKind::kInvalidArgument ? 2 : 1;
    }
    p.metrics = std::move(*m);
  }
  return 0;
}

void Daemon::wire() {
  Parts& p = *p_;
  p.restarts.emplace(cfg_.restart);
  auto v = kernel_enum_value("SCX_ECODE_ACT_RESTART");
  p.restart_flag = v ? *v : int64_t{0};
  p.plane_control = std::make_unique<ExecutionPlaneControl>(*p.plane);
  p.restart_hooks.pause = [&p] {
    p.reasoning.telemetry.worker->stop();
    p.tracking.worker->stop();
  };
  p.restart_hooks.reapply = [&p] {
    p.tracking.worker->read_tracker([](ProcessTracker& t) {
      t.reapply_classes();
      return 0;
    });
  };
  p.restart_hooks.reloaded = [&p] {
    p.breaker_watch = BreakerWatch{};
    p.backend->plane_reloaded();
  };
  p.restart_hooks.resume = [&p] {
    p.tracking.worker->start();
    p.reasoning.telemetry.worker->start();
  };
  if (p.metrics) p.metrics->watch(p.loop);
  p.loop.add("signals", p.signals->fd(), [&p] {
    for (auto [s, sender] : p.signals->read_all()) {
      if (s == SIGHUP && !p.terminal.closed(sender)) {
        p.reloader.request();  // at the next tick: a storm of them is one reload
        continue;
      }
      spdlog::info("signal {}: shutting down", s == SIGINT ? "SIGINT" : s == SIGHUP ? "SIGHUP, the terminal closed" : "SIGTERM");
      return p.loop.stop(0);
    }
  });
  p.loop.add("tick", p.ticker->fd(), [this] { tick(); });
  // The control socket: its listener and clients. Requests already received but not yet answered (a client's
  // turn ran out) make the loop poll without blocking.
  p.loop.add_group("control", {.fds = [&p] { return p.server->poll_fds(); },
                               .ready = [&p](const std::vector<pollfd>& fds) { p.server->on_ready(fds); },
                               .busy = [&p] { return p.server->backlog(); }});
}

// The tick (100 ms): the kernel's exit (a restart, or the end), a reload SIGHUP asked for, the breaker, the
// canary, the state file, idle clients, and a metrics listener to open again.
void Daemon::tick() {
  Parts& p = *p_;
  (void)p.ticker->read();
  if (p.reloader.take_request()) (void)reload("SIGHUP");
  if (auto ei = p.plane->exit_info(); ei.kind != 0) {
    // The kernel ended the scheduler: it asked for a restart (CPU hotplug), or ejected it.
    const uint32_t before = p.plane->selected();
    auto r = restart_after_exit(ei, p.restart_flag, cfg_.restart, *p.restarts, *p.plane_control, p.po,
                                cfg_.breaker.safe_slot, p.restart_hooks);
    if (!r.restarted) return p.loop.stop(1);
    p.reasoning.plane->outside_change(before, p.plane->selected());  // an ejection attaches on the safe slot
    p.reasoning.plane->note("kernel", r.requested ? "restart" : "reattach", r.why,
                      {{"exit", {{"kind", ei.kind_name}, {"reason", ei.reason}, {"message", ei.message}}},
                       {"took_ms", r.took_ms}});
    p.persist();
    return p.loop.end_round();  // the others' readiness is from before the reload: poll again
  }
  p.breaker_watch.poll(*p.plane_control, *p.reasoning.plane);
  p.backend->poll_canary();
  p.persist();  // a controller's switches and the tracker's scans, at most a tick late
  p.server->sweep(control::UnixServer::Clock::now());
  if (p.metrics) p.metrics->tick(std::chrono::steady_clock::now());
}

Result<json> Daemon::reload(const std::string& source) {
  return p_->reloader.reload({cfg_, p_->tracking, p_->reasoning, *p_->plane, p_->pushed}, source);
}

int Daemon::run() {
  Parts& p = *p_;
  p.tracking.worker->start();
  p.reasoning.telemetry.worker->start();
  spdlog::info("reasoning: controller {}{}, objective {}, telemetry every {} ms", p.reasoning.plane->controller_name(),
               cfg_.reasoning.arbiter.dry_run ? " (dry run)" : "", cfg_.reasoning.objective.describe(),
               cfg_.reasoning.telemetry.period.count());
  return teardown(p.loop.run());
}

int Daemon::teardown(int exit_code) {
  Parts& p = *p_;
  p.reasoning.telemetry.worker->stop();
  p.tracking.worker->stop();
  // Every thread gets its own policy back; the state keeps the explicit classes for the next daemon.
  json final_record = p.tracking.tracker->record();
  p.tracking.tracker->restore_all();
  for (auto& proc : final_record["processes"]) proc["threads"] = json::array();
  p.state_writer->save(*p.plane, {UINT64_MAX, std::make_shared<const std::string>(final_record.dump())}, /*clean=*/true);
  p.server.reset();
  // Scrapes that came during the clean-up waited for no one: they are answered 503 now (stop() waits at most
  // for a kept-alive connection's second of idleness).
  if (p.metrics) p.metrics->stop();
  auto ei_before = p.plane->exit_info();
  if (auto st = p.plane->detach(); !st) {
    spdlog::error("detach: {}", st.error().to_string());
    exit_code = 1;
  } else if (!ei_before.kind) {
    auto ei = p.plane->exit_info();
    spdlog::info("detached: {} ({})", ei.kind_name, ei.reason);
  }
  return exit_code;
}

int run_daemon(DaemonConfig cfg, Reloader::Loader reload) {
  Daemon d(std::move(cfg), std::move(reload));
  if (int rc = d.init()) return rc;
  return d.run();
}

}  // namespace akts
