// The control API's v1 methods: the table of methods, their parameters and handlers, and their validation.
#include "control/api.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "akts.h"
#include "common/build_info.h"
#include "common/parse.h"
#include "common/text.h"
#include "reasoning/controller.h"
#include "telemetry/sampler.h"

namespace akts::control {
namespace {

std::string library_listing(const std::vector<PolicyView>& policies) {
  std::string s;
  for (const auto& p : policies) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", p.slot, p.name);
  return s.empty() ? "none" : s;
}

const PolicyView* policy_in_slot(const std::vector<PolicyView>& policies, uint32_t slot) {
  for (const auto& p : policies)
    if (p.slot == slot) return &p;
  return nullptr;
}

}  // namespace

Result<uint32_t> resolve_switch_target(const json& target, const std::vector<PolicyView>& policies,
                                       uint32_t slot_count, bool force) {
  uint32_t slot = 0;
  if (target.is_number_unsigned() || target.is_number_integer()) {
    if (target.is_number_integer() && target.get<int64_t>() < 0)
      return errorf(ErrorKind::kInvalidArgument, "slot {} is negative; slots are 0 to {}", target.dump(),
                    slot_count - 1);
    if (target.get<uint64_t>() > UINT32_MAX)
      return errorf(ErrorKind::kInvalidArgument, "slot {} does not fit in 32 bits", target.dump());
    slot = static_cast<uint32_t>(target.get<uint64_t>());
  } else if (target.is_number()) {
    return errorf(ErrorKind::kInvalidArgument, "slot {} is not a whole number", target.dump());
  } else if (target.is_string()) {
    const auto& s = target.get_ref<const std::string&>();
    for (const auto& p : policies)
      if (p.name == s) return p.slot;
    bool numeric = !s.empty() && (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '+');
    if (!numeric)
      return errorf(ErrorKind::kInvalidArgument, "'{}' is neither a slot number nor a policy name (policies: {})",
                    excerpt(s), library_listing(policies));
    auto n = parse_u32(s, "slot");
    if (!n) return n.error();
    slot = *n;
  } else {
    return errorf(ErrorKind::kInvalidArgument, "target must be a slot number or a policy name, not {}",
                  excerpt(target.dump(-1, ' ', false, json::error_handler_t::replace)));
  }
  if (force) return slot;
  if (slot >= slot_count)
    return errorf(ErrorKind::kInvalidArgument,
                  "slot {} is out of range (0 to {}); with force it would select the built-in default", slot,
                  slot_count - 1);
  if (!policy_in_slot(policies, slot))
    return errorf(ErrorKind::kInvalidArgument,
                  "slot {} is empty (policies: {}); with force it would select the built-in default", slot,
                  library_listing(policies));
  return slot;
}

Result<uint32_t> parse_class(std::string_view text) {
  if (text == "lc") return static_cast<uint32_t>(AKTS_CLASS_LC);
  if (text == "be") return static_cast<uint32_t>(AKTS_CLASS_BE);
  return errorf(ErrorKind::kInvalidArgument, "class must be \"lc\" or \"be\", not \"{}\"", excerpt(text));
}

namespace {

// One policy's parameters with the values in force.
Result<json> params_of(ControlBackend& b, const PolicyView& p) {
  json list = json::array();
  auto values = b.param_values(p.slot);
  if (!values) return values.error();
  for (const auto& d : p.params) {
    json j = d.to_json();
    // What the policy uses: the stored word clamped as akts_param() clamps it (raw too, when it differs).
    uint64_t raw = (*values)[d.index], v = std::clamp(raw, d.min, d.max);
    j["value"] = d.type == AKTS_PARAM_BOOL ? json(v != 0) : json(v);
    j["text"] = d.format(v);
    if (raw != v) j["raw"] = raw;
    list.push_back(std::move(j));
  }
  return json{{"slot", p.slot}, {"name", p.name}, {"params", list}};
}

Result<json> v1_version(Dispatcher& disp, ControlBackend&, const json&) {
  return json{{"api_version", kApiVersion}, {"akts_version", std::string(build_version())}, {"commit", std::string(build_commit())}, {"methods", disp.methods()}};
}

Result<json> v1_policies(Dispatcher&, ControlBackend& b, const json& params) {
  auto docs = param_bool(params, "docs", false);
  if (!docs) return docs.error();
  json list = json::array();
  for (const auto& p : b.policies()) {
    list.push_back({{"slot", p.slot}, {"name", p.name}, {"summary", p.summary}, {"pick_when", p.pick_when}});
    if (*docs) {
      list.back()["doc"] = p.doc;
      json rec = b.policy_record(p.name);
      json results = rec.is_object() ? rec.value("results", json::array()) : json::array();
      if (results.size() > 10) results = json(std::vector<json>(results.end() - 10, results.end()));
      list.back()["parameters"] = rec.is_object() ? rec.value("parameters", json::array()) : json::array();
      list.back()["results"] = results;
    }
  }
  return json{{"slots", b.slot_count()}, {"policies", list}, {"selected", b.selected()}, {"effective", b.effective()}};
}

Result<json> v1_switch(Dispatcher&, ControlBackend& b, const json& params) {
  if (!params.contains("target")) return make_error(ErrorKind::kInvalidArgument, "missing parameter \"target\"");
  auto force = param_bool(params, "force", false);
  if (!force) return force.error();
  auto policies = b.policies();
  auto slot = resolve_switch_target(params["target"], policies, b.slot_count(), *force);
  if (!slot) return slot.error();
  auto previous = b.select(*slot);  // read with the switch, under the lock that orders it
  if (!previous) return previous.error();
  const PolicyView* p = policy_in_slot(policies, *slot);
  return json{{"previous", *previous},
              {"selected", *slot},
              {"policy", p ? json(p->name) : json(nullptr)},
              {"effective", b.effective()}};
}

Result<json> v1_status(Dispatcher&, ControlBackend& b, const json&) {
  return b.status();
}

Result<json> v1_stats(Dispatcher&, ControlBackend& b, const json& params) {
  auto reset = param_bool(params, "reset_longest", false);
  if (!reset) return reset.error();
  return b.stats(*reset);
}

Result<json> v1_classify(Dispatcher&, ControlBackend& b, const json& params) {
  auto pid = param_u32(params, "pid");
  if (!pid) return pid.error();
  if (*pid == 0 || *pid > 4194304)
    return errorf(ErrorKind::kInvalidArgument, "pid {} is not a valid process id", *pid);
  auto cls_text = param_string(params, "class");
  if (!cls_text) return cls_text.error();
  auto cls = parse_class(*cls_text);
  if (!cls) return cls.error();
  if (auto st = b.classify(*pid, *cls); !st) return st.error();
  return json{{"pid", *pid}, {"class", *cls_text}};
}

Result<json> v1_class(Dispatcher&, ControlBackend& b, const json& params) {
  auto pid = param_u32(params, "pid");
  if (!pid) return pid.error();
  if (*pid == 0 || *pid > 4194304)
    return errorf(ErrorKind::kInvalidArgument, "pid {} is not a valid process id", *pid);
  return b.class_of(*pid);
}

Result<json> v1_hint(Dispatcher&, ControlBackend& b, const json& params) {
  auto pid = param_u32(params, "pid");
  if (!pid) return pid.error();
  if (*pid == 0 || *pid > 4194304)
    return errorf(ErrorKind::kInvalidArgument, "pid {} is not a valid thread id", *pid);
  auto clear = param_bool(params, "clear", false);
  if (!clear) return clear.error();
  if (*clear) {
    if (params.contains("remaining"))
      return make_error(ErrorKind::kInvalidArgument, "give \"remaining\" or \"clear\": true, not both");
    return b.hint(*pid, std::nullopt);
  }
  if (!params.contains("remaining"))
    return make_error(ErrorKind::kInvalidArgument, "missing parameter \"remaining\" (e.g. \"30ms\"), or \"clear\": true");
  const json& r = params["remaining"];
  std::chrono::nanoseconds ns{0};
  if (r.is_number_unsigned()) {
    uint64_t v = r.get<uint64_t>();
    if (v > AKTS_HINT_MAX_NS)
      return errorf(ErrorKind::kInvalidArgument, "\"remaining\" must be from 1us to 3600s, not {} ns", v);
    ns = std::chrono::nanoseconds(v);
  } else if (r.is_string()) {
    auto d = parse_duration(r.get<std::string>(), "remaining");
    if (!d) return d.error();
    ns = *d;
  } else {
    return make_error(ErrorKind::kInvalidArgument,
                      "\"remaining\" must be a duration (\"30ms\", \"250us\") or whole nanoseconds");
  }
  if (ns.count() < static_cast<int64_t>(AKTS_HINT_MIN_NS) || ns.count() > static_cast<int64_t>(AKTS_HINT_MAX_NS))
    return errorf(ErrorKind::kInvalidArgument, "\"remaining\" must be from 1us to 3600s, not {} ns", ns.count());
  return b.hint(*pid, ns);
}

Result<json> v1_hold(Dispatcher&, ControlBackend& b, const json& params) {
  if (!params.contains("target")) return make_error(ErrorKind::kInvalidArgument, "missing parameter \"target\"");
  auto text = param_string(params, "duration");
  if (!text) return text.error();
  auto d = parse_duration(*text, "duration");
  if (!d) return d.error();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
  if (ms < std::chrono::milliseconds(1) || ms > std::chrono::hours(24))
    return make_error(ErrorKind::kInvalidArgument, "duration must be from 1ms to 24h");
  auto policies = b.policies();
  auto slot = resolve_switch_target(params["target"], policies, b.slot_count(), /*force=*/false);
  if (!slot) return slot.error();
  if (auto st = b.hold(*slot, ms); !st) return st.error();
  return json{{"slot", *slot},
              {"policy", policy_in_slot(policies, *slot)->name},
              {"duration_s", std::chrono::duration<double>(ms).count()}};
}

Result<json> v1_release(Dispatcher&, ControlBackend& b, const json&) {
  return json{{"released", b.release()}};
}

Result<json> v1_reload(Dispatcher&, ControlBackend& b, const json&) { return b.reload(); }

Result<json> v1_controller(Dispatcher&, ControlBackend& b, const json& params) {
  std::optional<std::string> name;
  if (params.contains("name")) {
    auto n = param_string(params, "name");
    if (!n) return n.error();
    bool known = false;
    for (const auto& k : kControllerNames) known = known || k == *n;
    if (!known)
      return errorf(ErrorKind::kInvalidArgument, "'{}' is not a controller ({})", excerpt(*n),
                    fmt::join(kControllerNames, ", "));
    name = *n;
  }
  std::optional<bool> dry_run;
  if (params.contains("dry_run")) {
    auto v = param_bool(params, "dry_run", false);
    if (!v) return v.error();
    dry_run = *v;
  }
  return b.controller(name, dry_run);
}

Result<json> v1_telemetry(Dispatcher&, ControlBackend& b, const json& params) {
  auto last = param_u32_in(params, "last", 1, 600, 1);
  if (!last) return last.error();
  return b.telemetry(*last);
}

Result<json> v1_objective(Dispatcher&, ControlBackend& b, const json& params) {
  if (params.contains("goal") && params.contains("objective"))
    return make_error(ErrorKind::kInvalidArgument, "give the goal in words or the objective, not both");
  Result<Objective> o = make_error(ErrorKind::kInvalidArgument, "");
  if (params.contains("goal")) {
    auto words = param_string(params, "goal");
    if (!words) return words.error();
    o = Objective::from_words(*words);
  } else if (params.contains("objective")) {
    o = Objective::from_json(params["objective"]);
  } else {
    return json{{"objective", b.objective()}, {"changed", false}};
  }
  if (!o) return o.error();
  if (auto st = b.set_objective(*o); !st) return st.error();
  return json{{"objective", o->to_json()}, {"changed", true}};
}

Result<json> v1_result(Dispatcher&, ControlBackend& b, const json& params) {
  auto policy = param_string(params, "policy");
  if (!policy) return policy.error();
  if (!valid_policy_name(*policy))
    return errorf(ErrorKind::kInvalidArgument, "'{}' is not a policy name", excerpt(*policy));
  if (!params.contains("result")) return make_error(ErrorKind::kInvalidArgument, "missing parameter \"result\"");
  auto r = result_from_json(params["result"]);
  if (!r) return r.error();
  auto n = b.record_result(*policy, *r);
  if (!n) return n.error();
  return json{{"policy", *policy}, {"results", *n}};
}

Result<json> v1_admit(Dispatcher&, ControlBackend& b, const json& params) {
  ControlBackend::AdmitRequest r;
  auto path = [&](const char* key, std::string& out, bool required) -> Status {
    if (!params.contains(key)) {
      if (required) return errorf(ErrorKind::kInvalidArgument, "missing parameter \"{}\"", key);
      return {};
    }
    auto v = param_string(params, key);
    if (!v) return v.error();
    if (v->empty() || (*v)[0] != '/' || v->size() > 4096 || v->find('\0') != std::string::npos)
      return errorf(ErrorKind::kInvalidArgument, "{} must be an absolute path on the daemon's machine", key);
    out = *v;
    return {};
  };
  if (auto st = path("object", r.object, true); !st) return st.error();
  if (auto st = path("record", r.record, false); !st) return st.error();
  if (params.contains("name")) {
    auto n = param_string(params, "name");
    if (!n) return n.error();
    if (!valid_policy_name(*n))
      return errorf(ErrorKind::kInvalidArgument, "'{}' is not a policy name ([a-z][a-z0-9_]*, at most 32)", excerpt(*n));
    r.name = *n;
  }
  for (auto [key, field] : {std::pair{"description", &r.description}, std::pair{"pick_when", &r.pick_when}}) {
    if (!params.contains(key)) continue;
    auto v = param_string(params, key);
    if (!v) return v.error();
    if (v->size() > 500) return errorf(ErrorKind::kInvalidArgument, "{} is longer than 500 bytes", key);
    *field = *v;
  }
  if (params.contains("slot")) {
    auto slot = param_u32(params, "slot");
    if (!slot) return slot.error();
    if (*slot >= b.slot_count())
      return errorf(ErrorKind::kInvalidArgument, "slot {} is out of range (0 to {})", *slot, b.slot_count() - 1);
    r.slot = *slot;
  }
  auto force = param_bool(params, "force_untested", false);
  if (!force) return force.error();
  r.force_untested = *force;
  if (params.contains("canary")) {
    auto text = param_string(params, "canary");
    if (!text) return text.error();
    auto d = parse_duration(*text, "canary");
    if (!d) return d.error();
    r.canary = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    if (r.canary < std::chrono::seconds(1) || r.canary > std::chrono::minutes(10))
      return make_error(ErrorKind::kInvalidArgument, "canary must be from 1s to 10m");
  }
  auto replace = param_bool(params, "replace", false);
  if (!replace) return replace.error();
  r.replace = *replace;
  if (r.replace && !r.slot) return make_error(ErrorKind::kInvalidArgument, "replace needs the slot to replace");
  if (r.replace && r.canary.count() > 0)
    return make_error(ErrorKind::kInvalidArgument,
                      "replace and canary do not go together (a failed canary could not bring the old policy back)");
  return b.admit(r);
}

Result<json> v1_admission(Dispatcher&, ControlBackend& b, const json&) {
  return b.admission();
}

Result<json> v1_evict(Dispatcher&, ControlBackend& b, const json& params) {
  if (!params.contains("target")) return make_error(ErrorKind::kInvalidArgument, "missing parameter \"target\"");
  auto slot = resolve_switch_target(params["target"], b.policies(), b.slot_count(), /*force=*/false);
  if (!slot) return slot.error();
  return b.evict(*slot);
}

Result<json> v1_params(Dispatcher&, ControlBackend& b, const json& params) {
  auto policies = b.policies();
  json out = json::array();
  if (params.contains("target")) {
    auto slot = resolve_switch_target(params["target"], policies, b.slot_count(), /*force=*/false);
    if (!slot) return slot.error();
    const PolicyView* p = policy_in_slot(policies, *slot);
    if (!p) return errorf(ErrorKind::kInvalidArgument, "slot {} holds no policy", *slot);
    auto one = params_of(b, *p);
    if (!one) return one.error();
    out.push_back(std::move(*one));
  } else {
    for (const auto& p : policies) {
      auto one = params_of(b, p);
      if (!one) return one.error();
      out.push_back(std::move(*one));
    }
  }
  return json{{"policies", out}};
}

Result<json> v1_set(Dispatcher&, ControlBackend& b, const json& params) {
  if (!params.contains("target") || !params["target"].is_string())
    return make_error(ErrorKind::kInvalidArgument, "target must be \"POLICY.PARAM\", e.g. \"throughput.slice\"");
  if (!params.contains("value")) return make_error(ErrorKind::kInvalidArgument, "missing parameter \"value\"");
  auto target = split_param_target(params["target"].get<std::string>());
  if (!target) return target.error();
  auto policies = b.policies();
  auto slot = resolve_switch_target(json(target->first), policies, b.slot_count(), /*force=*/false);
  if (!slot) return slot.error();
  const PolicyView* p = policy_in_slot(policies, *slot);
  if (!p) return errorf(ErrorKind::kInvalidArgument, "slot {} holds no policy", *slot);
  const ParamDesc* d = nullptr;
  for (const auto& x : p->params)
    if (x.name == target->second) d = &x;
  if (!d) {
    std::string names;
    for (const auto& x : p->params) names += (names.empty() ? "" : ", ") + x.name;
    return errorf(ErrorKind::kInvalidArgument, "{} has no parameter '{}' ({})", p->name,
                  excerpt(valid_utf8(target->second)), names.empty() ? "it has none" : "it has " + names);
  }
  auto value = parse_param_value(*d, params["value"]);
  if (!value) return value.error();
  auto before = b.param_values(*slot);
  if (!before) return before.error();
  if (auto st = b.set_param(*slot, *d, *value); !st) return st.error();
  return json{{"slot", *slot},
              {"policy", p->name},
              {"param", d->name},
              {"previous", (*before)[d->index]},
              {"value", *value},
              {"text", d->format(*value)}};
}

Result<json> v1_log(Dispatcher&, ControlBackend& b, const json& params) {
  // 500 decisions of about 1 KiB each stay well inside a client's 1 MiB of unread answers.
  auto limit = param_u32_in(params, "limit", 1, 500, 50);
  if (!limit) return limit.error();
  return json{{"decisions", b.decisions(*limit)}};
}

Result<json> v1_push(Dispatcher&, ControlBackend& b, const json& params) {
  const bool has_latency = params.contains("latency_ms"), has_tpot = params.contains("tpot_ms"),
             has_decode = params.contains("decode_ms"), has_waiting = params.contains("waiting_ms"),
             has_phase = params.contains("phase");
  if (!has_latency && !has_tpot && !has_waiting && !has_phase)
    return make_error(ErrorKind::kInvalidArgument,
                      "give latency_ms (a list of 1 to 10000 times to first token in ms), tpot_ms (a list of 1 to "
                      "10000 times per output token in ms, one per request that ended, with decode_ms: as many "
                      "decode times, how long each of those requests decoded), waiting_ms (how long the oldest "
                      "request still waiting for its first token has waited, in ms; 0: none), phase (the name of "
                      "the load's phase that begins now), or several");
  auto list = [&](const char* key, const char* what, std::vector<double>& out) -> Status {
    const json& a = params[key];
    if (!a.is_array() || a.empty() || a.size() > 10000)
      return errorf(ErrorKind::kInvalidArgument, "{} must be a list of 1 to 10000 numbers (milliseconds)", key);
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      const json& v = a[i];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 3600e3)
        return errorf(ErrorKind::kInvalidArgument, "{}[{}] = {} is not {} in [0, 3600000] ms; nothing taken", key, i,
                      excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace)), what);
      out.push_back(v.get<double>());
    }
    return {};
  };
  std::vector<double> ms, tpot, decode;
  if (has_latency)
    if (auto st = list("latency_ms", "a latency", ms); !st) return st.error();
  if (has_tpot != has_decode)
    return make_error(ErrorKind::kInvalidArgument,
                      "tpot_ms and decode_ms go together (a request's TPOT is its mean over its decode, which may "
                      "have begun under another policy); nothing taken");
  if (has_tpot) {
    if (auto st = list("tpot_ms", "a time per output token", tpot); !st) return st.error();
    if (auto st = list("decode_ms", "a decode time", decode); !st) return st.error();
    if (decode.size() != tpot.size())
      return errorf(ErrorKind::kInvalidArgument, "{} tpot_ms but {} decode_ms: one of each per request; nothing taken",
                    tpot.size(), decode.size());
  }
  std::optional<double> waiting;
  if (has_waiting) {
    const json& v = params["waiting_ms"];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 3600e3)
      return errorf(ErrorKind::kInvalidArgument, "waiting_ms = {} is not a wait in [0, 3600000] ms; nothing taken",
                    excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace)));
    waiting = v.get<double>();
  }
  std::string phase;
  if (has_phase) {
    const json& v = params["phase"];
    if (!v.is_string() && !v.is_null())
      return errorf(ErrorKind::kInvalidArgument,
                    "phase = {} is not a phase name (a string; null: the load is over); nothing taken",
                    excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace)));
    if (v.is_string()) {
      phase = v.get<std::string>();
      if (auto st = PushedSamples::check_phase(phase); !st)
        return make_error(ErrorKind::kInvalidArgument, st.error().message + "; nothing taken");
    }
  }
  // Every part checked before any is taken: a bad part changes nothing (no push can fail on a value checked here).
  json out = json::object();
  if (has_latency) {
    auto kept = b.push_latencies(ms);
    if (!kept) return kept.error();
    out["accepted"] = *kept;
    out["dropped"] = ms.size() - *kept;
  }
  if (has_tpot) {
    auto kept = b.push_tpot(tpot, decode);
    if (!kept) return kept.error();
    out["tpot_accepted"] = *kept;
    out["tpot_dropped"] = tpot.size() - *kept;
  }
  if (waiting) {
    if (auto st = b.push_waiting(*waiting); !st) return st.error();
    out["waiting_ms"] = *waiting;
  }
  if (has_phase) {
    if (auto st = b.push_phase(phase); !st) return st.error();
    out["phase"] = phase.empty() ? json(nullptr) : json(phase);
  }
  return out;
}

