// The commands that need no daemon: `akts selftest` (the execution plane's checks on this kernel) and `akts
// library` (the policies compiled in).
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/parse.h"
#include "exec/policy_library.h"
#include "selftest/selftest.h"

namespace akts::cli {
namespace {

int cmd_selftest(const SelftestOptions& opts, bool json) {
  if (geteuid() != 0) spdlog::warn("selftest loads BPF programs and usually needs root");
  auto report = run_selftest(opts);
  if (json)
    std::cout << report.to_json().dump(2) << "\n";
  else
    std::cout << report.to_text();
  return report.passed() ? kExitOk : kExitFail;
}

int cmd_library(bool json) {
  nlohmann::json j = nlohmann::json::array();
  uint32_t slot = 0;
  for (const auto& p : builtin_policies()) {
    if (json)
      j.push_back({{"default_slot", slot}, {"name", p.name}, {"summary", p.summary}, {"pick_when", p.pick_when}});
    else
      std::cout << fmt::format("{:>4}  {:<12} {}\n      {:<12} pick: {}\n", slot, p.name, p.summary, "", p.pick_when);
    ++slot;
  }
  if (json) std::cout << j.dump(2) << "\n";
  return kExitOk;
}

}  // namespace

void add_local_commands(Commands& c) {
  auto& app = c.app();
  // local commands
  auto& st = c.keep<SelftestOptions>();
  auto& st_json = c.keep<bool>(false);
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
  auto& storm = c.keep<std::string>("20s");
  selftest->add_option("--storm", storm, "how long the switch storm lasts (e.g. 20s, 500ms)");
  selftest->add_option("--storm-hz", st.storm_hz, "switches per second in the storm")->check(CLI::Range(1, 100000));
  auto& hold = c.keep<std::string>();
  selftest->add_option("--hold", hold, "bounded_wait: how long each switch is held (e.g. 3200ms)");
  selftest->add_option("--watchdog-ms", st.watchdog_ms,
                       "bounded_wait: the kernel watchdog's timeout for that check, below the hold")
      ->check(CLI::Range(500, 30000));
  auto& no_guard = c.keep<bool>(false);
  auto& no_breaker = c.keep<bool>(false);
  selftest->add_flag("--no-breaker", no_breaker,
                     "breaker_*: run the misbehaving policies with the breaker disarmed (a negative control: they must fail)");
  auto& no_kick = c.keep<bool>(false);
  selftest->add_flag("--no-preempt-kick", no_kick,
                     "preempt_wakeup with preempt's kick off (a negative control: the LC wait rises to the BE slice "
                     "and the check fails)");
  selftest->add_flag("--no-guard", no_guard,
                     "bounded_wait without the guard: shows the check fails (the kernel ejects the scheduler)");
  selftest->add_option("--only", st.only, "run only these checks")
      ->check(CLI::IsMember(selftest_check_names()));
  auto& lib_json = c.keep<bool>(false);
  auto* library = app.add_subcommand("library", "List the policies compiled into this binary, in slot order.");
  library->add_flag("--json", lib_json, "print as JSON");
  c.on(selftest, [&] {
    auto d = parse_duration(storm, "--storm");
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
      auto h = parse_duration(hold, "--hold");
      if (!h || *h < std::chrono::milliseconds(100)) {
        std::cerr << "akts: " << (h ? "--hold: must be at least 100ms" : h.error().to_string()) << "\n";
        return kExitUsage;
      }
      st.hold = std::chrono::duration_cast<std::chrono::milliseconds>(*h);
    }
    st.guard = !no_guard;
    st.breaker = !no_breaker;
    st.preempt_kick = !no_kick;
    return cmd_selftest(st, st_json);
  });
  c.on(library, [&] { return cmd_library(lib_json); });
}

}  // namespace akts::cli
