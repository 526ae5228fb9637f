// A reload: the config compared key by key, what can fail built first, then what changed swapped in.
#include "daemon/reload.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "reasoning/decision_log.h"

namespace akts {

using nlohmann::json;

namespace {

bool has(const std::vector<std::string>& keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

// Whether controller `name`'s own settings are the same in `a` and `b` (names of policies resolved to slots).
bool same_settings(const std::string& name, const ControllerConfig& a, const ControllerConfig& b) {
  if (name == "detector")
    return a.detector == b.detector && a.detector_burst == b.detector_burst && a.detector_calm == b.detector_calm;
  if (name == "bandit") return a.bandit == b.bandit;
  if (name == "learner") return a.learner == b.learner;
  if (name == "llm") return a.llm == b.llm;
  if (name == "oracle") return a.oracle_schedule == b.oracle_schedule;
  return true;  // none
}

// The arbiter's rules that run now, with those the file changed (a dry run an operator turned on stays on
// unless the file changes dry_run).
ArbiterOptions changed_fields(ArbiterOptions live, const ArbiterOptions& was, const ArbiterOptions& next) {
  if (was.min_dwell != next.min_dwell) live.min_dwell = next.min_dwell;
  if (was.max_switches_per_minute != next.max_switches_per_minute)
    live.max_switches_per_minute = next.max_switches_per_minute;
  if (was.operator_grace != next.operator_grace) live.operator_grace = next.operator_grace;
  if (was.dry_run != next.dry_run) live.dry_run = next.dry_run;
  return live;
}

}  // namespace

Result<std::vector<std::string>> Reloader::apply(const ReloadTargets& t) {
  auto next = load_();
  if (!next) return next.error();
  ConfigDiff d = diff_configs(t.cfg, *next);
  if (!d.restart.empty())
    return errorf(ErrorKind::kInvalidArgument,
                  "{} {} read at start only: restart the daemon to apply {} (systemctl restart akts)",
                  fmt::join(d.restart, ", "), d.restart.size() == 1 ? "is" : "are",
                  d.restart.size() == 1 ? "it" : "them");
  const ReasoningConfig &now = t.cfg.reasoning, &nr = next->reasoning;
  ReasoningPlane& rp = *t.reasoning.plane;
  // What can fail, built first: a refusal here changes nothing.
  std::optional<Telemetry> telemetry;
  if (has(d.live, "telemetry")) {
    auto tm = Telemetry::make(nr.telemetry, t.plane, rp, t.pushed);
    if (!tm) return errorf(tm.error().kind, "telemetry: {}", tm.error().to_string());
    telemetry = std::move(*tm);
  }
  // The controller: the file's when the file names another; else the one running (the file's, or one an
  // operator chose), built anew only when the file changed its own settings.
  const ControllerConfig was = resolved(now.controller, t.cfg.policies), will = resolved(nr.controller, next->policies);
  const bool new_factory = !(was == will);
  const std::string running = rp.controller_name();
  std::optional<std::string> build;  // the controller to build, by name
  if (was.name != will.name)
    build = will.name;
  else if (!same_settings(running, was, will))
    build = running;
  ControllerFactory factory = new_factory ? make_controller_factory(nr.controller) : ControllerFactory{};
  std::unique_ptr<Controller> controller;
  if (build && *build != "none") {
    auto c = factory(*build, rp.slots());
    if (!c) return errorf(c.error().kind, "controller {}: {}", *build, c.error().to_string());
    controller = std::move(*c);
  }
  std::optional<Fd> log_fd;
  if (has(d.live, "decision_log")) {
    auto fd = DecisionLog::open_file(nr.log);
    if (!fd) return fd.error();
    log_fd = std::move(*fd);
  }

  // Nothing below fails but by an exception (a thread that cannot start): reload() says so.
  if (log_fd) rp.retarget_log(nr.log, std::move(*log_fd));
  if (has(d.live, "classes")) t.tracking.worker->set_rules(next->matchers, Tracking::rescan_period(*next));
  if (telemetry) {
    // Before a controller changes: the window under way, which the old thread is let finish, holds no
    // controller retired by this reload (whose end could take an llm controller's timeout).
    Telemetry& running = t.reasoning.telemetry;
    running.worker->stop();
    telemetry->worker->continue_from(*running.worker);
    telemetry->source->continue_from(*running.source);
    running.worker = std::move(telemetry->worker);  // the old thread goes before the sources it read
    running.source = std::move(telemetry->source);
    running.worker->start();
  }
  if (has(d.live, "objective")) rp.set_objective(nr.objective, "reload");
  if (!(now.arbiter == nr.arbiter))
    rp.set_arbiter_options(changed_fields(rp.arbiter_options(), now.arbiter, nr.arbiter), "reload");
  if (build)
    rp.install_controller(std::move(factory), std::move(controller), "reload");
  else if (new_factory)
    rp.set_factory(std::move(factory));
  t.cfg = std::move(*next);
  return d.live;
}

Result<json> Reloader::reload(const ReloadTargets& t, const std::string& source) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::vector<std::string>> changed = std::vector<std::string>{};
  bool partial = false;  // an exception while applying: what came before it stays
  try {
    changed = apply(t);
  } catch (const std::exception& e) {
    partial = true;
    changed = errorf(ErrorKind::kSystem, "failed while applying the change: {}; what was applied before it stays, "
                     "and the next reload applies the rest", e.what());
  }
  const double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  last_ = {{"at", utc_now_rfc3339()}, {"source", source}, {"ok", static_cast<bool>(changed)}, {"took_ms", took_ms}};
  ++reloads_;
  if (!changed) {
    ++(partial ? failed_ : refused_);
    last_["error"] = changed.error().to_string();
    last_["partial"] = partial;
    spdlog::error("reload ({}) {}: {}", source, partial ? "failed" : "refused, nothing changed",
                  changed.error().to_string());
    if (partial) return changed.error();
    // A refusal is the file's (or what it asks for cannot be built): the caller's error, whatever failed inside.
    return errorf(ErrorKind::kInvalidArgument, "{}", changed.error().to_string());
  }
  last_["changed"] = *changed;
  spdlog::info("reload ({}): {}", source,
               changed->empty() ? std::string("nothing changed in the config")
                                : fmt::format("applied {}", fmt::join(*changed, ", ")));
  return last_;
}

json Reloader::state() const {
  return {{"reloads", reloads_}, {"refused", refused_}, {"failed", failed_}, {"last", last_}};
}

TerminalWatch::TerminalWatch() : parent_(static_cast<uint32_t>(::getppid())) {
  for (int fd : {0, 1, 2})
    if (::isatty(fd)) ttys_.push_back(fd);
}

bool TerminalWatch::closed(uint32_t sender) const {
  if (ttys_.empty()) return false;
  // Its parent: the one it had at start (it may be gone by the time the signal is read), or the one now.
  if (sender != 0 && (sender == parent_ || sender == static_cast<uint32_t>(::getppid()))) return true;
  if (sender != 0) return false;  // another process's kill -HUP
  for (int fd : ttys_) {  // the kernel's: a terminal's hang-up
    errno = 0;
    if (!::isatty(fd) && errno == EIO) return true;
  }
  return false;
}

}  // namespace akts
