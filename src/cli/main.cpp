// akts: the command line. Each subcommand parses its arguments strictly, does
// its work through the library (or the daemon's socket), and turns errors into
// a message and an exit status here, and only here.
//
// Exit status: 0 done, 1 failed, 2 bad input (nothing changed), 3 no daemon.
#include <unistd.h>

#include <cmath>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "akts.h"
#include "bench.h"
#include "config/daemon_config.h"
#include "common/build_info.h"
#include "common/http_url.h"
#include "metrics/exposition.h"
#include "cli/client_commands.h"
#include "cli/serving_commands.h"
#include "cli/admit_commands.h"
#include "cli/param_commands.h"
#include "cli/workload_commands.h"
#include "workload/scenarios.h"
#include "cli/mcp_command.h"
#include "cli/repo_commands.h"
#include "common/log.h"
#include "common/exit_codes.h"
#include "common/parse.h"
#include "daemon/daemon.h"
#include "reasoning/controller.h"
#include "exec/policy_library.h"
#include "selftest/selftest.h"

namespace {

using akts::kExitFail;
using akts::kExitOk;
using akts::kExitUsage;

std::vector<std::string> known_policies() {
  std::vector<std::string> names;
  for (const auto& p : akts::builtin_policies()) names.emplace_back(p.name);
  return names;
}

int cmd_selftest(const akts::SelftestOptions& opts, bool json) {
  if (geteuid() != 0) spdlog::warn("selftest loads BPF programs and usually needs root");
  auto report = akts::run_selftest(opts);
  if (json)
    std::cout << report.to_json().dump(2) << "\n";
  else
    std::cout << report.to_text();
  return report.passed() ? kExitOk : kExitFail;
}

int cmd_library(bool json) {
  nlohmann::json j = nlohmann::json::array();
  uint32_t slot = 0;
  for (const auto& p : akts::builtin_policies()) {
    if (json)
      j.push_back({{"default_slot", slot}, {"name", p.name}, {"summary", p.summary}, {"pick_when", p.pick_when}});
    else
      std::cout << fmt::format("{:>4}  {:<12} {}\n      {:<12} pick: {}\n", slot, p.name, p.summary, "", p.pick_when);
    ++slot;
  }
  if (json) std::cout << j.dump(2) << "\n";
  return kExitOk;
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

int cmd_daemon(const DaemonFlags& f) {
  auto refuse = [&](const std::string& why) {
    if (f.json)
      std::cout << nlohmann::json{{"valid", false}, {"error", why}}.dump(2) << "\n";
    else
      std::cerr << "akts: " << why << "\n";
    return kExitUsage;
  };
  if (!f.controller.empty()) {
    bool known = false;
    for (const auto& n : akts::kControllerNames) known = known || n == f.controller;
    if (!known)
      return refuse(fmt::format("--controller: '{}' is not a controller ({})", f.controller,
                                fmt::join(akts::kControllerNames, ", ")));
  }
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
    auto d = akts::read_config_document(f.config);
    if (!d) return refuse(d.error().to_string());
    doc = std::move(*d);
  }
  doc.update(overrides);
  if (overrides.contains("policies") && !overrides.contains("initial")) doc["initial"] = "0";
  auto parsed = akts::parse_config(doc.dump(), known_policies());
  if (!parsed) {
    std::string where = f.config.empty() ? "" : f.config + (overrides.empty() ? ": " : " with the flags: ");
    return refuse(where + parsed.error().to_string());
  }
  akts::DaemonConfig cfg = std::move(*parsed);
  if (!f.controller.empty()) cfg.reasoning.controller.name = f.controller;
  if (f.dry_run) cfg.reasoning.arbiter.dry_run = true;
  if (auto st = akts::check_reasoning_config(cfg.reasoning, cfg.policies); !st) return refuse(st.error().to_string());
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
      if (auto a = akts::parse_listen_address(cfg.metrics_listen, "metrics_listen", "127.0.0.1"); a)
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
  return akts::run_daemon(cfg);
}

void add_client_flags(CLI::App* sub, akts::cli::ClientOptions& o) {
  sub->add_flag("--json", o.json, "print JSON");
  sub->add_option("--socket", o.socket, "the daemon's control socket")->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "akts: switch sched_ext scheduling policies at run time by writing one integer.\n"
      "A library of policies is verified once at load time; a dispatcher tail-calls the selected one.\n"
      "An index that names no policy falls through to a safe default.\n\n"
      "  sudo akts daemon --config /etc/akts/akts.json   own the scheduler, serve the socket\n"
      "  akts policies | akts switch latency | akts status | akts stats --interval 1s\n"
      "  akts run --class lc -- CMD                       run CMD as latency-critical\n"
      "  akts controller detector | akts hold latency --for 30s | akts log   who switches, and why\n"
      "Exit status: 0 done, 1 failed, 2 bad input (nothing changed), 3 no daemon."};
  app.require_subcommand(1);
  int verbose = 0;
  app.add_flag("-v,--verbose", verbose, "more output (-v: debug and libbpf's log, -vv: trace)");
  app.set_version_flag("--version", fmt::format("akts {} (commit {})", akts::build_version(), akts::build_commit()));

