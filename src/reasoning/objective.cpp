// The objective's limits, their signals and margins, its reward, and its config and word forms.
#include "reasoning/objective.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/text.h"

namespace akts {

std::optional<double> Limit::ended_ms(const Window& w) const {
  switch (signal) {
    case Signal::kRequestLatencyP99: return w.app_latency_p99_ms;
    case Signal::kTpotP99: return w.app_tpot_p99_ms;
    case Signal::kLcWaitP99: break;
  }
  return w.wait_p99_ms[AKTS_CLASS_LC];
}

double Limit::waiting_ms(const Window& w) const {
  switch (signal) {
    case Signal::kRequestLatencyP99: return w.app_waiting_oldest_ms.value_or(0.0);
    case Signal::kTpotP99: return 0;
    case Signal::kLcWaitP99: break;
  }
  return w.oldest_wait_ms[AKTS_CLASS_LC];
}

double Limit::span_ms(const Window& w) const {
  const double period_ms = w.period_s > 0 ? w.period_s * 1e3 : 100;
  if (signal == Signal::kRequestLatencyP99 && w.app_latency_span_ms > 0) return w.app_latency_span_ms;
  if (signal == Signal::kTpotP99 && w.app_tpot_span_ms > 0) return w.app_tpot_span_ms;
  return period_ms;
}

std::optional<double> Limit::observed_ms(const Window& w) const {
  auto p99 = ended_ms(w);
  double oldest = waiting_ms(w);
  if (!p99 && oldest <= 0) return std::nullopt;
  return std::max(p99.value_or(0.0), oldest);
}

bool Limit::met(const Window& w) const {
  auto v = observed_ms(w);
  return !v || *v <= max_ms;
}

std::optional<double> Limit::margin_ms(const Window& w) const {
  auto v = observed_ms(w);
  if (!v) return std::nullopt;
  return max_ms - *v;
}

std::string Limit::name() const {
  switch (signal) {
    case Signal::kRequestLatencyP99: return "request_latency_p99";
    case Signal::kTpotP99: return "tpot_p99";
    case Signal::kLcWaitP99: break;
  }
  return "lc_wait_p99";
}

std::string Limit::label() const {
  switch (signal) {
    case Signal::kRequestLatencyP99: return "request latency p99";
    case Signal::kTpotP99: return "TPOT p99";
    case Signal::kLcWaitP99: break;
  }
  return "LC wait p99";
}

namespace {
nlohmann::json or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
}  // namespace

nlohmann::json Limit::in(const Window& w) const {
  return {{"signal", name()},           {"max_ms", max_ms},          {"observed_ms", or_null(observed_ms(w))},
          {"ended_ms", or_null(ended_ms(w))}, {"waiting_ms", waiting_ms(w)}, {"margin_ms", or_null(margin_ms(w))},
          {"met", met(w)}};
}

Objective Objective::single(Limit::Signal signal, double max_ms) {
  Objective o;
  o.limits = {Limit{signal, max_ms}};
  return o;
}

bool Objective::met(const Window& w) const {
  return std::all_of(limits.begin(), limits.end(), [&](const Limit& l) { return l.met(w); });
}

std::optional<double> Objective::pressure(const Window& w) const {
  const Limit* b = binding(w);
  if (!b) return std::nullopt;
  return *b->observed_ms(w) / b->max_ms;
}

const Limit* Objective::binding(const Window& w) const {
  const Limit* worst = nullptr;
  double worst_p = 0;
  for (const Limit& l : limits) {
    auto v = l.observed_ms(w);
    if (!v || l.max_ms <= 0) continue;
    double p = *v / l.max_ms;
    if (!worst || p > worst_p) worst = &l, worst_p = p;
  }
  return worst;
}

double Objective::reward(const Window& w) const {
  auto p = pressure(w);
  bool ok = met(w);
  double latency = ok || !p ? 1.0 : std::clamp(1.0 / *p, 0.0, 1.0);
  return 0.5 * latency + (ok ? 0.5 * w.batch_share() : 0.0);
}

nlohmann::json Objective::limits_in(const Window& w) const {
  nlohmann::json a = nlohmann::json::array();
  for (const Limit& l : limits) a.push_back(l.in(w));
  return a;
}

std::string Objective::margins(const Window& w) const {
  std::string s;
  bool any = false;
  for (const Limit& l : limits) {
    if (!s.empty()) s += ", ";
    auto v = l.observed_ms(w);
    if (!v) {
      s += fmt::format("{}: no sample (limit {:g} ms)", l.label(), l.max_ms);
      continue;
    }
    any = true;
    auto ended = l.ended_ms(w);
    const double waiting = l.waiting_ms(w);
    s += fmt::format("{} {:.1f} ms of {:g} ({} {:.1f} ms{})", l.label(), *v, l.max_ms,
                     *v <= l.max_ms ? "margin" : "over by", std::abs(l.max_ms - *v),
                     waiting > 0 ? fmt::format("; ended p99 {}, oldest still waiting {:.1f} ms",
                                               ended ? fmt::format("{:.1f} ms", *ended) : std::string("none"), waiting)
                                 : std::string());
  }
  return s + (any ? (met(w) ? "; met" : "; missed") : "; met");
}

std::string Objective::describe() const {
  std::string s;
  for (const Limit& l : limits) s += fmt::format("{}{} <= {:g} ms", s.empty() ? "" : " and ", l.label(), l.max_ms);
  return s + ", then maximise batch CPU";
}

std::string Objective::key() const {
  nlohmann::json j = {{"describe", describe()}};
  if (limits.size() == 1) {
    j["signal"] = limits.front().name();
    j["max_ms"] = limits.front().max_ms;
  } else {
    nlohmann::json a = nlohmann::json::array();
    for (const Limit& l : limits) a.push_back({{"signal", l.name()}, {"max_ms", l.max_ms}});
    j["limits"] = a;
  }
  return j.dump();
}

nlohmann::json Objective::to_json() const {
  nlohmann::json a = nlohmann::json::array();
  for (const Limit& l : limits) a.push_back({{"signal", l.name()}, {"max_ms", l.max_ms}});
  nlohmann::json j = {{"limits", a}, {"describe", describe()}};
  if (limits.size() == 1) {
    j["signal"] = limits.front().name();
    j["max_ms"] = limits.front().max_ms;
  }
  return j;
}

namespace {

std::optional<Limit::Signal> signal_named(const std::string& s) {
  if (s == "lc_wait_p99") return Limit::Signal::kLcWaitP99;
  if (s == "request_latency_p99" || s == "ttft_p99") return Limit::Signal::kRequestLatencyP99;
  if (s == "tpot_p99") return Limit::Signal::kTpotP99;
  return std::nullopt;
}

constexpr const char* kSignals = "lc_wait_p99, request_latency_p99 (or ttft_p99), tpot_p99";

Result<double> limit_ms(const nlohmann::json& v, const std::string& what) {
  double ms = 0;
  if (v.is_string()) {
    auto d = parse_duration(v.get_ref<const std::string&>(), what);
    if (!d) return d.error();
    ms = std::chrono::duration<double, std::milli>(*d).count();
  } else if (v.is_number()) {
    ms = v.get<double>();
  } else {
    return errorf(ErrorKind::kInvalidArgument, "{} must be a duration such as \"20ms\" or a number of milliseconds", what);
  }
  if (!std::isfinite(ms) || ms <= 0 || ms > 3600e3)
    return errorf(ErrorKind::kInvalidArgument, "{} must be above 0 and at most an hour", what);
  return ms;
}

}  // namespace

Result<Objective> Objective::from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.empty())
    return make_error(ErrorKind::kInvalidArgument,
                      "objective must be an object such as {\"signal\": \"lc_wait_p99\", \"max\": \"20ms\"} or "
                      "{\"ttft_p99\": \"2s\", \"tpot_p99\": \"200ms\"}");
  Objective o;
  if (!j.contains("signal") && !j.contains("max")) {
    // Several limits: each key a signal, each value its limit.
    o.limits.clear();
    for (const auto& [key, v] : j.items()) {
      auto sig = signal_named(key);
      if (!sig)
        return errorf(ErrorKind::kInvalidArgument,
                      "objective: \"{}\" is not a signal ({}); one limit is {{\"signal\", \"max\"}}, several are "
                      "{{SIGNAL: LIMIT, ...}}, not both",
                      excerpt(key), kSignals);
      for (const Limit& l : o.limits)
        if (l.signal == *sig)
          return errorf(ErrorKind::kInvalidArgument, "objective: {} is given twice", l.name());
      auto ms = limit_ms(v, "objective." + key);
      if (!ms) return ms.error();
      o.limits.push_back({*sig, *ms});
    }
    // One order whatever the spelling (ttft_p99 or request_latency_p99): the learner's key and the describe text
    // are the same for the same limits.
    std::sort(o.limits.begin(), o.limits.end(), [](const Limit& a, const Limit& b) { return a.signal < b.signal; });
    return o;
  }
  Limit l;
  bool have_max = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "signal") {
      if (!v.is_string()) return make_error(ErrorKind::kInvalidArgument, "objective.signal must be a string");
      auto sig = signal_named(v.get_ref<const std::string&>());
      if (!sig)
        return errorf(ErrorKind::kInvalidArgument, "objective.signal: '{}' is not a signal ({})",
                      excerpt(v.get_ref<const std::string&>()), kSignals);
      l.signal = *sig;
    } else if (key == "max") {
      auto ms = limit_ms(v, "objective.max");
      if (!ms) return ms.error();
      l.max_ms = *ms;
      have_max = true;
    } else {
      return errorf(ErrorKind::kInvalidArgument,
                    "objective: unknown key \"{}\" (one limit is {{\"signal\", \"max\"}}; several are {{SIGNAL: "
                    "LIMIT, ...}} with signals {}, not both forms at once)",
                    excerpt(key), kSignals);
    }
  }
  if (!have_max) return make_error(ErrorKind::kInvalidArgument, "objective: missing \"max\" (e.g. \"20ms\")");
  o.limits = {l};
  return o;
}

