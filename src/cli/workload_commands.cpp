// `akts workload SCENARIO`: runs a scenario to its end; Ctrl-C stops it and its processes.
#include "cli/workload_commands.h"

#include <atomic>
#include <csignal>
#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "control/unix_server.h"
#include "workload/scenarios.h"

namespace akts::cli {

using json = nlohmann::json;

namespace {
std::atomic<bool> g_workload_cancel{false};
void on_workload_signal(int) { g_workload_cancel = true; }
}  // namespace

int cmd_workload(const WorkloadFlags& f) {
  auto a = workload::parse_args({{"scenario", f.scenario}, {"seconds", f.seconds}});
  if (!a) {
    std::cerr << "akts: workload: " << a.error().message << "\n";
    return kExitUsage;
  }
  workload::Hooks hooks;
  if (!f.socket.empty()) {
    if (auto r = control::rpc_call(f.socket, "v1.status", json::object()); !r) {
      std::cerr << fmt::format("akts: workload: --socket {}: {}\n", f.socket, r.error().to_string());
      return kExitNoDaemon;
    }
    hooks.classify = [sock = f.socket](pid_t pid, const std::string& cls) -> Status {
      auto r = control::rpc_call(sock, "v1.classify", {{"pid", pid}, {"class", cls}});
      if (!r) return r.error();
      return {};
    };
    hooks.policy = [sock = f.socket]() -> std::optional<std::string> {
      auto r = control::rpc_call(sock, "v1.status", json::object());
      if (!r || !r->contains("effective") || !(*r)["effective"].value("policy", json()).is_string()) return std::nullopt;
      return (*r)["effective"]["policy"].get<std::string>();
    };
  }
  struct sigaction sa{};
  sa.sa_handler = on_workload_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  auto r = workload::run(*a, hooks, g_workload_cancel);
  if (!r) {
    std::cerr << "akts: workload: " << r.error().to_string() << "\n";
    return g_workload_cancel ? 130 : kExitFail;
  }
  if (f.json) {
    std::cout << r->dump(1) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{} ({} s{}):\n", a->scenario, a->seconds,
                           (*r)["policy"].is_string() ? ", policy " + (*r)["policy"].get<std::string>() : std::string());
  for (const auto& [k, v] : workload::flatten_metrics((*r)["metrics"]).items())
    std::cout << fmt::format("  {:<24} {}\n", k, v.dump());
  return kExitOk;
}

void add_workload_command(Commands& c) {
  auto& app = c.app();
  auto& wf = c.keep<WorkloadFlags>();
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
      ->check(CLI::IsMember(workload::scenario_names()));
  workloadc->add_option("--seconds", wf.seconds, "how long it runs (1 to 60)")->check(CLI::Range(1, 60))->capture_default_str();
  workloadc->add_option("--socket", wf.socket, "classify the processes through this daemon's socket");
  workloadc->add_flag("--json", wf.json, "print the result as JSON");
  c.on(workloadc, [&] { return cmd_workload(wf); });
}

}  // namespace akts::cli
