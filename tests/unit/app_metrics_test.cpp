// The application-metrics presets (llama-server, vLLM, SGLang, TGI) on
// exposition text written from each project's metrics reference, labels
// included, and a TTFT histogram feeding the objective's latency signal.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <tuple>

#include "reasoning/objective.h"
#include "reasoning/reasoning_config.h"
#include "telemetry/app_metrics.h"
#include "telemetry/sampler.h"

using namespace akts;

namespace {

// vLLM V1 with data parallelism (two engines), one API server: prometheus_client's
// text, label names sorted, _created families beside counters and histograms.
std::string vllm_text(double running0, double running1, double waiting, double prompt, double gen,
                      const std::vector<std::pair<std::string, double>>& ttft_cum) {
  std::string m = R"(model_name="meta-llama/Llama-3.1-8B-Instruct")";
  std::string t;
  t += "# HELP vllm:num_requests_running Number of requests in model execution batches.\n";
  t += "# TYPE vllm:num_requests_running gauge\n";
  t += fmt::format("vllm:num_requests_running{{engine=\"0\",{}}} {:.1f}\n", m, running0);
  t += fmt::format("vllm:num_requests_running{{engine=\"1\",{}}} {:.1f}\n", m, running1);
  t += "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n";
  t += "# TYPE vllm:num_requests_waiting gauge\n";
  t += fmt::format("vllm:num_requests_waiting{{engine=\"0\",{}}} {:.1f}\n", m, waiting);
  t += fmt::format("vllm:num_requests_waiting{{engine=\"1\",{}}} 0.0\n", m);
  t += "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n";
  t += "# TYPE vllm:prompt_tokens_total counter\n";
  t += fmt::format("vllm:prompt_tokens_total{{engine=\"0\",{}}} {:e}\n", m, prompt);
  t += fmt::format("vllm:prompt_tokens_total{{engine=\"1\",{}}} 0.0\n", m);
  t += "# HELP vllm:prompt_tokens_created Number of prefill tokens processed.\n";
  t += "# TYPE vllm:prompt_tokens_created gauge\n";
  t += fmt::format("vllm:prompt_tokens_created{{engine=\"0\",{}}} 1.7648e+09\n", m);
  t += "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n";
  t += "# TYPE vllm:generation_tokens_total counter\n";
  t += fmt::format("vllm:generation_tokens_total{{engine=\"0\",{}}} {:.1f}\n", m, gen);
  t += "# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n";
  t += "# TYPE vllm:time_to_first_token_seconds histogram\n";
  double count = ttft_cum.back().second;
  for (const auto& [le, c] : ttft_cum)
    t += fmt::format("vllm:time_to_first_token_seconds_bucket{{engine=\"0\",le=\"{}\",{}}} {:.1f}\n", le, m, c);
  t += fmt::format("vllm:time_to_first_token_seconds_count{{engine=\"0\",{}}} {:.1f}\n", m, count);
  t += fmt::format("vllm:time_to_first_token_seconds_sum{{engine=\"0\",{}}} 6.21\n", m);
  t += "# HELP vllm:time_to_first_token_seconds_created Histogram of time to first token in seconds.\n";
  t += "# TYPE vllm:time_to_first_token_seconds_created gauge\n";
  t += fmt::format("vllm:time_to_first_token_seconds_created{{engine=\"0\",{}}} 1.7648e+09\n", m);
  return t;
}

// SGLang (always multiprocess): scheduler gauges per TP rank, _sum before the buckets, no _created.
const char* kSglangText = R"(# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct",pp_rank="0",tp_rank="0"} 12.0
sglang:num_running_reqs{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct",pp_rank="0",tp_rank="1"} 12.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct",pp_rank="0",tp_rank="0"} 3.0
# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct"} 1.2345678e+07
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct"} 987654.0
# HELP sglang:realtime_tokens_total Total number of tokens processed (updated on each log interval).
# TYPE sglang:realtime_tokens_total counter
sglang:realtime_tokens_total{engine_type="unified",mode="prefill",model_name="Qwen/Qwen2.5-7B-Instruct",pp_rank="0",tp_rank="0"} 2.5e+06
sglang:realtime_tokens_total{engine_type="unified",mode="decode",model_name="Qwen/Qwen2.5-7B-Instruct",pp_rank="0",tp_rank="0"} 991234.0
sglang:realtime_tokens_total{engine_type="unified",mode="decode",model_name="Qwen/Qwen2.5-7B-Instruct",pp_rank="0",tp_rank="1"} 991234.0
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct"} 412.7
sglang:time_to_first_token_seconds_bucket{engine_type="unified",le="0.1",model_name="Qwen/Qwen2.5-7B-Instruct"} 310.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",le="0.2",model_name="Qwen/Qwen2.5-7B-Instruct"} 905.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",le="400.0",model_name="Qwen/Qwen2.5-7B-Instruct"} 1200.0
sglang:time_to_first_token_seconds_bucket{engine_type="unified",le="+Inf",model_name="Qwen/Qwen2.5-7B-Instruct"} 1200.0
sglang:time_to_first_token_seconds_count{engine_type="unified",model_name="Qwen/Qwen2.5-7B-Instruct"} 1200.0
# HELP sglang:func_latency_seconds Function latency in seconds
# TYPE sglang:func_latency_seconds histogram
sglang:func_latency_seconds_bucket{le="0.07500000000000001",name="generate_request"} 14006.0
)";

