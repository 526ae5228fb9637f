// `akts repo list|show|seed|add-result`: read and write policy records directly (under the repository's lock).
#include "cli/repo_commands.h"

#include <cmath>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/text.h"
#include "exec/policy_library.h"
#include "repository/policy_repository.h"

namespace akts::cli {
namespace {

using json = nlohmann::json;

int fail(const Error& e) {
  std::cerr << "akts: " << e.to_string() << "\n";
  return e.kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
}

std::string latest_line(const PolicyRecord& r) {
  std::map<std::string, const ResultRecord*> last;
  for (const auto& x : r.results) last[x.workload] = &x;
  std::string s;
  for (const auto& [w, x] : last) {
    std::string m;
    size_t shown = 0;
    for (const auto& [k, v] : x->metrics.items())
      if (shown++ < 3) m += fmt::format("{}{}={:g}", m.empty() ? "" : " ", k, v.get<double>());
    s += fmt::format("\n      {:<16} {} ({}{}, {})", w, m, x->source, x->emulated ? ", emulated" : "", x->time);
  }
  return s;
}

}  // namespace

int cmd_repo_list(const RepoFlags& f) {
  auto list = PolicyRepository(f.dir).list();
  if (!list) return fail(list.error());
  if (f.json) {
    json out = json::array();
    for (const auto& r : *list) out.push_back(r.to_json());
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  if (list->empty()) std::cout << fmt::format("no records in {} (akts repo seed writes the built-in ones)\n", f.dir);
  for (const auto& r : *list)
    std::cout << fmt::format("{:<14} {:<9} {} parameter(s), {} result(s)  {}{}\n", r.name, r.origin, r.parameters.size(),
                             r.results.size(), r.description, latest_line(r));
  return kExitOk;
}

int cmd_repo_show(const RepoFlags& f) {
  auto r = PolicyRepository(f.dir).get(f.name);
  if (!r) return fail(r.error());
  if (!*r) return fail(make_error(ErrorKind::kInvalidArgument, fmt::format("no policy '{}' in {}", excerpt(f.name), f.dir)));
  std::cout << (*r)->to_json().dump(2) << "\n";
  return kExitOk;
}

int cmd_repo_seed(const RepoFlags& f) {
  auto records = builtin_records();
  if (!records) return fail(records.error());
  if (auto st = PolicyRepository(f.dir).seed(*records); !st) return fail(st.error());
  if (!f.json) std::cout << fmt::format("built-in policy records written in {}\n", f.dir);
  return kExitOk;
}

int cmd_repo_add_result(const RepoFlags& f) {
  json metrics = json::object();
  for (const auto& m : f.metrics) {
    size_t eq = m.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail(make_error(ErrorKind::kInvalidArgument, fmt::format("--metric '{}' is not NAME=NUMBER", excerpt(m))));
    std::string v = m.substr(eq + 1);
    size_t used = 0;
    double d = 0;
    try {
      d = std::stod(v, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != v.size() || !std::isfinite(d))
      return fail(make_error(ErrorKind::kInvalidArgument, fmt::format("--metric '{}': '{}' is not a finite number", excerpt(m), excerpt(v))));
    metrics[m.substr(0, eq)] = d;
  }
  ResultRecord r;
  r.workload = f.workload;
  r.source = f.source;
  r.kernel = f.kernel;
  r.emulated = f.emulated;
  r.metrics = metrics;
  if (auto st = PolicyRepository(f.dir).append_result(f.name, r); !st) return fail(st.error());
  if (!f.json) std::cout << fmt::format("{}: a {} result recorded in {}\n", f.name, f.workload, f.dir);
  return kExitOk;
}

void add_repo_commands(Commands& c) {
  auto& app = c.app();
  auto& rf = c.keep<RepoFlags>();
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
  c.on(repo_list, [&] { return cmd_repo_list(rf); });
  c.on(repo_show, [&] { return cmd_repo_show(rf); });
  c.on(repo_seed, [&] { return cmd_repo_seed(rf); });
  c.on(repo_add, [&] { return cmd_repo_add_result(rf); });
}

}  // namespace akts::cli
