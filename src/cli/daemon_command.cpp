// `akts daemon`: its flags merged into the config file's document, the config checked whole (--check-config
// prints it), then the daemon run (src/daemon/).
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "akts.h"
#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/http_url.h"
#include "config/daemon_config.h"
#include "daemon/daemon.h"
#include "exec/policy_library.h"
#include "reasoning/controller.h"

namespace akts::cli {
namespace {

std::vector<std::string> known_policies() {
  std::vector<std::string> names;
  for (const auto& p : builtin_policies()) names.emplace_back(p.name);
  return names;
}

struct DaemonFlags {
  std::string config;
  bool check_config = false;
  std::string socket;
  std::vector<std::string> policies;
  std::string initial;
  bool switch_all = false;
  std::string controller;
  bool dry_run = false;
  bool json = false;
  std::optional<std::string> metrics_listen;
};

// The config as the flags and the file say, checked whole: at start, and again at every reload.
Result<DaemonConfig> load_daemon_config(const DaemonFlags& f) {
  // Flags override the file's keys: they are merged into its document, which is then checked as a whole, so
  // every key the flags do not name keeps the file's value.
  nlohmann::json overrides = nlohmann::json::object();
  if (!f.socket.empty()) overrides["socket"] = f.socket;
  if (!f.policies.empty()) overrides["policies"] = f.policies;
  if (!f.initial.empty()) overrides["initial"] = f.initial;
  if (f.switch_all) overrides["switch_all"] = true;
  if (f.metrics_listen) overrides["metrics_listen"] = *f.metrics_listen;
  nlohmann::json doc = nlohmann::json::object();
  if (!f.config.empty()) {
    auto d = read_config_document(f.config);
    if (!d) return d.error();
    doc = std::move(*d);
  }
  doc.update(overrides);
  if (overrides.contains("policies") && !overrides.contains("initial")) doc["initial"] = "0";
  auto parsed = parse_config(doc.dump(), known_policies());
  if (!parsed) {
    std::string where = f.config.empty() ? "" : f.config + (overrides.empty() ? ": " : " with the flags: ");
    return errorf(ErrorKind::kInvalidArgument, "{}{}", where, parsed.error().to_string());
  }
  DaemonConfig cfg = std::move(*parsed);
  if (!f.controller.empty()) cfg.reasoning.controller.name = f.controller;
  if (f.dry_run) cfg.reasoning.arbiter.dry_run = true;
  if (auto st = check_reasoning_config(cfg.reasoning, cfg.policies); !st) return st.error();
  return cfg;
}

int cmd_daemon(DaemonFlags f) {
  auto refuse = [&](const std::string& why) {
    if (f.json)
      std::cout << nlohmann::json{{"valid", false}, {"error", why}}.dump(2) << "\n";
    else
      std::cerr << "akts: " << why << "\n";
    return kExitUsage;
  };
  if (!f.controller.empty()) {
    bool known = false;
    for (const auto& n : kControllerNames) known = known || n == f.controller;
    if (!known)
      return refuse(fmt::format("--controller: '{}' is not a controller ({})", f.controller,
                                fmt::join(kControllerNames, ", ")));
  }
  auto loaded = load_daemon_config(f);
  if (!loaded) return refuse(loaded.error().to_string());
  DaemonConfig cfg = std::move(*loaded);
  if (f.check_config) {
    if (f.json) {
      nlohmann::json m = nlohmann::json::array();
      for (const auto& x : cfg.matchers)
        m.push_back({{"match", x.describe()}, {"class", x.cls == AKTS_CLASS_LC ? "lc" : "be"}});
      std::cout << nlohmann::json{{"valid", true},
                                  {"socket", cfg.socket_path},
                                  {"policies", cfg.policies},
                                  {"initial", cfg.initial},
                                  {"switch_all", cfg.switch_all},
                                  {"controller", cfg.reasoning.controller.name},
                                  {"dry_run", cfg.reasoning.arbiter.dry_run},
                                  {"objective", cfg.reasoning.objective.to_json()},
                                  {"telemetry_period_ms", cfg.reasoning.telemetry.period.count()},
                                  {"decision_log", cfg.reasoning.log.path},
                                  {"audit_log", cfg.audit_log},
                                  {"socket_group", cfg.socket_group},
                                  {"metrics_listen", cfg.metrics_listen},
                                  {"process_events", cfg.process_events},
                                  {"scan_interval_ms", cfg.scan_interval_ms},
                                  {"rescan_interval_ms", cfg.effective_rescan_ms()},
                                  {"breaker", cfg.breaker.to_json()},
                                  {"classes", m}}
                       .dump(2)
                << "\n";
    } else {
      std::cout << fmt::format("config OK: socket {} (mode {:04o}{}), policies {}, initial {}, {}\n", cfg.socket_path,
                               cfg.socket_mode, cfg.socket_group.empty() ? "" : ", group " + cfg.socket_group,
                               fmt::join(cfg.policies, ","), cfg.initial, cfg.switch_all ? "all tasks" : "partial mode");
      std::cout << fmt::format("audit log: {}\n", cfg.audit_log.empty() ? "none" : cfg.audit_log);
      std::cout << fmt::format("processes: {}\n", cfg.process_events
                                                         ? fmt::format("followed by the kernel's events, rescanned every {} ms",
                                                                       std::max(cfg.scan_interval_ms, cfg.effective_rescan_ms()))
                                                         : fmt::format("scanned every {} ms", cfg.scan_interval_ms));
      std::string metrics = "not served (metrics_listen)";
      if (auto a = parse_listen_address(cfg.metrics_listen, "metrics_listen", "127.0.0.1"); a)
        metrics = fmt::format("http://{}:{}/metrics", a->host.find(':') != std::string::npos ? "[" + a->host + "]" : a->host,
                              a->port);
      std::cout << fmt::format("metrics: {}\n", metrics);
      if (cfg.breaker.armed)
        std::cout << fmt::format("breaker: armed for {}, trips at an oldest wait of {} ms{}, safe slot {}, cool-down {} ms\n",
                                 cfg.breaker.cls == AKTS_CLASS_LC ? "lc" : "be",
                                 cfg.breaker.oldest.count() / 1000000,
                                 cfg.breaker.p99.count() ? fmt::format(" or a wait p99 over {} ms",
                                                                       cfg.breaker.p99.count() / 1000000)
                                                         : "",
                                 cfg.breaker_safe_slot, cfg.breaker.cooldown.count() / 1000000);
      else
        std::cout << "breaker: disarmed\n";
      std::cout << fmt::format("reasoning: controller {}{}, objective {}, telemetry every {} ms, decision log {}\n",
                               cfg.reasoning.controller.name, cfg.reasoning.arbiter.dry_run ? " (dry run)" : "",
                               cfg.reasoning.objective.describe(), cfg.reasoning.telemetry.period.count(),
                               cfg.reasoning.log.path.empty() ? "in memory only" : cfg.reasoning.log.path);
      for (const auto& x : cfg.matchers)
        std::cout << fmt::format("  {:<32} -> {}\n", x.describe(), x.cls == AKTS_CLASS_LC ? "lc" : "be");
    }
    return kExitOk;
  }
  // A reload reads the same file, with the same flags, wherever the working directory is by then.
  std::error_code ec;
  if (!f.config.empty()) f.config = std::filesystem::absolute(f.config, ec).string();
  return run_daemon(std::move(cfg), [f] { return load_daemon_config(f); });
}

}  // namespace

void add_daemon_command(Commands& c) {
  auto& app = c.app();
  auto& df = c.keep<DaemonFlags>();
  auto* daemon = app.add_subcommand("daemon",
                                    "Own the scheduler: load and verify the library, attach, serve the control socket, place\n"
                                    "processes by class. akts reload, systemctl reload and SIGHUP read the config again (in a\n"
                                    "terminal, use akts reload: a SIGHUP from its parent shell means the terminal closed).\n"
                                    "SIGINT, SIGTERM, or its terminal closing, stop it cleanly (docs/deploy.md, Reload).");
  daemon->add_option("-c,--config", df.config, "JSON config (socket, policies, initial, switch_all, classes)");
  daemon->add_flag("--check-config", df.check_config, "validate the config and print it, then exit");
  daemon->add_option("--socket", df.socket, "control socket path (default /run/akts/akts.sock)");
  daemon->add_option("--policies", df.policies, "policies in slot order (default: latency throughput)")
      ->delimiter(',');
  daemon->add_option("--initial", df.initial, "the policy (name or slot) selected at attach");
  daemon->add_flag("--switch-all", df.switch_all, "manage every task, not only SCHED_EXT ones");
  daemon->add_option("--controller", df.controller,
                     "who switches policies: none (operators only), detector, bandit, learner, llm, oracle (overrides the "
                     "config)");
  daemon->add_flag("--dry-run", df.dry_run, "log the controller's decisions without applying them");
  daemon->add_flag("--json", df.json, "with --check-config: print JSON");
  daemon->add_option("--metrics-listen", df.metrics_listen,
                     "serve Prometheus metrics over HTTP at http://ADDR/metrics: HOST:PORT, or a PORT alone on\n"
                     "127.0.0.1 (off by default; OpenMetrics when the scraper's Accept header asks for it).\n"
                     "Another host (0.0.0.0, a node's address) exposes them to its network: a fleet's Prometheus");
  c.on(daemon, [&] { return cmd_daemon(df); });
}

}  // namespace akts::cli
