// The class matchers of the daemon's configuration ("classes": [{"class": "lc", "comm": "llama-server"}, ...]):
// which processes a rule names, and the parsing of one rule. The rest of the file is config/daemon_config.h's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts {

struct Matcher {
  enum class Kind { kPid, kCgroup, kComm };
  Kind kind = Kind::kComm;
  uint32_t pid = 0;   // kPid
  std::string value;  // kCgroup: an absolute path; kComm: a command name (<= 15 bytes)
  uint32_t cls = 0;   // enum akts_class

  std::string describe() const;  // "comm llama-server", "cgroup /serving", "pid 42"

  bool operator==(const Matcher&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

// Whether a rule of `rules` is a cgroup's (its processes' cgroups must be read, and a move raises no event).
bool any_cgroup_rule(const std::vector<Matcher>& rules);

// "lc" or "be" -> enum akts_class; an error that names `where` otherwise.
Result<uint32_t> parse_class(const nlohmann::json& v, std::string_view where);
// classes[`index`]: "class" and exactly one of "pid", "cgroup", "comm"; unknown keys are errors.
Result<Matcher> parse_matcher(const nlohmann::json& m, size_t index);

}  // namespace akts