// TGI (metrics-exporter-prometheus): no labels, counters without _total, a
// blank line after each family, HELP only where described, le last, integers.
const char* kTgiText = R"(# HELP tgi_request_count Total number of requests
# TYPE tgi_request_count counter
tgi_request_count 1542

# TYPE tgi_request_failure counter
tgi_request_failure{err="validation"} 3

# HELP tgi_batch_current_size Current batch size
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 4

# HELP tgi_queue_size Current queue size
# TYPE tgi_queue_size gauge
tgi_queue_size 7

# HELP tgi_batch_inference_count Inference calls per method (prefill or decode)
# TYPE tgi_batch_inference_count counter
tgi_batch_inference_count{method="prefill"} 1539
tgi_batch_inference_count{method="decode"} 61877

# HELP tgi_request_input_length Input token length per request
# TYPE tgi_request_input_length histogram
tgi_request_input_length_bucket{le="40.96"} 1000
tgi_request_input_length_bucket{le="+Inf"} 1539
tgi_request_input_length_sum 201345
tgi_request_input_length_count 1539

# HELP tgi_request_generated_tokens Generated tokens per request
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="40.96"} 700
tgi_request_generated_tokens_bucket{le="4096"} 1539
tgi_request_generated_tokens_bucket{le="+Inf"} 1539
tgi_request_generated_tokens_sum 98211
tgi_request_generated_tokens_count 1539

# HELP tgi_request_duration Request duration
# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="0.00015000000000000001"} 0
tgi_request_duration_bucket{le="1.122274146401882"} 800
tgi_request_duration_bucket{le="+Inf"} 1539
tgi_request_duration_sum 2154.5
tgi_request_duration_count 1539

# TYPE tgi_request_skipped_tokens summary
tgi_request_skipped_tokens{quantile="0.5"} 0
tgi_request_skipped_tokens{quantile="0.99"} 2
tgi_request_skipped_tokens_sum 17
tgi_request_skipped_tokens_count 1539

)";

// llama-server --metrics: no labels, %g values (six significant digits).
const char* kLlamaServerText = R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 3.21457e+06
# HELP llamacpp:n_decode_total Total number of llama_decode() calls
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 8103
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 1
)";

PromScrape scrape_of(const std::string& text) {
  auto s = parse_prometheus_text(text);
  EXPECT_TRUE(s) << (s ? "" : s.error().message);
  return s ? *s : PromScrape{};
}

const std::vector<std::pair<std::string, double>> kVllmTtftNone = {{"0.001", 0}, {"0.1", 0}, {"0.25", 0}, {"0.5", 0},
                                                            {"1.0", 0},   {"2.5", 0}, {"+Inf", 0}};

// A fake source: the kernel reads nothing new, the application's scrapes come from a queue.
class QueuedScrapes : public TelemetrySource {
 public:
  std::deque<std::string> scrapes;
  uint64_t seq = 0;
  Result<KernelReading> read_kernel() override { return KernelReading{}; }
  HostReading read_host() override { return {}; }
  std::optional<AppScrape> scrape_app() override {
    if (scrapes.empty()) return last;
    auto s = parse_prometheus_text(scrapes.front());
    scrapes.pop_front();
    if (!s) return last;
    last = AppScrape{*s, 0, ++seq, server};
    return last;
  }
  std::optional<AppScrape> last;
  std::string server;  // what GET /info says, as the scraper passes it on
};

}  // namespace

