// Which series of an LLM server's metrics endpoint mean what to akts: presets
// for llama-server, vLLM, SGLang and Hugging Face TGI (requests running and
// waiting, prompt tokens, a counter that moves as tokens are generated, and
// the time-to-first-token, time-per-output-token and queue-time histograms),
// chosen by name or recognised from a scrape.
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
  // Each name is a series selector (prometheus.h: `name` or
  // `name{label="value"}`), read with `labels` below.
  // Counter: prompt tokens processed (TGI: of the requests that arrived; its
  // input-length histogram is observed as a request is validated).
  std::string prompt_tokens;
  // A counter that moves while tokens are generated, at every decode step: a
  // counter that moves only when a request ends gives a 100 ms rate of noise.
  // llama-server's n_decode_total (decode calls; its tokens_predicted_total
  // moves at a request's end), vLLM's generation tokens, SGLang's
  // realtime_tokens_total{mode="decode"} (its generation_tokens_total moves
  // at a request's end; versions before it have none), TGI's decode calls
  // tgi_batch_inference_count{method="decode"} (its generated-tokens histogram
  // is observed at a request's end).
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
  // The base name of a histogram of the time requests waited in the engine's
  // queue before their first forward pass, in seconds: vLLM's (observed when a
  // request ends), SGLang's (as it enters a batch), TGI's (at its end). The
  // window's queue-time p99 (Window::app_queue_p99_ms). Empty: none
  // (llama-server).
  std::string queue_histogram;
  // Only series carrying these labels count (a model_name on a server with
  // several); empty: every series of a name, summed (engines, data-parallel
  // ranks). Not "le" or "quantile": those name a histogram's or a summary's parts.
  PromLabels labels;
  // Labels whose values repeat one figure: series that differ only in these
  // count once. SGLang's scheduler groups: the ranks of one group (tp_rank,
  // pp_rank, moe_ep_rank) run one batch, while each data-parallel group
  // (dp_rank; with DP attention, tp_rank 0, 1, ... or 0, 2, ... too) runs its
  // own, so the groups are summed and each counted once.
  PromRepeats repeated_across;
  // A gauge reads 0 while the scrape is empty: TGI's exporter prints a metric
  // only once it is first set, so a fresh TGI's /metrics is empty until its
  // first request. (A scrape with metrics but not the gauge reads nothing.)
  bool absent_gauges_are_zero = false;
  // The significant digits its counters are printed with; 0: exact.
  // llama-server streams every figure as a double at the default precision
  // (6: 1234567 is "1.23457e+06"), so past 10^6 a counter moves in steps of
  // 10 or more, and a 100 ms rate reads 0 or a step's worth. Its rates are
  // taken over the span, up to Sampler::kCoarseSpanS, in which the counter
  // moved 10 of its steps at least (then a tenth of the rate at most is
  // rounding; a counter that moves less in that span, more).
  int counter_digits = 0;

  nlohmann::json to_json() const;

  bool operator==(const AppMetricNames&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

// The presets, llama-server first.
const std::vector<AppMetricNames>& app_metric_presets();
// "llama-server", "vllm", "sglang" or "tgi"; an error lists them.
Result<AppMetricNames> app_metric_preset(std::string_view name);
// The preset whose running gauge a scrape carries (the gauges, not the
// counters: a server exports its gauges from its first scrape, its counters
// sometimes only once it has served), else the one the server named itself
// (`server`: the "router" of its GET /info, which the scraper asks while the
// scrape is empty: TGI's "text-generation-router", whose fresh /metrics is
// empty); nullopt when none.
std::optional<AppMetricNames> recognise_app_metrics(const PromScrape& scrape, std::string_view server = "");
// A preset name's series selector split into its name and the labels to read
// it with (`labels` and the selector's own); an unparsable one (the config
// refuses it first): its text as the name, with `labels`.
PromSelector series_of(const std::string& name, const PromLabels& labels);

// The telemetry config's "metrics" object, {"preset": "auto" | a preset,
// "running": ..., "waiting": ..., "prompt_tokens": ..., "progress": ...,
// "latency_histogram": ..., "tpot_histogram": ..., "queue_histogram": ...,
// "labels": {"model_name": "..."}}, on top of `base`. A name given by hand
// makes the preset "custom"; a key it does not know, an empty running gauge, a
// name that is not a series selector, a label name that is not one
// ([a-zA-Z_][a-zA-Z0-9_]*, not "le" or "quantile") or a label value that is
// not a string is an error.
// Naming the running gauge turns recognition off: the rest comes from the
// preset whose running gauge it is, else stays empty unless named too.
struct AppMetricsChoice {
  // "auto" (the default): the preset comes from the first scrape that carries
  // one's running gauge. Off when a preset is named or the running gauge is.
  bool recognise = true;
  AppMetricNames names = app_metric_presets().front();  // the named preset (llama-server's under auto), with any names given
  // Names and labels given by hand, applied over a recognised preset too.
  nlohmann::json overrides = nlohmann::json::object();

  bool operator==(const AppMetricsChoice&) const = default;  // a reload's comparison (src/daemon/reload.h)
};
Result<AppMetricsChoice> parse_app_metrics_choice(const nlohmann::json& j);
// `base` with the choice's names and labels over it.
AppMetricNames apply_overrides(AppMetricNames base, const nlohmann::json& overrides);

}  // namespace akts
