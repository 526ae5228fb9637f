// Valid-UTF-8 repair, boundary-safe excerpts of outside text, and splitting a list.
// into a message or a JSON answer: valid UTF-8 always, cut on a character
// boundary, never in the middle of one.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace akts {

// Length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 if the
// first bytes are not one (overlong, surrogate, past U+10FFFF, truncated).
size_t utf8_sequence_length(std::string_view s);
bool is_valid_utf8(std::string_view s);
// `s` with every invalid byte replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// At most `max_bytes` of `s` as valid UTF-8, cut before a character that
// would not fit, with "..." appended when anything was left out.
std::string excerpt(std::string_view s, size_t max_bytes = 40);

// The parts of `s` between `sep`s, empty ones included: "a,,b" -> {"a", "", "b"}; "" -> {""}.
std::vector<std::string> split(std::string_view s, char sep);

// Text from outside, quoted for a message: cut (excerpt), valid UTF-8, quotes,
// backslashes and control bytes escaped.
std::string quote_escaped(std::string_view s, size_t max_bytes = 40);

}  // namespace akts
