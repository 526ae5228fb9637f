// Summaries of timing samples: n, p50, p99, mean, min, max.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace akts::bench {

struct Summary {
  size_t n = 0;
  double p50 = 0, p99 = 0, mean = 0, min = 0, max = 0;
  nlohmann::json to_json() const;
};

// Nearest-rank percentiles; an empty input gives n = 0 and zeros.
Summary summarize(std::vector<double> samples);

// Progress on stderr: rewritten in place on a terminal, a line now and then otherwise.
void progress(const std::string& line);
void progress_done();

// "920 ns", "1.23 us", "4.5 ms", "2.10 s"
std::string human_ns(double ns);

}  // namespace akts::bench
