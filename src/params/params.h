// Live policy parameters without a kernel: the descriptors a policy declares
// (bpf/akts.h, Parameters) read and checked, and a value given as text or JSON
// (a CLI argument, a socket or MCP request) parsed against its descriptor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "akts.h"
#include "common/result.h"

namespace akts {

struct ParamDesc {
  uint32_t index = 0;  // its entry in akts_param_values.v
  uint32_t type = AKTS_PARAM_NONE;
  uint64_t def = 0, min = 0, max = 0;
  std::string name, unit, description;

  // "u64", "bool", "duration", "percent".
  std::string type_name() const;
  // A value as people write it: "2ms" for a duration, "true", "40%", "5000".
  std::string format(uint64_t v) const;
  // {index, name, type, default, min, max, unit, description} (numbers as numbers, ns for durations).
  nlohmann::json to_json() const;
};

// The used entries of a policy's akts_param_descs (`size` bytes, AKTS_MAX_PARAMS
// entries of struct akts_param_desc, as the object's .rodata holds them), or
// why they are malformed: an unknown type, a name that is not [a-z0-9_] (1 to
// 23 characters), two entries with one name, min > default or default > max,
// a bool outside 0..1, a percent above 100, text without its terminating NUL.
Result<std::vector<ParamDesc>> parse_param_descs(const void* data, size_t size);

// A value for `d`: a whole number (JSON number, or a string of digits), true
// or false for a bool, a duration as a number of ns or a string with a unit
// ("250us", "5ms", "1.5s"), a percent as a number or "40%". Refused with the
// range in the message when it is out of [min, max], negative, fractional
// where a whole number is needed, or anything else.
Result<uint64_t> parse_param_value(const ParamDesc& d, const nlohmann::json& v);

// "policy.param" -> {policy, param}; an error without exactly one dot between two non-empty names.
Result<std::pair<std::string, std::string>> split_param_target(const std::string& target);

}  // namespace akts