  // daemon
  DaemonFlags df;
  auto* daemon = app.add_subcommand("daemon",
                                    "Own the scheduler: load and verify the library, attach, serve the control "
                                    "socket, place processes by class. Stops cleanly on SIGINT/SIGTERM.");
  daemon->add_option("-c,--config", df.config, "JSON config (socket, policies, initial, switch_all, classes)");
  daemon->add_flag("--check-config", df.check_config, "validate the config and print it, then exit");
  daemon->add_option("--socket", df.socket, "control socket path (default /run/akts/akts.sock)");
  daemon->add_option("--policies", df.policies, "policies in slot order (default: latency throughput)")
      ->delimiter(',');
  daemon->add_option("--initial", df.initial, "the policy (name or slot) selected at attach");
  daemon->add_flag("--switch-all", df.switch_all, "manage every task, not only SCHED_EXT ones");
  daemon->add_option("--controller", df.controller,
                     "who switches policies: none (operators only), detector, bandit, llm, oracle (overrides the "
                     "config)");
  daemon->add_flag("--dry-run", df.dry_run, "log the controller's decisions without applying them");
  daemon->add_flag("--json", df.json, "with --check-config: print JSON");
  daemon->add_option("--metrics-listen", df.metrics_listen,
                     "serve Prometheus metrics over HTTP at http://ADDR/metrics: HOST:PORT, or a PORT alone on\n"
                     "127.0.0.1 (off by default; OpenMetrics when the scraper's Accept header asks for it).\n"
                     "Another host (0.0.0.0, a node's address) exposes them to its network: a fleet's Prometheus");

  // client commands
  akts::cli::ClientOptions co;
  auto* policies = app.add_subcommand("policies", "List the loaded policies by slot, and which one runs.");
  add_client_flags(policies, co);

  std::string target;
  bool force = false;
  auto* sw = app.add_subcommand("switch",
                                "Select a policy by slot number or name. Empty and out-of-range slots are refused\n"
                                "unless --force (then the dispatcher runs its built-in default).");
  sw->add_option("target", target, "slot number or policy name")->required();
  sw->add_flag("--force", force, "select even an empty or out-of-range slot");
  add_client_flags(sw, co);

  auto* status = app.add_subcommand("status", "Scheduler state, selected and running policy, managed processes.");
  add_client_flags(status, co);

  std::string interval_text;
  int count = 0;
  auto* stats = app.add_subcommand("stats",
                                   "Per-slot invocations, per-class wait p50/p99 and the bounded-wait guard (oldest "
                                   "waiter now,\nexact longest wait, rescues). Without --interval: the totals since "
                                   "attach; with it: one\nline per interval (like the scx schedulers' stats).");
  stats->add_option("-i,--interval", interval_text, "e.g. 1s, 500ms");
  stats->add_option("-n,--count", count, "intervals to print (default: until interrupted)")->check(CLI::Range(0, 1000000));
  bool reset_longest = false;
  std::string stats_format;
  auto* prom_flag = stats->add_flag("--prometheus{prometheus}", stats_format,
                  "print the totals once in the Prometheus text format (the daemon's /metrics, see akts daemon "
                  "--metrics-listen)");
  stats->add_flag("--openmetrics{openmetrics}", stats_format, "the same in the OpenMetrics 1.0 text format")
      ->excludes(prom_flag);
  stats->add_flag("--reset-longest", reset_longest,
                  "start the exact longest waits afresh after each reading (the daemon keeps one set for all "
                  "clients)");
  add_client_flags(stats, co);

  std::string run_class = "lc";
  std::vector<std::string> run_argv;
  auto* run = app.add_subcommand("run", "Run a command in a class (default lc); its threads and children follow.");
  run->add_option("--class", run_class, "lc or be")->check(CLI::IsMember({"lc", "be"}));
  run->add_option("--socket", co.socket, "the daemon's control socket")->capture_default_str();
  run->add_option("command", run_argv, "the command and its arguments (after --)")->required();

  std::string cl_pid, cl_class;
  auto* classify = app.add_subcommand(
      "classify",
      "Put a running process (and its threads, children) in a class; without a class, show the class\nthe kernel "
      "applies to it now and what the daemon's rules decided.");
  classify->add_option("pid", cl_pid, "process id")->required();
  classify->add_option("class", cl_class, "lc or be")->check(CLI::IsMember({"lc", "be"}));
  add_client_flags(classify, co);

