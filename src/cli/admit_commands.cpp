// `akts admit`: gates 1 and 2 here (compile, static checks), then the daemon's v1.admit (gates 2 to 4 again there).
#include "cli/admit_commands.h"

#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "admission/compile.h"
#include "admission/static_check.h"
#include "common/exit_codes.h"
#include "control/unix_server.h"

namespace akts::cli {
namespace {

using json = nlohmann::json;

void print_gate(const json& g, int number) {
  std::string gate = g.value("gate", "?");
  bool passed = g.value("passed", false);
  std::string detail;
  if (gate == "static") {
    for (const auto& f : g["findings"])
      if (!f.value("ok", true) || passed) detail += fmt::format("\n      {}: {}", f.value("rule", ""), f.value("detail", ""));
  } else if (gate == "compile") {
    detail = passed ? " -> " + g.value("object", "") : "\n" + g.value("output", "");
  } else {
    detail = " " + g.value("detail", "");
    if (g.contains("log") && g["log"].is_array())
      for (const auto& l : g["log"]) detail += "\n      " + l.get<std::string>();
  }
  std::cout << fmt::format("gate {} {:<9} {}{}\n", number, gate, passed ? "passed" : "REFUSED", detail);
}

}  // namespace

int cmd_admit(const ClientOptions& o, const AdmitFlags& f) {
  std::error_code ec;
  if (!std::filesystem::exists(f.file, ec)) {
    std::cerr << fmt::format("akts: no file {}\n", f.file);
    return kExitUsage;
  }
  json gates = json::array();
  std::string object = std::filesystem::absolute(f.file, ec).string();
  bool source = f.file.size() > 2 && f.file.compare(f.file.size() - 2, 2, ".c") == 0;
  auto done = [&](int code, json extra = json::object()) {
    if (o.json) {
      extra["gates"] = gates;
      std::cout << extra.dump(2) << "\n";
    }
    return code;
  };
  // The compiled object's directory goes when the command ends, unless --check asked only for the object.
  std::string work_dir;
  struct Cleanup {
    std::string* dir;
    ~Cleanup() { admission::remove_work_dir(*dir); }
  } cleanup{&work_dir};
  if (source) {
    admission::CompileOptions co;
    co.btf = f.btf;
    co.include_dirs = f.include_dirs;
    auto c = admission::compile_source(object, co);
    if (!c) {
      std::cerr << "akts: " << c.error().to_string() << "\n";
      return c.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
    }
    if (!f.check_only || !c->passed) work_dir = c->work_dir;
    gates.push_back(c->to_json());
    if (!o.json) print_gate(gates.back(), 1);
    if (!c->passed) return done(kExitFail, {{"admitted", false}, {"refused_at", "compile"}});
    object = c->object;
  }
  auto st = admission::check_object(object);
  if (!st) {
    std::cerr << "akts: " << st.error().to_string() << "\n";
    return kExitUsage;
  }
  gates.push_back(st->to_json());
  if (!o.json) print_gate(gates.back(), 2);
  if (!st->passed) return done(kExitFail, {{"admitted", false}, {"refused_at", "static"}});
  if (f.check_only) return done(kExitOk, {{"checked", true}, {"object", object}});

  json params = {{"object", object}, {"force_untested", f.force_untested}};
  if (!f.name.empty()) params["name"] = f.name;
  if (!f.record.empty()) params["record"] = std::filesystem::absolute(f.record, ec).string();
  if (!f.description.empty()) params["description"] = f.description;
  if (!f.pick_when.empty()) params["pick_when"] = f.pick_when;
  if (f.slot >= 0) params["slot"] = f.slot;
  if (!f.canary.empty()) params["canary"] = f.canary;
  if (f.replace) params["replace"] = true;
  auto r = control::rpc_call(o.socket, "v1.admit", params, 120000);
  if (!r) {
    if (o.json) return done(r.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail,
                            {{"error", r.error().to_string()}});
    std::cerr << "akts: " << r.error().to_string() << "\n";
    if (r.error().kind == ErrorKind::kUnsupported) return kExitNoDaemon;
    return r.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
  }
  // The daemon's own verdicts (it checks the object again: it trusts no client).
  json daemon_gates = (*r)["gates"];
  if (!o.json) {
    int n = 2;
    for (const auto& g : daemon_gates) {
      if (g.value("gate", "") == "static") continue;  // said above, and the same
      print_gate(g, ++n);
    }
    if ((*r)["admitted"].get<bool>())
      std::cout << fmt::format("admitted {} into slot {} in {:.0f} ms (sha256 {})\n", (*r)["name"].get<std::string>(),
                               (*r)["slot"].get<uint32_t>(), (*r)["took_ms"].get<double>(),
                               (*r)["sha256"].get<std::string>().substr(0, 16));
  }
  for (const auto& g : daemon_gates) gates.push_back(g);
  json extra = *r;
  extra.erase("gates");
  bool admitted = (*r)["admitted"].get<bool>();
  // Gate 5: follow the canary until the daemon judges it.
  if (admitted && extra.contains("canary")) {
    json c = extra["canary"];
    double shown = -1;
    while (c.value("state", "") == "running") {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      auto a = control::rpc_call(o.socket, "v1.admission", json::object());
      if (!a) {
        std::cerr << "akts: the canary's state is unknown: " << a.error().to_string() << "\n";
        return kExitFail;
      }
      c = (*a).value("canary", json::object());
      double el = c.value("elapsed_s", 0.0);
      if (!o.json && el - shown >= 2) {
        std::cout << fmt::format("gate 5 canary    running {:.0f} s of {:.0f} s, {} windows judged\n", el,
                                 c.value("length_s", 0.0), c.value("windows", 0));
        shown = el;
      }
    }
    extra["canary"] = c;
    gates.push_back({{"gate", "canary"}, {"passed", c.value("state", "") == "passed"}, {"detail", c.value("reason", "")}});
    if (!o.json)
      std::cout << fmt::format("gate 5 canary    {} {}{}\n", c.value("state", "") == "passed" ? "passed" : "REFUSED",
                               c.value("reason", ""),
                               c.value("state", "") == "passed" ? "" : fmt::format(" (slot {} selected again, the new policy evicted)", c.value("previous", 0)));
    admitted = c.value("state", "") == "passed";
    extra["admitted"] = admitted;
    if (!admitted) extra["refused_at"] = "canary";
  }
  return done(admitted ? kExitOk : kExitFail, extra);
}

int cmd_evict(const ClientOptions& o, const std::string& target) {
  json t = target;
  if (!target.empty() && std::all_of(target.begin(), target.end(), ::isdigit) && target.size() < 10)
    t = std::stoul(target);
  auto r = control::rpc_call(o.socket, "v1.evict", {{"target", t}});
  if (!r) {
    std::cerr << "akts: " << r.error().to_string() << "\n";
    if (r.error().kind == ErrorKind::kUnsupported) return kExitNoDaemon;
    return r.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
  }
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else
    std::cout << fmt::format("evicted {} from slot {}\n", (*r)["name"].get<std::string>(), (*r)["slot"].get<uint32_t>());
  return kExitOk;
}

void add_admit_commands(Commands& c) {
  auto& app = c.app();
  auto& co = c.keep<ClientOptions>();
  auto& af = c.keep<AdmitFlags>();
  auto* admitc = app.add_subcommand(
      "admit",
      "Admit a new policy into a free slot of the running scheduler, with no detach, through the gates:\n"
      "  1 compile  (a .c file) clang against the kernel's BTF (--btf) and akts's headers\n"
      "  2 static   the program set, an instruction budget, the contract's kernel functions and helpers\n"
      "  3 dynamic  a passing run of this exact object in a throwaway guest, on record beside it\n"
      "             (<object>.dynamic.json, its SHA-256, written by ./akts admit-test OBJECT); --force-untested\n"
      "             admits without one, and says so\n"
      "  4 verifier the kernel's verifier, loading into the slot (undone if any step fails)\n"
      "  5 canary   (--canary 10s) selected for a while on the live node, reverted if waits or the objective degrade\n"
      "Gates 1 and 2 run here; the daemon checks 2 again and runs 3 and 4. --check stops after 2 (no daemon)\n"
      "and keeps the compiled object (its path is printed); otherwise it goes when the command ends.\n"
      "Each gate prints its verdict and evidence. Exit: 0 admitted, 1 refused by a gate, 2 bad input, 3 no daemon.");
  admitc->add_option("file", af.file, "the candidate: BPF C source (.c) or a compiled object (.o)")->required();
  admitc->add_flag("--check", af.check_only, "run gates 1 and 2 only");
  admitc->add_option("--name", af.name, "the policy's name (default: its programs' prefix)");
  admitc->add_option("--slot", af.slot, "the slot (default: the first free one)")
      ->check(CLI::Range(0, static_cast<int>(AKTS_MAX_SLOTS) - 1));
  admitc->add_option("--record", af.record, "gate 3's record (default: <object>.dynamic.json)");
  admitc->add_flag("--force-untested", af.force_untested, "admit without a passing gate 3 record");
  admitc->add_flag("--replace", af.replace,
                   "replace the policy in --slot (never the running one; the old one is put back if a step fails)");
  admitc->add_option("--canary", af.canary,
                     "gate 5: hold the new policy selected this long (1s to 10m) with the breaker armed; reverted and "
                     "evicted if the bounded wait or the objective degrades");
  admitc->add_option("--description", af.description, "for the policy repository");
  admitc->add_option("--pick-when", af.pick_when, "for the policy repository and agents");
  admitc->add_option("--btf", af.btf, "the kernel BTF to compile against")->capture_default_str();
  admitc->add_option("--include", af.include_dirs, "akts's BPF header directories (default: installed or built)");
  add_client_flags(admitc, co);
  auto& evict_target = c.keep<std::string>();
  auto* evictc = app.add_subcommand(
      "evict", "Take a policy out of its slot while the scheduler runs (never the selected, running or breaker-safe one).");
  evictc->add_option("policy", evict_target, "slot number or policy name")->required();
  add_client_flags(evictc, co);
  c.on(admitc, [&] { return cmd_admit(co, af); });
  c.on(evictc, [&] { return cmd_evict(co, evict_target); });
}

}  // namespace akts::cli