TEST(AppMetrics, EveryPresetReadsItsServersExposition) {
  struct Case {
    const char* preset;
    std::string text;
    double running, waiting, prompt, progress;
  };
  std::vector<Case> cases = {
      {"llama-server", kLlamaServerText, 2, 1, 3.21457e6, 8103},
      {"vllm", vllm_text(3, 5, 2, 8.128902e6, 27453, kVllmTtftNone), 8, 2, 8.128902e6, 27453},
      {"sglang", kSglangText, 12, 3, 1.2345678e7, 991234},  // two tensor-parallel ranks run one batch of 12
      {"tgi", kTgiText, 4, 7, 201345, 61877},  // decode calls
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.preset);
    PromScrape s = scrape_of(c.text);
    auto found = recognise_app_metrics(s);
    ASSERT_TRUE(found);
    EXPECT_EQ(found->preset, c.preset);
    auto named = app_metric_preset(c.preset);
    ASSERT_TRUE(named);
    // Summed over engines (vLLM) and tensor-parallel ranks (SGLang).
    auto read = [&](const std::string& name) {
      PromSelector sel = series_of(name, named->labels);
      return s.sum(sel.name, sel.labels, named->repeated_across);
    };
    EXPECT_EQ(read(named->running), c.running);
    EXPECT_EQ(read(named->waiting), c.waiting);
    EXPECT_EQ(read(named->prompt_tokens), c.prompt);
    EXPECT_EQ(read(named->progress), c.progress);
  }
  // The counters' _created twins are never taken for them, and vLLM's and SGLang's TTFT histograms read.
  PromScrape v = scrape_of(vllm_text(1, 0, 0, 10, 20, kVllmTtftNone));
  EXPECT_EQ(v.sum("vllm:prompt_tokens_total"), 10);
  auto h = scrape_of(kSglangText).histogram("sglang:time_to_first_token_seconds");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->buckets.size(), 4u);
  EXPECT_EQ(h->buckets.at(0.2), 905);
  EXPECT_EQ(h->buckets.at(HUGE_VAL), 1200);
  EXPECT_FALSE(scrape_of(kTgiText).histogram("tgi_request_skipped_tokens"));  // a summary is no histogram
  EXPECT_FALSE(recognise_app_metrics(scrape_of("process_cpu_seconds_total 3\n")));
}

TEST(AppMetrics, LabelsPickOneModelAndBucketsGoByValue) {
  std::string two = R"(vllm:num_requests_running{engine="0",model_name="a"} 2.0
vllm:num_requests_running{engine="0",model_name="b"} 5.0
x_bucket{le="1",model_name="a"} 1
x_bucket{le="1.0",model_name="b"} 2
x_bucket{model_name="a",le="+Inf"} 3
x_bucket{le="+Inf",model_name="b"} 4
)";
  PromScrape s = scrape_of(two);
  EXPECT_EQ(s.sum("vllm:num_requests_running"), 7);
  EXPECT_EQ(s.sum("vllm:num_requests_running", {{"model_name", "b"}}), 5);
  EXPECT_FALSE(s.sum("vllm:num_requests_running", {{"model_name", "c"}}));
  auto h = s.histogram("x");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->buckets.size(), 2u);  // "1" and "1.0" are one bound
  EXPECT_EQ(h->buckets.at(1.0), 3);
  EXPECT_EQ(h->buckets.at(HUGE_VAL), 7);
  EXPECT_EQ(s.histogram("x", {{"model_name", "a"}})->buckets.at(HUGE_VAL), 3);
}

TEST(AppMetrics, IncreasesGoSeriesBySeriesSoOneEnginesRestartIsNotHidden) {
  // Engine 1 restarted (200 -> 30) while engine 0 grew by 100: the increase is 100 + 30, not 100 - 170.
  PromScrape a = scrape_of("c_total{engine=\"0\"} 1000\nc_total{engine=\"1\"} 200\n");
  PromScrape b = scrape_of("c_total{engine=\"0\"} 1100\nc_total{engine=\"1\"} 30\nc_total{engine=\"2\"} 5000\n");
  EXPECT_DOUBLE_EQ(*counter_rate(a, b, "c_total", 2.0), 65);  // engine 2 is new: its history is not this interval's
  EXPECT_FALSE(counter_rate(a, b, "c_total", 0));
  EXPECT_FALSE(counter_rate(a, b, "other_total", 1));
  // Histograms too: a restarted series counts its new buckets; one reconfigured counts nothing.
  PromScrape h0 = scrape_of(R"(t_bucket{engine="0",le="1"} 10
t_bucket{engine="0",le="+Inf"} 12
t_bucket{engine="1",le="1"} 50
t_bucket{engine="1",le="+Inf"} 60
t_bucket{engine="2",le="1"} 5
t_bucket{engine="2",le="+Inf"} 5
)");
  PromScrape h1 = scrape_of(R"(t_bucket{engine="0",le="1"} 15
t_bucket{engine="0",le="+Inf"} 20
t_bucket{engine="1",le="1"} 2
t_bucket{engine="1",le="+Inf"} 3
t_bucket{engine="2",le="2"} 9
t_bucket{engine="2",le="+Inf"} 9
)");
  auto inc = histogram_increase(h0, h1, "t");
  ASSERT_TRUE(inc);
  EXPECT_EQ(inc->buckets.at(1.0), 5 + 2);
  EXPECT_EQ(inc->count, 8 + 3);
  EXPECT_FALSE(histogram_increase(h0, h1, "none"));
}

