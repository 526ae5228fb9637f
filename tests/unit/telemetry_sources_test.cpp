// The host's and the application's telemetry, parsed from text: PSI, /proc/stat,
// and a Prometheus endpoint such as llama-server's --metrics.
#include <gtest/gtest.h>

#include <cmath>

#include "telemetry/host.h"
#include "telemetry/prometheus.h"

namespace akts {
namespace {

TEST(HostTelemetry, CpuPressure) {
  auto p = parse_cpu_pressure("some avg10=12.50 avg60=3.00 avg300=0.75 total=987654\nfull avg10=0.00 avg60=0.00 "
                              "avg300=0.00 total=0\n");
  ASSERT_TRUE(p.ok()) << p.error().to_string();
  EXPECT_DOUBLE_EQ(p->avg10, 12.5);
  EXPECT_EQ(p->total_us, 987654u);
  for (const char* bad : {"", "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", "some avg10=x avg60=0 avg300=0 total=1",
                          "some avg10=1 avg60=0 total=1"})
    EXPECT_FALSE(parse_cpu_pressure(bad).ok()) << bad;
}

TEST(HostTelemetry, ProcStatAndRates) {
  const char* a = "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 50 0 25 400 25 0 0 0 0 0\nintr 1\nprocs_running 3\nprocs_blocked 1\n";
  const char* b = "cpu  250 0 100 850 50 0 0 0 0 0\nprocs_running 5\nprocs_blocked 0\n";
  auto x = parse_proc_stat_cpu(a), y = parse_proc_stat_cpu(b);
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(x->busy, 150u);
  EXPECT_EQ(x->total, 1000u);
  EXPECT_EQ(x->procs_running, 3u);
  EXPECT_EQ(y->procs_running, 5u);
  EXPECT_DOUBLE_EQ(*cpu_utilisation(*x, *y), 200.0 / 250.0);
  EXPECT_FALSE(cpu_utilisation(*y, *x).has_value());  // backwards
  EXPECT_FALSE(parse_proc_stat_cpu("cpu0 1 2 3\n").ok());
  EXPECT_FALSE(parse_proc_stat_cpu("cpu  1 2 x 4 5 6 7 8\n").ok());
  Pressure p0{0, 0, 0, 1000}, p1{0, 0, 0, 51000};
  EXPECT_DOUBLE_EQ(*pressure_share(p0, p1, 0.1), 0.5);
  EXPECT_FALSE(pressure_share(p1, p0, 0.1).has_value());
}

// Shaped like llama-server's --metrics output.
constexpr const char* kLlama = R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 640
# HELP llamacpp:n_decode_total Total number of llama_decode() calls
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 96
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 4
llamacpp:requests_deferred 0
http_requests{method="post",path="/completion",note="a \"quoted\" \\ value"} 7 1700000000000
)";

TEST(Prometheus, ReadsLlamaServerMetrics) {
  auto s = parse_prometheus_text(kLlama);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(*s->value("llamacpp:prompt_tokens_total"), 640);
  EXPECT_EQ(*s->value("llamacpp:requests_processing"), 4);
  EXPECT_EQ(s->types.at("llamacpp:prompt_tokens_total"), "counter");
  EXPECT_EQ(*s->value("http_requests", {{"method", "post"}, {"path", "/completion"}, {"note", "a \"quoted\" \\ value"}}), 7);
  EXPECT_FALSE(s->value("http_requests").has_value());  // labels must match exactly
  EXPECT_FALSE(s->value("missing").has_value());
}

TEST(Prometheus, CounterRatesFromDeltasNotGauges) {
  auto a = parse_prometheus_text("llamacpp:n_decode_total 100\n");
  auto b = parse_prometheus_text("llamacpp:n_decode_total 150\n");
  auto restarted = parse_prometheus_text("llamacpp:n_decode_total 3\n");
  ASSERT_TRUE(a.ok() && b.ok() && restarted.ok());
  EXPECT_DOUBLE_EQ(*counter_rate(*a, *b, "llamacpp:n_decode_total", 0.5), 100.0);
  // The server restarted between the scrapes: as Prometheus's rate(), what it counted since is the increase.
  EXPECT_DOUBLE_EQ(*counter_rate(*b, *restarted, "llamacpp:n_decode_total", 0.5), 6.0);
  EXPECT_FALSE(counter_rate(*a, *b, "llamacpp:n_decode_total", 0).has_value());
}

TEST(Prometheus, SpecialValuesAndRefusals) {
  auto s = parse_prometheus_text("a +Inf\nb -Inf\nc NaN\nd 1e3\n\n# a comment\n");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(std::isinf(*s->value("a")));
  EXPECT_TRUE(std::isnan(*s->value("c")));
  EXPECT_EQ(*s->value("d"), 1000);
  for (const char* bad : {"9bad 1\n", "x\n", "x abc\n", "x{a=1} 2\n", "x{a=\"1} 2\n", "x 1 notatime\n", "# TYPE x\n"}) {
    auto r = parse_prometheus_text(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("metrics line"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace akts
