#include "daemon/daemon.h"

#include <grp.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <functional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "classify/process_tracker.h"
#include "daemon/reasoning_worker.h"
#include "daemon/tracker_worker.h"
#include "common/parse.h"
#include "control/api.h"
#include "control/audit.h"
#include "control/unix_server.h"
#include "exec/execution_plane.h"
#include "exec/policy_library.h"
#include "exec/sched_ext_sysfs.h"

namespace akts {
namespace {

using control::json;

// The control API's view of the running daemon.
class DaemonBackend : public control::ControlBackend {
 public:
  DaemonBackend(ExecutionPlane& plane, TrackerWorker& tracker, ReasoningPlane& reasoning, PushedSamples& pushed,
                std::function<json()> health, const DaemonConfig& cfg)
      : plane_(plane),
        tracker_(tracker),
        reasoning_(reasoning),
        pushed_(pushed),
        health_(std::move(health)),
        cfg_(cfg),
        started_(std::chrono::steady_clock::now()) {}

  std::vector<control::PolicyView> policies() const override {
    std::vector<control::PolicyView> out;
    for (const auto& p : plane_.policies()) {
      const PolicySpec* spec = find_policy(p.name);
      out.push_back({p.slot, p.name, std::string(spec ? spec->summary : ""),
                     std::string(spec ? spec->pick_when : "")});
    }
    return out;
  }
  uint32_t slot_count() const override { return AKTS_MAX_SLOTS; }
  uint32_t selected() const override { return plane_.selected(); }
  uint32_t effective() const override { return plane_.effective_slot(); }
  // An operator's switch: through the arbiter, so a hold refuses it and controllers give way.
  Status select(uint32_t slot) override {
    uint32_t prev = plane_.selected();
    if (auto st = reasoning_.operator_switch(slot, policy_name(slot)); !st) return st;
    spdlog::info("switched slot {} -> {}", prev, slot);
    return {};
  }
  Status hold(uint32_t slot, std::chrono::milliseconds d) override {
    if (auto st = reasoning_.hold(slot, policy_name(slot), d); !st) return st;
    spdlog::info("holding slot {} ({}) for {:.1f} s", slot, policy_name(slot), std::chrono::duration<double>(d).count());
    return {};
  }
  bool release() override {
    bool was = reasoning_.release();
    if (was) spdlog::info("hold released");
    return was;
  }
  Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) override {
    if (auto st = reasoning_.configure(name, dry_run); !st) return st.error();
    if (name) spdlog::info("controller: {}{}", *name, reasoning_.state()["arbiter"]["dry_run"].get<bool>() ? " (dry run)" : "");
    return reasoning_.state();
  }
  json telemetry(size_t last) const override {
    return {{"period_s", std::chrono::duration<double>(cfg_.reasoning.telemetry.period).count()},
            {"objective", reasoning_.objective().to_json()},
            {"health", health_()},
            {"windows", reasoning_.windows(last)}};
  }
  json decisions(size_t limit) const override { return reasoning_.log(limit); }
  Result<size_t> push_latencies(const std::vector<double>& ms) override { return pushed_.push(ms); }
  json status() const override {
    auto st = read_sched_ext_state();
    auto ei = plane_.exit_info();
    json policies = json::array();
    std::string selected_name, effective_name;
    for (const auto& p : plane_.policies()) {
      policies.push_back({{"slot", p.slot}, {"name", p.name}});
      if (p.slot == plane_.selected()) selected_name = p.name;
      if (p.slot == plane_.effective_slot()) effective_name = p.name;
    }
    uint32_t ovr = plane_.override_word();
    return {{"scheduler", {{"state", st.state}, {"ops", st.ops}, {"attached", plane_.attached()}}},
            {"selected", {{"slot", plane_.selected()}, {"policy", name_or_null(selected_name)}}},
            {"override",
             {{"active", (ovr & AKTS_OVERRIDE_ACTIVE) != 0},
              {"slot", (ovr & AKTS_OVERRIDE_ACTIVE) ? json(ovr & AKTS_OVERRIDE_SLOT_MASK) : json(nullptr)}}},
            {"effective", {{"slot", plane_.effective_slot()}, {"policy", name_or_null(effective_name)}}},
            {"policies", policies},
            {"mode", cfg_.switch_all ? "all tasks" : "partial (SCHED_EXT tasks only)"},
            {"guard", guard_json()},
            {"reasoning", reasoning_.state()},
            {"managed_processes", tracker_.snapshot()},
            {"uptime_seconds",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()},
            {"exit", ei.kind ? json{{"kind", ei.kind_name}, {"reason", ei.reason}, {"message", ei.message}}
                             : json(nullptr)}};
  }
  Result<json> stats(bool reset_longest) override {
    auto s = plane_.read_stats();
    if (!s) return s.error();
    auto g = plane_.read_guard();
    if (!g) return g.error();
    if (reset_longest)
      if (auto st = plane_.reset_longest_waits(); !st) return st.error();
    json j = s->to_json();
    j["guard"] = g->to_json();
    auto w = reasoning_.latest();
    j["window"] = w ? w->to_json() : json(nullptr);
    j["reasoning"] = reasoning_.state();
    j["telemetry_health"] = health_();
    j["selected"] = plane_.selected();
    j["effective"] = plane_.effective_slot();
    j["timestamp_ns"] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    json names = json::object();
    for (const auto& p : plane_.policies()) names[std::to_string(p.slot)] = p.name;
    j["policy_names"] = names;
    return j;
  }
  Status classify(uint32_t pid, uint32_t cls) override {
    return tracker_.with_tracker([&](ProcessTracker& t) { return t.classify_explicit(pid, cls); });
  }
  Result<json> class_of(uint32_t pid) override {
    auto k = plane_.get_class(pid);
    if (!k) return k.error();
    json managed = nullptr;
    for (const auto& m : tracker_.snapshot())
      if (m["pid"] == pid) managed = {{"class", m["class"]}, {"reason", m["reason"]}};
    return json{{"pid", pid},
                {"kernel_class", std::string(class_name(k->value_or(AKTS_CLASS_BE)))},
                {"kernel_entry", k->has_value()},
                {"managed", managed}};
  }
  Status unclassify(uint32_t pid) override {
    return tracker_.with_tracker([&](ProcessTracker& t) { return t.unclassify(pid); });
  }

