#include "telemetry/stats.h"

#include <gtest/gtest.h>

#include <vector>

namespace akts {
namespace {

TEST(Stats, SumsCpusAndDiffs) {
  std::vector<akts_cpu_stats> cpus(3);
  for (size_t i = 0; i < cpus.size(); ++i) {
    cpus[i] = {};
    cpus[i].entries[AKTS_CB_ENQUEUE] = 10 * (i + 1);
    cpus[i].calls[AKTS_CB_ENQUEUE][1] = 10 * (i + 1) - 1;
    cpus[i].fallthrough[AKTS_CB_ENQUEUE] = 1;
    cpus[i].wait_hist[AKTS_CLASS_LC][10] = 2;
  }
  Stats s = Stats::sum(cpus);
  EXPECT_EQ(s.entries[AKTS_CB_ENQUEUE], 60u);
  EXPECT_EQ(s.calls[AKTS_CB_ENQUEUE][1], 57u);
  EXPECT_EQ(s.total_fallthrough(), 3u);
  EXPECT_EQ(s.total_calls(1), 57u);
  EXPECT_EQ(s.total_calls(0), 0u);
  EXPECT_EQ(s.total_calls(99), 0u);
  EXPECT_EQ(s.waits(AKTS_CLASS_LC), 6u);

  Stats later = s;
  later.entries[AKTS_CB_ENQUEUE] += 5;
  later.calls[AKTS_CB_ENQUEUE][1] += 5;
  Stats d = later - s;
  EXPECT_EQ(d.total_entries(), 5u);
  EXPECT_EQ(d.total_calls(1), 5u);
  EXPECT_EQ(d.total_fallthrough(), 0u);
}

TEST(Stats, PercentilesFromLog2Buckets) {
  Stats s;
  EXPECT_FALSE(s.wait_percentile_ns(AKTS_CLASS_BE, 0.5).has_value());
  s.wait_hist[AKTS_CLASS_BE][10] = 98;  // [1024, 2048) ns
  s.wait_hist[AKTS_CLASS_BE][20] = 2;   // [1 Mi, 2 Mi) ns
  double p50 = *s.wait_percentile_ns(AKTS_CLASS_BE, 0.50);
  double p99 = *s.wait_percentile_ns(AKTS_CLASS_BE, 0.99);
  EXPECT_GE(p50, 1024);
  EXPECT_LT(p50, 2048);
  EXPECT_GE(p99, 1 << 20);
  EXPECT_LT(p99, 1 << 21);
  EXPECT_FALSE(s.wait_percentile_ns(AKTS_CLASS_BE, 1.5).has_value());
}

TEST(Stats, JsonNamesEveryCallback) {
  Stats s;
  auto j = s.to_json();
  for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) EXPECT_TRUE(j["callbacks"].contains(std::string(callback_name(cb))));
  EXPECT_TRUE(j["wait"]["lc"]["p50_ns"].is_null());
}

TEST(Stats, JsonRoundTrip) {
  Stats s;
  s.entries[AKTS_CB_RUNNING] = 7;
  s.calls[AKTS_CB_RUNNING][3] = 6;
  s.fallthrough[AKTS_CB_RUNNING] = 1;
  s.wait_hist[AKTS_CLASS_LC][5] = 9;
  auto back = Stats::from_json(s.to_json());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->calls[AKTS_CB_RUNNING][3], 6u);
  EXPECT_EQ(back->waits(AKTS_CLASS_LC), 9u);
  EXPECT_FALSE(Stats::from_json(nlohmann::json::object()).has_value());
  auto j = s.to_json();
  j["callbacks"]["enqueue"]["calls_by_slot"] = {1, 2};
  EXPECT_FALSE(Stats::from_json(j).has_value());
}

TEST(Stats, QuantaSumDiffAndRoundTrip) {
  std::vector<akts_cpu_stats> cpus(2);
  cpus[0] = {};
  cpus[1] = {};
  cpus[0].quantum_ends = 3;
  cpus[0].quantum_hist[12] = 3;  // [4 us, 8 us)
  cpus[0].quantum_overrun_ns = 15000;
  cpus[0].quantum_overrun_max_ns = 7000;
  cpus[1].quantum_ends = 1;
  cpus[1].quantum_hist[21] = 1;  // [2 ms, 4 ms)
  cpus[1].quantum_overrun_ns = 3000000;
  cpus[1].quantum_overrun_max_ns = 3000000;
  cpus[1].quantum_kicks = 5;
  cpus[1].quantum_cut = 2;
  Stats s = Stats::sum(cpus);
  EXPECT_EQ(s.quantum_ends, 4u);
  EXPECT_EQ(s.quantum_kicks, 5u);
  EXPECT_EQ(s.quantum_overrun_max_ns, 3000000u);  // the largest, not a sum
  double p50 = *s.overrun_percentile_ns(0.5);
  EXPECT_GE(p50, 4096);
  EXPECT_LT(p50, 8192);
  EXPECT_GE(*s.overrun_percentile_ns(0.99), 1 << 21);
  auto j = s.to_json();
  EXPECT_EQ(j["quantum"]["ends"], 4);
  EXPECT_DOUBLE_EQ(j["quantum"]["overrun_mean_ns"].get<double>(), 3015000.0 / 4);
  auto back = Stats::from_json(j);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->quantum_hist, s.quantum_hist);
  EXPECT_EQ(back->quantum_overrun_ns, s.quantum_overrun_ns);
  EXPECT_EQ(back->quantum_cut, 2u);
  Stats later = s;
  later.quantum_ends += 2;
  later.quantum_hist[12] += 2;
  later.quantum_kicks += 2;
  Stats d = later - s;
  EXPECT_EQ(d.quantum_ends, 2u);
  EXPECT_EQ(d.quantum_kicks, 2u);
  EXPECT_EQ(d.quantum_hist[12], 2u);
  // A document written before quanta were counted still reads, with none.
  j.erase("quantum");
  auto old = Stats::from_json(j);
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->quantum_ends, 0u);
  EXPECT_TRUE(Stats{}.to_json()["quantum"]["overrun_p50_ns"].is_null());
}

}  // namespace
}  // namespace akts
