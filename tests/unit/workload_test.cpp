// The workload scenarios' arguments and the parsers of their programs' output (recorded from Debian's builds).
#include "workload/scenarios.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace akts::workload {
namespace {

TEST(Workload, Arguments) {
  auto a = parse_args({{"scenario", "hackbench"}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seconds, 5);
  a = parse_args({{"scenario", "wakeup_latency"}, {"seconds", 60}});
  ASSERT_TRUE(a);
  EXPECT_EQ(a->seconds, 60);
  for (const json& bad : {json{{"scenario", "rm -rf /"}}, json{{"scenario", "hackbench"}, {"seconds", 0}},
                          json{{"scenario", "hackbench"}, {"seconds", 61}}, json{{"scenario", "hackbench"}, {"seconds", 1.5}},
                          json{{"scenario", "hackbench"}, {"seconds", "5"}}, json{{"scenario", "hackbench"}, {"argv", "x"}},
                          json{{"seconds", 5}}, json::array(), json{{"scenario", 3}}})
    EXPECT_FALSE(parse_args(bad)) << bad.dump();
}

TEST(Workload, Parsers) {
  auto c = parse_cyclictest(
      "# /dev/cpu_dma_latency set to 0us\nT: 0 ( 1234) P: 0 I:1000 C:   4990 Min:      7 Act:   35 Avg:   61 Max:    9123\n");
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["min"], 7.0);
  EXPECT_EQ((*c)["avg"], 61.0);
  EXPECT_EQ((*c)["max"], 9123.0);
  EXPECT_FALSE(parse_cyclictest("cannot execute cyclictest\n"));
  EXPECT_EQ(parse_stress_ng_bogo_ops_per_s(
                "stress-ng: info:  [310] dispatching hogs: 2 cpu\n"
                "stress-ng: metrc: [310] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s\n"
                "stress-ng: metrc: [310]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)\n"
                "stress-ng: metrc: [310] cpu                1234      5.01      9.80      0.02       246.31         125.66\n"),
            246.31);
  EXPECT_EQ(parse_hackbench_seconds("Running in process mode with 4 groups using 40 file descriptors each (== 160 tasks)\n"
                                    "Each sender will pass 500 messages of 100 bytes\nTime: 3.217\n"),
            3.217);
  EXPECT_EQ(parse_sysbench_events_per_s("CPU speed:\n    events per second:  1523.42\n\nGeneral statistics:\n"), 1523.42);
  EXPECT_FALSE(parse_sysbench_events_per_s("FATAL: unknown option\n"));
}

// cyclictest -q -h N: one row per microsecond up to N, then the footer (rt-tests' print_hist).
std::string histogram_output(const std::vector<std::pair<int, int>>& counts, int rows, int overflows, int max_us) {
  std::string out = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n";
  int total = overflows;
  for (int us = 0; us < rows; ++us) {
    int n = 0;
    for (const auto& [u, c] : counts)
      if (u == us) n = c;
    total += n;
    out += fmt::format("{:06d} {:06d}\n", us, n);
  }
  out += fmt::format("# Total: {:09d}\n# Min Latencies: 00003\n# Avg Latencies: 00061\n# Max Latencies: {:05d}\n"
                     "# Histogram Overflows: {:05d}\n# Histogram Overflow at cycle number:\n# Thread 0:\n",
                     total, max_us, overflows);
  return out;
}

TEST(Workload, CyclictestHistogramGivesPercentiles) {
  // 98 samples at 5 us, 1 at 40, 1 at 900: p50 5, p99 40 (the 99th of 100), max 900.
  auto c = parse_cyclictest(histogram_output({{5, 98}, {40, 1}, {900, 1}}, 1000, 0, 900));
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["p50"], 5.0);
  EXPECT_EQ((*c)["p99"], 40.0);
  EXPECT_EQ((*c)["max"], 900.0);
  EXPECT_EQ((*c)["avg"], 61.0);
  EXPECT_EQ((*c)["samples"], 100u);
  EXPECT_EQ((*c)["overflows"], 0u);
  // Two of 100 past the histogram: the p99 is above its last row, not known: null, never the ceiling.
  c = parse_cyclictest(histogram_output({{5, 98}}, 100, 2, 25000));
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["p50"], 5.0);
  EXPECT_TRUE((*c)["p99"].is_null()) << c->dump();
  EXPECT_EQ((*c)["samples"], 100u);
  // rt-tests 2.x: only the rows with samples, and no "# Total:" line.
  c = parse_cyclictest("# Histogram\n000004 000060\n000007 000039\n012000 000001\n# Min Latencies: 00004\n"
                       "# Avg Latencies: 00125\n# Max Latencies: 12000\n# Histogram Overflows: 00000\n");
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)["p50"], 4.0);
  EXPECT_EQ((*c)["p99"], 7.0);
  EXPECT_EQ((*c)["samples"], 100u);
  // Every sample past the histogram: no row, and the percentiles unknown, but the run's max stands.
  c = parse_cyclictest("# Histogram\n# Min Latencies: 31000\n# Avg Latencies: 32000\n# Max Latencies: 40000\n"
                       "# Histogram Overflows: 00012\n");
  ASSERT_TRUE(c);
  EXPECT_TRUE((*c)["p50"].is_null());
  EXPECT_TRUE((*c)["p99"].is_null());
  EXPECT_EQ((*c)["max"], 40000.0);
  // Cut off before the footer (a killed run): no figures rather than half of them.
  std::string cut = histogram_output({{5, 98}}, 100, 0, 5);
  EXPECT_FALSE(parse_cyclictest(cut.substr(0, cut.find("# Total"))));
}

TEST(Workload, SystemCountersSumEveryCpu) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("akts-proc-{}", ::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "stat") << "cpu  1 2 3\nintr 5 6\nctxt 123456\nbtime 1700000000\n";
  std::ofstream(dir / "interrupts") << "           CPU0       CPU1\n"
                                        "  0:         41          0   IO-APIC    2-edge      timer\n"
                                        "RES:       1500       2500   Rescheduling interrupts\n"
                                        "CAL:         10         20   Function call interrupts\n"
                                        "TLB:          1          2   TLB shootdowns\n"
                                        "IWI:          7          8   IRQ work interrupts\n";
  SystemCounters c = read_system_counters(dir.string());
  EXPECT_EQ(c.context_switches, 123456u);
  EXPECT_EQ(c.resched_ipis, 4000u);
  EXPECT_EQ(c.call_ipis, 30u);
  EXPECT_EQ(c.irq_work, 15u);
  SystemCounters none = read_system_counters((dir / "absent").string());
  EXPECT_EQ(none.context_switches, 0u);
  EXPECT_EQ(none.resched_ipis, 0u);
  std::filesystem::remove_all(dir);
}

TEST(Workload, NestedMetricsFlatten) {
  json m = {{"lc_wakeup_us", {{"min", 6}, {"avg", 61}, {"max", 9123}}}, {"be_bogo_ops_per_s", 246.3}, {"note", "x"}};
  json f = flatten_metrics(m);
  EXPECT_EQ(f, (json{{"lc_wakeup_us.min", 6}, {"lc_wakeup_us.avg", 61}, {"lc_wakeup_us.max", 9123},
                     {"be_bogo_ops_per_s", 246.3}}));
}

}  // namespace
}  // namespace akts::workload