TEST(AppMetrics, HistogramQuantilesAsPrometheusComputesThem) {
  PromHistogram h;
  h.buckets = {{0.1, 10}, {0.5, 60}, {1.0, 100}, {HUGE_VAL, 100}};
  EXPECT_NEAR(*histogram_quantile(h, 0.05), 0.05, 1e-9);  // within the first bucket, from 0
  EXPECT_NEAR(*histogram_quantile(h, 0.5), 0.1 + 0.4 * 40.0 / 50.0, 1e-9);
  EXPECT_NEAR(*histogram_quantile(h, 0.99), 0.5 + 0.5 * 39.0 / 40.0, 1e-9);
  h.buckets[HUGE_VAL] = 200;  // half above the largest bound: the largest finite bound
  EXPECT_EQ(*histogram_quantile(h, 0.99), 1.0);
  EXPECT_FALSE(histogram_quantile(PromHistogram{}, 0.5));
  PromHistogram only_inf;  // no finite bound: Prometheus's NaN, not a latency of 0
  only_inf.buckets = {{HUGE_VAL, 10}};
  EXPECT_FALSE(histogram_quantile(only_inf, 0.5));
  PromHistogram dip;  // buckets scraped a moment apart: made monotonic
  dip.buckets = {{0.1, 10}, {0.5, 8}, {1.0, 20}, {HUGE_VAL, 20}};
  EXPECT_NEAR(*histogram_quantile(dip, 0.5), 0.1, 1e-9);  // 10 of 20 at or below 0.1 (not 8 at 0.5)
  EXPECT_FALSE(histogram_delta(PromHistogram{}, PromHistogram{}));
  PromHistogram empty;
  empty.buckets = {{1.0, 0}, {HUGE_VAL, 0}};
  EXPECT_FALSE(histogram_quantile(empty, 0.5));
  // Deltas: a restart (a bucket going back) or other buckets give none.
  PromHistogram a, b;
  a.buckets = {{1.0, 5}, {HUGE_VAL, 6}};
  b.buckets = {{1.0, 7}, {HUGE_VAL, 10}};
  auto d = histogram_delta(a, b);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->buckets.at(1.0), 2);
  EXPECT_EQ(d->count, 4);
  EXPECT_FALSE(histogram_delta(b, a));
  PromHistogram c;
  c.buckets = {{2.0, 9}, {HUGE_VAL, 12}};
  EXPECT_FALSE(histogram_delta(a, c));
}

TEST(AppMetrics, AVllmTtftHistogramFeedsTheObjectivesLatencySignal) {
  QueuedScrapes src;
  // Scrape 1 primes; scrape 2 adds 100 first tokens: 90 under 0.25 s, 10 between 0.5 s and 1 s.
  src.scrapes.push_back(vllm_text(1, 0, 0, 1000, 50, kVllmTtftNone));
  src.scrapes.push_back(vllm_text(4, 2, 3, 3000, 450,
                                  {{"0.001", 0}, {"0.1", 40}, {"0.25", 90}, {"0.5", 90}, {"1.0", 100}, {"2.5", 100},
                                   {"+Inf", 100}}));
  Sampler sampler;  // "auto"
  EXPECT_FALSE(sampler.app_metrics());  // nothing recognised before a scrape
  ASSERT_TRUE(sampler.sample(0.0, src));
  auto w = sampler.sample(1.0, src);
  ASSERT_TRUE(w && *w);
  ASSERT_TRUE(sampler.app_metrics());
  EXPECT_EQ(sampler.app_metrics()->preset, "vllm");
  const Window& win = **w;
  EXPECT_EQ(win.app_requests_processing, 6);
  EXPECT_EQ(win.app_requests_waiting, 3);
  EXPECT_NEAR(*win.app_prompt_tokens_per_s, 2000, 1e-6);
  EXPECT_NEAR(*win.app_decode_tokens_per_s, 400, 1e-6);
  EXPECT_EQ(win.app_latency_samples, 100u);
  EXPECT_EQ(win.app_latency_from, "histogram");
  EXPECT_DOUBLE_EQ(win.app_latency_span_ms, 1000);  // since the scrape before: the first tokens came within it
  EXPECT_NEAR(*win.app_latency_p50_ms, 100 + 150 * 10.0 / 50.0, 1e-6);  // rank 50 within (0.1, 0.25]
  EXPECT_NEAR(*win.app_latency_p99_ms, 500 + 500 * 9.0 / 10.0, 1e-6);   // rank 99 within (0.5, 1.0]
  // The objective reads it as request latency: 950 ms is over 800 ms, under 1 s.
  auto over = Objective::from_json({{"signal", "request_latency_p99"}, {"max", "800ms"}});
  auto under = Objective::from_json({{"signal", "request_latency_p99"}, {"max", "1s"}});
  ASSERT_TRUE(over && under);
  EXPECT_FALSE(over->met(win));
  EXPECT_TRUE(under->met(win));
  // A window with no new first token has no latency sample; pushed latencies take precedence over the histogram.
  src.scrapes.push_back(vllm_text(4, 2, 3, 3000, 450,
                                  {{"0.001", 0}, {"0.1", 40}, {"0.25", 90}, {"0.5", 90}, {"1.0", 100}, {"2.5", 100},
                                   {"+Inf", 100}}));
  auto quiet = sampler.sample(2.0, src);
  ASSERT_TRUE(quiet && *quiet);
  EXPECT_EQ((*quiet)->app_latency_samples, 0u);
  EXPECT_FALSE((*quiet)->app_latency_p99_ms);
  PushedSamples pushed;
  ASSERT_TRUE(pushed.push({12, 14}));
  src.scrapes.push_back(vllm_text(4, 2, 3, 3000, 450,
                                  {{"0.001", 0}, {"0.1", 41}, {"0.25", 91}, {"0.5", 91}, {"1.0", 101}, {"2.5", 101},
                                   {"+Inf", 101}}));
  auto both = sampler.sample(3.0, src, &pushed);
  ASSERT_TRUE(both && *both);
  EXPECT_EQ((*both)->app_latency_from, "pushed");
  EXPECT_EQ((*both)->app_latency_samples, 2u);
}

