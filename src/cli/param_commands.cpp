// `akts params` and `akts set`: v1.params and v1.set, as a table or --json.
#include "cli/param_commands.h"

#include <iostream>

#include <fmt/format.h>

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

}  // namespace akts::cli
