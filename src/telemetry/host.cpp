// Parsers for /proc/pressure/cpu and /proc/stat, and the rates between readings.
#include "telemetry/host.h"

#include <charconv>
#include <vector>

namespace akts {
namespace {

std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string_view line_starting(std::string_view file, std::string_view prefix) {
  size_t pos = 0;
  while (pos < file.size()) {
    size_t nl = file.find('\n', pos);
    std::string_view line = file.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (line.starts_with(prefix)) return line;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return {};
}

template <class T>
bool number(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

Result<Pressure> parse_cpu_pressure(std::string_view file) {
  std::string_view line = line_starting(file, "some ");
  if (line.empty()) return make_error(ErrorKind::kInvalidArgument, "/proc/pressure/cpu: no \"some\" line");
  Pressure p;
  int seen = 0;
  for (auto w : words(line.substr(5))) {
    auto eq = w.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = w.substr(0, eq), val = w.substr(eq + 1);
    bool ok = key == "avg10"    ? number(val, &p.avg10)
              : key == "avg60"  ? number(val, &p.avg60)
              : key == "avg300" ? number(val, &p.avg300)
              : key == "total"  ? number(val, &p.total_us)
                                : true;
    if (!ok) return make_error(ErrorKind::kInvalidArgument, "/proc/pressure/cpu: malformed value in the \"some\" line");
    seen += key == "avg10" || key == "avg60" || key == "avg300" || key == "total";
  }
  if (seen != 4) return make_error(ErrorKind::kInvalidArgument, "/proc/pressure/cpu: incomplete \"some\" line");
  return p;
}

Result<CpuTimes> parse_proc_stat_cpu(std::string_view file) {
  std::string_view line = line_starting(file, "cpu ");
  if (line.empty()) return make_error(ErrorKind::kInvalidArgument, "/proc/stat: no aggregate \"cpu\" line");
  auto w = words(line);
  // cpu user nice system idle iowait irq softirq steal [guest guest_nice]
  if (w.size() < 9) return make_error(ErrorKind::kInvalidArgument, "/proc/stat: short \"cpu\" line");
  uint64_t v[8];
  for (int i = 0; i < 8; ++i)
    if (!number(w[static_cast<size_t>(i) + 1], &v[i]))
      return make_error(ErrorKind::kInvalidArgument, "/proc/stat: malformed \"cpu\" line");
  CpuTimes t;
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  t.total = t.busy + v[3] + v[4];
  for (auto [key, out] : {std::pair{"procs_running ", &t.procs_running}, std::pair{"procs_blocked ", &t.procs_blocked}}) {
    std::string_view l = line_starting(file, key);
    if (!l.empty() && !number(l.substr(std::string_view(key).size()), out))
      return make_error(ErrorKind::kInvalidArgument, "/proc/stat: malformed procs line");
  }
  return t;
}

std::optional<double> cpu_utilisation(const CpuTimes& before, const CpuTimes& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  uint64_t busy = after.busy - before.busy, total = after.total - before.total;
  return busy > total ? 1.0 : static_cast<double>(busy) / static_cast<double>(total);
}

std::optional<double> pressure_share(const Pressure& before, const Pressure& after, double wall_seconds) {
  if (wall_seconds <= 0 || after.total_us < before.total_us) return std::nullopt;
  double share = static_cast<double>(after.total_us - before.total_us) / (wall_seconds * 1e6);
  return share > 1.0 ? 1.0 : share;
}

}  // namespace akts
