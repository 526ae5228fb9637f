// Strict parsing of what people and agents type. Anything that is not exactly
// the expected form is an error that names what was wrong: "0.3", "-1", "",
// " 1", "1e3" and numbers past the type's range are all refused, never rounded.
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace akts {

// A non-negative decimal integer that fits in 32 bits: digits only, no sign,
// no base prefix, no leading zero ("0" itself is fine).
Result<uint32_t> parse_u32(std::string_view text, std::string_view what);

// The same, in 64 bits.
Result<uint64_t> parse_u64(std::string_view text, std::string_view what);

// A duration: a number with a unit (ns, us, ms, s, m), e.g. "100ms", "2.5s".
Result<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string_view what);

}  // namespace akts