 private:
  static json name_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
  std::string policy_name(uint32_t slot) const {
    for (const auto& p : plane_.policies())
      if (p.slot == slot) return p.name;
    return "";
  }
  json guard_json() const {
    auto g = plane_.read_guard();
    return g ? g->params.to_json() : json{{"error", g.error().to_string()}};
  }
  ExecutionPlane& plane_;
  TrackerWorker& tracker_;
  ReasoningPlane& reasoning_;
  PushedSamples& pushed_;
  std::function<json()> health_;
  const DaemonConfig& cfg_;
  std::chrono::steady_clock::time_point started_;
};

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

void report_exit(const ExitInfo& ei) {
  spdlog::error("the kernel ejected the scheduler: {} ({}){}", ei.kind_name, ei.reason,
                ei.message.empty() ? "" : ": " + ei.message);
  if (!ei.dump.empty()) spdlog::error("debug dump:\n{}", ei.dump);
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

  // Signals arrive through a descriptor so shutdown runs in the loop, not in a handler.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigset_t old_mask;
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // never leave SIGTERM blocked
    spdlog::error("{}", sys_error("signalfd", e).to_string());
    return 1;
  }
  // The loop's clock: ejection checks and idle-client sweeps (scans run on their own thread).
  int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (timer_fd < 0) {
    int e = errno;
    ::close(sig_fd);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    spdlog::error("{}", sys_error("timerfd_create", e).to_string());
    return 1;
  }
  struct Cleanup {
    int sig_fd, timer_fd;
    sigset_t mask;
    ~Cleanup() {
      ::close(timer_fd);
      ::close(sig_fd);
      sigprocmask(SIG_SETMASK, &mask, nullptr);
    }
  } cleanup{sig_fd, timer_fd, old_mask};

