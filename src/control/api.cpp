#include "control/api.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "akts.h"
#include "common/parse.h"
#include "common/text.h"
#include "reasoning/controller.h"

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

void register_v1(Dispatcher& d, ControlBackend& b) {
  d.add("v1.version", [&d](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {}); !st) return st.error();
    return json{{"api_version", kApiVersion}, {"akts_version", AKTS_VERSION}, {"methods", d.methods()}};
  });

  d.add("v1.policies", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {}); !st) return st.error();
    json list = json::array();
    for (const auto& p : b.policies())
      list.push_back({{"slot", p.slot}, {"name", p.name}, {"summary", p.summary}, {"pick_when", p.pick_when}});
    return json{{"slots", b.slot_count()}, {"policies", list}, {"selected", b.selected()}, {"effective", b.effective()}};
  });

  d.add("v1.switch", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"target", "force"}); !st) return st.error();
    if (!params.contains("target")) return make_error(ErrorKind::kInvalidArgument, "missing parameter \"target\"");
    auto force = param_bool(params, "force", false);
    if (!force) return force.error();
    auto policies = b.policies();
    auto slot = resolve_switch_target(params["target"], policies, b.slot_count(), *force);
    if (!slot) return slot.error();
    uint32_t previous = b.selected();
    if (auto st = b.select(*slot); !st) return st.error();
    const PolicyView* p = policy_in_slot(policies, *slot);
    return json{{"previous", previous},
                {"selected", *slot},
                {"policy", p ? json(p->name) : json(nullptr)},
                {"effective", b.effective()}};
  });

  d.add("v1.status", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {}); !st) return st.error();
    return b.status();
  });

  d.add("v1.stats", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"reset_longest"}); !st) return st.error();
    auto reset = param_bool(params, "reset_longest", false);
    if (!reset) return reset.error();
    return b.stats(*reset);
  });

  d.add("v1.classify", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"pid", "class"}); !st) return st.error();
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
  });

  d.add("v1.class", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"pid"}); !st) return st.error();
    auto pid = param_u32(params, "pid");
    if (!pid) return pid.error();
    if (*pid == 0 || *pid > 4194304)
      return errorf(ErrorKind::kInvalidArgument, "pid {} is not a valid process id", *pid);
    return b.class_of(*pid);
  });

  d.add("v1.hold", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"target", "duration"}); !st) return st.error();
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
  });

  d.add("v1.release", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {}); !st) return st.error();
    return json{{"released", b.release()}};
  });

  d.add("v1.controller", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"name", "dry_run"}); !st) return st.error();
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
  });

  d.add("v1.telemetry", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"last"}); !st) return st.error();
    auto last = param_u32_in(params, "last", 1, 600, 1);
    if (!last) return last.error();
    return b.telemetry(*last);
  });

  d.add("v1.log", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"limit"}); !st) return st.error();
    // 500 decisions of about 1 KiB each stay well inside a client's 1 MiB of unread answers.
    auto limit = param_u32_in(params, "limit", 1, 500, 50);
    if (!limit) return limit.error();
    return json{{"decisions", b.decisions(*limit)}};
  });

  d.add("v1.push", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"latency_ms"}); !st) return st.error();
    if (!params.contains("latency_ms") || !params["latency_ms"].is_array() || params["latency_ms"].empty() ||
        params["latency_ms"].size() > 10000)
      return make_error(ErrorKind::kInvalidArgument, "latency_ms must be a list of 1 to 10000 numbers (milliseconds)");
    std::vector<double> ms;
    ms.reserve(params["latency_ms"].size());
    for (size_t i = 0; i < params["latency_ms"].size(); ++i) {
      const json& v = params["latency_ms"][i];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 3600e3)
        return errorf(ErrorKind::kInvalidArgument, "latency_ms[{}] = {} is not a latency in [0, 3600000] ms; none taken",
                      i, excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace)));
      ms.push_back(v.get<double>());
    }
    auto kept = b.push_latencies(ms);
    if (!kept) return kept.error();
    return json{{"accepted", *kept}, {"dropped", ms.size() - *kept}};
  });

  d.add("v1.unclassify", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"pid"}); !st) return st.error();
    auto pid = param_u32(params, "pid");
    if (!pid) return pid.error();
    if (auto st = b.unclassify(*pid); !st) return st.error();
    return json{{"pid", *pid}};
  });
}

}  // namespace akts::control
