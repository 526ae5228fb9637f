#include "cli/client_commands.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/build_info.h"
#include "common/parse.h"
#include "common/text.h"
#include "control/unix_server.h"
#include "telemetry/stats.h"

namespace akts::cli {
namespace {

using control::json;


int report(const Error& e, bool as_json) {
  if (as_json)
    std::cout << json{{"error", {{"kind", error_kind_name(e.kind)}, {"message", e.to_string()}}}}.dump(2) << "\n";
  else
    std::cerr << "akts: " << e.to_string() << "\n";
  if (e.kind == ErrorKind::kUnsupported) return kExitNoDaemon;
  return e.kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
}

Result<json> call(const ClientOptions& o, const std::string& method, const json& params = json::object()) {
  return control::rpc_call(o.socket, method, params);
}

std::string fmt_ns(std::optional<double> ns) {
  if (!ns) return "-";
  if (*ns < 1e3) return fmt::format("{:.0f}ns", *ns);
  if (*ns < 1e6) return fmt::format("{:.0f}us", *ns / 1e3);
  if (*ns < 1e9) return fmt::format("{:.1f}ms", *ns / 1e6);
  return fmt::format("{:.2f}s", *ns / 1e9);
}

std::string slot_name(const json& names, uint32_t slot) {
  auto key = std::to_string(slot);
  if (names.contains(key)) return names[key].get<std::string>();
  return slot == 0xffffffffu ? "none (0xffffffff)" : fmt::format("none (slot {})", slot);
}

std::string fmt_ms(const json& v) { return v.is_number() ? fmt_ns(v.get<double>() * 1e6) : std::string("-"); }

// The daemon's latest telemetry window and who decides, in one line.
void print_window_line(const json& w, const json& r) {
  const json& app = w["app"];
  std::string app_part;
  if (app["requests_processing"].is_number())
    app_part += fmt::format("  app in-flight {:g}", app["requests_processing"].get<double>());
  if (app["latency_p99_ms"].is_number())
    app_part += fmt::format("  req p99 {} (n={})", fmt_ms(app["latency_p99_ms"]), app["latency_samples"].get<uint64_t>());
  std::string who;
  if (r.is_object()) {
    who = fmt::format("  controller {}{}", r["controller"].get<std::string>(),
                      r["arbiter"]["dry_run"].get<bool>() ? " (dry run)" : "");
    if (r["arbiter"]["locked"].get<bool>()) who += fmt::format(" [{}]", r["arbiter"]["locked_because"].get<std::string>());
  }
  std::cout << fmt::format("       window {:.0f}ms  cpu busy {:.0f}%  pressure {:.0f}%  runnable {}  batch {:.0f}%  "
                           "queued {}{}{}\n",
                           w["period_s"].get<double>() * 1e3, w["cpu_util"].get<double>() * 100,
                           w["cpu_pressure"].get<double>() * 100, w["runnable"].get<uint32_t>(),
                           w["batch_share"].get<double>() * 100, w["queued"].get<uint64_t>(), app_part, who);
}

}  // namespace

int cmd_hold(const ClientOptions& o, const std::string& target, const std::string& duration) {
  auto r = call(o, "v1.hold", {{"target", target}, {"duration", duration}});
  if (!r) return report(r.error(), o.json);
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("holding slot {} ({}) for {:g} s: other switches are refused until then or `akts "
                           "release`\n",
                           (*r)["slot"].get<uint32_t>(), (*r)["policy"].get<std::string>(),
                           (*r)["duration_s"].get<double>());
  return kExitOk;
}

int cmd_reload(const ClientOptions& o) {
  auto r = call(o, "v1.reload");
  if (!r) {
    // The daemon's refusal comes back as invalid parameters; anything else is the socket's (no daemon: exit 3),
    // or a daemon older than v1.reload (its "no method": restart it onto this version, or send it SIGHUP).
    if (o.json || r.error().kind != ErrorKind::kInvalidArgument || r.error().message.starts_with("no method"))
      return report(r.error(), o.json);
    std::cerr << "akts: reload refused, nothing changed: " << r.error().to_string() << "\n";
    return kExitUsage;
  }
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else if ((*r)["changed"].empty())
    std::cout << "reloaded: nothing changed in the config\n";
  else
    std::cout << fmt::format("reloaded: applied {}\n", fmt::join((*r)["changed"], ", "));
  return kExitOk;
}

int cmd_release(const ClientOptions& o) {
  auto r = call(o, "v1.release");
  if (!r) return report(r.error(), o.json);
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else
    std::cout << ((*r)["released"].get<bool>() ? "released: controllers may switch again\n" : "nothing was held\n");
  return kExitOk;
}

// The objective's limits in the latest window ("objective_now" of the reasoning state), one line each.
static void print_margins(const json& now) {
  if (!now.is_array()) return;
  for (const auto& l : now) {
    std::string name = l.value("signal", "?");
    double max = l.value("max_ms", 0.0);
    if (!l.contains("observed_ms") || !l["observed_ms"].is_number()) {
      std::cout << fmt::format("  {:<20} no sample in the last window (limit {:g} ms)\n", name, max);
      continue;
    }
    double v = l["observed_ms"].get<double>(), margin = l.value("margin_ms", 0.0);
    std::cout << fmt::format("  {:<20} {:.1f} ms of {:g} ms: {} {:.1f} ms ({:+.0f}%)\n", name, v, max,
                             margin >= 0 ? "margin" : "MISSED by", std::abs(margin), max > 0 ? 100 * margin / max : 0);
  }
}

int cmd_objective(const ClientOptions& o, const std::vector<std::string>& words) {
  json params = json::object();
  if (!words.empty()) params["goal"] = fmt::format("{}", fmt::join(words, " "));
  auto r = call(o, "v1.objective", params);
  if (!r) return report(r.error(), o.json);
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else
    std::cout << fmt::format("{}objective: {}\n", (*r)["changed"].get<bool>() ? "new " : "",
                             (*r)["objective"]["describe"].get<std::string>());
  return kExitOk;
}

int cmd_controller(const ClientOptions& o, const std::string& name, std::optional<bool> dry_run) {
  json params = json::object();
  if (!name.empty()) params["name"] = name;
  if (dry_run) params["dry_run"] = *dry_run;
  auto r = call(o, "v1.controller", params);
  if (!r) return report(r.error(), o.json);
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  const json& a = (*r)["arbiter"];
  std::cout << fmt::format("controller  {}{}\n", (*r)["controller"].get<std::string>(),
                           a["dry_run"].get<bool>() ? " (dry run: decisions logged, not applied)" : "");
  std::cout << fmt::format("objective   {}\n", (*r)["objective"]["describe"].get<std::string>());
  print_margins(r->value("objective_now", json(nullptr)));
  std::cout << fmt::format("limits      min dwell {:g} s, at most {} controller switches a minute, operator grace "
                           "{:g} s\n",
                           a["min_dwell_s"].get<double>(), a["max_switches_per_minute"].get<uint32_t>(),
                           a["operator_grace_s"].get<double>());
  if (a["locked"].get<bool>()) std::cout << fmt::format("locked      {}\n", a["locked_because"].get<std::string>());
  std::cout << fmt::format("decisions   {} ({} applied, {} refused outputs, {} repeats not logged)\n",
                           (*r)["decisions"].get<uint64_t>(), (*r)["applied"].get<uint64_t>(),
                           (*r)["refused_outputs"].get<uint64_t>(), (*r)["repeats_not_logged"].get<uint64_t>());
  if (!(*r)["controller_state"].is_null() && !(*r)["controller_state"].empty())
    std::cout << fmt::format("state       {}\n", (*r)["controller_state"].dump());
  return kExitOk;
}

int cmd_log(const ClientOptions& o, uint32_t limit, bool follow) {
  uint64_t last = 0;  // the newest decision printed
  bool header = false;
  uint32_t ask = limit;
  while (true) {
    auto r = call(o, "v1.log", {{"limit", ask}});
    if (!r) return report(r.error(), o.json);
    std::vector<json> ds;
    uint64_t oldest = UINT64_MAX, newest = 0;
    for (const auto& d : (*r)["decisions"]) {
      if (!d.contains("id") || !d["id"].is_number_unsigned()) continue;
      uint64_t id = d["id"].get<uint64_t>();
      oldest = std::min(oldest, id);
      newest = std::max(newest, id);
      if (id > last) ds.push_back(d);
    }
    if (follow && header) {
      if (newest && newest < last) {  // the daemon restarted: its ids began again
        last = 0;
        continue;
      }
      // Following, a poll asks for a few; when the oldest it got is past the next one due, more came
      // than it asked for: ask for as many as the log keeps (500), once, so none is skipped.
      if (ask < 500 && oldest != UINT64_MAX && oldest > last + 1 && ds.size() == (*r)["decisions"].size()) {
        ask = 500;
        continue;
      }
      ask = 20;
    }
    std::sort(ds.begin(), ds.end(), [](const json& a, const json& b) { return a["id"] < b["id"]; });
    json names = json::object();
    if (!ds.empty() && !o.json)
      if (auto st = call(o, "v1.stats", json::object()); st && st->contains("policy_names"))
        names = (*st)["policy_names"];
    if (!header && !o.json)
      std::cout << fmt::format("{:>5}  {:<12} {:<9} {:<16}  {:<7} {:>9} {:>7} {:>7}  {}\n", "id", "time", "source",
                               "proposed", "applied", "observed", "+1 rew", "+5 rew", "why / verdict");
    header = true;
    for (const auto& d : ds) {
      last = d["id"].get<uint64_t>();
      if (o.json) {
        std::cout << d.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
        continue;
      }
      std::string time = d.value("time", "");
      if (time.size() >= 23) time = time.substr(11, 12);
      std::string slot = "-";
      if (d.contains("proposed") && d["proposed"].is_number_unsigned()) {
        uint32_t k = d["proposed"].get<uint32_t>();
        slot = names.contains(std::to_string(k)) ? fmt::format("{} {}", k, slot_name(names, k)) : std::to_string(k);
      }
      std::string observed = d.contains("window") ? fmt_ms(d["window"]["observed_ms"]) : "-";
      std::string r1 = "-", r5 = "-";
      if (d.contains("outcomes"))
        for (const auto& oc : d["outcomes"])
          (oc["after_periods"] == 1 ? r1 : r5) = fmt::format("{:.2f}", oc["reward"].get<double>());
      std::string why = d.value("why", "");
      if (d.contains("raw") && d["raw"].is_string())
        why = fmt::format("answer {} -> {}", json(d["raw"]).dump(-1, ' ', false, json::error_handler_t::replace), why);
      std::string verdict = d.value("verdict", "");
      std::cout << fmt::format("{:>5}  {:<12} {:<9} {:<16}  {:<7} {:>9} {:>7} {:>7}  {}{}\n", last, time,
                               d.value("source", "?"), slot, d.value("applied", false) ? "yes" : "no", observed, r1, r5,
                               why, verdict.empty() || verdict == "applied" ? "" : " [" + verdict + "]");
    }
    std::cout.flush();
    if (!follow) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

int cmd_telemetry(const ClientOptions& o, uint32_t last) {
  auto r = call(o, "v1.telemetry", {{"last", last}});
  if (!r) return report(r.error(), o.json);
  if (o.json) {  // one window a line, oldest first
    for (const auto& w : (*r)["windows"]) std::cout << w.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{:>6} {:>8} {:>8}  {:>16}  {:>16}  {:>5} {:>5} {:>6}  {:>8} {:>9}\n", "seq", "t s", "running",
                           "lc run/wait ms", "be run/wait ms", "busy", "batch", "queued", "in-fl", "req p99");
  for (const auto& w : (*r)["windows"]) {
    const json& lc = w["classes"]["lc"];
    const json& be = w["classes"]["be"];
    const json& app = w["app"];
    std::string running = w["effective"].is_number() ? std::to_string(w["effective"].get<uint32_t>()) : "-";
    std::cout << fmt::format("{:>6} {:>8.1f} {:>8}  {:>7.1f}/{:<8.1f}  {:>7.1f}/{:<8.1f}  {:>4.0f}% {:>4.0f}% {:>6}  {:>8} {:>9}\n",
                             w["seq"].get<uint64_t>(), w["t_s"].get<double>(), running, lc["run_ms"].get<double>(),
                             lc.value("wait_ms", 0.0), be["run_ms"].get<double>(), be.value("wait_ms", 0.0),
                             w["cpu_util"].get<double>() * 100, w["batch_share"].get<double>() * 100,
                             w["queued"].get<uint64_t>(),
                             app["requests_processing"].is_number() ? fmt::format("{:g}", app["requests_processing"].get<double>())
                                                                    : "-",
                             fmt_ms(app["latency_p99_ms"]));
  }
  return kExitOk;
}

int cmd_push(const ClientOptions& o, const std::vector<double>& latency_ms, std::optional<double> waiting_ms,
             const std::optional<std::string>& phase, const std::vector<double>& tpot_ms,
             const std::vector<double>& decode_ms) {
  if (latency_ms.empty() && tpot_ms.empty() && !waiting_ms && !phase) {
    std::cerr << "akts: push: give latencies (ms), --tpot MS... with --decode MS..., --waiting MS, --phase NAME, or "
                 "several\n";
    return kExitUsage;
  }
  if (tpot_ms.size() != decode_ms.size()) {
    std::cerr << fmt::format("akts: push: {} --tpot but {} --decode: give one decode time (how long the request "
                             "decoded, ms) per TPOT\n",
                             tpot_ms.size(), decode_ms.size());
    return kExitUsage;
  }
  json params = json::object();
  if (!latency_ms.empty()) params["latency_ms"] = latency_ms;
  if (!tpot_ms.empty()) {
    params["tpot_ms"] = tpot_ms;
    params["decode_ms"] = decode_ms;
  }
  if (waiting_ms) params["waiting_ms"] = *waiting_ms;
  if (phase) params["phase"] = *phase;
  auto r = call(o, "v1.push", params);
  if (!r) return report(r.error(), o.json);
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  auto accepted = [&](const char* what, const char* taken, const char* dropped) {
    const uint64_t d = r->value(dropped, uint64_t{0});
    std::cout << fmt::format("accepted {} {} samples{}\n", r->value(taken, uint64_t{0}), what,
                             d ? fmt::format(" ({} dropped: the window holds 100,000 at most)", d) : "");
  };
  if (!latency_ms.empty()) accepted("latency", "accepted", "dropped");
  if (!tpot_ms.empty()) accepted("time-per-output-token", "tpot_accepted", "tpot_dropped");
  if (waiting_ms) std::cout << fmt::format("reported the oldest request waiting {:g} ms for its first token\n", *waiting_ms);
  if (phase) std::cout << fmt::format("said that the load's phase {} begins now\n", quote_escaped(*phase, 64));
  return kExitOk;
}

int cmd_policies(const ClientOptions& o) {
  auto r = call(o, "v1.policies");
  if (!r) return report(r.error(), o.json);
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  uint32_t sel = (*r)["selected"], eff = (*r)["effective"];
  std::cout << fmt::format("{:>4}  {:<12} {}\n", "slot", "policy", "what it does / when to pick it");
  for (const auto& p : (*r)["policies"]) {
    uint32_t slot = p["slot"];
    std::string mark = slot == eff ? (slot == sel ? " *" : " !") : (slot == sel ? " s" : "  ");
    std::cout << fmt::format("{:>4}{} {:<12} {}\n{:>7}{:<12} pick: {}\n", slot, mark, p["name"].get<std::string>(),
                             p["summary"].get<std::string>(), "", "", p["pick_when"].get<std::string>());
  }
  std::cout << fmt::format("{} slots; * active. Empty and out-of-range slots run the built-in default.\n",
                           (*r)["slots"].get<uint32_t>());
  return kExitOk;
}

// "slot 1", or "the built-in default" for an index that names no slot.
static std::string slot_label(uint32_t slot) {
  return slot < AKTS_MAX_SLOTS ? fmt::format("slot {}", slot) : std::string("the built-in default");
}

int cmd_switch(const ClientOptions& o, const std::string& target, bool force) {
  json params = {{"target", target}};
  if (force) params["force"] = true;
  auto r = call(o, "v1.switch", params);
  if (!r) return report(r.error(), o.json);
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  const json& pol = (*r)["policy"];
  std::cout << fmt::format("switched: slot {} -> slot {} ({})\n", (*r)["previous"].get<uint32_t>(),
                           (*r)["selected"].get<uint32_t>(),
                           pol.is_null() ? "no policy: the built-in default runs" : pol.get<std::string>());
  if ((*r)["effective"] != (*r)["selected"])
    std::cout << fmt::format("note: the in-kernel override (the circuit breaker) is active; {} runs\n",
                             slot_label((*r)["effective"].get<uint32_t>()));
  return kExitOk;
}

int cmd_status(const ClientOptions& o) {
  auto r = call(o, "v1.status");
  if (!r) return report(r.error(), o.json);
  if (o.json) {
    std::cout << r->dump(2) << "\n";
    return kExitOk;
  }
  const json& s = *r;
  auto pname = [](const json& p) { return p.is_null() ? std::string("none: built-in default") : p.get<std::string>(); };
  std::cout << fmt::format("scheduler   {} ({}), {}\n", s["scheduler"]["state"].get<std::string>(),
                           s["scheduler"]["ops"].get<std::string>(), s["mode"].get<std::string>());
  std::cout << fmt::format("selected    slot {} ({})\n", s["selected"]["slot"].get<uint32_t>(),
                           pname(s["selected"]["policy"]));
  if (s["override"]["active"].get<bool>())
    std::cout << fmt::format("override    {} (set in the kernel)\n", slot_label(s["override"]["slot"].get<uint32_t>()));
  std::cout << fmt::format("running     slot {} ({})\n", s["effective"]["slot"].get<uint32_t>(),
                           pname(s["effective"]["policy"]));
  if (s.contains("guard") && s["guard"].contains("enabled")) {
    const json& g = s["guard"];
    if (g["enabled"].get<bool>())
      std::cout << fmt::format("guard       max_wait {:g} ms, rescue slice {:g} ms, period {:g} ms\n",
                               g["max_wait_ms"].get<double>(), g["rescue_slice_ms"].get<double>(),
                               g["period_ms"].get<double>());
    else
      std::cout << "guard       off (waits are unbounded)\n";
    if (g.value("quantum_timer_ms", 0.0) > 0)
      std::cout << fmt::format("quanta      ended by the quantum timer (every {:g} us), not only at ticks\n",
                               g["quantum_timer_ms"].get<double>() * 1000);
  }
  if (s.contains("breaker") && s["breaker"].contains("params")) {
    const json& b = s["breaker"];
    if (!b["params"]["armed"].get<bool>())
      std::cout << "breaker     disarmed\n";
    else
      std::cout << fmt::format("breaker     armed for {}: trips at an oldest wait of {:g} ms, safe slot {}; {} trip{}{}\n",
                               b["params"]["class"].get<std::string>(), b["params"]["oldest_wait_ms"].get<double>(),
                               b["params"]["safe_slot"].is_string() ? std::string("the built-in default")
                                                                     : b["params"]["safe_slot"].dump(),
                               b["trips"].get<uint64_t>(),
                               b["trips"].get<uint64_t>() == 1 ? "" : "s",
                               b["tripped"].get<bool>() ? fmt::format(", TRIPPED {:.1f} s ago ({})",
                                                                      b["tripped_for_s"].get<double>(),
                                                                      b["last_trip"]["reason"].get<std::string>())
                                                        : "");
  }
  std::cout << fmt::format("uptime      {:.1f} s\n", s["uptime_seconds"].get<double>());
  if (s.contains("reasoning") && s["reasoning"].is_object() && s["reasoning"].contains("objective")) {
    std::cout << fmt::format("objective   {}\n", s["reasoning"]["objective"].value("describe", std::string("?")));
    print_margins(s["reasoning"].value("objective_now", json(nullptr)));
  }
  if (s.contains("reload") && s["reload"].is_object() && s["reload"]["last"].is_object()) {
    const json& l = s["reload"]["last"];
    std::string what = l.value("ok", false)
                           ? (l["changed"].empty() ? "nothing changed" : fmt::format("applied {}", fmt::join(l["changed"], ", ")))
                           : (l.value("partial", false) ? "FAILED part way: " : "REFUSED, nothing changed: ") +
                                 l.value("error", std::string("?"));
    std::cout << fmt::format("reload      {} ({}): {}\n", l.value("at", std::string("?")), l.value("source", std::string("?")),
                             what);
  }
  const auto& managed = s["managed_processes"];
  std::cout << fmt::format("managed     {} process{}\n", managed.size(), managed.size() == 1 ? "" : "es");
  for (const auto& m : managed)
    std::cout << fmt::format("  {:>7}  {:<16} {}  ({})\n", m["pid"].get<uint32_t>(), m["comm"].get<std::string>(),
                             m["class"].get<std::string>(), m["reason"].get<std::string>());
  if (!s["exit"].is_null())
    std::cout << fmt::format("exit        {} {}\n", s["exit"]["kind"].get<std::string>(),
                             s["exit"]["reason"].get<std::string>());
  return kExitOk;
}

int cmd_stats(const ClientOptions& o, std::chrono::nanoseconds interval, int count, bool reset_longest) {
  const json params = reset_longest ? json{{"reset_longest", true}} : json::object();
  auto first = call(o, "v1.stats", params);
  if (!first) return report(first.error(), o.json);
  if (interval.count() == 0) {
    if (o.json) {
      std::cout << first->dump(2) << "\n";
      return kExitOk;
    }
  }
  auto prev_stats = Stats::from_json(*first);
  if (!prev_stats) return report(make_error(ErrorKind::kSystem, "the daemon's stats are malformed"), o.json);
  int64_t prev_ts = (*first)["timestamp_ns"];
  auto print = [&](const json& snap, const Stats& d, double secs) {
    const json& names = snap["policy_names"];
    uint32_t eff = snap["effective"];
    uint64_t total = d.total_entries(), ft = d.total_fallthrough();
    if (o.json) {
      json j = d.to_json();
      j["interval_seconds"] = secs;
      j["effective"] = eff;
      j["policy"] = names.contains(std::to_string(eff)) ? names[std::to_string(eff)] : json(nullptr);
      j["guard"] = snap.value("guard", json(nullptr));
      j["window"] = snap.value("window", json(nullptr));
      j["reasoning"] = snap.value("reasoning", json(nullptr));
      std::cout << j.dump() << "\n";
      return;
    }
    std::string slots;
    for (uint32_t k = 0; k < kMaxSlots; ++k)
      if (uint64_t c = d.total_calls(k))
        slots += fmt::format(" {}={:.1f}%", slot_name(names, k), total ? 100.0 * c / total : 0.0);
    std::cout << fmt::format("[akts] {:5.2f}s  running {:<12} {:>9.0f} calls/s  reached:{}  default={:.1f}%\n", secs,
                             slot_name(names, eff), total / secs, slots.empty() ? " -" : slots,
                             total ? 100.0 * ft / total : 0.0);
    std::cout << fmt::format("       wait  lc p50 {:>7} p99 {:>7} (n={})   be p50 {:>7} p99 {:>7} (n={})\n",
                             fmt_ns(d.wait_percentile_ns(AKTS_CLASS_LC, 0.5)),
                             fmt_ns(d.wait_percentile_ns(AKTS_CLASS_LC, 0.99)), d.waits(AKTS_CLASS_LC),
                             fmt_ns(d.wait_percentile_ns(AKTS_CLASS_BE, 0.5)),
                             fmt_ns(d.wait_percentile_ns(AKTS_CLASS_BE, 0.99)), d.waits(AKTS_CLASS_BE));
    if (d.quantum_ends || d.quantum_kicks || d.quantum_cut)
      std::cout << fmt::format(
          "       quanta  {} ran out, past their slice by p50 {:>7} p99 {:>7} (max since load {}); {} cut short; "
          "{} timer kicks\n",
          d.quantum_ends, fmt_ns(d.overrun_percentile_ns(0.5)), fmt_ns(d.overrun_percentile_ns(0.99)),
          fmt_ns(static_cast<double>(d.quantum_overrun_max_ns)), d.quantum_cut, d.quantum_kicks);
    if (snap.contains("guard") && snap["guard"].is_object()) {
      const json& g = snap["guard"];
      auto ms = [](const json& v) { return fmt_ns(v.get<double>() * 1e6); };
      const json& lc = g["classes"]["lc"];
      const json& be = g["classes"]["be"];
      std::cout << fmt::format(
          "       guard lc oldest {:>7} longest {:>7}   be oldest {:>7} longest {:>7}   rescues {}  (max_wait {})\n",
          ms(lc["oldest_waiting_ms"]), ms(lc["longest_wait_ms"]), ms(be["oldest_waiting_ms"]),
          ms(be["longest_wait_ms"]), lc["rescues"].get<uint64_t>() + be["rescues"].get<uint64_t>(),
          g["params"]["enabled"].get<bool>() ? ms(g["params"]["max_wait_ms"]) : std::string("off"));
    }
    if (snap.contains("window") && snap["window"].is_object())
      print_window_line(snap["window"], snap.contains("reasoning") ? snap["reasoning"] : json(nullptr));
    std::cout.flush();
  };
  if (interval.count() == 0) {
    print(*first, *prev_stats, 1.0);
    return kExitOk;
  }
  for (int i = 0; count == 0 || i < count; ++i) {
    std::this_thread::sleep_for(interval);
    auto snap = call(o, "v1.stats", params);
    if (!snap) return report(snap.error(), o.json);
    auto s = Stats::from_json(*snap);
    if (!s) return report(make_error(ErrorKind::kSystem, "the daemon's stats are malformed"), o.json);
    int64_t ts = (*snap)["timestamp_ns"];
    print(*snap, *s - *prev_stats, static_cast<double>(ts - prev_ts) / 1e9);
    prev_stats = s;
    prev_ts = ts;
  }
  return kExitOk;
}

int cmd_stats_exposition(const ClientOptions& o, metrics::Format f) {
  auto snap = call(o, "v1.stats", json::object());
  if (!snap) return report(snap.error(), false);
  auto text = metrics::render(*snap, {std::string(build_version()), std::string(build_commit())}, f);
  if (!text) return report(text.error(), false);
  std::cout << *text;
  std::cout.flush();
  return std::cout ? kExitOk : kExitFail;
}

int cmd_classify(const ClientOptions& o, const std::string& pid_text, const std::string& cls) {
  auto pid = parse_u32(pid_text, "pid");
  if (!pid) return report(pid.error(), o.json);
  if (cls.empty()) {
    auto r = call(o, "v1.class", {{"pid", *pid}});
    if (!r) return report(r.error(), o.json);
    if (o.json) {
      std::cout << r->dump(2) << "\n";
    } else {
      const json& m = (*r)["managed"];
      std::cout << fmt::format("pid {}: the kernel schedules it as {}{}; {}\n", *pid,
                               (*r)["kernel_class"].get<std::string>(),
                               (*r)["kernel_entry"].get<bool>() ? "" : " (no entry: the default)",
                               m.is_null() ? std::string("the daemon's rules do not name it")
                                           : fmt::format("the daemon holds {} ({})", m["class"].get<std::string>(),
                                                         m["reason"].get<std::string>()));
    }
    return kExitOk;
  }
  auto r = call(o, "v1.classify", {{"pid", *pid}, {"class", cls}});
  if (!r) return report(r.error(), o.json);
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else
    std::cout << fmt::format("pid {} is {} (its threads and children follow)\n", *pid, cls);
  return kExitOk;
}

int cmd_hint(const ClientOptions& o, const std::string& tid_text, const std::string& remaining, bool clear) {
  auto tid = parse_u32(tid_text, "tid");
  if (!tid) return report(tid.error(), o.json);
  if (clear == !remaining.empty())
    return report(make_error(ErrorKind::kInvalidArgument,
                             clear ? "hint: give a remaining time or --clear, not both"
                                   : "hint: give the remaining CPU time (e.g. 30ms) or --clear"),
                  o.json);
  json params = {{"pid", *tid}};
  if (clear)
    params["clear"] = true;
  else
    params["remaining"] = remaining;  // the daemon parses and range-checks it
  auto r = call(o, "v1.hint", params);
  if (!r) return report(r.error(), o.json);
  if (o.json)
    std::cout << r->dump(2) << "\n";
  else if (clear)
    std::cout << fmt::format("thread {}: {}\n", *tid, (*r)["cleared"].get<bool>() ? "hint cleared" : "had no hint");
  else
    std::cout << fmt::format("thread {}: about {} of CPU time left (counted from {:.3f} s of CPU it has had)\n", *tid,
                             remaining, (*r)["exec_at_ns"].get<uint64_t>() / 1e9);
  return kExitOk;
}

int cmd_run(const ClientOptions& o, const std::string& cls, const std::vector<std::string>& argv) {
  if (argv.empty()) return report(make_error(ErrorKind::kInvalidArgument, "run: no command given (akts run -- CMD)"), false);
  auto r = call(o, "v1.classify", {{"pid", static_cast<uint32_t>(getpid())}, {"class", cls}});
  if (!r) return report(r.error(), false);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  int e = errno;
  std::cerr << fmt::format("akts: run: cannot execute {}: {}\n", argv[0], std::strerror(e));
  return e == ENOENT ? 127 : 126;
}

void add_client_commands(Commands& c) {
  auto& app = c.app();
  auto& co = c.keep<ClientOptions>();
  auto* policies = app.add_subcommand("policies", "List the loaded policies by slot, and which one runs.");
  add_client_flags(policies, co);

  auto& target = c.keep<std::string>();
  auto& force = c.keep<bool>(false);
  auto* sw = app.add_subcommand("switch",
                                "Select a policy by slot number or name. Empty and out-of-range slots are refused\n"
                                "unless --force (then the dispatcher runs its built-in default).");
  sw->add_option("target", target, "slot number or policy name")->required();
  sw->add_flag("--force", force, "select even an empty or out-of-range slot");
  add_client_flags(sw, co);

  auto* status = app.add_subcommand("status", "Scheduler state, selected and running policy, managed processes.");
  add_client_flags(status, co);

  auto& interval_text = c.keep<std::string>();
  auto& count = c.keep<int>(0);
  auto* stats = app.add_subcommand("stats",
                                   "Per-slot invocations, per-class wait p50/p99 and the bounded-wait guard (oldest "
                                   "waiter now,\nexact longest wait, rescues). Without --interval: the totals since "
                                   "attach; with it: one\nline per interval (like the scx schedulers' stats).");
  stats->add_option("-i,--interval", interval_text, "e.g. 1s, 500ms");
  stats->add_option("-n,--count", count, "intervals to print (default: until interrupted)")->check(CLI::Range(0, 1000000));
  auto& reset_longest = c.keep<bool>(false);
  auto& stats_format = c.keep<std::string>();
  auto* prom_flag = stats->add_flag("--prometheus{prometheus}", stats_format,
                  "print the totals once in the Prometheus text format (the daemon's /metrics, see akts daemon "
                  "--metrics-listen)");
  stats->add_flag("--openmetrics{openmetrics}", stats_format, "the same in the OpenMetrics 1.0 text format")
      ->excludes(prom_flag);
  stats->add_flag("--reset-longest", reset_longest,
                  "start the exact longest waits afresh after each reading (the daemon keeps one set for all "
                  "clients)");
  add_client_flags(stats, co);

  auto& run_class = c.keep<std::string>("lc");
  auto& run_argv = c.keep<std::vector<std::string>>();
  auto* run = app.add_subcommand("run", "Run a command in a class (default lc); its threads and children follow.");
  run->add_option("--class", run_class, "lc or be")->check(CLI::IsMember({"lc", "be"}));
  run->add_option("--socket", co.socket, "the daemon's control socket")->capture_default_str();
  run->add_option("command", run_argv, "the command and its arguments (after --)")->required();

  auto& cl_pid = c.keep<std::string>();
  auto& cl_class = c.keep<std::string>();
  auto* classify = app.add_subcommand(
      "classify",
      "Put a running process (and its threads, children) in a class; without a class, show the class\nthe kernel "
      "applies to it now and what the daemon's rules decided.");
  classify->add_option("pid", cl_pid, "process id")->required();
  classify->add_option("class", cl_class, "lc or be")->check(CLI::IsMember({"lc", "be"}));
  add_client_flags(classify, co);

  auto& hint_tid = c.keep<std::string>();
  auto& hint_left = c.keep<std::string>();
  auto& hint_clear = c.keep<bool>(false);
  auto* hintc = app.add_subcommand(
      "hint",
      "Tell the scheduler how much CPU time a thread's current work still needs (the srpt policy runs the\n"
      "least remaining first; a thread with no hint, or one that outruns it, falls back to round-robin).\n"
      "The thread must be scheduled by akts: in SCHED_EXT (akts classify its process first), or any thread\n"
      "when the daemon runs with --switch-all. Examples:\n"
      "  akts hint 4242 30ms        (thread 4242's request needs about 30 ms more)\n"
      "  akts hint 4242 --clear");
  hintc->add_option("tid", hint_tid, "thread id (a process id names its main thread)")->required();
  hintc->add_option("remaining", hint_left, "CPU time still needed: 1us to 3600s, e.g. 250us, 30ms, 2s");
  hintc->add_flag("--clear", hint_clear, "remove the thread's hint");
  add_client_flags(hintc, co);

  auto& hold_target = c.keep<std::string>();
  auto& hold_for = c.keep<std::string>();
  auto* holdc = app.add_subcommand(
      "hold",
      "Select a policy and keep it: every other switch (an operator's, a controller's) is refused until the\n"
      "time passes or `akts release`. Only the in-kernel breaker's override ranks above a hold.");
  holdc->add_option("policy", hold_target, "slot number or policy name")->required();
  holdc->add_option("--for", hold_for, "how long, e.g. 30s, 5m (at most 24h)")->required();
  add_client_flags(holdc, co);
  auto* releasec = app.add_subcommand("release", "End a hold (and an operator's grace): controllers may switch again.");
  add_client_flags(releasec, co);
  auto* reloadc = app.add_subcommand(
      "reload",
      "Make the daemon read its config file again (its flags still win) and apply what changed: the classes, the\n"
      "objective, the controller and its settings, the telemetry, the decision log. A file that fails a check, or\n"
      "changes a key read at start only (the policies, the socket, ...: named in the refusal), changes nothing\n"
      "(exit 2). SIGHUP and systemctl reload do the same; akts status shows the last outcome (docs/deploy.md).");
  add_client_flags(reloadc, co);

  auto& objective_words = c.keep<std::vector<std::string>>();
  auto* objc = app.add_subcommand(
      "objective",
      "Show the objective, or set it from the goal in words: one signal (\"wait\": the LC tasks' scheduling\n"
      "wait; \"request\" or \"TTFT\": the application's time to first token; \"TPOT\": its time per output\n"
      "token) and one ceiling, e.g.\n"
      "  akts objective keep the LC wait p99 under 20 ms\n"
      "  akts objective request latency p99 below 500ms\n"
      "Several limits, all required, go in the daemon's config (\"objective\": {\"ttft_p99\": \"2s\",\n"
      "\"tpot_p99\": \"200ms\"}) or v1.objective. Controllers, the bandit's reward and the decision log use it\n"
      "from the next window; `akts status` shows each limit's margin in the latest window.");
  objc->add_option("goal", objective_words, "the goal in words (none: show the objective)");
  add_client_flags(objc, co);
  auto& ctl_name = c.keep<std::string>();
  auto& ctl_dry = c.keep<bool>(false);
  auto& ctl_apply = c.keep<bool>(false);
  auto* ctlc = app.add_subcommand(
      "controller",
      "Show or change who switches policies, at run time: none (operators only), detector (regime detector),\n"
      "bandit (contextual bandit), llm (a model behind an OpenAI-compatible endpoint), oracle (a schedule).\n"
      "Precedence: breaker override > hold > operator switch > controller (see `akts hold`).");
  ctlc->add_option("name", ctl_name, "the controller to run")->check(CLI::IsMember(kControllerNames));
  auto* dry_flag = ctlc->add_flag("--dry-run", ctl_dry, "log its decisions without applying them");
  auto* apply_flag = ctlc->add_flag("--apply", ctl_apply, "apply its decisions (ends a dry run)");
  dry_flag->excludes(apply_flag);
  add_client_flags(ctlc, co);

  auto& log_limit = c.keep<uint32_t>(30);
  auto* logc = app.add_subcommand(
      "log",
      "The decision log: each decision (controller or operator), what was proposed, whether it applied and\n"
      "why, and the reward one and five periods later. --json prints one JSON line per decision.");
  logc->add_option("-n,--limit", log_limit, "decisions to show (latest last, at most 500)")->check(CLI::Range(1, 500));
  auto& log_follow = c.keep<bool>(false);
  logc->add_flag("-f,--follow", log_follow,
                 "then print each new decision as it is made, until the daemon stops (rewards show in a later `akts "
                 "log`)");
  add_client_flags(logc, co);

  auto& telemetry_last = c.keep<uint32_t>(20);
  auto* telc = app.add_subcommand(
      "telemetry",
      "The telemetry windows controllers see (one per period, the last 600 kept): per class CPU time run and\n"
      "waited, CPU busy and batch share, queued tasks, the application's in-flight requests and pushed latency.\n"
      "--json prints one window a line, with every field.");
  telc->add_option("-n,--last", telemetry_last, "windows to show (oldest first, at most 600)")->check(CLI::Range(1, 600));
  add_client_flags(telc, co);

  auto& push_ms = c.keep<std::vector<double>>();
  auto& push_waiting = c.keep<std::optional<double>>();
  auto& push_tpot = c.keep<std::vector<double>>();
  auto& push_decode = c.keep<std::vector<double>>();
  auto& push_phase = c.keep<std::optional<std::string>>();
  auto* pushc = app.add_subcommand(
      "push",
      "Send request latencies the daemon cannot see (e.g. TTFT measured by a proxy) into the telemetry, and with\n"
      "--waiting how long the oldest request not yet answered has waited for its first token (a starved server\n"
      "answers nothing: this is how the objective sees it). A report counts in the window it arrives in, aged to\n"
      "the window's end; a proxy reports it every period while a request waits, and 0 when none does. With\n"
      "--phase, the load's phase that begins now (an oracle of phases follows it: controller.oracle \"phases\").");
  pushc->add_option("latency_ms", push_ms, "latencies in milliseconds")->check(CLI::Range(0.0, 3600e3));
  pushc->add_option("--tpot", push_tpot, "times per output token of requests that ended, in ms (the TPOT limit's signal)")
      ->check(CLI::Range(0.0, 3600e3));
  pushc->add_option("--decode", push_decode, "how long each of those requests decoded, in ms (one per --tpot)")
      ->check(CLI::Range(0.0, 3600e3));
  pushc->add_option("--waiting", push_waiting, "the oldest unanswered request's wait so far, in ms (0: none waits)")
      ->check(CLI::Range(0.0, 3600e3));
  pushc->add_option("--phase", push_phase, "the name of the load's phase that begins now (1 to 64 bytes, no control characters)");
  add_client_flags(pushc, co);
  c.on(policies, [&] { return cmd_policies(co); });
  c.on(sw, [&] { return cmd_switch(co, target, force); });
  c.on(status, [&] { return cmd_status(co); });
  c.on(stats, [&] {
    std::chrono::nanoseconds interval{0};
    if (!interval_text.empty()) {
      auto d = parse_duration(interval_text, "--interval");
      if (!d || d->count() < 10'000'000) {
        std::cerr << "akts: " << (d ? "--interval: at least 10ms" : d.error().to_string()) << "\n";
        return kExitUsage;
      }
      interval = *d;
    }
    if (!stats_format.empty()) {
      if (interval.count() || count || reset_longest || co.json) {
        std::cerr << "akts: --" << stats_format
                  << " prints the totals once: it takes no --interval, --count, --reset-longest or --json (a "
                     "scraper computes rates from the counters)\n";
        return kExitUsage;
      }
      return cmd_stats_exposition(co, stats_format == "openmetrics" ? metrics::Format::kOpenMetrics
                                                                    : metrics::Format::kPrometheus);
    }
    return cmd_stats(co, interval, count, reset_longest);
  });
  c.on(run, [&] { return cmd_run(co, run_class, run_argv); });
  c.on(classify, [&] { return cmd_classify(co, cl_pid, cl_class); });
  c.on(hintc, [&] { return cmd_hint(co, hint_tid, hint_left, hint_clear); });
  c.on(holdc, [&] { return cmd_hold(co, hold_target, hold_for); });
  c.on(releasec, [&] { return cmd_release(co); });
  c.on(reloadc, [&] { return cmd_reload(co); });
  c.on(objc, [&] { return cmd_objective(co, objective_words); });
  c.on(ctlc, [&] {
    return cmd_controller(co, ctl_name,
                          ctl_dry ? std::optional<bool>(true) : ctl_apply ? std::optional<bool>(false) : std::nullopt);
  });
  c.on(logc, [&] { return cmd_log(co, log_limit, log_follow); });
  c.on(telc, [&] { return cmd_telemetry(co, telemetry_last); });
  c.on(pushc, [&] {
    for (double v : push_decode)
      if (!std::isfinite(v)) {
        std::cerr << "akts: push: every --decode must be a finite number of milliseconds\n";
        return kExitUsage;
      }
    for (double v : push_tpot)
      if (!std::isfinite(v)) {
        std::cerr << "akts: push: every --tpot must be a finite number of milliseconds\n";
        return kExitUsage;
      }
    for (double v : push_ms)
      if (!std::isfinite(v)) {
        std::cerr << "akts: push: every latency must be a finite number of milliseconds\n";
        return kExitUsage;
      }
    if (push_waiting && !std::isfinite(*push_waiting)) {
      std::cerr << "akts: push: --waiting must be a finite number of milliseconds\n";
      return kExitUsage;
    }
    return cmd_push(co, push_ms, push_waiting, push_phase, push_tpot, push_decode);
  });
}

}  // namespace akts::cli