  PlaneOptions po;
  po.policies = cfg.policies;
  po.switch_all = cfg.switch_all;
  po.initial_slot = *slot;
  po.guard = cfg.guard;
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
  TrackerWorker worker(tracker, std::chrono::milliseconds(cfg.scan_interval_ms));

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
  }
  auto health = [&] {
    json h = source.health();
    h["kernel_read_errors"] = reasoner.read_errors();
    h["pushed_dropped"] = pushed.dropped();
    h["audit"] = audit ? audit->state() : json(nullptr);
    return h;
  };
  DaemonBackend backend(**plane, worker, reasoning, pushed, health, cfg);
  control::Dispatcher dispatcher;
  control::register_v1(dispatcher, backend);
  // Every accepted control action, with the connecting process's credentials, before the socket opens.
  if (audit) {
    dispatcher.set_audit(control::audited_methods(), [&audit](const control::Caller& who, std::string_view method,
                                                              const json& params, const json& result) {
      if (method == "v1.controller" && params.empty()) return;  // a reading, not a change
      audit->record(who, method, params, result);
    });
  }

  auto server = control::UnixServer::listen(cfg.socket_path, cfg.socket_mode, dispatcher, {}, socket_gid);
  if (!server) {
    spdlog::error("{}", server.error().to_string());
    return 1;
  }
  if (auto st = (*plane)->attach(); !st) {
    spdlog::error("{}", st.error().to_string());
    return 1;
  }
  spdlog::info("scheduler attached ({}), slot {} ({}); listening on {}",
               cfg.switch_all ? "all tasks" : "partial mode", *slot, cfg.policies[*slot], cfg.socket_path);

  itimerspec its{};
  its.it_interval.tv_nsec = 100 * 1000000;
  its.it_value.tv_nsec = 1000000;
  if (timerfd_settime(timer_fd, 0, &its, nullptr) != 0) {
    spdlog::error("{}", sys_error("timerfd_settime", errno).to_string());
    return 1;  // the plane's destructor detaches
  }

  int exit_code = 0;
  worker.start();
  reasoner.start();
  spdlog::info("reasoning: controller {}{}, objective {}, telemetry every {} ms", reasoning.controller_name(),
               cfg.reasoning.arbiter.dry_run ? " (dry run)" : "", cfg.reasoning.objective.describe(),
               cfg.reasoning.telemetry.period.count());
  while (true) {
    auto fds = (*server)->poll_fds();
    fds.push_back({sig_fd, POLLIN, 0});
    fds.push_back({timer_fd, POLLIN, 0});
    // Requests already received but not yet answered (a client's turn ran out): do not block.
    if (::poll(fds.data(), fds.size(), (*server)->backlog() ? 0 : -1) < 0 && errno != EINTR) break;
    if (fds[fds.size() - 2].revents) {
      signalfd_siginfo si{};
      (void)!::read(sig_fd, &si, sizeof(si));
      spdlog::info("signal {}: shutting down", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
      break;
    }
    if (fds.back().revents) {
      uint64_t ticks;
      (void)!::read(timer_fd, &ticks, sizeof(ticks));
      auto ei = (*plane)->exit_info();
      if (ei.kind != 0) {
        report_exit(ei);
        exit_code = 1;
        break;
      }
      (*server)->sweep(control::UnixServer::Clock::now());
    }
    fds.resize(fds.size() - 2);
    (*server)->on_ready(fds);
  }

  reasoner.stop();
  worker.stop();
  tracker.restore_all();
  server->reset();
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