  std::string hint_tid, hint_left;
  bool hint_clear = false;
  auto* hintc = app.add_subcommand(
      "hint",
      "Tell the scheduler how much CPU time a thread's current work still needs (the srpt policy runs the\n"
      "least remaining first; a thread with no hint, or one that outruns it, falls back to round-robin).\n"
      "The thread must be scheduled by akts: in SCHED_EXT (akts classify its process first), or any thread\n"
      "when the daemon runs with --switch-all. Examples:\n"
      "  akts hint 4242 30ms        (thread 4242's request needs about 30 ms more)\n"
      "  akts hint 4242 --clear");
  hintc->add_option("tid", hint_tid, "thread id (a process id names its main thread)")->required();
  hintc->add_option("remaining", hint_left, "CPU time still needed: 1us to 3600s, e.g. 250us, 30ms, 2s");
  hintc->add_flag("--clear", hint_clear, "remove the thread's hint");
  add_client_flags(hintc, co);

  std::string hold_target, hold_for;
  auto* holdc = app.add_subcommand(
      "hold",
      "Select a policy and keep it: every other switch (an operator's, a controller's) is refused until the\n"
      "time passes or `akts release`. Only the in-kernel breaker's override ranks above a hold.");
  holdc->add_option("policy", hold_target, "slot number or policy name")->required();
  holdc->add_option("--for", hold_for, "how long, e.g. 30s, 5m (at most 24h)")->required();
  add_client_flags(holdc, co);
  auto* releasec = app.add_subcommand("release", "End a hold (and an operator's grace): controllers may switch again.");
  add_client_flags(releasec, co);

  std::vector<std::string> objective_words;
  auto* objc = app.add_subcommand(
      "objective",
      "Show the objective, or set it from the goal in words: one signal (\"wait\": the LC tasks' scheduling\n"
      "wait; \"request\" or \"TTFT\": the latency the application pushes) and one ceiling, e.g.\n"
      "  akts objective keep the LC wait p99 under 20 ms\n"
      "  akts objective request latency p99 below 500ms\n"
      "Controllers, the bandit's reward and the decision log use it from the next window.");
  objc->add_option("goal", objective_words, "the goal in words (none: show the objective)");
  add_client_flags(objc, co);

  akts::cli::McpFlags mf;
  auto* mcpc = app.add_subcommand(
      "mcp",
      "The MCP server (Model Context Protocol 2025-11-25) for agents, over the daemon's control socket: the\n"
      "daemon's checks and audit apply to every call. Tools: list_policies, get_status, get_telemetry,\n"
      "switch_policy, get_parameters, set_parameter, hint, get_decision_history, set_objective, hold,\n"
      "release, run_workload, admit_policy, evict_policy (--no-workloads leaves run_workload out).\n"
      "Resources: each policy's documentation\n"
      "(akts://policies/NAME) and the decision log (akts://decisions).\n"
      "Default: stdio (one message a line; logs on stderr), e.g. for a client's config:\n"
      "  {\"command\": \"akts\", \"args\": [\"mcp\"]}\n"
      "--http 127.0.0.1:8765: Streamable HTTP on loopback at --path; every request needs\n"
      "  Authorization: Bearer $(cat /run/akts/mcp.token)\n"
      "(the file is made at first start, readable by root, or --group too).");
  mcpc->add_option("--socket", mf.socket, "the daemon's control socket")->capture_default_str();
  mcpc->add_option("--http", mf.http, "serve Streamable HTTP on HOST:PORT (loopback only) instead of stdio");
  mcpc->add_option("--path", mf.path, "the HTTP endpoint")->capture_default_str();
  mcpc->add_option("--token-file", mf.token_file, "the HTTP credential (created 0600 if missing)")
      ->capture_default_str();
  mcpc->add_option("--group", mf.group, "a group that may read the token file (mode 0640)");
  mcpc->add_option("--page-size", mf.page_size, "entries per page of tools/list and resources/list")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  bool mcp_no_workloads = false;
  mcpc->add_flag("--no-workloads", mcp_no_workloads, "leave out run_workload (it starts benchmark programs)");

