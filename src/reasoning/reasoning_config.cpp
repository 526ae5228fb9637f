// The reasoning plane's config keys and its controller factory.
#include "reasoning/reasoning_config.h"

#include <cmath>

#include <fmt/format.h>

#include "common/http_url.h"
#include "common/parse.h"
#include "common/text.h"
#include "reasoning/oracle.h"

namespace akts {
namespace {

using json = nlohmann::json;

Error bad(std::string_view where, std::string_view what) {
  return errorf(ErrorKind::kInvalidArgument, "config: {}: {}", where, what);
}

Result<std::chrono::milliseconds> duration_ms(const json& v, const std::string& where, double min_ms, double max_ms) {
  if (!v.is_string()) return bad(where, "must be a duration string such as \"100ms\"");
  auto d = parse_duration(v.get_ref<const std::string&>(), where);
  if (!d) return bad(where, d.error().message);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms.count() < min_ms || ms.count() > max_ms)
    return bad(where, fmt::format("must be from {:g} ms to {:g} ms", min_ms, max_ms));
  return ms;
}

Result<double> number(const json& v, const std::string& where, double lo, double hi) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    return bad(where, fmt::format("must be a number from {:g} to {:g}", lo, hi));
  return v.get<double>();
}

Result<uint32_t> whole(const json& v, const std::string& where, uint32_t lo, uint32_t hi) {
  if (!v.is_number_unsigned() || v.get<uint64_t>() < lo || v.get<uint64_t>() > hi)
    return bad(where, fmt::format("must be a whole number from {} to {}", lo, hi));
  return static_cast<uint32_t>(v.get<uint64_t>());
}

std::string policy_ref(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  return {};
}

Status parse_detector(const json& v, ControllerConfig& c) {
  if (!v.is_object()) return bad("controller.detector", "must be an object");
  auto& d = c.detector;
  for (const auto& [k, x] : v.items()) {
    std::string where = "controller.detector." + k;
    if (k == "burst" || k == "calm") {
      std::string p = policy_ref(x);
      if (p.empty()) return bad(where, "must be a policy name or slot number");
      (k == "burst" ? c.detector_burst : c.detector_calm) = p;
    } else if (k == "enter" || k == "leave" || k == "alpha_up" || k == "alpha_down" || k == "app_busy_requests" ||
               k == "lc_busy_share") {
      bool unit = k.rfind("alpha", 0) == 0 || k == "lc_busy_share";
      auto n = number(x, where, k.rfind("alpha", 0) == 0 ? 0.001 : 0.0, unit ? 1.0 : 1e6);
      if (!n) return n.error();
      (k == "enter"               ? d.enter
       : k == "leave"             ? d.leave
       : k == "alpha_up"          ? d.alpha_up
       : k == "alpha_down"        ? d.alpha_down
       : k == "lc_busy_share"     ? d.lc_busy_share
                                  : d.app_busy_requests) = *n;
    } else if (k == "confirm" || k == "min_dwell") {
      auto n = whole(x, where, k == "confirm" ? 1 : 0, 10000);
      if (!n) return n.error();
      (k == "confirm" ? d.confirm : d.min_dwell) = *n;
    } else {
      return bad("controller.detector",
                 fmt::format("unknown key \"{}\" (expected burst, calm, enter, leave, confirm, min_dwell, alpha_up, "
                             "alpha_down, app_busy_requests, lc_busy_share)",
                             excerpt(k)));
    }
  }
  if (d.leave >= d.enter) return bad("controller.detector", "\"leave\" must be below \"enter\" (hysteresis)");
  return {};
}