TEST(AppMetrics, AutoWaitsForARecognisableScrapeAndANamedPresetReadsAtOnce) {
  QueuedScrapes src;
  src.scrapes.push_back("up 1\n");
  src.scrapes.push_back("up 1\n");
  src.scrapes.push_back(kTgiText);
  src.scrapes.push_back(kTgiText);
  Sampler sampler;
  ASSERT_TRUE(sampler.sample(0.0, src));
  auto w1 = sampler.sample(1.0, src);
  ASSERT_TRUE(w1 && *w1);
  EXPECT_FALSE((*w1)->app_requests_processing);
  EXPECT_FALSE(sampler.app_metrics());
  auto w2 = sampler.sample(2.0, src);
  ASSERT_TRUE(w2 && *w2);
  ASSERT_TRUE(sampler.app_metrics());
  EXPECT_EQ(sampler.app_metrics()->preset, "tgi");
  EXPECT_EQ((*w2)->app_requests_processing, 4);
  EXPECT_EQ((*w2)->app_requests_waiting, 7);
  EXPECT_FALSE((*w2)->app_latency_p99_ms);  // TGI has no TTFT

  // Named: sglang's names from the first window, even on a scrape that also carries llama-server's.
  auto choice = parse_app_metrics_choice({{"preset", "sglang"}, {"labels", {{"model_name", "Qwen/Qwen2.5-7B-Instruct"}}}});
  ASSERT_TRUE(choice);
  EXPECT_FALSE(choice->recognise);
  QueuedScrapes s2;
  s2.scrapes.push_back(std::string(kSglangText) + kLlamaServerText);
  s2.scrapes.push_back(std::string(kSglangText) + kLlamaServerText);
  Sampler named(*choice);
  ASSERT_TRUE(named.sample(0.0, s2));
  auto w = named.sample(1.0, s2);
  ASSERT_TRUE(w && *w);
  EXPECT_EQ((*w)->app_requests_processing, 12);
}