  akts::cli::AdmitFlags af;
  auto* admitc = app.add_subcommand(
      "admit",
      "Admit a new policy into a free slot of the running scheduler, with no detach, through the gates:\n"
      "  1 compile  (a .c file) clang against the kernel's BTF (--btf) and akts's headers\n"
      "  2 static   the program set, an instruction budget, the contract's kernel functions and helpers\n"
      "  3 dynamic  a passing run of this exact object in a throwaway guest, on record beside it\n"
      "             (<object>.dynamic.json, its SHA-256, written by ./akts admit-test OBJECT); --force-untested\n"
      "             admits without one, and says so\n"
      "  4 verifier the kernel's verifier, loading into the slot (undone if any step fails)\n"
      "  5 canary   (--canary 10s) selected for a while on the live node, reverted if waits or the objective degrade\n"
      "Gates 1 and 2 run here; the daemon checks 2 again and runs 3 and 4. --check stops after 2 (no daemon)\n"
      "and keeps the compiled object (its path is printed); otherwise it goes when the command ends.\n"
      "Each gate prints its verdict and evidence. Exit: 0 admitted, 1 refused by a gate, 2 bad input, 3 no daemon.");
  admitc->add_option("file", af.file, "the candidate: BPF C source (.c) or a compiled object (.o)")->required();
  admitc->add_flag("--check", af.check_only, "run gates 1 and 2 only");
  admitc->add_option("--name", af.name, "the policy's name (default: its programs' prefix)");
  admitc->add_option("--slot", af.slot, "the slot (default: the first free one)")
      ->check(CLI::Range(0, static_cast<int>(AKTS_MAX_SLOTS) - 1));
  admitc->add_option("--record", af.record, "gate 3's record (default: <object>.dynamic.json)");
  admitc->add_flag("--force-untested", af.force_untested, "admit without a passing gate 3 record");
  admitc->add_flag("--replace", af.replace,
                   "replace the policy in --slot (never the running one; the old one is put back if a step fails)");
  admitc->add_option("--canary", af.canary,
                     "gate 5: hold the new policy selected this long (1s to 10m) with the breaker armed; reverted and "
                     "evicted if the bounded wait or the objective degrades");
  admitc->add_option("--description", af.description, "for the policy repository");
  admitc->add_option("--pick-when", af.pick_when, "for the policy repository and agents");
  admitc->add_option("--btf", af.btf, "the kernel BTF to compile against")->capture_default_str();
  admitc->add_option("--include", af.include_dirs, "akts's BPF header directories (default: installed or built)");
  add_client_flags(admitc, co);
  std::string evict_target;
  auto* evictc = app.add_subcommand(
      "evict", "Take a policy out of its slot while the scheduler runs (never the selected, running or breaker-safe one).");
  evictc->add_option("policy", evict_target, "slot number or policy name")->required();
  add_client_flags(evictc, co);
  std::string params_policy, set_target, set_value;
  auto* paramsc = app.add_subcommand(
      "params", "The live parameters of the loaded policies (or of one): type, range, default, the value in force.");
  paramsc->add_option("policy", params_policy, "a policy's name or slot (default: every loaded policy)");
  add_client_flags(paramsc, co);
  auto* setc = app.add_subcommand(
      "set",
      "Change a policy's live parameter while it runs, e.g.\n"
      "  akts set throughput.slice 5ms      (durations: ns, us, ms, s)\n"
      "The daemon checks the value against the parameter's type and range (akts params lists them), writes\n"
      "it in one store the policy reads at its next use (it clamps again), and logs the change (akts log).\n"
      "Out of range or malformed: refused, nothing changed (exit 2).");
  setc->add_option("target", set_target, "POLICY.PARAM (a name or a slot number before the dot)")->required();
  setc->add_option("value", set_value, "the new value, as the parameter's type takes it")->required();
  add_client_flags(setc, co);

  akts::cli::RepoFlags rf;
  auto* repoc = app.add_subcommand(
      "repo",
      "The policy repository: one schema-checked record per policy (description, when to pick it, parameters,\n"
      "results per workload) in a directory; the daemon seeds the built-ins and serves them to agents\n"
      "(list_policies), run_workload and the benchmarks append results. Works on the files, no daemon needed.");
  repoc->require_subcommand(1);
  auto add_dir = [&](CLI::App* a) {
    a->add_option("--dir", rf.dir, "the repository")->capture_default_str();
    a->add_flag("--json", rf.json, "print JSON");
  };
  auto* repo_list = repoc->add_subcommand("list", "Every record: origin, parameters, results, the latest per workload.");
  add_dir(repo_list);
  auto* repo_show = repoc->add_subcommand("show", "One record, whole, as JSON.");
  repo_show->add_option("policy", rf.name, "the policy's name")->required();
  add_dir(repo_show);
  auto* repo_seed = repoc->add_subcommand("seed", "Write the built-in policies' records (their results are kept).");
  add_dir(repo_seed);
  auto* repo_add = repoc->add_subcommand(
      "add-result", "Append a result to a policy's record, e.g.\n"
                    "  akts repo add-result latency --workload serving --metric burst_ttft_p99_ms=520 --emulated");
  repo_add->add_option("policy", rf.name, "the policy's name")->required();
  repo_add->add_option("--workload", rf.workload, "what ran (e.g. serving, hackbench)")->required();
  repo_add->add_option("--metric", rf.metrics, "NAME=NUMBER, once per metric")->required();
  repo_add->add_option("--source", rf.source, "who measured it")->capture_default_str();
  repo_add->add_option("--kernel", rf.kernel, "the kernel it ran on");
  repo_add->add_flag("--emulated", rf.emulated, "measured under emulation (QEMU TCG)");
  add_dir(repo_add);

