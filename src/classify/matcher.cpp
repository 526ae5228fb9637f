// Parsing one class rule of the daemon's configuration, and naming it.
#include "classify/matcher.h"

#include <fmt/format.h>

#include "akts.h"
#include "common/text.h"

namespace akts {

using json = nlohmann::json;

namespace {

Error bad(std::string_view where, std::string_view what) {
  return errorf(ErrorKind::kInvalidArgument, "config: {}: {}", where, what);
}

}  // namespace

Result<uint32_t> parse_class(const json& v, std::string_view where) {
  if (!v.is_string()) return bad(where, "\"class\" must be \"lc\" or \"be\"");
  if (v == "lc") return static_cast<uint32_t>(AKTS_CLASS_LC);
  if (v == "be") return static_cast<uint32_t>(AKTS_CLASS_BE);
  return bad(where, fmt::format("\"class\" must be \"lc\" or \"be\", not {}", excerpt(v.dump())));
}

Result<Matcher> parse_matcher(const json& m, size_t index) {
  std::string where = fmt::format("classes[{}]", index);
  if (!m.is_object()) return bad(where, "must be an object");
  Matcher out;
  int kinds = 0;
  for (const auto& [key, v] : m.items()) {
    if (key == "class") {
      auto c = parse_class(v, where);
      if (!c) return c.error();
      out.cls = *c;
    } else if (key == "pid") {
      ++kinds;
      out.kind = Matcher::Kind::kPid;
      if (!v.is_number_unsigned() || v.get<uint64_t>() == 0 || v.get<uint64_t>() > 4194304)
        return bad(where, fmt::format("\"pid\" must be a process id (1 to 4194304), not {}", excerpt(v.dump())));
      out.pid = v.get<uint32_t>();
    } else if (key == "cgroup") {
      ++kinds;
      out.kind = Matcher::Kind::kCgroup;
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>()[0] != '/')
        return bad(where, "\"cgroup\" must be an absolute cgroup path such as \"/serving\"");
      out.value = v.get<std::string>();
      while (out.value.size() > 1 && out.value.back() == '/') out.value.pop_back();
    } else if (key == "comm") {
      ++kinds;
      out.kind = Matcher::Kind::kComm;
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 15)
        return bad(where, "\"comm\" must be a command name of 1 to 15 bytes (the kernel truncates longer ones)");
      out.value = v.get<std::string>();
    } else {
      return bad(where, fmt::format("unknown key \"{}\" (expected class and one of pid, cgroup, comm)", excerpt(key)));
    }
  }
  if (!m.contains("class")) return bad(where, "missing \"class\"");
  if (kinds != 1) return bad(where, "needs exactly one of \"pid\", \"cgroup\", \"comm\"");
  return out;
}

bool any_cgroup_rule(const std::vector<Matcher>& rules) {
  for (const auto& m : rules)
    if (m.kind == Matcher::Kind::kCgroup) return true;
  return false;
}

std::string Matcher::describe() const {
  switch (kind) {
    case Kind::kPid: return fmt::format("pid {}", pid);
    case Kind::kCgroup: return "cgroup " + value;
    case Kind::kComm: return "comm " + value;
  }
  return "?";
}

}  // namespace akts