namespace {

bool has_word(const std::string& text, const char* re) {
  return std::regex_search(text, std::regex(std::string("(^|[^a-z0-9_])(") + re + ")($|[^a-z0-9_])"));
}

}  // namespace

Result<Objective> Objective::from_words(std::string_view words) {
  static constexpr std::string_view kExample =
      "say it like \"keep the LC wait p99 under 20 ms\", \"request latency p99 below 500 ms\" or \"TPOT p99 "
      "under 200 ms\"";
  if (words.size() > 500) return errorf(ErrorKind::kInvalidArgument, "the goal is {} bytes; at most 500", words.size());
  if (!is_valid_utf8(words)) return make_error(ErrorKind::kInvalidArgument, "the goal is not valid UTF-8 text");
  std::string text(words);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "µs" (U+00B5 or U+03BC) reads as "us".
  for (std::string micro : {std::string("\xc2\xb5s"), std::string("\xce\xbcs")})
    for (size_t at = text.find(micro); at != std::string::npos; at = text.find(micro)) text.replace(at, micro.size(), "us");

  bool wait = has_word(text, "wait|waits|waiting|queue|queueing|queuing|scheduling delay|run ?queue|runqueue");
  bool tpot = has_word(text, "tpot|tpots|per output token|time per output token|per token|per-token|inter-token|"
                             "inter token|itl");
  // With TPOT named, "request" alone may be its subject ("the requests' TPOT"); a latency of requests, a
  // response time or a first token still names the TTFT as a second signal.
  bool request = has_word(text, "ttft|first token|time to first token|request latency|requests latency|response "
                                "time|response times|response latency") ||
                 (!tpot && has_word(text, "request|requests|response|responses"));
  const int named = int(wait) + int(request) + int(tpot);
  if (named != 1)
    return errorf(ErrorKind::kInvalidArgument,
                  "the goal names {} signal: say \"wait\" (the LC tasks' scheduling wait), \"request\" or "
                  "\"TTFT\" (the application's time to first token) or \"TPOT\" (its time per output token); "
                  "several limits at once are given as JSON ({{\"ttft_p99\": \"2s\", \"tpot_p99\": "
                  "\"200ms\"}}); {}",
                  named ? "more than one" : "no", kExample);
  // Any percentile but the p99 ("p75", "p99.9", "95th percentile"), and other statistics, are refused.
  static const std::regex percentile("(^|[^a-z0-9_])p([0-9]+(\\.[0-9]+)?)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), percentile); it != std::sregex_iterator(); ++it)
    if ((*it)[2].str() != "99")
      return errorf(ErrorKind::kInvalidArgument, "only the p99 can be an objective, not p{}; {}", (*it)[2].str(), kExample);
  if (has_word(text, "[0-9]+(st|nd|rd|th)|percentile|median|mean|average|avg|max|maximum|min|minimum|worst|tail"))
    return errorf(ErrorKind::kInvalidArgument, "only the p99 can be an objective (say \"p99\"); {}", kExample);
  // A floor ("above 100 ms", "at least", "> 5ms") is refused; "not exceed", "no more than" are ceilings.
  static const std::regex floor_word("(^|[^a-z0-9_])(above|exceeds?|more than|at least|greater than|higher than|over)($|[^a-z0-9_])");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), floor_word); it != std::sregex_iterator(); ++it) {
    std::string before = text.substr(0, static_cast<size_t>(it->position(2)));
    static const std::regex negated("(not|no|never|n't)\\s*$");
    if (!std::regex_search(before, negated))
      return errorf(ErrorKind::kInvalidArgument,
                    "an objective is a ceiling on latency (\"under\", \"below\", \"at most\"), not a floor; {}",
                    kExample);
  }
  if (text.find('>') != std::string::npos)
    return errorf(ErrorKind::kInvalidArgument,
                  "an objective is a ceiling on latency (\"under\", \"below\", \"at most\"), not a floor; {}",
                  kExample);
  static const std::regex duration(
      "(-?)([0-9]+(\\.[0-9]+)?)\\s*(ms|msec|millisecond|milliseconds|s|sec|secs|second|seconds|us|usec|"
      "microsecond|microseconds)(?![a-z0-9_])");
  std::vector<std::smatch> found;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), duration); it != std::sregex_iterator(); ++it) {
    // A number glued to letters before it ("p99 5s" is fine; "x5s" is not a duration).
    size_t at = static_cast<size_t>(it->position(0));
    if (at > 0 && std::isalpha(static_cast<unsigned char>(text[at - 1]))) continue;
    // ".5 s", "1,5 s", "1.5.2 s": a number this reading would cut short is refused, not misread.
    if (at > 0 && (text[at - 1] == '.' || text[at - 1] == ','))
      return errorf(ErrorKind::kInvalidArgument, "write the number with digits before a decimal point (0.5, not .5 or 1,5); {}",
                    kExample);
    found.push_back(*it);
  }
  if (found.size() != 1)
    return errorf(ErrorKind::kInvalidArgument, "the goal must name exactly one duration, it names {}; {}",
                  found.size(), kExample);
  const auto& m = found.front();
  if (m[1].length() > 0) return errorf(ErrorKind::kInvalidArgument, "a latency cannot be negative; {}", kExample);
  std::string unit = m[4].str();
  std::string canonical = unit.rfind("mic", 0) == 0 || unit[0] == 'u' ? "us" : unit[0] == 'm' ? "ms" : "s";
  return from_json({{"signal", wait ? "lc_wait_p99" : tpot ? "tpot_p99" : "request_latency_p99"},
                    {"max", m[2].str() + canonical}});
}

}  // namespace akts