Status parse_learner(const json& v, LearnerOptions& l) {
  if (!v.is_object()) return bad("controller.learner", "must be an object");
  for (const auto& [k, x] : v.items()) {
    std::string where = "controller.learner." + k;
    if (k == "miss_rate") {
      auto n = number(x, where, 0.01, 0.5);
      if (!n) return n.error();
      l.miss_rate = *n;
    } else if (k == "min_evidence" || k == "relax_after" || k == "explore_every" || k == "save_every" ||
               k == "explore_max") {
      // min_evidence stays well below the evidence a bin keeps (max_evidence, 400).
      auto n = whole(x, where, 1, k == "min_evidence" ? 100 : 100000);
      if (!n) return n.error();
      (k == "min_evidence"    ? l.min_evidence
       : k == "relax_after"   ? l.relax_after
       : k == "explore_every" ? l.explore_every
       : k == "explore_max"   ? l.explore_max
                              : l.save_every) = *n;
    } else if (k == "early_wait") {
      auto n = number(x, where, 0.05, 1);
      if (!n) return n.error();
      l.early_wait = *n;
    } else if (k == "half_life" || k == "retry_after" || k == "retry_max") {
      // half_life from a minute (evidence that fades in seconds is no memory), back-offs from a second, all up to
      // a year (evidence that never fades, a verdict never taken back: what issue 37 mended).
      auto ms = duration_ms(x, where, k == "half_life" ? 60e3 : 1e3, 365 * 86400e3);
      if (!ms) return ms.error();
      (k == "half_life" ? l.half_life_s : k == "retry_after" ? l.retry_after_s : l.retry_max_s) = ms->count() / 1e3;
    } else if (k == "state") {
      if (!x.is_string() || (!x.get<std::string>().empty() && x.get<std::string>().front() != '/'))
        return bad(where, "must be an absolute path, or \"\" to keep what it learns in memory only");
      l.state_path = x.get<std::string>();
    } else {
      return bad("controller.learner",
                 fmt::format("unknown key \"{}\" (expected state, miss_rate, min_evidence, relax_after, "
                             "explore_every, explore_max, early_wait, half_life, retry_after, retry_max, "
                             "save_every)",
                             excerpt(k)));
    }
  }
  if (l.explore_max < l.min_evidence)
    return bad("controller.learner", fmt::format("\"explore_max\" ({}) must be at least \"min_evidence\" ({}): an "
                                                 "exploration could never make a policy known",
                                                 l.explore_max, l.min_evidence));
  if (l.retry_max_s < l.retry_after_s)
    return bad("controller.learner", fmt::format("\"retry_max\" ({:g} s) must be at least \"retry_after\" ({:g} s); "
                                                 "retry_max is 60m unless given",
                                                 l.retry_max_s, l.retry_after_s));
  return {};
}

Status parse_bandit(const json& v, BanditOptions& b) {
  if (!v.is_object()) return bad("controller.bandit", "must be an object");
  for (const auto& [k, x] : v.items()) {
    std::string where = "controller.bandit." + k;
    if (k == "alpha" || k == "switch_penalty") {
      auto n = number(x, where, 0, 10);
      if (!n) return n.error();
      (k == "alpha" ? b.alpha : b.switch_penalty) = *n;
    } else if (k == "gamma") {
      auto n = number(x, where, 0.5, 1);
      if (!n) return n.error();
      b.gamma = *n;
    } else if (k == "seed") {
      if (!x.is_number_unsigned()) return bad(where, "must be a whole number");
      b.seed = x.get<uint64_t>();
    } else if (k == "decide_every") {
      auto n = whole(x, where, 1, 10000);
      if (!n) return n.error();
      b.decide_every = *n;
    } else {
      return bad("controller.bandit",
                 fmt::format("unknown key \"{}\" (expected alpha, gamma, switch_penalty, seed, decide_every)",
                             excerpt(k)));
    }
  }
  return {};
}

