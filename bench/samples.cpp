#include "samples.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <numeric>

#include <unistd.h>

#include <fmt/format.h>

namespace akts::bench {

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto rank = [&](double q) {
    size_t r = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::min(v.size(), std::max<size_t>(r, 1)) - 1];
  };
  s.p50 = rank(0.50);
  s.p99 = rank(0.99);
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  s.min = v.front();
  s.max = v.back();
  return s;
}

nlohmann::json Summary::to_json() const {
  return {{"n", n}, {"p50_ns", p50}, {"p99_ns", p99}, {"mean_ns", mean}, {"min_ns", min}, {"max_ns", max}};
}

namespace {
bool g_progress_open = false;
auto g_last_line = std::chrono::steady_clock::time_point{};
}  // namespace

void progress(const std::string& line) {
  if (isatty(2)) {
    fmt::print(stderr, "\r{}", line);
    g_progress_open = true;
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - g_last_line > std::chrono::seconds(5)) {
    fmt::print(stderr, "{}\n", line);
    g_last_line = now;
  }
}

void progress_done() {
  if (g_progress_open) fmt::print(stderr, "\n");
  g_progress_open = false;
  g_last_line = {};
}

std::string human_ns(double ns) {
  if (ns < 10) return fmt::format("{:.2f} ns", ns);
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.2f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.1f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

}  // namespace akts::bench
