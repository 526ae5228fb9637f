// The regime detector replayed over synthetic telemetry traces (seeded, so
// deterministic): it enters the latency policy within two periods of a
// burst's onset, leaves after the burst, and does not flap on noise or spikes.
#include "reasoning/detector.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace akts {
namespace {

// LC wait p99 per period: calm around 4 ms, a burst around 40 ms (target 20 ms).
std::vector<Window> trace(uint32_t seed, int calm1, int burst, int calm2, double spike_every = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> calm_ms(4.0, 2.0), burst_ms(40.0, 10.0);
  std::vector<Window> out;
  for (int i = 0; i < calm1 + burst + calm2; ++i) {
    Window w;
    w.period_s = 0.1;
    w.t_s = 0.1 * (i + 1);
    bool in_burst = i >= calm1 && i < calm1 + burst;
    double v = in_burst ? burst_ms(rng) : calm_ms(rng);
    if (!in_burst && spike_every > 0 && i % static_cast<int>(spike_every) == 7) v = 45.0;  // a lone spike
    w.wait_p99_ms[AKTS_CLASS_LC] = std::max(0.0, v);
    out.push_back(w);
  }
  return out;
}

struct Switch {
  int period;
  uint32_t slot;
};

std::vector<Switch> replay(Detector& d, const std::vector<Window>& t) {
  std::vector<Switch> s;
  for (size_t i = 0; i < t.size(); ++i)
    if (auto dec = d.decide(t[i]); dec.slot) s.push_back({static_cast<int>(i), *dec.slot});
  return s;
}

TEST(Detector, EntersWithinTwoPeriodsOfABurstAndLeavesAfterIt) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    Detector d;
    auto s = replay(d, trace(seed, 50, 30, 50));
    ASSERT_EQ(s.size(), 2u) << "seed " << seed;
    EXPECT_EQ(s[0].slot, 0u);
    EXPECT_GE(s[0].period, 50) << "seed " << seed;  // not before the onset
    EXPECT_LE(s[0].period, 51) << "seed " << seed;  // within two periods of it
    EXPECT_EQ(s[1].slot, 1u);
    EXPECT_GE(s[1].period, 80) << "seed " << seed;  // only after the burst
    EXPECT_LE(s[1].period, 80 + 20) << "seed " << seed;
  }
}

TEST(Detector, NoFlappingOnNoiseOrLoneSpikes) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    Detector d;
    EXPECT_TRUE(replay(d, trace(seed, 300, 0, 0)).empty()) << "seed " << seed;
    Detector spiky;
    EXPECT_TRUE(replay(spiky, trace(seed, 300, 0, 0, 20)).empty()) << "seed " << seed;
  }
}

TEST(Detector, TheApplicationsInFlightRequestsAreALeadingSignal) {
  Detector d;
  Window calm;
  calm.app_requests_processing = 0;
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(d.decide(calm).slot);
  Window busy;
  busy.app_requests_processing = 8;  // requests arrived before any wait shows in the kernel
  EXPECT_FALSE(d.decide(busy).slot);  // first period: confirming
  auto dec = d.decide(busy);
  ASSERT_TRUE(dec.slot);
  EXPECT_EQ(*dec.slot, 0u);
}

TEST(Detector, AMinimumDwellHoldsARegime) {
  DetectorOptions o;
  o.min_dwell = 10;
  Detector d(o);
  auto s = replay(d, trace(3, 20, 3, 40));  // a burst shorter than the dwell
  ASSERT_EQ(s.size(), 2u);
  EXPECT_GE(s[1].period - s[0].period, 10);
}

}  // namespace
}  // namespace akts