TEST(AppMetrics, TheConfigsMetricsObjectIsCheckedKeyByKey) {
  auto c = parse_app_metrics_choice({{"preset", "vllm"}, {"waiting", ""}, {"latency_histogram", "vllm:e2e_request_latency_seconds"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->names.preset, "custom");
  EXPECT_EQ(c->names.running, "vllm:num_requests_running");
  EXPECT_EQ(c->names.waiting, "");
  EXPECT_EQ(c->names.latency_histogram, "vllm:e2e_request_latency_seconds");
  auto custom = parse_app_metrics_choice({{"running", "my_server:inflight"}});
  ASSERT_TRUE(custom);
  EXPECT_FALSE(custom->recognise);  // a running gauge named by hand is what to read
  EXPECT_EQ(custom->names.running, "my_server:inflight");
  EXPECT_EQ(custom->names.prompt_tokens, "");  // not llama-server's: an unknown server's other names are not guessed
  auto vllm_running = parse_app_metrics_choice({{"running", "vllm:num_requests_running"}});
  ASSERT_TRUE(vllm_running);
  EXPECT_EQ(vllm_running->names.latency_histogram, "vllm:time_to_first_token_seconds");  // vLLM's, not llama's
  // Auto keeps names given by hand over whatever it recognises.
  auto over = parse_app_metrics_choice({{"labels", {{"model_name", "a"}}}, {"waiting", ""}});
  ASSERT_TRUE(over);
  EXPECT_TRUE(over->recognise);
  auto applied = apply_overrides(*app_metric_preset("vllm"), over->overrides);
  EXPECT_EQ(applied.waiting, "");
  EXPECT_EQ(applied.labels.at("model_name"), "a");

  for (const nlohmann::json& bad :
       {nlohmann::json("vllm"), nlohmann::json{{"preset", "triton"}}, nlohmann::json{{"preset", 3}},
        nlohmann::json{{"running", ""}}, nlohmann::json{{"running", "not a name"}}, nlohmann::json{{"waiting", 5}},
        nlohmann::json{{"labels", {{"model_name", 1}}}}, nlohmann::json{{"labels", "a"}},
        nlohmann::json{{"labels", {{"le", "1"}}}}, nlohmann::json{{"labels", {{"quantile", "0.5"}}}},
        nlohmann::json{{"labels", {{"a-b", "1"}}}},
        nlohmann::json{{"ttft", "x"}}}) {
    auto r = parse_app_metrics_choice(bad);
    EXPECT_FALSE(r) << bad.dump();
    if (!r) {
      EXPECT_NE(r.error().message.find("telemetry.metrics"), std::string::npos) << r.error().message;
    }
  }
  // Through the daemon's config: an unknown preset names its key.
  ReasoningConfig rc;
  auto bad = parse_reasoning_key("telemetry", {{"metrics", {{"preset", "triton"}}}}, rc);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("telemetry.metrics.preset"), std::string::npos) << bad.error().message;
  auto ok = parse_reasoning_key("telemetry", {{"metrics", {{"preset", "tgi"}}}}, rc);
  ASSERT_TRUE(ok && *ok);
  EXPECT_EQ(rc.telemetry.metrics.names.preset, "tgi");
}

namespace {
// SGLang with DP attention, the newest labels, prometheus_client's text: the first rank of each attention
// data-parallel group exports that group's batch (its scheduler metrics: attn_tp_rank == 0; dp_attention.py:
// attn_tp_size = tp / dp, so --tp 2 --dp 2 has tp_rank 0 in group 0 and tp_rank 1 in group 1). With
// --enable-metrics-for-all-schedulers and --tp 4 --dp 2, every rank exports its group's figures (tp_rank 0 and 1
// in group 0, 2 and 3 in group 1). The queue-time histogram is observed by every rank of a group.
std::string sglang_dp_text(bool all_schedulers) {
  struct Rank {
    int tp, dp;
  };
  std::vector<Rank> ranks = all_schedulers ? std::vector<Rank>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}
                                           : std::vector<Rank>{{0, 0}, {1, 1}};
  auto labels = [](const Rank& r, const std::string& extra = "") {
    return fmt::format(R"(dp_rank="{}",engine_type="unified",{}model_name="my-model",moe_ep_rank="0",pp_rank="0",tp_rank="{}")",
                       r.dp, extra, r.tp);
  };
  const double running[] = {14, 11}, queued[] = {3, 0};
  std::string t = "# HELP sglang:num_running_reqs The number of running requests.\n"
                  "# TYPE sglang:num_running_reqs gauge\n";
  for (const auto& r : ranks) t += fmt::format("sglang:num_running_reqs{{{}}} {:.1f}\n", labels(r), running[r.dp]);
  t += "# HELP sglang:num_queue_reqs The number of requests in the waiting queue.\n"
       "# TYPE sglang:num_queue_reqs gauge\n";
  for (const auto& r : ranks) t += fmt::format("sglang:num_queue_reqs{{{}}} {:.1f}\n", labels(r), queued[r.dp]);
  t += "# HELP sglang:queue_time_seconds Histogram of queueing time in seconds.\n"
       "# TYPE sglang:queue_time_seconds histogram\n";
  for (const auto& r : ranks) {
    t += fmt::format("sglang:queue_time_seconds_sum{{{}}} {:.1f}\n", labels(r), 2.0 + r.dp);
    for (const char* le : {"0.1", "0.5", "+Inf"})
      t += fmt::format("sglang:queue_time_seconds_bucket{{{}}} {:.1f}\n", labels(r, fmt::format("le=\"{}\",", le)),
                       std::string(le) == "0.1" ? 5.0 : 10.0 + r.dp);
    t += fmt::format("sglang:queue_time_seconds_count{{{}}} {:.1f}\n", labels(r), 10.0 + r.dp);
  }
  return t;
}
}  // namespace

TEST(AppMetrics, SglangDataParallelGroupsAreSummedAndTheRanksOfOneCountedOnce) {
  auto p = app_metric_preset("sglang");
  ASSERT_TRUE(p);
  for (bool all : {false, true}) {
    SCOPED_TRACE(all ? "every scheduler exports (--tp 4 --dp 2)" : "DP attention (--tp 2 --dp 2)");
    PromScrape s = scrape_of(sglang_dp_text(all));
    EXPECT_EQ(s.sum(p->running, p->labels, p->repeated_across), 14 + 11);
    EXPECT_EQ(s.sum(p->waiting, p->labels, p->repeated_across), 3);
    auto q = s.histogram(p->queue_histogram, p->labels, p->repeated_across);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->count, 10 + 11);  // each group's requests once
  }
  // One model of two: the labels still choose.
  PromScrape s = scrape_of(sglang_dp_text(true));
  EXPECT_FALSE(s.sum(p->running, {{"model_name", "other"}}, p->repeated_across));
}

