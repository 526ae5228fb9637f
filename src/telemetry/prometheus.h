// The Prometheus text exposition format, read: what an application's metrics
// endpoint says (llama-server's --metrics: llamacpp:requests_processing,
// llamacpp:prompt_tokens_total, ...), and counter rates between two scrapes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace akts {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct PromScrape {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // from "# TYPE name type"
  // The sample with this name and exactly these labels, if any.
  std::optional<double> value(std::string_view name, const std::map<std::string, std::string>& labels = {}) const;
};

// Refuses a malformed line with its number; an empty text is an empty scrape.
Result<PromScrape> parse_prometheus_text(std::string_view text);

// A counter's rate per second between two scrapes; nullopt when either lacks
// it, no time passed, or it went backwards (the application restarted).
std::optional<double> counter_rate(const PromScrape& before, const PromScrape& after, std::string_view name,
                                   double seconds);

}  // namespace akts
