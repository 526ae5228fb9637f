// `akts top`: the live view of a running daemon (src/top/).
#include <unistd.h>

#include <iostream>

#include "cli/commands.h"
#include "common/parse.h"
#include "top/top_screen.h"

namespace akts::cli {
namespace {

struct TopFlags {
  std::string socket = "/run/akts/akts.sock";
  std::string interval;  // "" : the daemon's telemetry period
  std::string pause = "5m";
};

int cmd_top(const TopFlags& f) {
  top::Options o;
  o.socket = f.socket;
  if (!f.interval.empty()) {
    auto d = parse_duration(f.interval, "--interval");
    if (!d) {
      std::cerr << "akts: " << d.error().to_string() << "\n";
      return kExitUsage;
    }
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    if (ms < std::chrono::milliseconds(50) || ms > std::chrono::seconds(60)) {
      std::cerr << "akts: --interval must be from 50ms to 60s\n";
      return kExitUsage;
    }
    o.interval = ms;
  }
  auto p = parse_duration(f.pause, "--pause");
  if (!p || *p < std::chrono::seconds(1) || *p > std::chrono::hours(24)) {
    std::cerr << "akts: --pause must be a duration from 1s to 24h (e.g. 5m)\n";
    return kExitUsage;
  }
  o.pause = std::chrono::duration_cast<std::chrono::seconds>(*p);
  if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
    std::cerr << "akts: top needs a terminal (for a machine's view: akts status --json, akts stats --json)\n";
    return kExitUsage;
  }
  return top::run(o) == 0 ? kExitOk : kExitFail;
}

}  // namespace

void add_top_command(Commands& c) {
  auto& app = c.app();
  auto& f = c.keep<TopFlags>();
  auto* topc = app.add_subcommand(
      "top",
      "A live view of the running daemon, refreshed every telemetry period (through its control socket only):\n"
      "the policy that runs and for how long, the controller and its last decision, the objective's limits and\n"
      "their margins, per class the wait p50/p99, the oldest waiter and the CPU share, the switches in the last\n"
      "minute, the breaker and the rescues, the application's requests. Keys:\n"
      "  s  switch the policy (a digit picks it, y confirms)\n"
      "  c  change the controller (a digit, then y)\n"
      "  p  pause the controller: hold the selected policy for --pause (p again resumes)\n"
      "  q  quit\n"
      "A daemon that goes away is shown as such and asked again every second.");
  topc->add_option("--socket", f.socket, "the daemon's control socket")->capture_default_str();
  topc->add_option("--interval", f.interval, "between refreshes, e.g. 500ms (default: the telemetry period)");
  topc->add_option("--pause", f.pause, "how long p holds the selection")->capture_default_str();
  c.on(topc, [&] { return cmd_top(f); });
}

}  // namespace akts::cli
