// The objective's signal, reward and config form.
#include "reasoning/objective.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/text.h"

namespace akts {

std::optional<double> Objective::observed_ms(const Window& w) const {
  if (signal == Signal::kRequestLatencyP99) return w.app_latency_p99_ms;
  const auto& p99 = w.wait_p99_ms[AKTS_CLASS_LC];
  double oldest = w.oldest_wait_ms[AKTS_CLASS_LC];
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

}  // namespace akts
