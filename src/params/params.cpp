// Live policy parameters without a kernel: descriptors checked, values parsed (see params.h).
#include "params/params.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "common/text.h"

namespace akts {
namespace {

bool valid_param_name(const std::string& n) {
  if (n.empty() || n.size() >= AKTS_PARAM_NAME_LEN) return false;
  for (char c : n)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

// A fixed char field that must hold its NUL.
Result<std::string> field(const char* f, size_t len, const char* what, uint32_t idx) {
  size_t n = strnlen(f, len);
  if (n == len) return errorf(ErrorKind::kInvalidArgument, "parameter {}: its {} has no terminating NUL", idx, what);
  std::string s(f, n);
  if (valid_utf8(s) != s) return errorf(ErrorKind::kInvalidArgument, "parameter {}: its {} is not UTF-8 text", idx, what);
  // Shown to people and agents (akts params, the repository, MCP): no terminal escapes or line breaks, neither
  // C0/DEL nor, in UTF-8, C1 (U+0080-U+009F, e.g. CSI U+009B, NEL U+0085) or U+2028/U+2029.
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    auto at = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
    if (c < 0x20 || c == 0x7f)
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: its {} holds a control character (0x{:02x})", idx, what, c);
    if ((c == 0xc2 && at(i + 1) >= 0x80 && at(i + 1) <= 0x9f) ||
        (c == 0xe2 && at(i + 1) == 0x80 && (at(i + 2) == 0xa8 || at(i + 2) == 0xa9)))
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: its {} holds a control character or line separator",
                    idx, what);
  }
  return s;
}

std::string range_text(const ParamDesc& d) {
  return fmt::format("{} to {}", d.format(d.min), d.format(d.max));
}

// "250us" -> 250000 (ns); units ns, us, ms, s; a decimal number before the unit, parsed exactly (integers:
// "8.2ms" is 8200000, not 8199999.99...), and refused unless it is a whole number of ns below 10^19.
Result<uint64_t> parse_duration_text(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  std::string num = s.substr(0, i), unit = s.substr(i);
  int digits = -1;  // decimal places of the unit: 0 for ns, 3 for us, 6 for ms, 9 for s
  if (unit == "ns" || unit.empty()) digits = 0;
  else if (unit == "us") digits = 3;
  else if (unit == "ms") digits = 6;
  else if (unit == "s") digits = 9;
  auto dot = num.find('.');
  std::string whole = num.substr(0, dot), frac = dot == std::string::npos ? "" : num.substr(dot + 1);
  auto is_digits = [](const std::string& t) { return std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }); };
  if (digits < 0 || (whole.empty() && frac.empty()) || !is_digits(whole) || !is_digits(frac))
    return make_error(ErrorKind::kInvalidArgument, "");
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  if (static_cast<int>(frac.size()) > digits) return make_error(ErrorKind::kInvalidArgument, "");  // below 1 ns
  std::string ns = whole + frac + std::string(static_cast<size_t>(digits) - frac.size(), '0');
  ns.erase(0, std::min(ns.find_first_not_of('0'), ns.size()));
  if (ns.empty()) return uint64_t{0};
  if (ns.size() > 19) return make_error(ErrorKind::kInvalidArgument, "");
  return static_cast<uint64_t>(std::stoull(ns));
}

}  // namespace

std::string ParamDesc::type_name() const {
  switch (type) {
    case AKTS_PARAM_U64: return "u64";
    case AKTS_PARAM_BOOL: return "bool";
    case AKTS_PARAM_DURATION: return "duration";
    case AKTS_PARAM_PERCENT: return "percent";
    default: return "unknown";
  }
}

std::string ParamDesc::format(uint64_t v) const {
  switch (type) {
    case AKTS_PARAM_BOOL: return v ? "true" : "false";
    case AKTS_PARAM_PERCENT: return fmt::format("{}%", v);
    case AKTS_PARAM_DURATION:
      if (v && v % 1000000000 == 0) return fmt::format("{}s", v / 1000000000);
      if (v && v % 1000000 == 0) return fmt::format("{}ms", v / 1000000);
      if (v && v % 1000 == 0) return fmt::format("{}us", v / 1000);
      return fmt::format("{}ns", v);
    default: return fmt::format("{}", v);
  }
}

nlohmann::json ParamDesc::to_json() const {
  auto num = [&](uint64_t v) -> nlohmann::json {
    if (type == AKTS_PARAM_BOOL) return v != 0;
    return v;
  };
  return {{"index", index}, {"name", name}, {"type", type_name()}, {"default", num(def)}, {"min", num(min)},
          {"max", num(max)}, {"unit", unit}, {"description", description}};
}

