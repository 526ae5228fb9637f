// Reading /proc/<pid>/stat, /proc/stat's btime and /proc/<pid>/fd.
#include "metrics/process_self.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace akts::metrics {

Result<nlohmann::json> read_process(const std::string& proc_root, const std::string& pid) {
  const std::string dir = fmt::format("{}/{}", proc_root, pid);
  std::ifstream f(dir + "/stat");
  std::string line;
  if (!f || !std::getline(f, line)) return errorf(ErrorKind::kSystem, "cannot read {}/stat", dir);
  // The command name may hold spaces and parentheses: the fields start after the last ')'.
  size_t close = line.rfind(')');
  if (close == std::string::npos) return errorf(ErrorKind::kSystem, "{}/stat is malformed", dir);
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;  // fields[0] is field 3 (state)
  for (std::string t; rest >> t;) fields.push_back(t);
  if (fields.size() < 22) return errorf(ErrorKind::kSystem, "{}/stat has {} fields", dir, fields.size() + 2);
  auto field = [&](size_t n) -> Result<double> {  // n: the 1-based field number of proc(5)
    try {
      size_t used = 0;
      double v = static_cast<double>(std::stoull(fields[n - 3], &used));
      if (used != fields[n - 3].size()) throw std::invalid_argument("trailing text");
      return v;
    } catch (const std::exception&) {
      return errorf(ErrorKind::kSystem, "{}/stat: field {} is not a number", dir, n);
    }
  };
  auto utime = field(14), stime = field(15), start = field(22), rss = field(24);
  for (const auto* r : {&utime, &stime, &start, &rss})
    if (!*r) return r->error();
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));

  double btime = -1;
  std::ifstream st(proc_root + "/stat");
  for (std::string l; std::getline(st, l);)
    if (l.starts_with("btime ")) {
      char* end = nullptr;
      double v = std::strtod(l.c_str() + 6, &end);
      if (end != l.c_str() + 6 && *end == '\0') btime = v;
    }
  if (btime < 0) return errorf(ErrorKind::kSystem, "{}/stat has no btime", proc_root);

  std::error_code ec;
  size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator(dir + "/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++fds;
  nlohmann::json j = {{"cpu_seconds", (*utime + *stime) / hz},
                      {"resident_bytes", *rss * page},
                      {"start_time_seconds", btime + *start / hz}};
  j["open_fds"] = ec ? nlohmann::json(nullptr) : nlohmann::json(fds);
  return j;
}

}  // namespace akts::metrics
