// `akts repo list|show|seed|add-result`: read and write policy records directly (under the repository's lock).
#include "cli/repo_commands.h"

#include <cmath>
#include <iostream>
#include <map>

#include <fmt/format.h>

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

}  // namespace akts::cli
