// The bimodal request server: its arrivals, its figures, its options, and a short real run on the host.
#include "workload/bimodal.h"

#include <gtest/gtest.h>

#include <atomic>

namespace akts::workload {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

TEST(Bimodal, ArrivalsArePoissonAndRepeatable) {
  auto a = make_arrivals(1000, 20, 0.01, 7);
  auto b = make_arrivals(1000, 20, 0.01, 7);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].at_s, b[i].at_s);
  // 20000 expected; a Poisson count's sd is sqrt(20000) ~ 141.
  EXPECT_NEAR(static_cast<double>(a.size()), 20000, 700);
  size_t longs = 0;
  double last = 0;
  for (const auto& x : a) {
    longs += x.is_long;
    EXPECT_GE(x.at_s, last);
    EXPECT_LT(x.at_s, 20);
    last = x.at_s;
  }
  EXPECT_NEAR(static_cast<double>(longs), 200, 60);
  EXPECT_TRUE(make_arrivals(0, 5, 0, 1).empty());
  EXPECT_TRUE(make_arrivals(100, 0, 0, 1).empty());
}

TEST(Bimodal, SummaryCountsSlowdownAndGoodput) {
  std::vector<Served> s;
  for (int i = 0; i < 998; ++i) s.push_back({2e6, 1e6, false, true});  // slowdown 2
  s.push_back({200e6, 1e6, false, true});                                // slowdown 200: outside the objective
  s.push_back({150e6, 100e6, true, false});                              // unfinished
  json j = summarize_load(s, 10, 50);
  EXPECT_EQ(j["requests"], 1000);
  EXPECT_EQ(j["finished"], 999);
  EXPECT_EQ(j["unfinished"], 1);
  EXPECT_DOUBLE_EQ(j["goodput_rps"].get<double>(), 99.8);
  EXPECT_DOUBLE_EQ(j["achieved_rps"].get<double>(), 99.9);
  EXPECT_DOUBLE_EQ(j["slowdown"]["p50"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(j["slowdown"]["p999"].get<double>(), 2);  // rank 999 of 1000: only the 200 is above
  EXPECT_DOUBLE_EQ(j["slowdown"]["max"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(j["long_latency_ms"]["p50"].get<double>(), 150);
  EXPECT_EQ(j["short_latency_ms"]["n"], 999);
  EXPECT_FALSE(j.contains("hint_ms"));  // none given
  json empty = summarize_load({}, 1, 50);
  EXPECT_EQ(empty["requests"], 0);
  EXPECT_TRUE(empty["slowdown"]["p999"].is_null());  // no requests: no figure, not a perfect one
}

TEST(Bimodal, MaxLoadAtObjectiveStopsAtTheFirstMiss) {
  json loads = json::array({{{"load", 0.2}, {"requests", 100}, {"slowdown", {{"p999", 3.0}}}, {"unfinished", 0}},
                            {{"load", 0.4}, {"requests", 100}, {"slowdown", {{"p999", 49.0}}}, {"unfinished", 0}},
                            {{"load", 0.6}, {"requests", 100}, {"slowdown", {{"p999", 80.0}}}, {"unfinished", 0}},
                            {{"load", 0.8}, {"requests", 100}, {"slowdown", {{"p999", 10.0}}}, {"unfinished", 0}}});
  EXPECT_DOUBLE_EQ(max_load_at_slo(loads, 50), 0.4);
  loads[1]["unfinished"] = 2;  // a request never served misses whatever its percentile says
  EXPECT_DOUBLE_EQ(max_load_at_slo(loads, 50), 0.2);
  loads[0]["slowdown"]["p999"] = 51.0;
  EXPECT_DOUBLE_EQ(max_load_at_slo(loads, 50), 0.0);
  // A load with no requests met nothing: it ends the sweep.
  json none = json::array({{{"load", 0.2}, {"requests", 0}, {"slowdown", {{"p999", nullptr}}}, {"unfinished", 0}}});
  EXPECT_DOUBLE_EQ(max_load_at_slo(none, 50), 0.0);
}

TEST(Bimodal, OptionsOutOfRangeAreRefused) {
  BimodalOptions ok;
  EXPECT_TRUE(check(ok));
  auto refused = [](auto change) {
    BimodalOptions o;
    change(o);
    auto st = check(o);
    return !st && st.error().kind == ErrorKind::kInvalidArgument;
  };
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.loads = {}; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.loads = {0.5, 0}; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.loads = {-1}; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.loads = {std::nan("")}; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.seconds = 0.1; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.short_ns = 1us; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.long_ns = 500us; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.long_fraction = 1.5; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.workers = 0; }));
  EXPECT_TRUE(refused([](BimodalOptions& o) { o.slo_slowdown = 0.5; }));
  // Far too many requests to hold: refused before any memory is taken.
  EXPECT_TRUE(refused([](BimodalOptions& o) {
    o.loads = {2};
    o.short_ns = o.long_ns = 10us;
    o.seconds = 600;
  }));
}

// Loads are run lowest first whatever order they are given in, each once.
TEST(Bimodal, LoadsRunInAscendingOrder) {
  BimodalOptions o;
  o.loads = {0.2, 0.05, 0.2};
  o.seconds = 0.5;
  o.short_ns = 200us;
  o.long_ns = 1ms;
  o.workers = 4;
  o.cpus = 1;
  o.slo_slowdown = 1e6;
  auto r = run_bimodal(o, {}, {});
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ((*r)["loads"].size(), 2u);
  EXPECT_EQ((*r)["loads"][0]["load"], 0.05);
  EXPECT_EQ((*r)["loads"][1]["load"], 0.2);
  EXPECT_FALSE((*r)["loads"][0].contains("hint_ms"));
}

// A real, short run on this host's scheduler: every request served, the figures coherent, hints given per request.
TEST(Bimodal, ShortRunServesEveryRequest) {
  BimodalOptions o;
  o.loads = {0.1, 0.2};
  o.seconds = 0.5;
  o.short_ns = 200us;
  o.long_ns = 5ms;
  o.long_fraction = 0.05;
  o.workers = 16;
  o.cpus = 1;
  o.slo_slowdown = 1e6;  // a busy host's hiccup must not decide the test: its objective is not what is tested
  std::atomic<int> hints{0};
  std::atomic<bool> bad_hint{false};
  HintFn hint = [&](pid_t tid, std::chrono::nanoseconds ns) -> Status {
    ++hints;
    if (tid <= 0 || (ns != 200us && ns != 5ms)) bad_hint = true;
    return {};
  };
  std::vector<std::string> lines;
  auto r = run_bimodal(o, hint, [&](const std::string& l) { lines.push_back(l); });
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ((*r)["loads"].size(), 2u);
  size_t total = 0;
  for (const auto& l : (*r)["loads"]) {
    EXPECT_EQ(l["unfinished"], 0);
    EXPECT_GT(l["requests"].get<size_t>(), 0u);
    EXPECT_EQ(l["hint_errors"], 0);
    EXPECT_EQ(l["hint_ms"]["n"], l["requests"]);
    EXPECT_GE(l["slowdown"]["p50"].get<double>(), 1.0);  // nothing finishes faster than its CPU time
    EXPECT_LE(l["slowdown"]["p50"].get<double>(), l["slowdown"]["p999"].get<double>());
    total += l["requests"].get<size_t>();
  }
  EXPECT_EQ(static_cast<size_t>(hints.load()), total);
  EXPECT_FALSE(bad_hint);
  EXPECT_EQ(lines.size(), 4u);
  EXPECT_EQ((*r)["hints"], true);
  EXPECT_GT((*r)["max_load_at_slo"].get<double>(), 0);
}

}  // namespace
}  // namespace akts::workload