Result<std::vector<ParamDesc>> parse_param_descs(const void* data, size_t size) {
  if (size != sizeof(akts_param_desc) * AKTS_MAX_PARAMS)
    return errorf(ErrorKind::kInvalidArgument, "akts_param_descs has {} bytes, not {} ({} entries of {})", size,
                  sizeof(akts_param_desc) * AKTS_MAX_PARAMS, AKTS_MAX_PARAMS, sizeof(akts_param_desc));
  std::vector<ParamDesc> out;
  std::set<std::string> names;
  const auto* raw = static_cast<const akts_param_desc*>(data);
  for (uint32_t i = 0; i < AKTS_MAX_PARAMS; ++i) {
    akts_param_desc e;
    std::memcpy(&e, raw + i, sizeof(e));
    if (e.type == AKTS_PARAM_NONE) continue;
    ParamDesc d;
    d.index = i;
    d.type = e.type;
    d.def = e.def;
    d.min = e.min;
    d.max = e.max;
    if (d.type_name() == "unknown") return errorf(ErrorKind::kInvalidArgument, "parameter {}: unknown type {}", i, e.type);
    auto name = field(e.name, sizeof(e.name), "name", i);
    if (!name) return name.error();
    auto unit = field(e.unit, sizeof(e.unit), "unit", i);
    if (!unit) return unit.error();
    auto desc = field(e.desc, sizeof(e.desc), "description", i);
    if (!desc) return desc.error();
    d.name = *name;
    d.unit = *unit;
    d.description = *desc;
    if (!valid_param_name(d.name))
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: '{}' is not a parameter name ([a-z0-9_], 1 to {} characters)",
                    i, excerpt(d.name), AKTS_PARAM_NAME_LEN - 1);
    if (!names.insert(d.name).second)
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: the name {} is declared twice", i, d.name);
    if (d.min > d.def || d.def > d.max)
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: its default {} is outside its range {} to {}", d.name,
                    d.def, d.min, d.max);
    if (d.type == AKTS_PARAM_BOOL && d.max > 1)
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: a bool's range is 0 to 1", d.name);
    if (d.type == AKTS_PARAM_PERCENT && d.max > 100)
      return errorf(ErrorKind::kInvalidArgument, "parameter {}: a percent's range ends at 100 at most", d.name);
    out.push_back(std::move(d));
  }
  return out;
}

Result<uint64_t> parse_param_value(const ParamDesc& d, const nlohmann::json& v) {
  auto refuse = [&](const std::string& what) {
    return errorf(ErrorKind::kInvalidArgument, "{} is not a value of {} ({}, {}{})", what, d.name, d.type_name(),
                  range_text(d), d.type == AKTS_PARAM_DURATION ? ", e.g. 250us, 5ms, 1s" : "");
  };
  std::string shown = v.is_string() ? fmt::format("\"{}\"", excerpt(valid_utf8(v.get<std::string>()))) : excerpt(v.dump());
  uint64_t x = 0;
  if (d.type == AKTS_PARAM_BOOL) {
    if (v.is_boolean()) x = v.get<bool>();
    else if (v.is_string() && (v == "true" || v == "1")) x = 1;
    else if (v.is_string() && (v == "false" || v == "0")) x = 0;
    else if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<uint64_t>() <= 1) x = v.get<uint64_t>();
    else return refuse(shown);
  } else if (v.is_number_unsigned()) {
    x = v.get<uint64_t>();
  } else if (v.is_number_integer()) {
    if (v.get<int64_t>() < 0) return refuse(shown);
    x = static_cast<uint64_t>(v.get<int64_t>());
  } else if (v.is_number_float()) {
    double f = v.get<double>();
    if (!(f >= 0) || f != std::floor(f) || f > 1.8e19) return refuse(shown);
    x = static_cast<uint64_t>(f);
  } else if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (d.type == AKTS_PARAM_DURATION) {
      auto ns = parse_duration_text(s);
      if (!ns) return refuse(shown);
      x = *ns;
    } else {
      if (d.type == AKTS_PARAM_PERCENT && !s.empty() && s.back() == '%') s.pop_back();
      if (s.empty() || s.size() > 19 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return refuse(shown);
      x = std::stoull(s);
    }
  } else {
    return refuse(shown);
  }
  if (x < d.min || x > d.max)
    return errorf(ErrorKind::kInvalidArgument, "{} is out of the range of {} ({}); nothing changed", d.format(x), d.name,
                  range_text(d));
  return x;
}

Result<std::pair<std::string, std::string>> split_param_target(const std::string& target) {
  auto dot = target.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == target.size() || target.find('.', dot + 1) != std::string::npos)
    return errorf(ErrorKind::kInvalidArgument, "'{}' is not POLICY.PARAM (e.g. throughput.slice)",
                  excerpt(valid_utf8(target)));
  return std::make_pair(target.substr(0, dot), target.substr(dot + 1));
}

}  // namespace akts
