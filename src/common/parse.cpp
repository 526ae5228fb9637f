#include "common/parse.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <string>

#include "common/text.h"

namespace akts {
namespace {

std::string quoted(std::string_view text) { return "\"" + excerpt(text) + "\""; }

Result<uint64_t> parse_unsigned(std::string_view text, std::string_view what, uint64_t max) {
  if (text.empty()) return errorf(ErrorKind::kInvalidArgument, "{}: empty value", what);
  // Decimal digits only, as documented: no sign, no base prefix, no leading
  // zero (so "01" and "0x1" cannot mean a slot someone did not write).
  if (text.find_first_not_of("0123456789") != std::string_view::npos)
    return errorf(ErrorKind::kInvalidArgument, "{}: {} is not a non-negative decimal integer", what, quoted(text));
  if (text.size() > 1 && text[0] == '0')
    return errorf(ErrorKind::kInvalidArgument, "{}: {} has a leading zero; write it in plain decimal", what,
                  quoted(text));
  std::string_view digits = text;
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, 10);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && v > max))
    return errorf(ErrorKind::kInvalidArgument, "{}: {} is out of range (at most {})", what, quoted(text), max);
  if (ec != std::errc() || ptr != digits.data() + digits.size())
    return errorf(ErrorKind::kInvalidArgument, "{}: {} is not a non-negative integer", what, quoted(text));
  return v;
}

}  // namespace

Result<uint32_t> parse_u32(std::string_view text, std::string_view what) {
  auto r = parse_unsigned(text, what, std::numeric_limits<uint32_t>::max());
  if (!r) return r.error();
  return static_cast<uint32_t>(*r);
}

Result<uint64_t> parse_u64(std::string_view text, std::string_view what) {
  return parse_unsigned(text, what, std::numeric_limits<uint64_t>::max());
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string_view what) {
  size_t unit_at = 0;
  while (unit_at < text.size() && (std::isdigit(static_cast<unsigned char>(text[unit_at])) || text[unit_at] == '.'))
    ++unit_at;
  std::string_view number = text.substr(0, unit_at), unit = text.substr(unit_at);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else
    return errorf(ErrorKind::kInvalidArgument, "{}: {} needs a unit (ns, us, ms, s or m), e.g. 100ms", what,
                  quoted(text));
  double v = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || !std::isfinite(v))
    return errorf(ErrorKind::kInvalidArgument, "{}: {} is not a duration", what, quoted(text));
  double ns = v * scale;
  if (ns > 1e18) return errorf(ErrorKind::kInvalidArgument, "{}: {} is too long", what, quoted(text));
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
}

}  // namespace akts
