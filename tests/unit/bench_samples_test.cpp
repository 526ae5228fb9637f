#include "samples.h"

#include <gtest/gtest.h>

namespace akts::bench {
namespace {

TEST(Summarize, NearestRankPercentiles) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);  // unsorted on purpose
  Summary s = summarize(v);
  EXPECT_EQ(s.n, 100u);
  EXPECT_DOUBLE_EQ(s.p50, 50);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
}

TEST(Summarize, EmptyAndSingle) {
  EXPECT_EQ(summarize({}).n, 0u);
  Summary one = summarize({7});
  EXPECT_DOUBLE_EQ(one.p50, 7);
  EXPECT_DOUBLE_EQ(one.p99, 7);
}

TEST(HumanNs, Units) {
  EXPECT_EQ(human_ns(3.5), "3.50 ns");
  EXPECT_EQ(human_ns(920), "920 ns");
  EXPECT_EQ(human_ns(1500), "1.50 us");
  EXPECT_EQ(human_ns(4.5e6), "4.5 ms");
  EXPECT_EQ(human_ns(2.1e9), "2.10 s");
}

}  // namespace
}  // namespace akts::bench
