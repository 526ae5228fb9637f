// The Prometheus text exposition format, read: what an application's metrics
// endpoint says (llama-server's --metrics: llamacpp:requests_processing,
// llamacpp:prompt_tokens_total, ...; vLLM's, SGLang's, TGI's), summed over
// label sets, counter rates and histogram quantiles between two scrapes.
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

using PromLabels = std::map<std::string, std::string>;

// A histogram's cumulative buckets, keyed by their parsed upper bound (le
// "1", "1.0" and "1e0" are one bucket; +Inf is HUGE_VAL), and its count.
struct PromHistogram {
  std::map<double, double> buckets;
  double count = 0;
};

struct PromScrape {
  std::vector<PromSample> samples;
  std::map<std::string, std::string> types;  // from "# TYPE name type"
  // The sample with this name and exactly these labels, if any.
  std::optional<double> value(std::string_view name, const PromLabels& labels = {}) const;
  // The sum over every sample of this name whose labels include `subset`
  // (a server with several engines or ranks exports one series each);
  // nullopt when none matches.
  std::optional<double> sum(std::string_view name, const PromLabels& subset = {}) const;
  // The histogram `base` (its base_bucket and base_count series), summed over
  // the label sets that include `subset`; nullopt without a +Inf bucket.
  std::optional<PromHistogram> histogram(std::string_view base, const PromLabels& subset = {}) const;
  // Whether any sample has this name.
  bool has(std::string_view name) const;
};

// Refuses a malformed line with its number; an empty text is an empty scrape.
Result<PromScrape> parse_prometheus_text(std::string_view text);

// A counter's rate per second between two scrapes (summed over the label
// sets that include `subset`); nullopt when either lacks it, no time passed,
// or it went backwards (the application restarted).
std::optional<double> counter_rate(const PromScrape& before, const PromScrape& after, std::string_view name,
                                   double seconds, const PromLabels& subset = {});

// What a histogram observed between two scrapes: the bucket counts' deltas.
// nullopt when a bucket went backwards (the application restarted) or the
// buckets differ (the server was reconfigured).
std::optional<PromHistogram> histogram_delta(const PromHistogram& before, const PromHistogram& after);
// The q-th quantile (0..1) of a histogram as Prometheus's histogram_quantile
// computes it: linear within the bucket the rank falls in (from 0 for the
// first), and the largest finite bound when it falls in +Inf. nullopt when
// the histogram is empty.
std::optional<double> histogram_quantile(const PromHistogram& h, double q);

}  // namespace akts
