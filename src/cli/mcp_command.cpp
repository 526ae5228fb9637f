// `akts mcp`: wires the MCP server (src/mcp/) to the control socket and the workload scenarios.
#include "cli/mcp_command.h"

#include <grp.h>
#include <signal.h>
#include <sys/utsname.h>

#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/build_info.h"
#include "common/http_url.h"
#include "common/parse.h"
#include "admission/compile.h"
#include "common/text.h"
#include "control/unix_server.h"
#include "mcp/http.h"
#include "mcp/stdio.h"
#include "mcp/tools.h"
#include "workload/scenarios.h"

namespace akts::cli {

using json = nlohmann::json;

int cmd_mcp(const McpFlags& f) {
  // Every call gets the daemon's answer; a daemon that is not there is an error the agent reads, not a crash.
  mcp::Upstream up = [socket = f.socket](const std::string& method, const json& params) -> Result<json> {
    try {
      return control::rpc_call(socket, method, params);
    } catch (const std::exception& e) {
      return errorf(ErrorKind::kSystem, "the daemon's answer to {} is unreadable: {}", method, e.what());
    }
  };
  mcp::WorkloadRunner runner;
  if (f.workloads) {
    runner = [up](const json& args, const std::atomic<bool>& cancelled) -> Result<json> {
      auto a = workload::parse_args(args);
      if (!a) return a.error();
      workload::Hooks hooks;
      hooks.classify = [up](pid_t pid, const std::string& cls) -> Status {
        auto r = up("v1.classify", {{"pid", pid}, {"class", cls}});
        if (!r) return r.error();
        return {};
      };
      hooks.policy = [up]() -> std::optional<std::string> {
        auto r = up("v1.status", json::object());
        if (!r || !r->contains("effective") || !(*r)["effective"].value("policy", json()).is_string()) return std::nullopt;
        return (*r)["effective"]["policy"].get<std::string>();
      };
      // The telemetry window before the run: afterwards every window since must show one effective slot.
      auto before = up("v1.telemetry", {{"last", 1}});
      uint64_t seq0 = 0;
      if (before && (*before)["windows"].is_array() && !(*before)["windows"].empty())
        seq0 = (*before)["windows"].back().value("seq", uint64_t{0});
      auto r = workload::run(*a, hooks, cancelled);
      if (!r) return r;
      // Into the policy repository, when one policy ran the whole time.
      const json& pol = (*r)["policy"];
      std::string why;
      if (!pol.is_string() || pol != (*r)["policy_at_end"]) why = "the policy changed during the run (or none ran)";
      if (why.empty()) {
        auto windows = up("v1.telemetry", {{"last", 600}});
        std::set<std::string> seen;
        size_t covered = 0;
        if (windows && (*windows)["windows"].is_array())
          for (const auto& w : (*windows)["windows"])
            if (w.value("seq", uint64_t{0}) > seq0) {
              seen.insert(w.value("effective", json()).dump());
              ++covered;
            }
        if (seq0 == 0 || covered == 0) why = "no telemetry windows cover the run";
        else if (seen.size() != 1) why = "the effective policy changed during the run (telemetry windows)";
      }
      if (!why.empty()) {
        (*r)["recorded"] = false;
        (*r)["not_recorded_because"] = why;
        return r;
      }
      struct utsname u{};
      ::uname(&u);
      json result = {{"workload", a->scenario},
                     {"metrics", workload::flatten_metrics((*r)["metrics"])},
                     {"source", "run_workload"},
                     {"kernel", std::string(u.release)}};
      auto rec = up("v1.result", {{"policy", pol}, {"result", result}});
      (*r)["recorded"] = static_cast<bool>(rec);
      if (!rec) (*r)["not_recorded_because"] = rec.error().message;
      return r;
    };
  }
  // admit_policy: gates 1 and 2 here, then the daemon's v1.admit (which checks 2 again and runs 3 and 4).
  mcp::AdmitRunner admit = [up](const json& args, const std::atomic<bool>& cancelled) -> Result<json> {
    if (!args.is_object()) return make_error(ErrorKind::kInvalidArgument, "arguments must be an object");
    for (const auto& [k, v] : args.items())
      if (k != "source" && k != "object" && k != "name" && k != "force_untested" && k != "description" &&
          k != "pick_when" && k != "canary")
        return errorf(ErrorKind::kInvalidArgument, "unknown argument \"{}\"", excerpt(k));
    bool has_source = args.contains("source"), has_object = args.contains("object");
    if (has_source == has_object) return make_error(ErrorKind::kInvalidArgument, "give exactly one of source and object");
    json gates = json::array();
    std::string object;
    // The source, the object and vmlinux.h go when the call ends (the daemon has read the object's bytes).
    struct Cleanup {
      std::string dir;
      ~Cleanup() { admission::remove_work_dir(dir); }
    } cleanup;
    if (has_source) {
      if (!args["source"].is_string() || args["source"].get_ref<const std::string&>().empty())
        return make_error(ErrorKind::kInvalidArgument, "source must be the policy's BPF C text");
      if (auto st = admission::check_agent_source(args["source"].get_ref<const std::string&>()); !st) return st.error();
      char dir[] = "/tmp/akts-mcp-admit-XXXXXX";
      if (!::mkdtemp(dir)) return sys_error("mkdtemp", errno);
      cleanup.dir = dir;
      std::string path = std::string(dir) + "/candidate.bpf.c";
      std::ofstream(path) << args["source"].get<std::string>();
      admission::CompileOptions co;
      co.work_dir = dir;
      auto c = admission::compile_source(path, co);
      if (!c) return c.error();
      gates.push_back(c->to_json());
      if (!c->passed) return json{{"admitted", false}, {"refused_at", "compile"}, {"name", nullptr}, {"slot", nullptr}, {"gates", gates}};
      object = c->object;
    } else {
      if (!args["object"].is_string()) return make_error(ErrorKind::kInvalidArgument, "object must be a path");
      object = args["object"].get<std::string>();
    }
    json params = args;
    params.erase("source");
    params["object"] = object;
    auto r = up("v1.admit", params);
    if (!r) return r.error();
    for (const auto& g : (*r)["gates"]) gates.push_back(g);
    // Gate 5: the daemon judges the canary; follow it to its end (a cancelled call stops following, the canary
    // goes on and v1.admission / get_status tell how it ended).
    while (r->contains("canary") && (*r)["canary"].value("state", "") == "running" && !cancelled.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      auto a = up("v1.admission", json::object());
      if (!a) return a.error();
      (*r)["canary"] = (*a).value("canary", json::object());
    }
    if (r->contains("canary")) {
      const json& c = (*r)["canary"];
      gates.push_back({{"gate", "canary"}, {"passed", c.value("state", "") == "passed"}, {"detail", c.value("reason", "")},
                       {"state", c.value("state", "")}});
      if (c.value("state", "") == "failed") {
        (*r)["admitted"] = false;
        (*r)["refused_at"] = "canary";
      }
    }
    (*r)["gates"] = gates;
    return r;
  };

  mcp::ServerInfo info;
  info.title = "akts: run-time CPU scheduling policy switching";
  info.version = std::string(build_version());
  info.instructions = mcp::akts_instructions();
  info.page_size = f.page_size;
  mcp::Server server(info, mcp::akts_tools(up, runner, admit), mcp::akts_resources(up));

  if (f.http.empty()) {
    spdlog::info("mcp: serving on stdio (daemon socket {})", f.socket);
    return mcp::serve_stdio(server);
  }

  auto listen = parse_listen_address(f.http, "--http");
  if (!listen) {
    std::cerr << "akts: " << listen.error().to_string() << "\n";
    return kExitUsage;
  }
  gid_t gid = static_cast<gid_t>(-1);
  if (!f.group.empty()) {
    struct group* g = ::getgrnam(f.group.c_str());
    if (!g) {
      std::cerr << fmt::format("akts: --group: no group named '{}'\n", f.group);
      return kExitUsage;
    }
    gid = g->gr_gid;
  }
  auto token = mcp::load_or_create_token(f.token_file, gid);
  if (!token) {
    std::cerr << "akts: " << token.error().to_string() << "\n";
    return token.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
  }
  // SIGINT/SIGTERM end the server: taken by sigwait below, not by a handler.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  mcp::HttpOptions ho;
  ho.host = listen->host;
  ho.port = listen->port;
  ho.path = f.path;
  ho.token = *token;
  auto http = mcp::HttpServer::start(server, ho);
  if (!http) {
    std::cerr << "akts: " << http.error().to_string() << "\n";
    return http.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
  }
  spdlog::info("mcp: Streamable HTTP on {} (credential: Authorization: Bearer <{}>; daemon socket {})",
               (*http)->url(), f.token_file, f.socket);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("mcp: signal {}: stopping", sig);
  (*http)->stop();
  return kExitOk;
}

void add_mcp_command(Commands& c) {
  auto& app = c.app();
  auto& mf = c.keep<McpFlags>();
  auto* mcpc = app.add_subcommand(
      "mcp",
      "The MCP server (Model Context Protocol 2025-11-25) for agents, over the daemon's control socket: the\n"
      "daemon's checks and audit apply to every call. Tools: list_policies, get_status, get_telemetry,\n"
      "switch_policy, get_parameters, set_parameter, hint, get_decision_history, set_objective, hold,\n"
      "release, run_workload, admit_policy, evict_policy (--no-workloads leaves run_workload out).\n"
      "Resources: each policy's documentation\n"
      "(akts://policies/NAME) and the decision log (akts://decisions).\n"
      "Default: stdio (one message a line; logs on stderr), e.g. for a client's config:\n"
      "  {\"command\": \"akts\", \"args\": [\"mcp\"]}\n"
      "--http 127.0.0.1:8765: Streamable HTTP on loopback at --path; every request needs\n"
      "  Authorization: Bearer $(cat /run/akts/mcp.token)\n"
      "(the file is made at first start, readable by root, or --group too).");
  mcpc->add_option("--socket", mf.socket, "the daemon's control socket")->capture_default_str();
  mcpc->add_option("--http", mf.http, "serve Streamable HTTP on HOST:PORT (loopback only) instead of stdio");
  mcpc->add_option("--path", mf.path, "the HTTP endpoint")->capture_default_str();
  mcpc->add_option("--token-file", mf.token_file, "the HTTP credential (created 0600 if missing)")
      ->capture_default_str();
  mcpc->add_option("--group", mf.group, "a group that may read the token file (mode 0640)");
  mcpc->add_option("--page-size", mf.page_size, "entries per page of tools/list and resources/list")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  auto& mcp_no_workloads = c.keep<bool>(false);
  mcpc->add_flag("--no-workloads", mcp_no_workloads, "leave out run_workload (it starts benchmark programs)");
  c.on(mcpc, [&] {
    mf.workloads = !mcp_no_workloads;
    return cmd_mcp(mf);
  });
}

}  // namespace akts::cli
