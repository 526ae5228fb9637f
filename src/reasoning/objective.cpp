// The objective's signal, reward and config form.
#include "reasoning/objective.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/text.h"

namespace akts {

std::optional<double> Objective::ended_ms(const Window& w) const {
  return signal == Signal::kRequestLatencyP99 ? w.app_latency_p99_ms : w.wait_p99_ms[AKTS_CLASS_LC];
}

double Objective::waiting_ms(const Window& w) const {
  return signal == Signal::kRequestLatencyP99 ? w.app_waiting_oldest_ms.value_or(0.0) : w.oldest_wait_ms[AKTS_CLASS_LC];
}

std::optional<double> Objective::observed_ms(const Window& w) const {
  auto p99 = ended_ms(w);
  double oldest = waiting_ms(w);
  if (!p99 && oldest <= 0) return std::nullopt;
  return std::max(p99.value_or(0.0), oldest);
}

bool Objective::met(const Window& w) const {
  auto v = observed_ms(w);
  return !v || *v <= max_ms;
}

double Objective::reward(const Window& w) const {
  auto v = observed_ms(w);
  bool ok = !v || *v <= max_ms;
  double latency = ok ? 1.0 : std::clamp(max_ms / *v, 0.0, 1.0);
  return 0.5 * latency + (ok ? 0.5 * w.batch_share() : 0.0);
}

std::string Objective::describe() const {
  return fmt::format("{} <= {:g} ms, then maximise batch CPU",
                     signal == Signal::kLcWaitP99 ? "LC wait p99" : "request latency p99", max_ms);
}

nlohmann::json Objective::to_json() const {
  return {{"signal", signal == Signal::kLcWaitP99 ? "lc_wait_p99" : "request_latency_p99"},
          {"max_ms", max_ms},
          {"describe", describe()}};
}

Result<Objective> Objective::from_json(const nlohmann::json& j) {
  if (!j.is_object())
    return make_error(ErrorKind::kInvalidArgument,
                      "objective must be an object such as {\"signal\": \"lc_wait_p99\", \"max\": \"20ms\"}");
  Objective o;
  bool have_max = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "signal") {
      if (!v.is_string()) return make_error(ErrorKind::kInvalidArgument, "objective.signal must be a string");
      const auto& s = v.get_ref<const std::string&>();
      if (s == "lc_wait_p99")
        o.signal = Signal::kLcWaitP99;
      else if (s == "request_latency_p99")
        o.signal = Signal::kRequestLatencyP99;
      else
        return errorf(ErrorKind::kInvalidArgument,
                      "objective.signal: '{}' is not a signal (lc_wait_p99, request_latency_p99)", excerpt(s));
    } else if (key == "max") {
      if (v.is_string()) {
        auto d = parse_duration(v.get_ref<const std::string&>(), "objective.max");
        if (!d) return d.error();
        o.max_ms = std::chrono::duration<double, std::milli>(*d).count();
      } else if (v.is_number()) {
        o.max_ms = v.get<double>();
      } else {
        return make_error(ErrorKind::kInvalidArgument,
                          "objective.max must be a duration such as \"20ms\" or a number of milliseconds");
      }
      if (!std::isfinite(o.max_ms) || o.max_ms <= 0 || o.max_ms > 3600e3)
        return make_error(ErrorKind::kInvalidArgument, "objective.max must be above 0 and at most an hour");
      have_max = true;
    } else {
      return errorf(ErrorKind::kInvalidArgument, "objective: unknown key \"{}\" (expected signal, max)", excerpt(key));
    }
  }
  if (!have_max) return make_error(ErrorKind::kInvalidArgument, "objective: missing \"max\" (e.g. \"20ms\")");
  return o;
}

namespace {

bool has_word(const std::string& text, const char* re) {
  return std::regex_search(text, std::regex(std::string("(^|[^a-z0-9_])(") + re + ")($|[^a-z0-9_])"));
}

}  // namespace

Result<Objective> Objective::from_words(std::string_view words) {
  static constexpr std::string_view kExample =
      "say it like \"keep the LC wait p99 under 20 ms\" or \"request latency p99 below 500 ms\"";
  if (words.size() > 500) return errorf(ErrorKind::kInvalidArgument, "the goal is {} bytes; at most 500", words.size());
  if (!is_valid_utf8(words)) return make_error(ErrorKind::kInvalidArgument, "the goal is not valid UTF-8 text");
  std::string text(words);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "µs" (U+00B5 or U+03BC) reads as "us".
  for (std::string micro : {std::string("\xc2\xb5s"), std::string("\xce\xbcs")})
    for (size_t at = text.find(micro); at != std::string::npos; at = text.find(micro)) text.replace(at, micro.size(), "us");

  bool wait = has_word(text, "wait|waits|waiting|queue|queueing|queuing|scheduling delay|run ?queue|runqueue");
  bool request = has_word(text, "request|requests|response|responses|ttft|first token|time to first token");
  if (wait == request)
    return errorf(ErrorKind::kInvalidArgument,
                  "the goal names {} signal: say \"wait\" (the LC tasks' scheduling wait) or \"request\" (the "
                  "application's latency it pushes); {}",
                  wait ? "more than one" : "no", kExample);
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
  return from_json({{"signal", wait ? "lc_wait_p99" : "request_latency_p99"}, {"max", m[2].str() + canonical}});
}

}  // namespace akts