TEST(AppMetrics, SglangAndTgiProgressMovesAtEveryDecodeStep) {
  // Between two scrapes 100 ms apart no request ended, so SGLang's generation_tokens_total and TGI's generated-
  // tokens histogram stood still, while the batch decoded: SGLang's realtime decode tokens rose by 40 (its two
  // tensor-parallel ranks report one batch), TGI made 20 decode calls.
  std::string sglang0 = kSglangText, sglang1 = kSglangText;
  for (const char* rank : {"tp_rank=\"0\"} 991234.0", "tp_rank=\"1\"} 991234.0"}) {
    std::string to = rank;
    to.replace(to.find("991234.0"), 8, "991274.0");
    sglang1.replace(sglang1.find(rank), std::string(rank).size(), to);
  }
  std::string tgi0 = kTgiText, tgi1 = kTgiText;
  tgi1.replace(tgi1.find("{method=\"decode\"} 61877"), 23, "{method=\"decode\"} 61897");
  for (const auto& [preset, a, b, rate] : {std::tuple{"sglang", sglang0, sglang1, 400.0},
                                           std::tuple{"tgi", tgi0, tgi1, 200.0}}) {
    SCOPED_TRACE(preset);
    QueuedScrapes src;
    src.scrapes = {a, b};
    Sampler sampler(*parse_app_metrics_choice({{"preset", preset}}));
    ASSERT_TRUE(sampler.sample(0.0, src));
    auto w = sampler.sample(0.1, src);
    ASSERT_TRUE(w && *w);
    ASSERT_TRUE((*w)->app_decode_tokens_per_s);
    EXPECT_NEAR(*(*w)->app_decode_tokens_per_s, rate, 1e-6);
  }
}

TEST(AppMetrics, AFreshTgiIsRecognisedByWhatItSaysItIsAndReadsNothingRunning) {
  // A fresh TGI prints no metric until its first request; its GET /info says "text-generation-router".
  QueuedScrapes src;
  src.server = "text-generation-router";
  src.scrapes = {"", ""};
  Sampler sampler;  // auto
  ASSERT_TRUE(sampler.sample(0.0, src));
  auto w = sampler.sample(0.1, src);
  ASSERT_TRUE(w && *w);
  ASSERT_TRUE(sampler.app_metrics());
  EXPECT_EQ(sampler.app_metrics()->preset, "tgi");
  EXPECT_EQ((*w)->app_requests_processing, 0);  // not yet set: none
  EXPECT_EQ((*w)->app_requests_waiting, 0);
  // Another server's empty scrape, or an empty one that says nothing, is recognised as nothing.
  for (const std::string& other : {std::string("my-router"), std::string()}) {
    QueuedScrapes o;
    o.server = other;
    o.scrapes = {"", ""};
    Sampler s2;
    ASSERT_TRUE(s2.sample(0.0, o));
    ASSERT_TRUE(s2.sample(0.1, o));
    EXPECT_FALSE(s2.app_metrics()) << other;
  }
  // Only an empty scrape reads 0: the tgi preset on a scrape that has metrics but not its gauges (another
  // server, or labels that match nothing) reads nothing.
  QueuedScrapes t;
  t.scrapes = {"up 1\n", "up 1\n"};
  Sampler st(*parse_app_metrics_choice({{"preset", "tgi"}}));
  ASSERT_TRUE(st.sample(0.0, t));
  auto wt = st.sample(0.1, t);
  ASSERT_TRUE(wt && *wt);
  EXPECT_FALSE((*wt)->app_requests_processing);
  // vLLM's gauges are there from its first scrape: absent is not zero there.
  QueuedScrapes v;
  v.scrapes = {"vllm:num_requests_running 1\n", "vllm:num_requests_running 1\n"};
  Sampler sv(*parse_app_metrics_choice({{"preset", "vllm"}}));
  ASSERT_TRUE(sv.sample(0.0, v));
  auto wv = sv.sample(0.1, v);
  ASSERT_TRUE(wv && *wv);
  EXPECT_FALSE((*wv)->app_requests_waiting);
}

TEST(AppMetrics, ACounterPrintedWithSixDigitsIsRatedOverTheSpanItMovesTenStepsIn) {
  // llama-server streams its figures as doubles at the default precision: past 10^6 decode calls, at 30 a second,
  // n_decode_total reads "1.23401e+06", "1.23402e+06", ...: a step of 10 every third of a second. Scraped every
  // 100 ms, scrape to scrape reads 0, 0, 100, 0, ... calls a second.
  QueuedScrapes src;
  Sampler sampler(*parse_app_metrics_choice({{"preset", "llama-server"}}));
  std::vector<double> rates, prompt_rates;
  for (int i = 0; i <= 100; ++i) {
    const double t = 0.1 * i;
    src.scrapes.push_back(fmt::format("llamacpp:requests_processing 1\nllamacpp:n_decode_total {:g}\n"
                                      "llamacpp:prompt_tokens_total {:g}\n",
                                      1234000 + std::floor(30 * t), 5000.0 + 20 * i));
    auto w = sampler.sample(t, src);
    ASSERT_TRUE(w);
    if (*w && t >= 4) {
      ASSERT_TRUE((*w)->app_decode_tokens_per_s);
      rates.push_back(*(*w)->app_decode_tokens_per_s);
      prompt_rates.push_back((*w)->app_prompt_tokens_per_s.value_or(-1));
    }
  }
  ASSERT_GT(rates.size(), 50u);
  for (double r : rates) {
    EXPECT_GE(r, 30 * 0.8);
    EXPECT_LE(r, 30 * 1.2);
  }
  // Below 10^6 a counter prints exactly: scrape to scrape (20 tokens in 100 ms).
  for (double r : prompt_rates) EXPECT_NEAR(r, 200, 1e-6);
  // The same figures from vLLM (exact to 17 digits): scrape to scrape too, however large.
  QueuedScrapes v;
  v.scrapes = {"vllm:num_requests_running 1\nvllm:generation_tokens_total 12345678\n",
               "vllm:num_requests_running 1\nvllm:generation_tokens_total 12345681\n"};
  Sampler sv(*parse_app_metrics_choice({{"preset", "vllm"}}));
  ASSERT_TRUE(sv.sample(0.0, v));
  auto wv = sv.sample(0.1, v);
  ASSERT_TRUE(wv && *wv);
  EXPECT_NEAR(*(*wv)->app_decode_tokens_per_s, 30, 1e-6);
}

