// The application-metrics presets and the telemetry config's "metrics" object.
#include "telemetry/app_metrics.h"

#include <cctype>

#include <fmt/format.h>

#include "common/text.h"

namespace akts {
namespace {

// The names each project documents, checked against its source: llama.cpp's
// tools/server README (GET /metrics), vLLM's and SGLang's production-metrics
// pages and metrics collectors, TGI's metrics reference and router.
// prometheus_client (vLLM, SGLang) adds _total to counters; TGI's exporter
// (metrics-exporter-prometheus) does not, and TGI has token histograms, not
// token counters.
std::vector<AppMetricNames> make_presets() {
  AppMetricNames llama;
  llama.preset = "llama-server";
  llama.running = "llamacpp:requests_processing";
  llama.waiting = "llamacpp:requests_deferred";
  llama.prompt_tokens = "llamacpp:prompt_tokens_total";
  llama.progress = "llamacpp:n_decode_total";
  llama.counter_digits = 6;

  AppMetricNames vllm;
  vllm.preset = "vllm";
  vllm.running = "vllm:num_requests_running";
  vllm.waiting = "vllm:num_requests_waiting";
  vllm.prompt_tokens = "vllm:prompt_tokens_total";
  vllm.progress = "vllm:generation_tokens_total";
  vllm.latency_histogram = "vllm:time_to_first_token_seconds";
  vllm.tpot_histogram = "vllm:inter_token_latency_seconds";
  vllm.queue_histogram = "vllm:request_queue_time_seconds";

  // Its token counters move when a request ends (the tokenizer manager's);
  // realtime_tokens_total moves at each decode step (the scheduler's).
  AppMetricNames sglang;
  sglang.preset = "sglang";
  sglang.running = "sglang:num_running_reqs";
  sglang.waiting = "sglang:num_queue_reqs";
  sglang.prompt_tokens = "sglang:prompt_tokens_total";
  sglang.progress = "sglang:realtime_tokens_total{mode=\"decode\"}";
  sglang.latency_histogram = "sglang:time_to_first_token_seconds";
  sglang.tpot_histogram = "sglang:inter_token_latency_seconds";
  sglang.queue_histogram = "sglang:queue_time_seconds";
  sglang.repeated_across = {"moe_ep_rank", "pp_rank", "tp_rank"};

  // TGI: its token figures are histograms, whose _sum series are counters;
  // the input lengths' are observed as a request arrives. Decode calls move
  // at every step, as llama-server's do.
  AppMetricNames tgi;
  tgi.preset = "tgi";
  tgi.running = "tgi_batch_current_size";
  tgi.waiting = "tgi_queue_size";
  tgi.prompt_tokens = "tgi_request_input_length_sum";
  tgi.progress = "tgi_batch_inference_count{method=\"decode\"}";
  tgi.tpot_histogram = "tgi_request_mean_time_per_token_duration";
  tgi.queue_histogram = "tgi_request_queue_duration";
  tgi.absent_gauges_are_zero = true;
  return {llama, vllm, sglang, tgi};
}

// What a server says it is in its GET /info "router", for a preset recognised before its /metrics has anything.
constexpr std::pair<const char*, const char*> kServerPresets[] = {{"text-generation-router", "tgi"}};

constexpr const char* kNameKeys[] = {"running",           "waiting",        "prompt_tokens",  "progress",
                                     "latency_histogram", "tpot_histogram", "queue_histogram"};

std::string* name_field(AppMetricNames& n, std::string_view key) {
  if (key == "running") return &n.running;
  if (key == "waiting") return &n.waiting;
  if (key == "prompt_tokens") return &n.prompt_tokens;
  if (key == "progress") return &n.progress;
  if (key == "latency_histogram") return &n.latency_histogram;
  if (key == "tpot_histogram") return &n.tpot_histogram;
  if (key == "queue_histogram") return &n.queue_histogram;
  return nullptr;
}

std::string preset_list() {
  std::string out = "auto";
  for (const auto& p : app_metric_presets()) out += ", " + p.preset;
  return out;
}

Error bad_key(std::string_view key, std::string_view why) {
  return errorf(ErrorKind::kInvalidArgument, "config: telemetry.metrics.{}: {}", key, why);
}

// A label name as the text format allows it: [a-zA-Z_][a-zA-Z0-9_]*.
bool is_label_name(std::string_view s) {
  if (s.empty() || s.size() > 100) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (!(std::isalpha(c) || c == '_' || (i > 0 && std::isdigit(c)))) return false;
  }
  return true;
}

}  // namespace

