// Valid-UTF-8 repair and boundary-safe excerpts of outside text.
#include "common/text.h"

#include <fmt/format.h>

namespace akts {
namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
bool cont(unsigned char c) { return (c & 0xC0) == 0x80; }
}  // namespace

size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return s.size() >= 2 && cont(b(1)) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (s.size() < 3 || !cont(b(1)) || !cont(b(2))) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (s.size() < 4 || !cont(b(1)) || !cont(b(2)) || !cont(b(3))) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

bool is_valid_utf8(std::string_view s) {
  while (!s.empty()) {
    size_t n = utf8_sequence_length(s);
    if (!n) return false;
    s.remove_prefix(n);
  }
  return true;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  while (!s.empty()) {
    size_t n = utf8_sequence_length(s);
    if (n) {
      out.append(s.substr(0, n));
      s.remove_prefix(n);
    } else {
      out.append(kReplacement);
      s.remove_prefix(1);
    }
  }
  return out;
}

std::string excerpt(std::string_view s, size_t max_bytes) {
  std::string out;
  while (!s.empty()) {
    size_t n = utf8_sequence_length(s);
    std::string_view piece = n ? s.substr(0, n) : kReplacement;
    if (out.size() + piece.size() > max_bytes) return out + "...";
    out.append(piece);
    s.remove_prefix(n ? n : 1);
  }
  return out;
}

std::string quote_escaped(std::string_view s, size_t max_bytes) {
  std::string out = "\"";
  for (unsigned char c : excerpt(s, max_bytes)) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  for (size_t a = 0;;) {
    size_t b = s.find(sep, a);
    out.emplace_back(s.substr(a, b == std::string_view::npos ? std::string_view::npos : b - a));
    if (b == std::string_view::npos) return out;
    a = b + 1;
  }
}

}  // namespace akts
