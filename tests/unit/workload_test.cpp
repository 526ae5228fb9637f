// The workload scenarios' arguments and the parsers of their programs' output (recorded from Debian's builds).
#include "workload/scenarios.h"

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

TEST(Workload, NestedMetricsFlatten) {
  json m = {{"lc_wakeup_us", {{"min", 6}, {"avg", 61}, {"max", 9123}}}, {"be_bogo_ops_per_s", 246.3}, {"note", "x"}};
  json f = flatten_metrics(m);
  EXPECT_EQ(f, (json{{"lc_wakeup_us.min", 6}, {"lc_wakeup_us.avg", 61}, {"lc_wakeup_us.max", 9123},
                     {"be_bogo_ops_per_s", 246.3}}));
}

}  // namespace
}  // namespace akts::workload