Status parse_controller(const json& v, ReasoningConfig& c) {
  if (!v.is_object()) return bad("controller", "must be an object such as {\"name\": \"detector\"}");
  for (const auto& [k, x] : v.items()) {
    std::string where = "controller." + k;
    if (k == "name") {
      if (!x.is_string()) return bad(where, "must be a string");
      bool known = false;
      for (const auto& n : kControllerNames) known = known || n == x.get<std::string>();
      if (!known)
        return bad(where, fmt::format("'{}' is not a controller ({})", excerpt(x.get<std::string>()),
                                      fmt::join(kControllerNames, ", ")));
      c.controller.name = x.get<std::string>();
    } else if (k == "dry_run") {
      if (!x.is_boolean()) return bad(where, "must be true or false");
      c.arbiter.dry_run = x.get<bool>();
    } else if (k == "min_dwell" || k == "operator_grace") {
      auto d = duration_ms(x, where, 0, 3600e3);
      if (!d) return d.error();
      (k == "min_dwell" ? c.arbiter.min_dwell : c.arbiter.operator_grace) = *d;
    } else if (k == "max_switches_per_minute") {
      auto n = whole(x, where, 1, 6000);
      if (!n) return n.error();
      c.arbiter.max_switches_per_minute = *n;
    } else if (k == "detector") {
      if (auto st = parse_detector(x, c.controller); !st) return st.error();
    } else if (k == "bandit") {
      if (auto st = parse_bandit(x, c.controller.bandit); !st) return st.error();
    } else if (k == "learner") {
      if (auto st = parse_learner(x, c.controller.learner); !st) return st.error();
    } else if (k == "llm") {
      auto l = LlmOptions::from_json(x);
      if (!l) return bad("controller.llm", l.error().message);
      c.controller.llm = *l;
    } else if (k == "oracle") {
      if (!x.is_object() || x.size() != 1 || !x.contains("schedule") || !x["schedule"].is_string() ||
          x["schedule"].get<std::string>().empty())
        return bad("controller.oracle", "must be {\"schedule\": \"/path/to/schedule.json\"}");
      c.controller.oracle_schedule = x["schedule"].get<std::string>();
    } else {
      return bad("controller",
                 fmt::format("unknown key \"{}\" (expected name, dry_run, min_dwell, max_switches_per_minute, "
                             "operator_grace, detector, bandit, learner, llm, oracle)",
                             excerpt(k)));
    }
  }
  return {};
}

Status parse_telemetry(const json& v, TelemetryConfig& t) {
  if (!v.is_object()) return bad("telemetry", "must be an object such as {\"period\": \"100ms\"}");
  for (const auto& [k, x] : v.items()) {
    if (k == "period") {
      auto d = duration_ms(x, "telemetry.period", 10, 60000);
      if (!d) return d.error();
      t.period = *d;
    } else if (k == "metrics_url") {
      if (!x.is_string()) return bad("telemetry.metrics_url", "must be a string");
      auto u = parse_http_url(x.get<std::string>(), "telemetry.metrics_url");
      if (!u) return make_error(ErrorKind::kInvalidArgument, "config: " + u.error().message);
      t.metrics_url = x.get<std::string>();
    } else if (k == "metrics_timeout") {
      auto d = duration_ms(x, "telemetry.metrics_timeout", 10, 60000);
      if (!d) return d.error();
      t.metrics_timeout = *d;
    } else if (k == "metrics") {
      auto m = parse_app_metrics_choice(x);
      if (!m) return m.error();
      t.metrics = *m;
    } else {
      return bad("telemetry",
                 fmt::format("unknown key \"{}\" (expected period, metrics_url, metrics_timeout, metrics)", excerpt(k)));
    }
  }
  return {};
}

Status parse_log(const json& v, DecisionLogOptions& l) {
  if (!v.is_object()) return bad("decision_log", "must be an object such as {\"path\": \"/var/log/akts/decisions.jsonl\"}");
  for (const auto& [k, x] : v.items()) {
    if (k == "path") {
      if (!x.is_string() || (!x.get<std::string>().empty() && x.get<std::string>()[0] != '/'))
        return bad("decision_log.path", "must be an absolute path (or \"\" for memory only)");
      l.path = x.get<std::string>();
    } else if (k == "max_bytes") {
      if (!x.is_number_unsigned() || x.get<uint64_t>() < 4096 || x.get<uint64_t>() > (1ull << 34))
        return bad("decision_log.max_bytes", "must be a whole number of bytes from 4096 to 16 GiB");
      l.max_bytes = x.get<uint64_t>();
    } else if (k == "keep") {
      auto n = whole(x, "decision_log.keep", 0, 100);
      if (!n) return n.error();
      l.keep = *n;
    } else {
      return bad("decision_log", fmt::format("unknown key \"{}\" (expected path, max_bytes, keep)", excerpt(k)));
    }
  }
  return {};
}

