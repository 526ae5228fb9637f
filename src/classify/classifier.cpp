#include "classify/classifier.h"

#include <charconv>

#include <fmt/format.h>

namespace akts {

bool cgroup_within(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return !path.empty() && path[0] == '/';
  if (!path.starts_with(prefix)) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::optional<Decision> Classifier::classify(const ProcInfo& p, const std::optional<Decision>& parent) const {
  if (auto it = explicit_.find(p.tgid); it != explicit_.end()) return Decision{it->second, "explicit"};
  for (auto kind : {Matcher::Kind::kPid, Matcher::Kind::kCgroup, Matcher::Kind::kComm}) {
    for (const auto& m : matchers_) {
      if (m.kind != kind) continue;
      bool hit = (kind == Matcher::Kind::kPid && m.pid == p.tgid) ||
                 (kind == Matcher::Kind::kCgroup && cgroup_within(p.cgroup, m.value)) ||
                 (kind == Matcher::Kind::kComm && m.value == p.comm);
      if (hit) return Decision{m.cls, m.describe()};
    }
  }
  if (parent) return Decision{parent->cls, fmt::format("inherited from {}", p.ppid)};
  return std::nullopt;
}

Result<ProcInfo> parse_proc_stat(std::string_view line) {
  // "pid (comm) state ppid ..."; comm may itself contain spaces and ')'.
  auto open = line.find('(');
  auto close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return make_error(ErrorKind::kInvalidArgument, "malformed /proc stat line");
  ProcInfo p;
  auto pid_text = line.substr(0, open);
  while (!pid_text.empty() && pid_text.back() == ' ') pid_text.remove_suffix(1);
  if (std::from_chars(pid_text.data(), pid_text.data() + pid_text.size(), p.tgid).ec != std::errc())
    return make_error(ErrorKind::kInvalidArgument, "malformed pid in /proc stat line");
  p.comm = std::string(line.substr(open + 1, close - open - 1));
  auto rest = line.substr(close + 1);  // " S ppid ..."
  if (rest.size() < 4) return make_error(ErrorKind::kInvalidArgument, "truncated /proc stat line");
  rest.remove_prefix(3);  // " S "
  auto sp = rest.find(' ');
  auto ppid_text = rest.substr(0, sp);
  if (std::from_chars(ppid_text.data(), ppid_text.data() + ppid_text.size(), p.ppid).ec != std::errc())
    return make_error(ErrorKind::kInvalidArgument, "malformed ppid in /proc stat line");
  return p;
}

std::string parse_cgroup_v2(std::string_view file) {
  // One line per hierarchy; v2 is "0::/path".
  size_t pos = 0;
  while (pos < file.size()) {
    auto nl = file.find('\n', pos);
    auto line = file.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.starts_with("0::")) return std::string(line.substr(3));
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return "";
}

}  // namespace akts
