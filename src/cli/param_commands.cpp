// `akts params` and `akts set`: v1.params and v1.set, as a table or --json.
#include "cli/param_commands.h"

#include <iostream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "control/unix_server.h"

namespace akts::cli {
namespace {

using json = nlohmann::json;

int failed(const Error& e) {
  std::cerr << "akts: " << e.to_string() << "\n";
  if (e.kind == ErrorKind::kUnsupported) return kExitNoDaemon;
  return e.kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
}

}  // namespace

int cmd_params(const ClientOptions& o, const std::string& policy) {
  json params = json::object();
  if (!policy.empty()) params["target"] = policy;
  auto r = control::rpc_call(o.socket, "v1.params", params);
  if (!r) return failed(r.error());
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& p : (*r)["policies"]) {
    std::cout << fmt::format("slot {} {}\n", p["slot"].get<uint32_t>(), p["name"].get<std::string>());
    if (p["params"].empty()) std::cout << "  (no live parameters)\n";
    for (const auto& q : p["params"])
      std::cout << fmt::format("  {:<16} {:>10}  {} {} .. {} (default {}): {}\n", q["name"].get<std::string>(),
                               q["text"].get<std::string>(), q["type"].get<std::string>(), q["min"].dump(),
                               q["max"].dump(), q["default"].dump(), q["description"].get<std::string>());
  }
  return kExitOk;
}

int cmd_set(const ClientOptions& o, const std::string& target, const std::string& value) {
  // The value goes as text: the daemon parses it against the parameter's type ("5ms", "40%", "true", "5000").
  auto r = control::rpc_call(o.socket, "v1.set", {{"target", target}, {"value", value}});
  if (!r) return failed(r.error());
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else
    std::cout << fmt::format("{}.{} = {} (slot {}; was {})\n", (*r)["policy"].get<std::string>(),
                             (*r)["param"].get<std::string>(), (*r)["text"].get<std::string>(),
                             (*r)["slot"].get<uint32_t>(), (*r)["previous"].dump());
  return kExitOk;
}

void add_param_commands(Commands& c) {
  auto& app = c.app();
  auto& co = c.keep<ClientOptions>();
  auto& params_policy = c.keep<std::string>();
  auto& set_target = c.keep<std::string>();
  auto& set_value = c.keep<std::string>();
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
  c.on(paramsc, [&] { return cmd_params(co, params_policy); });
  c.on(setc, [&] { return cmd_set(co, set_target, set_value); });
}

}  // namespace akts::cli