std::optional<uint32_t> resolve(const std::string& ref, const std::vector<SlotInfo>& slots) {
  for (const auto& s : slots)
    if (s.name == ref || std::to_string(s.slot) == ref) return s.slot;
  return std::nullopt;
}

}  // namespace

Result<bool> parse_reasoning_key(const std::string& key, const json& v, ReasoningConfig& out) {
  Status st;
  if (key == "telemetry") {
    st = parse_telemetry(v, out.telemetry);
  } else if (key == "objective") {
    auto o = Objective::from_json(v);
    if (!o) return bad("objective", o.error().message);
    out.objective = *o;
  } else if (key == "controller") {
    st = parse_controller(v, out);
  } else if (key == "decision_log") {
    st = parse_log(v, out.log);
  } else {
    return false;
  }
  if (!st) return st.error();
  return true;
}

Status check_reasoning_config(const ReasoningConfig& c, const std::vector<std::string>& policies) {
  std::vector<SlotInfo> slots;
  for (size_t i = 0; i < policies.size(); ++i) slots.push_back({static_cast<uint32_t>(i), policies[i], "", ""});
  for (const auto* ref : {&c.controller.detector_burst, &c.controller.detector_calm})
    if (!resolve(*ref, slots) && c.controller.name == "detector")
      return bad("controller.detector", fmt::format("'{}' is not a configured policy or slot", excerpt(*ref)));
  if (c.controller.name == "oracle" && c.controller.oracle_schedule.empty())
    return bad("controller", "the oracle needs \"oracle\": {\"schedule\": FILE}");
  if (!c.controller.oracle_schedule.empty()) {
    auto s = OracleSchedule::load(c.controller.oracle_schedule);
    if (!s) return bad("controller.oracle", s.error().message);
    if (auto o = Oracle::create(*s, slots); !o) return bad("controller.oracle", o.error().message);
  }
  return {};
}

ControllerFactory make_controller_factory(ControllerConfig c) {
  return [c](const std::string& name, const std::vector<SlotInfo>& slots) -> Result<std::unique_ptr<Controller>> {
    if (name == "detector") {
      auto burst = resolve(c.detector_burst, slots), calm = resolve(c.detector_calm, slots);
      if (!burst || !calm)
        return errorf(ErrorKind::kInvalidArgument, "detector: its policies '{}' and '{}' must both be loaded",
                      excerpt(c.detector_burst), excerpt(c.detector_calm));
      DetectorOptions o = c.detector;
      o.burst_slot = *burst;
      o.calm_slot = *calm;
      return std::unique_ptr<Controller>(std::make_unique<Detector>(o));
    }
    if (name == "bandit") return std::unique_ptr<Controller>(std::make_unique<Bandit>(c.bandit));
    if (name == "learner") return std::unique_ptr<Controller>(std::make_unique<Learner>(c.learner));
    if (name == "llm") return std::unique_ptr<Controller>(std::make_unique<LlmController>(c.llm));
    if (name == "oracle") {
      if (c.oracle_schedule.empty())
        return make_error(ErrorKind::kInvalidArgument,
                          "oracle: no schedule configured (config: controller.oracle.schedule)");
      auto s = OracleSchedule::load(c.oracle_schedule);  // read afresh: it may have been edited
      if (!s) return s.error();
      auto o = Oracle::create(*s, slots);
      if (!o) return o.error();
      return std::unique_ptr<Controller>(std::move(*o));
    }
    return errorf(ErrorKind::kInvalidArgument, "'{}' is not a controller ({})", excerpt(name),
                  fmt::join(kControllerNames, ", "));
  };
}

}  // namespace akts
