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
// Label names whose values repeat one figure: series that differ only in
// these labels are one series, counted once (SGLang's tensor-, pipeline- and
// expert-parallel ranks of one scheduler group report one batch each).
using PromRepeats = std::vector<std::string>;

// A series selector, the part of PromQL's that names series: a metric name,
// optionally with label matchers, `name` or `name{label="value",...}`
// (equality only, no spaces; values in double quotes with \\, \" and \n
// escapes; a label given "" matches only a series that has it empty). A preset names a counter this way
// when only some of its series mean what it reads (TGI's decode steps:
// tgi_batch_inference_count{method="decode"}).
struct PromSelector {
  std::string name;
  PromLabels labels;
};
// Refuses a name that is not [a-zA-Z_:][a-zA-Z0-9_:]*, a label name that is
// not [a-zA-Z_][a-zA-Z0-9_]* or is "le" or "quantile", a label given twice,
// and anything but `label="value"` pairs separated by commas.
Result<PromSelector> parse_prom_selector(std::string_view text);

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
  // (a server with several engines or ranks exports one series each), of
  // series that differ only in the labels of `repeats` one only (the one
  // whose labels sort first: ranks that repeat one figure); nullopt when none
  // matches.
  std::optional<double> sum(std::string_view name, const PromLabels& subset = {},
                            const PromRepeats& repeats = {}) const;
  // The histogram `base` (its base_bucket series), summed over the label sets
  // chosen as sum() chooses them; nullopt without a +Inf bucket.
  std::optional<PromHistogram> histogram(std::string_view base, const PromLabels& subset = {},
                                         const PromRepeats& repeats = {}) const;
  // Whether any sample has this name.
  bool has(std::string_view name) const;
};

// Refuses a malformed line with its number; an empty text is an empty scrape.
Result<PromScrape> parse_prometheus_text(std::string_view text);

// A counter's rate per second between two scrapes, series by series (as
// sum() chooses them) and then summed, as Prometheus's rate() does: a series
// that went backwards restarted, and its new value is its increase; a series
// in only one scrape counts nothing. nullopt when no series is in both, no
// time passed, or a value is not finite.
std::optional<double> counter_rate(const PromScrape& before, const PromScrape& after, std::string_view name,
                                   double seconds, const PromLabels& subset = {}, const PromRepeats& repeats = {});

// A counter's series as sum() chooses them, by their labels.
using PromSeries = std::map<PromLabels, double>;
PromSeries counter_series(const PromScrape& s, std::string_view name, const PromLabels& subset = {},
                          const PromRepeats& repeats = {});
// The increase between two readings of counter_series, as counter_rate()
// takes it; nullopt when no series is in both or a value is not finite.
std::optional<double> counter_increase(const PromSeries& before, const PromSeries& after);

// What a histogram observed between two scrapes, series by series and then
// summed (a series whose buckets went backwards restarted: its new counts are
// its increase; one whose bucket bounds changed, or that is in one scrape
// only, counts nothing). nullopt when no series is in both scrapes.
std::optional<PromHistogram> histogram_increase(const PromScrape& before, const PromScrape& after,
                                                std::string_view base, const PromLabels& subset = {},
                                                const PromRepeats& repeats = {});
// The bucket deltas of one series between two readings: nullopt when a bucket
// went backwards, the bounds differ, or either is empty.
std::optional<PromHistogram> histogram_delta(const PromHistogram& before, const PromHistogram& after);
// The q-th quantile (0..1) of a histogram as Prometheus's histogram_quantile
// computes it: cumulative counts made monotonic, linear within the bucket the
// rank falls in (from 0 for the first, unless its bound is 0 or less), and
// the largest finite bound when it falls in +Inf. nullopt when the histogram
// is empty or has no finite bound (Prometheus's NaN).
std::optional<double> histogram_quantile(const PromHistogram& h, double q);

}  // namespace akts