  std::string ctl_name;
  bool ctl_dry = false, ctl_apply = false;
  auto* ctlc = app.add_subcommand(
      "controller",
      "Show or change who switches policies, at run time: none (operators only), detector (regime detector),\n"
      "bandit (contextual bandit), llm (a model behind an OpenAI-compatible endpoint), oracle (a schedule).\n"
      "Precedence: breaker override > hold > operator switch > controller (see `akts hold`).");
  ctlc->add_option("name", ctl_name, "the controller to run")->check(CLI::IsMember(akts::kControllerNames));
  auto* dry_flag = ctlc->add_flag("--dry-run", ctl_dry, "log its decisions without applying them");
  auto* apply_flag = ctlc->add_flag("--apply", ctl_apply, "apply its decisions (ends a dry run)");
  dry_flag->excludes(apply_flag);
  add_client_flags(ctlc, co);

  uint32_t log_limit = 30;
  auto* logc = app.add_subcommand(
      "log",
      "The decision log: each decision (controller or operator), what was proposed, whether it applied and\n"
      "why, and the reward one and five periods later. --json prints one JSON line per decision.");
  logc->add_option("-n,--limit", log_limit, "decisions to show (latest last, at most 500)")->check(CLI::Range(1, 500));
  bool log_follow = false;
  logc->add_flag("-f,--follow", log_follow,
                 "then print each new decision as it is made, until the daemon stops (rewards show in a later `akts "
                 "log`)");
  add_client_flags(logc, co);

  uint32_t telemetry_last = 20;
  auto* telc = app.add_subcommand(
      "telemetry",
      "The telemetry windows controllers see (one per period, the last 600 kept): per class CPU time run and\n"
      "waited, CPU busy and batch share, queued tasks, the application's in-flight requests and pushed latency.\n"
      "--json prints one window a line, with every field.");
  telc->add_option("-n,--last", telemetry_last, "windows to show (oldest first, at most 600)")->check(CLI::Range(1, 600));
  add_client_flags(telc, co);

  std::vector<double> push_ms;
  auto* pushc = app.add_subcommand(
      "push", "Send request latencies the daemon cannot see (e.g. TTFT measured by a proxy) into the telemetry.");
  pushc->add_option("latency_ms", push_ms, "latencies in milliseconds")->required()->check(CLI::Range(0.0, 3600e3));
  add_client_flags(pushc, co);

  akts::cli::WorkloadFlags wf;
  auto* workloadc = app.add_subcommand(
      "workload",
      "Run one named benchmark scenario (the ones MCP's run_workload runs) and print its figures:\n"
      "  wakeup_latency  cyclictest (LC) beside stress-ng on every CPU (BE): wake-up latency, BE bogo ops/s\n"
      "  hackbench       hackbench -g 4 (BE): seconds for 100 loops per --seconds\n"
      "  cpu_throughput  sysbench cpu on every CPU (BE): events/s\n"
      "With --socket, each process is classified (LC/BE) through that daemon before it executes, e.g.\n"
      "  akts workload hackbench --seconds 3 --socket /run/akts/akts.sock --json");
  workloadc->add_option("scenario", wf.scenario, "wakeup_latency, hackbench or cpu_throughput")
      ->required()
      ->check(CLI::IsMember(akts::workload::scenario_names()));
  workloadc->add_option("--seconds", wf.seconds, "how long it runs (1 to 60)")->check(CLI::Range(1, 60))->capture_default_str();
  workloadc->add_option("--socket", wf.socket, "classify the processes through this daemon's socket");
  workloadc->add_flag("--json", wf.json, "print the result as JSON");

