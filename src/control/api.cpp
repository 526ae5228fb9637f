#include "control/api.h"

#include <fmt/format.h>

#include "akts.h"
#include "common/parse.h"
#include "common/text.h"

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

  d.add("v1.unclassify", [&b](const json& params) -> Result<json> {
    if (auto st = check_param_names(params, {"pid"}); !st) return st.error();
    auto pid = param_u32(params, "pid");
    if (!pid) return pid.error();
    if (auto st = b.unclassify(*pid); !st) return st.error();
    return json{{"pid", *pid}};
  });
}

}  // namespace akts::control
