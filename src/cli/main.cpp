// akts: the command line. Each subcommand parses its arguments strictly, does
// its work through the library, and turns errors into a message and an exit
// status here, and only here.
#include <unistd.h>

#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "common/log.h"
#include "common/parse.h"
#include "exec/policy_library.h"
#include "selftest/selftest.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "akts: switch sched_ext scheduling policies at run time by writing one integer.\n"
      "A library of policies is verified once at load time; a dispatcher tail-calls the selected one.\n"
      "An index that names no policy falls through to a safe default."};
  app.require_subcommand(1);
  int verbose = 0;
  app.add_flag("-v,--verbose", verbose, "more output (-v: debug and libbpf's log, -vv: trace)");
  app.set_version_flag("--version", std::string("akts ") + AKTS_VERSION);

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
  selftest->add_option("--only", st.only, "run only these checks")
      ->check(CLI::IsMember(akts::selftest_check_names()));

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
    return cmd_selftest(st, st_json);
  }
  if (*library) return cmd_library(lib_json);
  return kExitFail;
}