  akts::cli::LoadgenFlags lg;
  auto* loadgen = app.add_subcommand(
      "loadgen",
      "Drive an LLM server (llama-server's /completion, or /v1/completions) with closed-loop phases of streaming\n"
      "requests; print each request as it ends and, per phase, TTFT, TPOT, ITL and E2EL (ms) as `vllm bench\n"
      "serve` defines them. With --push-socket each TTFT also goes to the daemon (v1.push), where controllers\n"
      "see it. Ctrl-C stops early and still reports.");
  loadgen->add_option("--url", lg.url, "the server, http://host:port")->capture_default_str();
  loadgen->add_option("--path", lg.path, "/completion (llama-server) or /v1/completions (OpenAI)")
      ->capture_default_str();
  loadgen->add_option("--phases", lg.phases, "NAME:DURATION:CONCURRENCY[:THINK],... (concurrency 0: idle; THINK: each worker's pause between its requests)")
      ->capture_default_str();
  loadgen->add_option("--n-predict", lg.n_predict, "tokens per request (ignore_eos: always this many)")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  loadgen->add_option("--prompt", lg.prompt, "the prompt every request sends (default: a fixed sentence)");
  loadgen->add_option("--timeout", lg.timeout, "a request is cut (failed) after this")->capture_default_str();
  loadgen->add_option("--push-socket", lg.push_socket, "push each TTFT to the daemon at this socket");
  loadgen->add_flag("--quiet", lg.quiet, "no line per request");
  loadgen->add_flag("--json", lg.json, "print the report (phases and every request) as JSON");
  loadgen->add_option("--out", lg.out, "also write the JSON report to this file");

  // local commands
  akts::SelftestOptions st;
  bool st_json = false;
  auto* selftest = app.add_subcommand(
      "selftest",
      "Check the execution plane on this kernel: the three gates, invalid indices, a switch storm, the override.\n"
      "Needs root and a sched_ext kernel (run it in the guest with: ./akts vm -- akts selftest).");
  selftest->add_flag("--json", st_json, "print the report as JSON");
  selftest->add_option("--workers", st.workers, "SCHED_EXT workers per phase (at least 8 for gate 3)")
      ->check(CLI::Range(1, 256));
  selftest->add_option("--iterations", st.iterations, "spin+sleep rounds per worker per phase")
      ->check(CLI::Range(1, 1000000));
  selftest->add_option("--invalid-invocations", st.invalid_min_invocations,
                       "invocations the invalid-index check must see, across its three values")
      ->check(CLI::Range(uint64_t{1}, uint64_t{100000000}));
  std::string storm = "20s";
  selftest->add_option("--storm", storm, "how long the switch storm lasts (e.g. 20s, 500ms)");
  selftest->add_option("--storm-hz", st.storm_hz, "switches per second in the storm")->check(CLI::Range(1, 100000));
  std::string hold;
  selftest->add_option("--hold", hold, "bounded_wait: how long each switch is held (e.g. 3200ms)");
  selftest->add_option("--watchdog-ms", st.watchdog_ms,
                       "bounded_wait: the kernel watchdog's timeout for that check, below the hold")
      ->check(CLI::Range(500, 30000));
  bool no_guard = false, no_breaker = false;
  selftest->add_flag("--no-breaker", no_breaker,
                     "breaker_*: run the misbehaving policies with the breaker disarmed (a negative control: they must fail)");
  selftest->add_flag("--no-guard", no_guard,
                     "bounded_wait without the guard: shows the check fails (the kernel ejects the scheduler)");
  selftest->add_option("--only", st.only, "run only these checks")
      ->check(CLI::IsMember(akts::selftest_check_names()));

  // Every benchmark reports the same way: a table, or JSON, and optionally a file.
  auto add_report_flags = [](CLI::App* sub, bool& json, std::string& out) {
    sub->add_flag("--json", json, "print the report as JSON");
    sub->add_option("--out", out, "also write the JSON report to this file");
  };
  // benchmarks
  auto* bench = app.add_subcommand("bench", "Benchmarks that report figures (see docs/benchmarks.md).");
  bench->require_subcommand(1);
  akts::bench::ActuationOptions ao;
  ao.bpf_compile = akts::bench::bpf_compile_command();
  auto* act = bench->add_subcommand(
      "actuation",
      "The cost of applying a switch: the mmap store, bpf_map_update_elem, sysctl and debugfs writes, a full\n"
      "reload and a process switch to scx_simple, interleaved, each as a ratio to the sysctl write.");
  act->add_option("-n", ao.n, "samples per fast arm")->check(CLI::Range(size_t{100}, size_t{10000000}));
  act->add_option("--reload-n", ao.reload_n, "samples of the reload and process-switch arms")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  act->add_option("--batch", ao.batch, "stores per sample of the store arm")->check(CLI::Range(size_t{1}, size_t{1000000}));
  add_report_flags(act, ao.json, ao.out);
  akts::bench::DispatchOptions dopt;
  auto* disp = bench->add_subcommand(
      "dispatch",
      "Switch-to-effect (plain store vs kicking switch) and per-event cost of the dispatcher against the\n"
      "stand-alone policy, without counters, and with all 8 slots filled. Needs a sched_ext kernel.");
  disp->add_option("-n", dopt.effect_n, "switches per switch-to-effect mode")->check(CLI::Range(size_t{1}, size_t{10000}));
  disp->add_option("--reps", dopt.reps, "interleaved repetitions per cost configuration")->check(CLI::Range(1, 100));
  add_report_flags(disp, dopt.json, dopt.out);

