// Which series of an LLM server's metrics endpoint mean what to akts: presets
// for llama-server, vLLM, SGLang and Hugging Face TGI (requests running and
// waiting, prompt tokens, a counter that moves as tokens are generated, a
// time-to-first-token histogram, a time-per-output-token one), chosen by name or recognised from a scrape.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "telemetry/prometheus.h"

namespace akts {

struct AppMetricNames {
  std::string preset = "llama-server";  // the preset these came from ("custom" once a name is overridden)
  std::string running;                  // gauge: requests being computed (llama-server: busy slots)
  std::string waiting;                  // gauge: requests queued for a slot; empty: not exported
  std::string prompt_tokens;            // counter: prompt tokens processed
  // A counter that moves while tokens are generated. llama-server's
  // tokens_predicted_total moves only when a request ends, so its preset
  // reads n_decode_total (decode calls) instead; the others count tokens.
  std::string progress;
  // The base name of a histogram of request latency in seconds, whose bucket
  // deltas feed the objective's request-latency signal when nothing is
  // pushed: time to first token for vLLM and SGLang. Empty: none (llama-server
  // has none; TGI's tgi_request_duration is the whole request, which a user
  // may name here knowingly), and latency must be pushed.
  std::string latency_histogram;
  // The base name of a histogram of time per output token in seconds, for
  // the objective's TPOT signal when nothing is pushed: vLLM's and SGLang's
  // inter-token latency (one observation per gap between two tokens, so its
  // p99 is the slowest gaps', stricter than the slowest requests' mean), and
  // TGI's mean time per token of each finished request. Empty: none.
  std::string tpot_histogram;
  // Only series carrying these labels count (a model_name on a server with
  // several); empty: every series of a name, summed (engines, data-parallel
  // ranks). Not "le" or "quantile": those name a histogram's or a summary's parts.
  PromLabels labels;
  // Series that repeat one figure across a label's values count at one value
  // only, where the label is there: SGLang's tensor-parallel ranks run one
  // batch ({"tp_rank": "0"}), so summing them would count it once per rank.
  PromLabels one_series_of;

  nlohmann::json to_json() const;
};

// The presets, llama-server first.
const std::vector<AppMetricNames>& app_metric_presets();
// "llama-server", "vllm", "sglang" or "tgi"; an error lists them.
Result<AppMetricNames> app_metric_preset(std::string_view name);
// The preset whose running gauge a scrape carries (the gauges, not the
// counters: a server exports its gauges from its first scrape, its counters
// sometimes only once it has served); nullopt when none does.
std::optional<AppMetricNames> recognise_app_metrics(const PromScrape& scrape);

// The telemetry config's "metrics" object, {"preset": "auto" | a preset,
// "running": ..., "waiting": ..., "prompt_tokens": ..., "progress": ...,
// "latency_histogram": ..., "tpot_histogram": ..., "labels": {"model_name": "..."}}, on top of `base`.
// A name given by hand makes the preset "custom"; a key it does not know, an
// empty running gauge, a label name that is not one ([a-zA-Z_][a-zA-Z0-9_]*,
// not "le" or "quantile") or a label value that is not a string is an error.
// Naming the running gauge turns recognition off: the rest comes from the
// preset whose running gauge it is, else stays empty unless named too.
struct AppMetricsChoice {
  // "auto" (the default): the preset comes from the first scrape that carries
  // one's running gauge. Off when a preset is named or the running gauge is.
  bool recognise = true;
  AppMetricNames names = app_metric_presets().front();  // the named preset (llama-server's under auto), with any names given
  // Names and labels given by hand, applied over a recognised preset too.
  nlohmann::json overrides = nlohmann::json::object();
};
Result<AppMetricsChoice> parse_app_metrics_choice(const nlohmann::json& j);
// `base` with the choice's names and labels over it.
AppMetricNames apply_overrides(AppMetricNames base, const nlohmann::json& overrides);

}  // namespace akts
