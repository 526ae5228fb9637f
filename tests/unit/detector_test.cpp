// The regime detector replayed over synthetic telemetry traces (seeded, so
// deterministic): it enters the latency policy within two periods of a
// burst's onset, leaves after the burst, and does not flap on noise or spikes.
#include "reasoning/detector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
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
    w.waits[AKTS_CLASS_LC] = 10;
    out.push_back(w);
  }
  return out;
}

struct Switch {
  int period;
  uint32_t slot;
};

// The arbiter's part, reduced: what the detector proposes runs from the next window.
ControllerContext context(uint32_t running = 1) {
  ControllerContext ctx;
  ctx.slots = {{0, "latency", "", ""}, {1, "throughput", "", ""}};
  ctx.running = running;
  ctx.objective.limits.front().max_ms = 20;
  return ctx;
}

std::vector<Switch> replay(Detector& d, const std::vector<Window>& t) {
  std::vector<Switch> s;
  auto ctx = context();
  for (size_t i = 0; i < t.size(); ++i)
    if (auto dec = d.decide(t[i], ctx); dec.slot) {
      s.push_back({static_cast<int>(i), *dec.slot});
      ctx.running = *dec.slot;
    }
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
  auto ctx = context();
  Window calm;
  calm.app_requests_processing = 0;
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(d.decide(calm, ctx).slot);
  Window busy;
  busy.app_requests_processing = 8;  // requests arrived before any wait shows in the kernel
  EXPECT_FALSE(d.decide(busy, ctx).slot);  // first period: confirming
  auto dec = d.decide(busy, ctx);
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

TEST(Detector, ProposesNothingWhileLockedAndItsRegimeAfterwards) {
  Detector d;
  auto ctx = context();
  ctx.locked = true;  // an operator holds throughput through a burst
  auto t = trace(4, 10, 40, 0);
  for (const auto& w : t) EXPECT_FALSE(d.decide(w, ctx).slot);
  EXPECT_TRUE(d.in_burst());  // it kept watching
  ctx.locked = false;         // the hold ends mid-burst: back to what the regime wants
  auto dec = d.decide(t.back(), ctx);
  ASSERT_TRUE(dec.slot);
  EXPECT_EQ(*dec.slot, 0u);
  ctx.running = 0;
  EXPECT_FALSE(d.decide(t.back(), ctx).slot);  // what it wants runs: no change
}

TEST(Detector, LcDemandIsASignalTheLatencyPolicyCannotHide) {
  Detector d;
  auto ctx = context();
  Window busy;
  busy.period_s = 0.1;
  busy.cpus = 2;
  busy.run_ms[AKTS_CLASS_LC] = 80;  // 40% of the CPU time, waits all short
  busy.wait_p99_ms[AKTS_CLASS_LC] = 1;
  EXPECT_FALSE(d.decide(busy, ctx).slot);
  auto dec = d.decide(busy, ctx);
  ASSERT_TRUE(dec.slot);
  ctx.running = *dec.slot;
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(d.decide(busy, ctx).slot);  // stays while LC works
}

TEST(Detector, AStarvedLcTaskCountsThoughNoWaitEnded) {
  Detector d;
  auto ctx = context();
  Window starved;
  starved.oldest_wait_ms[AKTS_CLASS_LC] = 150;  // waiting, not yet run: no histogram sample
  EXPECT_FALSE(d.decide(starved, ctx).slot);
  auto dec = d.decide(starved, ctx);
  ASSERT_TRUE(dec.slot);
  EXPECT_EQ(*dec.slot, 0u);
}

TEST(Detector, ABadFigureDoesNotPoisonTheAverage) {
  Detector d;
  auto ctx = context();
  Window w;
  w.app_requests_processing = std::numeric_limits<double>::infinity();
  d.decide(w, ctx);
  w.app_requests_processing = std::nan("");
  d.decide(w, ctx);
  EXPECT_TRUE(std::isfinite(d.smoothed()));
  // Still switches on a real burst afterwards, and leaves after it.
  auto s = replay(d, trace(2, 50, 30, 60));
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(s.back().slot, 1u);
}

}  // namespace
}  // namespace akts