  akts::bench::TailcallOptions topt;
  auto* tcall = bench->add_subcommand(
      "tailcall",
      "The dispatcher's mechanism alone, timed natively: a selector read plus bpf_tail_call against the same\n"
      "read without it (XDP programs under BPF_PROG_TEST_RUN; any kernel with BPF, no sched_ext needed).");
  tcall->add_option("--repeat", topt.repeat, "runs per sample")->check(CLI::Range(1000u, 1000000000u));
  tcall->add_option("--rounds", topt.rounds, "interleaved samples per arm")->check(CLI::Range(1, 1000));
  add_report_flags(tcall, topt.json, topt.out);
  akts::bench::ControlOptions copt;
  auto* ctl = bench->add_subcommand(
      "control",
      "Round trips of v1.switch to a running daemon while --idle-clients connections sit open and silent:\n"
      "how promptly an operator's switch gets through. Needs a running daemon.");
  ctl->add_option("--socket", copt.socket, "the daemon's socket");
  ctl->add_option("--idle-clients", copt.idle_clients, "connections held open without a request")
      ->check(CLI::Range(0, 10000));
  ctl->add_option("-n,--requests", copt.requests, "switch round trips")->check(CLI::Range(size_t{1}, size_t{1000000}));
  ctl->add_option("--note", copt.note, "what else is going on (copied into the report)");
  add_report_flags(ctl, copt.json, copt.out);

  akts::bench::BimodalFlags bm;
  auto* bimodal = bench->add_subcommand(
      "bimodal",
      "A request server with a bimodal mix (Skyloft's GET/SCAN): open-loop Poisson arrivals of short and long\n"
      "CPU-bound requests, served by a pool of threads so that waiting requests queue in the kernel, where the\n"
      "scheduler picks. Per offered load: p99.9 slowdown (latency / service time), goodput (requests within\n"
      "the slowdown objective per second), short and long latencies. Examples:\n"
      "  akts run --class lc -- akts bench bimodal --loads 0.3,0.6,0.9 --seconds 8\n"
      "  akts bench bimodal --hint-socket /run/akts/akts.sock      (srpt: each request's size as a hint)\n"
      "A request that finds every worker busy waits in the application (app-queued in the report).");
  bimodal->add_option("--loads", bm.loads, "offered loads, fractions of the CPUs' capacity (0 to 2]")
      ->capture_default_str();
  bimodal->add_option("--seconds", bm.seconds, "seconds of arrivals per load")->capture_default_str();
  bimodal->add_option("--short", bm.short_time, "a short request's CPU time")->capture_default_str();
  bimodal->add_option("--long", bm.long_time, "a long request's CPU time")->capture_default_str();
  bimodal->add_option("--long-fraction", bm.long_fraction, "the long requests' fraction (0 to 1)")->capture_default_str();
  bimodal->add_option("--workers", bm.workers, "server threads")->capture_default_str();
  bimodal->add_flag("--no-rt-generator", bm.no_rt_generator,
                    "leave the arrivals' thread under the scheduler being measured (by default it is SCHED_FIFO 1,\n"
                    "above it, as a NIC's interrupts would be, so that it does not hold arrivals back)");
  bimodal->add_option("--cpus", bm.cpus, "CPUs the capacity is counted on (default: those this process may use)");
  bimodal->add_option("--slo", bm.slo, "the slowdown objective goodput counts within")->capture_default_str();
  bimodal->add_option("--seed", bm.seed, "the arrivals' random seed")->capture_default_str();
  bimodal->add_option("--hint-socket", bm.hint_socket,
                      "tell the scheduler each request's CPU time through this daemon socket (v1.hint, for srpt)");
  add_report_flags(bimodal, bm.json, bm.out);

