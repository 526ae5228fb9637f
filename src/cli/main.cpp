// akts: the command line. Each subcommand parses its arguments strictly, does
// its work through the library (or the daemon's socket), and turns errors into
// a message and an exit status in its family's file (cli/commands.h lists them);
// here: the program's description, the families in --help's order, parsing,
// and what no command may let escape.
//
// Exit status: 0 done, 1 failed, 2 bad input (nothing changed), 3 no daemon.
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/build_info.h"
#include "common/exit_codes.h"
#include "common/log.h"

using akts::kExitFail;
using akts::kExitOk;
using akts::kExitUsage;

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

  akts::cli::Commands commands(app);
  akts::cli::add_daemon_command(commands);
  akts::cli::add_client_commands(commands);
  akts::cli::add_top_command(commands);
  akts::cli::add_mcp_command(commands);
  akts::cli::add_admit_commands(commands);
  akts::cli::add_param_commands(commands);
  akts::cli::add_repo_commands(commands);
  akts::cli::add_workload_command(commands);
  akts::cli::add_serving_commands(commands);
  akts::cli::add_local_commands(commands);
  akts::cli::add_bench_commands(commands);

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
    return commands.run_parsed();
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "akts: an answer from the daemon is not what this akts understands (" << e.what()
              << "): are the daemon and this client the same version?\n";
    return kExitFail;
  } catch (const std::exception& e) {
    // Out of memory, no threads left, ...: an error, not an abort.
    std::cerr << "akts: " << e.what() << "\n";
    return kExitFail;
  }
}