Result<json> v1_unclassify(Dispatcher&, ControlBackend& b, const json& params) {
  auto pid = param_u32(params, "pid");
  if (!pid) return pid.error();
  if (auto st = b.unclassify(*pid); !st) return st.error();
  return json{{"pid", *pid}};
}

// v1: each method with the parameter names it takes (any other is refused before its handler runs) and its
// handler.
struct Method {
  std::string_view name;
  std::vector<std::string_view> params;
  Result<json> (*handler)(Dispatcher& disp, ControlBackend& b, const json& params);
};

const std::vector<Method>& v1_methods() {
  static const std::vector<Method> methods = {
      {"v1.version", {}, v1_version},
      {"v1.policies", {"docs"}, v1_policies},
      {"v1.switch", {"target", "force"}, v1_switch},
      {"v1.status", {}, v1_status},
      {"v1.stats", {"reset_longest"}, v1_stats},
      {"v1.classify", {"pid", "class"}, v1_classify},
      {"v1.class", {"pid"}, v1_class},
      {"v1.hint", {"pid", "remaining", "clear"}, v1_hint},
      {"v1.hold", {"target", "duration"}, v1_hold},
      {"v1.release", {}, v1_release},
      {"v1.reload", {}, v1_reload},
      {"v1.controller", {"name", "dry_run"}, v1_controller},
      {"v1.telemetry", {"last"}, v1_telemetry},
      {"v1.objective", {"goal", "objective"}, v1_objective},
      {"v1.result", {"policy", "result"}, v1_result},
      {"v1.admit", {"object", "name", "slot", "record", "force_untested", "description", "pick_when", "canary", "replace"}, v1_admit},
      {"v1.admission", {}, v1_admission},
      {"v1.evict", {"target"}, v1_evict},
      {"v1.params", {"target"}, v1_params},
      {"v1.set", {"target", "value"}, v1_set},
      {"v1.log", {"limit"}, v1_log},
      {"v1.push", {"latency_ms", "tpot_ms", "decode_ms", "waiting_ms", "phase"}, v1_push},
      {"v1.unclassify", {"pid"}, v1_unclassify},
  };
  return methods;
}

}  // namespace

void register_v1(Dispatcher& d, ControlBackend& b) {
  for (const Method& m : v1_methods())
    d.add(std::string(m.name), [&d, &b, &m](const json& params) -> Result<json> {
      if (auto st = check_param_names(params, m.params); !st) return st.error();
      return m.handler(d, b, params);
    });
}

}  // namespace akts::control