nlohmann::json AppMetricNames::to_json() const {
  auto opt = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"preset", preset},       {"running", running},   {"waiting", opt(waiting)},
          {"prompt_tokens", opt(prompt_tokens)}, {"progress", opt(progress)},
          {"latency_histogram", opt(latency_histogram)}, {"tpot_histogram", opt(tpot_histogram)},
          {"queue_histogram", opt(queue_histogram)}, {"labels", labels}, {"repeated_across", repeated_across},
          {"absent_gauges_are_zero", absent_gauges_are_zero}, {"counter_digits", counter_digits}};
}

const std::vector<AppMetricNames>& app_metric_presets() {
  static const std::vector<AppMetricNames> presets = make_presets();
  return presets;
}

Result<AppMetricNames> app_metric_preset(std::string_view name) {
  for (const auto& p : app_metric_presets())
    if (p.preset == name) return p;
  return errorf(ErrorKind::kInvalidArgument, "no metrics preset \"{}\" (expected one of {})", excerpt(name),
                preset_list());
}

std::optional<AppMetricNames> recognise_app_metrics(const PromScrape& scrape, std::string_view server) {
  for (const auto& p : app_metric_presets())
    if (scrape.has(p.running)) return p;
  for (const auto& [router, preset] : kServerPresets)
    if (server == router) return *app_metric_preset(preset);
  return std::nullopt;
}

PromSelector series_of(const std::string& name, const PromLabels& labels) {
  auto sel = parse_prom_selector(name);
  if (!sel) return {name, labels};
  for (const auto& [k, v] : labels) sel->labels.emplace(k, v);  // the selector's own label wins
  return *sel;
}

AppMetricNames apply_overrides(AppMetricNames base, const nlohmann::json& overrides) {
  if (!overrides.is_object()) return base;
  for (const auto& [k, v] : overrides.items()) {
    if (k == "labels") {
      base.labels.clear();
      for (const auto& [lk, lv] : v.items()) base.labels[lk] = lv.get<std::string>();
    } else if (std::string* f = name_field(base, k); f && v.is_string()) {
      *f = v.get<std::string>();
      base.preset = "custom";
    }
  }
  return base;
}

Result<AppMetricsChoice> parse_app_metrics_choice(const nlohmann::json& j) {
  if (!j.is_object())
    return errorf(ErrorKind::kInvalidArgument,
                  "config: telemetry.metrics must be an object such as {{\"preset\": \"vllm\"}}");
  AppMetricsChoice c;
  c.names = app_metric_presets().front();
  for (const auto& [k, v] : j.items()) {
    if (k == "preset") {
      if (!v.is_string()) return bad_key(k, fmt::format("must be one of {}", preset_list()));
      std::string name = v.get<std::string>();
      if (name == "auto") {
        c.recognise = true;
        continue;
      }
      auto p = app_metric_preset(name);
      if (!p) return bad_key(k, p.error().message);
      c.recognise = false;
      c.names = *p;
    } else if (k == "labels") {
      if (!v.is_object()) return bad_key(k, "must be an object of label values such as {\"model_name\": \"m\"}");
      for (const auto& [lk, lv] : v.items()) {
        if (!is_label_name(lk) || lk == "le" || lk == "quantile")
          return bad_key(k, fmt::format("\"{}\" is not a label a series is chosen by", excerpt(lk)));
        if (!lv.is_string()) return bad_key(k, fmt::format("the value of \"{}\" must be a string", excerpt(lk)));
      }
      c.overrides[k] = v;
    } else if (name_field(c.names, k)) {
      // An empty name turns an optional figure off; the running gauge is the one akts cannot do without.
      if (!v.is_string() || (k == "running" && v.get<std::string>().empty()))
        return bad_key(k, k == "running" ? "must be a metric name" : "must be a metric name, or \"\" for none");
      if (!v.get<std::string>().empty())
        if (auto sel = parse_prom_selector(v.get<std::string>()); !sel) return bad_key(k, sel.error().message);
      c.overrides[k] = v;
    } else {
      std::string keys = "preset, labels";
      for (const char* n : kNameKeys) keys += fmt::format(", {}", n);
      return bad_key(excerpt(k), fmt::format("unknown key (expected {})", keys));
    }
  }
  // A running gauge named by hand is what to read: nothing is left to recognise. The other names come from the
  // preset whose running gauge it is (or the preset named), else only from what is named.
  if (c.overrides.contains("running") && c.recognise) {
    c.recognise = false;
    AppMetricNames base;
    base.preset = "custom";
    base.running = base.waiting = base.prompt_tokens = base.progress = "";
    base.latency_histogram = base.tpot_histogram = base.queue_histogram = "";
    for (const auto& p : app_metric_presets())
      if (p.running == c.overrides["running"].get<std::string>()) base = p;
    c.names = base;
  }
  c.names = apply_overrides(c.names, c.overrides);
  return c;
}

}  // namespace akts
