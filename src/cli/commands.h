// The command line's registry: each family of commands (cli/*_command*.cpp) adds its subcommands, with flags bound
// to storage the family owns and the function that runs the command once parsed; main parses and runs the one.
#pragma once

#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client_options.h"
#include "common/exit_codes.h"

namespace akts::cli {

class Commands {
 public:
  explicit Commands(CLI::App& app) : app_(app) {}
  CLI::App& app() const { return app_; }
  // `run` runs when `sub` is the subcommand parsed (a leaf: `akts repo list`, not `akts repo`).
  void on(CLI::App* sub, std::function<int()> run) { runs_.emplace_back(sub, std::move(run)); }
  // Storage for a command's flags, alive as long as the registry (CLI11 writes the parsed values into it).
  template <class T, class... Args>
  T& keep(Args&&... args) {
    auto p = std::make_shared<T>(std::forward<Args>(args)...);
    T& r = *p;
    kept_.push_back(std::move(p));
    return r;
  }
  // The parsed command's exit status.
  int run_parsed() const {
    for (const auto& [sub, run] : runs_)
      if (sub->parsed()) return run();
    return kExitFail;
  }

 private:
  CLI::App& app_;
  std::vector<std::pair<CLI::App*, std::function<int()>>> runs_;
  std::vector<std::shared_ptr<void>> kept_;
};

// --json and --socket, as every client of the daemon takes them.
inline void add_client_flags(CLI::App* sub, ClientOptions& o) {
  sub->add_flag("--json", o.json, "print JSON");
  sub->add_option("--socket", o.socket, "the daemon's control socket")->capture_default_str();
}

// Each family, in the order main.cpp adds them (and --help lists them).
void add_daemon_command(Commands& c);      // daemon (cli/daemon_command.cpp)
void add_client_commands(Commands& c);     // policies .. push: the daemon's clients (cli/client_commands.cpp)
void add_top_command(Commands& c);         // top: the live view (cli/top_command.cpp)
void add_mcp_command(Commands& c);         // mcp (cli/mcp_command.cpp)
void add_admit_commands(Commands& c);      // admit, evict (cli/admit_commands.cpp)
void add_param_commands(Commands& c);      // params, set (cli/param_commands.cpp)
void add_repo_commands(Commands& c);       // repo list|show|seed|add-result (cli/repo_commands.cpp)
void add_workload_command(Commands& c);    // workload (cli/workload_commands.cpp)
void add_serving_commands(Commands& c);    // loadgen (cli/serving_commands.cpp)
void add_local_commands(Commands& c);      // selftest, library (cli/local_commands.cpp)
void add_bench_commands(Commands& c);      // bench actuation|dispatch|tailcall|control|bimodal (cli/bench_commands.cpp)

}  // namespace akts::cli
