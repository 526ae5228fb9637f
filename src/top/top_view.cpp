// `akts top`'s model: the daemon's answers read into a View, and a View laid out as a terminal's lines.
#include "top/top_view.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "akts.h"
#include "common/text.h"

namespace akts::top {
namespace {

using json = nlohmann::json;

// The value at a path of object keys, or nullptr when a key is missing or a step is not an object.
const json* at(const json& j, std::initializer_list<const char*> path) {
  const json* cur = &j;
  for (const char* k : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}
std::optional<double> num(const json& j, std::initializer_list<const char*> path) {
  const json* v = at(j, path);
  if (!v || !v->is_number()) return std::nullopt;
  return v->get<double>();
}
std::string str(const json& j, std::initializer_list<const char*> path) {
  const json* v = at(j, path);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}
bool flag(const json& j, std::initializer_list<const char*> path) {
  const json* v = at(j, path);
  return v && v->is_boolean() && v->get<bool>();
}

std::string ms_text(std::optional<double> ms) {
  if (!ms) return "-";
  return duration_text(*ms / 1e3);
}

}  // namespace

// A line cut to the width (by code points: the text is UTF-8; a wide character counts as one column), control
// characters as spaces, invalid bytes as U+FFFD (common/text.h reads the sequences).
std::string fit(const std::string& s, int width) {
  if (width <= 0) return {};
  std::string out;
  int cols = 0;
  for (size_t i = 0; i < s.size() && cols < width; ++cols) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = utf8_sequence_length(std::string_view(s).substr(i));
    if (c < 0x20 || c == 0x7f) {
      out += ' ';  // a newline or a tab would move the cursor: a space instead
    } else if (n == 0) {
      out += "\xef\xbf\xbd";  // not UTF-8: U+FFFD, as valid_utf8() would
    } else {
      out.append(s, i, n);
    }
    i += n ? n : 1;
  }
  return out;
}

namespace {

ClassRow class_row(const json& stats, const char* cls, double cap_ms) {
  ClassRow r;
  const json* c = at(stats, {"window", "classes", cls});
  if (c) {
    r.wait_p50_ms = num(*c, {"wait_p50_ms"});
    r.wait_p99_ms = num(*c, {"wait_p99_ms"});
    r.oldest_ms = num(*c, {"oldest_wait_ms"}).value_or(0);
    if (cap_ms > 0) r.cpu_share = std::clamp(num(*c, {"run_ms"}).value_or(0) / cap_ms, 0.0, 1.0);
  }
  r.rescues = num(stats, {"guard", "classes", cls, "rescues"}).value_or(0);
  return r;
}

}  // namespace

std::string duration_text(std::optional<double> seconds) {
  if (!seconds || !std::isfinite(*seconds)) return "-";
  double s = std::max(0.0, *seconds);
  if (s < 1) return fmt::format("{:.0f} ms", s * 1e3);
  if (s < 60) return fmt::format("{:.1f} s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02}m", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
}

View read_view(const json& stats, const json& log, double now_unix) {
  View v;
  v.connected = true;
  std::vector<std::string> names;
  if (const json* n = at(stats, {"policy_names"}); n && n->is_object()) {
    for (const auto& [slot, name] : n->items()) {
      if (!name.is_string()) continue;
      uint32_t k = 0;
      try {
        k = static_cast<uint32_t>(std::stoul(slot));
      } catch (...) {
        continue;
      }
      if (k >= AKTS_MAX_SLOTS) continue;
      if (names.size() <= k) names.resize(k + 1);
      names[k] = name.get<std::string>();
    }
  }
  v.policies = names;
  auto name_of = [&](std::optional<double> slot) -> std::string {
    if (!slot || *slot < 0 || *slot >= static_cast<double>(AKTS_MAX_SLOTS)) return "default (built-in)";
    size_t k = static_cast<size_t>(*slot);
    return k < names.size() && !names[k].empty() ? names[k] : fmt::format("slot {}", k);
  };
  const auto eff = num(stats, {"effective"}), sel = num(stats, {"selected"});
  v.running = name_of(eff);
  v.selected = name_of(sel);
  v.overridden = eff && sel && *eff != *sel;
  if (sel && *sel >= 0 && *sel < static_cast<double>(AKTS_MAX_SLOTS) && static_cast<size_t>(*sel) < names.size() &&
      !names[static_cast<size_t>(*sel)].empty())
    v.selected_slot = static_cast<uint32_t>(*sel);
  v.running_for_s = num(stats, {"reasoning", "arbiter", "selection_changed_ago_s"});
  if (auto started = num(stats, {"process", "start_time_seconds"}); started && now_unix > *started)
    v.uptime_s = now_unix - *started;

  v.controller = str(stats, {"reasoning", "controller"});
  v.dry_run = flag(stats, {"reasoning", "arbiter", "dry_run"});
  v.hold_remaining_s = num(stats, {"reasoning", "arbiter", "hold", "remaining_s"});
  v.grace_remaining_s = num(stats, {"reasoning", "arbiter", "operator_grace_remaining_s"}).value_or(0);
  v.switches_last_minute = num(stats, {"reasoning", "arbiter", "switches_last_minute"}).value_or(0);
  v.switches_operator = num(stats, {"reasoning", "arbiter", "switches", "operator"}).value_or(0);
  v.switches_controller = num(stats, {"reasoning", "arbiter", "switches", "controller"}).value_or(0);
  v.objective = str(stats, {"reasoning", "objective", "describe"});
  if (const json* lims = at(stats, {"reasoning", "objective_now"}); lims && lims->is_array()) {
    for (const auto& l : *lims) {
      if (!l.is_object()) continue;
      LimitRow r;
      r.signal = str(l, {"signal"});
      r.max_ms = num(l, {"max_ms"}).value_or(0);
      r.observed_ms = num(l, {"observed_ms"});
      r.margin_ms = num(l, {"margin_ms"});
      r.met = !at(l, {"met"}) || flag(l, {"met"});
      v.limits.push_back(std::move(r));
    }
  }
  // The last decision logged (the newest record that is a decision).
  if (const json* d = at(log, {"decisions"}); d && d->is_array()) {
    for (auto it = d->rbegin(); it != d->rend(); ++it) {
      if (!it->is_object() || str(*it, {"type"}) != "decision") continue;
      v.last_decision_time = str(*it, {"time"});
      v.last_decision_verdict = str(*it, {"verdict"});
      v.last_decision_why = valid_utf8(str(*it, {"why"}));
      break;
    }
  }
  v.period_s = num(stats, {"window", "period_s"}).value_or(0.1);
  const double cap_ms = v.period_s * 1e3 * std::max(1.0, num(stats, {"window", "cpus"}).value_or(1));
  v.lc = class_row(stats, "lc", cap_ms);
  v.be = class_row(stats, "be", cap_ms);
  v.breaker_armed = flag(stats, {"breaker", "params", "armed"});
  v.breaker_tripped = flag(stats, {"breaker", "tripped"});
  v.breaker_trips = num(stats, {"breaker", "trips"}).value_or(0);
  v.app_running = num(stats, {"window", "app", "requests_processing"});
  v.app_waiting = num(stats, {"window", "app", "requests_waiting"});
  return v;
}

std::vector<std::string> layout(const View& v, int width, int height) {
  if (width < kMinWidth || height < kMinHeight)
    return {fit(fmt::format("akts top needs {}x{} (this is {}x{})", kMinWidth, kMinHeight, width, height), width)};
  std::vector<std::string> l;
  if (!v.connected) {
    l.push_back("akts top: the daemon does not answer");
    l.push_back("  " + v.error);
    l.push_back("  trying again every second");
  } else {
    l.push_back(fmt::format("running  {}{} for {}   (uptime {})", v.running,
                            v.overridden ? fmt::format(" [breaker override; selected {}]", v.selected) : "",
                            v.running_for_s ? duration_text(v.running_for_s) : "the daemon's life",
                            duration_text(v.uptime_s)));
    std::string pause = v.hold_remaining_s ? fmt::format("  PAUSED (held {} more)", duration_text(v.hold_remaining_s))
                        : v.grace_remaining_s > 0 ? fmt::format("  operator's grace {}", duration_text(v.grace_remaining_s))
                                                  : "";
    l.push_back(fmt::format("control  {}{}{}", v.controller.empty() ? "none" : v.controller, v.dry_run ? " (dry run)" : "",
                            pause));
    if (!v.last_decision_why.empty())
      l.push_back(fmt::format("  last   {} {}: {}", v.last_decision_time.size() > 11 ? v.last_decision_time.substr(11, 12)
                                                                                       : v.last_decision_time,
                              v.last_decision_verdict, v.last_decision_why));
    else
      l.push_back("  last   no decision logged yet");
    l.push_back(fmt::format("objective {}", v.objective.empty() ? "-" : v.objective));
    for (const auto& r : v.limits)
      l.push_back(fmt::format("  {:<20} {:>9} of {:>9}  margin {:>9}  {}", r.signal, ms_text(r.observed_ms),
                              ms_text(r.max_ms), r.margin_ms ? ms_text(std::fabs(*r.margin_ms)) +
                                                                   (*r.margin_ms < 0 ? " over" : "")
                                                             : "-",
                              r.met ? "met" : "MISSED"));
    l.push_back(fmt::format("{:<7}{:>10}{:>10}{:>12}{:>8}{:>10}", "class", "wait p50", "wait p99", "oldest", "CPU",
                            "rescues"));
    for (auto [name, c] : {std::pair{"LC", &v.lc}, std::pair{"BE", &v.be}})
      l.push_back(fmt::format("{:<7}{:>10}{:>10}{:>12}{:>7.0f}%{:>10.0f}", name, ms_text(c->wait_p50_ms),
                              ms_text(c->wait_p99_ms), ms_text(c->oldest_ms), 100 * c->cpu_share, c->rescues));
    l.push_back(fmt::format("switches {:.0f} in the last minute ({:.0f} by operators, {:.0f} by the controller in all)",
                            v.switches_last_minute, v.switches_operator, v.switches_controller));
    l.push_back(fmt::format("breaker  {}{}, {:.0f} trip(s)", v.breaker_armed ? "armed" : "disarmed",
                            v.breaker_tripped ? ", TRIPPED" : "", v.breaker_trips));
    l.push_back(v.app_running || v.app_waiting
                    ? fmt::format("app      {} running, {} waiting", v.app_running ? fmt::format("{:.0f}", *v.app_running) : "-",
                                  v.app_waiting ? fmt::format("{:.0f}", *v.app_waiting) : "-")
                    : "app      no application metrics (telemetry.metrics_url, or pushes)");
  }
  // The keys last; what does not fit above them is dropped from the bottom of the body.
  const std::string keys = width >= 48 ? "s switch  c controller  p pause/resume  q quit" : "s switch c ctl p pause q quit";
  const size_t body = static_cast<size_t>(height) - 2;
  if (l.size() > body) l.resize(body);
  while (l.size() < body) l.emplace_back();
  l.push_back("");
  l.push_back(keys);
  for (auto& s : l) s = fit(s, width);
  return l;
}

}  // namespace akts::top