TEST(AppMetrics, QueueTimeHistogramsAreReadWhereTheEngineHasThem) {
  // vLLM's request_queue_time_seconds (its buckets from 0.3 s): 10 requests left the queue between two scrapes,
  // 5 within 0.3 s and 5 within 0.5 s.
  auto text = [](int le03, int le05) {
    std::string m = R"(engine="0",model_name="m")";
    std::string t = fmt::format("vllm:num_requests_running{{{}}} 1.0\n", m);
    t += "# TYPE vllm:request_queue_time_seconds histogram\n";
    for (const auto& [le, c] : std::vector<std::pair<std::string, int>>{{"0.3", le03}, {"0.5", le05}, {"1.0", le05}, {"+Inf", le05}})
      t += fmt::format("vllm:request_queue_time_seconds_bucket{{engine=\"0\",le=\"{}\",model_name=\"m\"}} {}.0\n", le, c);
    return t;
  };
  QueuedScrapes src;
  src.scrapes = {text(10, 10), text(15, 20)};
  Sampler sampler(*parse_app_metrics_choice({{"preset", "vllm"}}));
  ASSERT_TRUE(sampler.sample(0.0, src));
  auto w = sampler.sample(0.1, src);
  ASSERT_TRUE(w && *w);
  EXPECT_EQ((*w)->app_queue_samples, 10u);
  ASSERT_TRUE((*w)->app_queue_p99_ms);
  EXPECT_NEAR(*(*w)->app_queue_p99_ms, 300 + 200 * 4.9 / 5.0, 1e-6);  // rank 9.9 within (0.3, 0.5]
  EXPECT_DOUBLE_EQ((*w)->app_queue_span_ms, 100);
  // The window carries it through its JSON.
  auto back = Window::from_json((*w)->to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->app_queue_p99_ms, (*w)->app_queue_p99_ms);
  for (const char* preset : {"vllm", "sglang", "tgi"}) EXPECT_FALSE(app_metric_preset(preset)->queue_histogram.empty());
  EXPECT_TRUE(app_metric_preset("llama-server")->queue_histogram.empty());
}

TEST(AppMetrics, ANameIsASeriesSelector) {
  auto sel = parse_prom_selector(R"(tgi_batch_inference_count{method="decode"})");
  ASSERT_TRUE(sel);
  EXPECT_EQ(sel->name, "tgi_batch_inference_count");
  EXPECT_EQ(sel->labels, (PromLabels{{"method", "decode"}}));
  auto esc = parse_prom_selector(R"(a:b{x="q\"uo\\te",y="2",})");
  ASSERT_TRUE(esc);
  EXPECT_EQ(esc->labels.at("x"), "q\"uo\\te");
  EXPECT_EQ(esc->labels.at("y"), "2");
  EXPECT_TRUE(parse_prom_selector("plain_name"));
  for (const char* bad : {"", "1x", "a b", "a{", "a{b}", "a{b=c}", R"(a{b="c")", R"(a{b="c"} )", R"(a{b="c" d="e"})",
                          R"(a{le="1"})", R"(a{b="1",b="2"})", R"(a{b="c}")", "a}"}) {
    auto r = parse_prom_selector(bad);
    EXPECT_FALSE(r) << bad;
  }
  // In the config: a selector is a name; a malformed one is refused with its key.
  auto c = parse_app_metrics_choice({{"preset", "tgi"}, {"progress", R"(tgi_batch_inference_count{method="prefill"})"}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->names.progress, R"(tgi_batch_inference_count{method="prefill"})");
  auto bad = parse_app_metrics_choice({{"progress", R"(x{method=decode})"}});
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("telemetry.metrics.progress"), std::string::npos) << bad.error().message;
  // The preset's labels and the selector's are read together; the selector's own wins.
  auto both = series_of(R"(x{method="decode"})", {{"model_name", "m"}, {"method", "prefill"}});
  EXPECT_EQ(both.labels, (PromLabels{{"method", "decode"}, {"model_name", "m"}}));
}