  bool lib_json = false;
  auto* library = app.add_subcommand("library", "List the policies compiled into this binary, in slot order.");
  library->add_flag("--json", lib_json, "print as JSON");

  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::cerr << fmt::format("akts: unknown command '{}' (commands: {}; see akts --help)\n", argv[1], names);
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, the version, or the error
    return code == 0 ? kExitOk : kExitUsage;
  }
  akts::init_logging(verbose);

  // A daemon of another version may answer with fields this one reads differently: say so, do not abort.
  try {
  if (*selftest) {
    auto d = akts::parse_duration(storm, "--storm");
    if (!d) {
      std::cerr << "akts: " << d.error().to_string() << "\n";
      return kExitUsage;
    }
    st.storm_duration = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    if (st.storm_duration.count() < 1) {
      std::cerr << "akts: --storm: must be at least 1ms\n";
      return kExitUsage;
    }
    if (!hold.empty()) {
      auto h = akts::parse_duration(hold, "--hold");
      if (!h || *h < std::chrono::milliseconds(100)) {
        std::cerr << "akts: " << (h ? "--hold: must be at least 100ms" : h.error().to_string()) << "\n";
        return kExitUsage;
      }
      st.hold = std::chrono::duration_cast<std::chrono::milliseconds>(*h);
    }
    st.guard = !no_guard;
    st.breaker = !no_breaker;
    return cmd_selftest(st, st_json);
  }
  if (*library) return cmd_library(lib_json);
  if (*loadgen) return akts::cli::cmd_loadgen(lg);
  if (*workloadc) return akts::cli::cmd_workload(wf);
  if (*act) return akts::bench::run_actuation(ao);
  if (*disp) return akts::bench::run_dispatch(dopt);
  if (*ctl) return akts::bench::run_control(copt);
  if (*tcall) return akts::bench::run_tailcall(topt);
  if (*bimodal) return akts::bench::run_bimodal_bench(bm);
  if (*daemon) return cmd_daemon(df);
  if (*policies) return akts::cli::cmd_policies(co);
  if (*sw) return akts::cli::cmd_switch(co, target, force);
  if (*status) return akts::cli::cmd_status(co);
  if (*stats) {
    std::chrono::nanoseconds interval{0};
    if (!interval_text.empty()) {
      auto d = akts::parse_duration(interval_text, "--interval");
      if (!d || d->count() < 10'000'000) {
        std::cerr << "akts: " << (d ? "--interval: at least 10ms" : d.error().to_string()) << "\n";
        return kExitUsage;
      }
      interval = *d;
    }
    if (!stats_format.empty()) {
      if (interval.count() || count || reset_longest || co.json) {
        std::cerr << "akts: --" << stats_format
                  << " prints the totals once: it takes no --interval, --count, --reset-longest or --json (a "
                     "scraper computes rates from the counters)\n";
        return kExitUsage;
      }
      return akts::cli::cmd_stats_exposition(co, stats_format == "openmetrics" ? akts::metrics::Format::kOpenMetrics
                                                                               : akts::metrics::Format::kPrometheus);
    }
    return akts::cli::cmd_stats(co, interval, count, reset_longest);
  }
  if (*run) return akts::cli::cmd_run(co, run_class, run_argv);
  if (*holdc) return akts::cli::cmd_hold(co, hold_target, hold_for);
  if (*releasec) return akts::cli::cmd_release(co);
  if (*objc) return akts::cli::cmd_objective(co, objective_words);
  if (*admitc) return akts::cli::cmd_admit(co, af);
  if (*evictc) return akts::cli::cmd_evict(co, evict_target);
  if (*paramsc) return akts::cli::cmd_params(co, params_policy);
  if (*setc) return akts::cli::cmd_set(co, set_target, set_value);
  if (*repo_list) return akts::cli::cmd_repo_list(rf);
  if (*repo_show) return akts::cli::cmd_repo_show(rf);
  if (*repo_seed) return akts::cli::cmd_repo_seed(rf);
  if (*repo_add) return akts::cli::cmd_repo_add_result(rf);
  if (*mcpc) {
    mf.workloads = !mcp_no_workloads;
    return akts::cli::cmd_mcp(mf);
  }
  if (*ctlc)
    return akts::cli::cmd_controller(co, ctl_name,
                                     ctl_dry ? std::optional<bool>(true) : ctl_apply ? std::optional<bool>(false)
                                                                                     : std::nullopt);
  if (*logc) return akts::cli::cmd_log(co, log_limit, log_follow);
  if (*telc) return akts::cli::cmd_telemetry(co, telemetry_last);
  if (*pushc) {
    for (double v : push_ms)
      if (!std::isfinite(v)) {
        std::cerr << "akts: push: every latency must be a finite number of milliseconds\n";
        return kExitUsage;
      }
    return akts::cli::cmd_push(co, push_ms);
  }
  if (*classify) return akts::cli::cmd_classify(co, cl_pid, cl_class);
  if (*hintc) return akts::cli::cmd_hint(co, hint_tid, hint_left, hint_clear);
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "akts: an answer from the daemon is not what this akts understands (" << e.what()
              << "): are the daemon and this client the same version?\n";
    return kExitFail;
  } catch (const std::exception& e) {
    // Out of memory, no threads left, ...: an error, not an abort.
    std::cerr << "akts: " << e.what() << "\n";
    return kExitFail;
  }
  return kExitFail;
}
