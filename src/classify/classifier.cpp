#include "classify/classifier.h"

#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "common/text.h"

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
  p.comm = valid_utf8(line.substr(open + 1, close - open - 1));
  // After the comm: state(3) ppid(4) ... flags(9) ... starttime(22), space-separated.
  std::vector<std::string_view> fields;
  auto rest = line.substr(close + 1);
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\n')) rest.remove_prefix(1);
    if (rest.empty()) break;
    auto sp = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, sp));
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp);
  }
  auto number = [&](size_t field, auto& out) {
    size_t i = field - 3;  // fields[0] is field 3 (state)
    if (i >= fields.size()) return false;
    return std::from_chars(fields[i].data(), fields[i].data() + fields[i].size(), out).ec == std::errc();
  };
  if (fields.size() < 2) return make_error(ErrorKind::kInvalidArgument, "truncated /proc stat line");
  if (!number(4, p.ppid)) return make_error(ErrorKind::kInvalidArgument, "malformed ppid in /proc stat line");
  if (fields[0].size() == 1) p.state = fields[0][0];
  number(9, p.flags);
  number(22, p.start_time);
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
