// The bandit judged in its simulator (known per-arm reward distributions, 5
// fixed seeds): it settles on the best arm, follows a change of the best arm,
// its regret flattens, the switching penalty damps switching; and its contract
// as a controller: locked, emptied slots, windows of no arm, determinism.
#include "reasoning/bandit.h"

#include <gtest/gtest.h>

#include <vector>

namespace akts {
namespace {

constexpr double kNoise = 0.2;
constexpr uint64_t kSeeds[] = {1, 2, 3, 4, 5};

void expect_best_share(const std::vector<std::vector<double>>& means, uint32_t steps, double min_share) {
  for (uint64_t seed : kSeeds) {
    auto r = simulate_bandit({}, means, steps, kNoise, seed);
    ASSERT_EQ(r.best_share_last_quarter.size(), means.size());
    for (size_t p = 0; p < means.size(); ++p)
      EXPECT_GE(r.best_share_last_quarter[p], min_share) << "seed " << seed << ", phase " << p;
  }
}

TEST(Bandit, PicksTheBestOfThreeArmsInTheLastQuarter) {
  expect_best_share({{0.5, 0.6, 0.5}}, 2000, 0.9);  // the best arm 0.1 above the others, noise sd 0.2
}

TEST(Bandit, PicksTheBestOfTwoAndOfFourArms) {
  expect_best_share({{0.5, 0.6}}, 2000, 0.9);
  expect_best_share({{0.5, 0.5, 0.5, 0.6}}, 2000, 0.9);
}

TEST(Bandit, PicksTheBestArmWhateverTheLevelOfTheRewards) {
  expect_best_share({{0.2, 0.3, 0.2}}, 2000, 0.9);  // optimism does not depend on where the rewards lie
  expect_best_share({{0.9, 0.8, 0.8}}, 2000, 0.9);
}

TEST(Bandit, FollowsAMidRunChangeOfTheBestArm) {
  // Phase 1: arm 0 is best; phase 2: arm 0 drops and arm 2 is best.
  expect_best_share({{0.6, 0.5, 0.5}, {0.5, 0.5, 0.6}}, 2000, 0.9);
}

TEST(Bandit, RegretFlattens) {
  const double gap = 0.1;
  const uint32_t steps = 2000, quarter = steps / 4;
  for (uint64_t seed : kSeeds) {
    auto r = simulate_bandit({}, {{0.6, 0.5, 0.5}}, steps, kNoise, seed);
    ASSERT_EQ(r.steps.size(), steps);
    double first = r.steps[quarter - 1].regret_vs_best_fixed;
    double last = r.steps.back().regret_vs_best_fixed - r.steps[steps - quarter - 1].regret_vs_best_fixed;
    EXPECT_LT(last, 0.25 * gap * quarter) << "seed " << seed;
    EXPECT_LE(last, first) << "seed " << seed;  // it learnt: the last quarter costs no more than the first
    // Stationary: the dynamic oracle is the best fixed arm.
    EXPECT_DOUBLE_EQ(r.regret_vs_best_fixed(), r.regret_vs_dynamic_oracle());
  }
}

TEST(Bandit, TheSimulatorsRewardReachesTheBanditThroughTheObjective) {
  auto r = simulate_bandit({}, {{0.7, 0.3}}, 2000, kNoise, 1);
  double sum[2] = {0, 0};
  int n[2] = {0, 0};
  for (const auto& s : r.steps) {
    ASSERT_GE(s.reward, 0.0);
    ASSERT_LE(s.reward, 1.0);
    sum[s.arm] += s.reward;
    ++n[s.arm];
  }
  ASSERT_GT(n[0], 1000);
  EXPECT_NEAR(sum[0] / n[0], 0.7, 0.03);
  EXPECT_EQ(r.best_fixed_arm, 0u);
}

TEST(Bandit, TheSwitchingPenaltyReducesSwitches) {
  BanditOptions none;
  none.switch_penalty = 0;
  for (uint64_t seed : kSeeds) {
    auto with = simulate_bandit({}, {{0.5, 0.52}}, 2000, kNoise, seed);
    auto without = simulate_bandit(none, {{0.5, 0.52}}, 2000, kNoise, seed);
    EXPECT_LT(with.switches, without.switches) << "seed " << seed;
  }
}

TEST(Bandit, IsDeterministicForASeed) {
  BanditOptions o;
  o.seed = 7;
  auto a = simulate_bandit(o, {{0.6, 0.5, 0.5}, {0.5, 0.5, 0.6}}, 500, kNoise, 3);
  auto b = simulate_bandit(o, {{0.6, 0.5, 0.5}, {0.5, 0.5, 0.6}}, 500, kNoise, 3);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    ASSERT_EQ(a.steps[i].arm, b.steps[i].arm) << "step " << i;
    ASSERT_EQ(a.steps[i].reward, b.steps[i].reward) << "step " << i;
  }
  EXPECT_EQ(a.switches, b.switches);
}

// A window whose objective reward (max 20 ms) is r, run by `slot`.
Window window(uint32_t slot, double r) {
  Window w;
  w.period_s = 0.1;
  w.cpus = 1;
  w.effective_slot = w.selected_slot = slot;
  if (r >= 0.5) {
    w.run_ms[AKTS_CLASS_BE] = (2 * r - 1) * 100;
  } else {
    w.waits[AKTS_CLASS_LC] = 1;
    w.wait_p99_ms[AKTS_CLASS_LC] = 20 * 0.5 / r;
  }
  return w;
}

ControllerContext context(uint32_t running) {
  ControllerContext ctx;
  ctx.slots = {{0, "latency", "", ""}, {1, "throughput", "", ""}, {2, "fair", "", ""}};
  ctx.running = running;
  ctx.objective.limits.front().max_ms = 20;
  return ctx;
}

const nlohmann::json* arm(const nlohmann::json& state, uint32_t slot) {
  for (const auto& a : state["arms"])
    if (a["slot"] == slot) return &a;
  return nullptr;
}

TEST(Bandit, LearnsButProposesNothingWhileLocked) {
  Bandit b;
  auto ctx = context(0);
  ctx.locked = true;  // slot 0 runs under a hold, and does badly
  for (int i = 0; i < 50; ++i) {
    auto d = b.decide(window(0, 0.1), ctx);
    EXPECT_FALSE(d.slot);
    EXPECT_NE(d.why.find("locked"), std::string::npos) << d.why;
  }
  auto s = b.state();
  EXPECT_EQ(s["credited_windows"], 49);  // the first window has no previous context to pair with
  EXPECT_EQ((*arm(s, 0))["pulls_total"], 49);
  EXPECT_LT((*arm(s, 0))["mean"].get<double>(), 0.2);
  ctx.locked = false;  // the hold ends: it leaves the arm it learnt is bad
  auto d = b.decide(window(0, 0.1), ctx);
  ASSERT_TRUE(d.slot);
  EXPECT_NE(*d.slot, 0u);
}

TEST(Bandit, NoChangeWhenTheChosenArmRuns) {
  Bandit b;
  auto ctx = context(1);
  for (int i = 0; i < 300; ++i) {
    auto d = b.decide(window(ctx.running, ctx.running == 1 ? 0.9 : 0.2), ctx);
    if (d.slot) {
      EXPECT_NE(*d.slot, ctx.running);  // a proposal is always a change
      ctx.running = *d.slot;
    }
  }
  EXPECT_EQ(ctx.running, 1u);
  EXPECT_FALSE(b.decide(window(1, 0.9), ctx).slot);
}

TEST(Bandit, AnEmptiedSlotIsNeverProposedAndANewOneIsTried) {
  Bandit b;
  auto ctx = context(1);
  auto reward = [](uint32_t slot) { return slot == 1 ? 0.9 : slot == 5 ? 0.95 : 0.4; };
  for (int i = 0; i < 200; ++i)
    if (auto d = b.decide(window(ctx.running, reward(ctx.running)), ctx); d.slot) ctx.running = *d.slot;
  EXPECT_EQ(ctx.running, 1u);
  // Slot 1 is emptied: the built-in default runs until the bandit picks another.
  ctx.slots.erase(ctx.slots.begin() + 1);
  ctx.running = AKTS_SLOT_NONE;
  for (int i = 0; i < 300; ++i) {
    auto d = b.decide(window(ctx.running, ctx.running == AKTS_SLOT_NONE ? 0.9 : reward(ctx.running)), ctx);
    if (d.slot) {
      EXPECT_NE(*d.slot, 1u);
      ctx.running = *d.slot;
    }
  }
  EXPECT_FALSE(b.is_arm(1));
  EXPECT_EQ(arm(b.state(), 1), nullptr);
  // A policy lands in slot 5: it is tried, and kept since it is better.
  ctx.slots.push_back({5, "new", "", ""});
  for (int i = 0; i < 300; ++i)
    if (auto d = b.decide(window(ctx.running, reward(ctx.running)), ctx); d.slot) ctx.running = *d.slot;
  EXPECT_EQ(ctx.running, 5u);
}

TEST(Bandit, AWindowOfNoArmCreditsNothing) {
  Bandit b;
  auto ctx = context(0);
  for (int i = 0; i < 10; ++i) b.decide(window(0, 0.8), ctx);
  auto before = b.state();
  b.decide(window(AKTS_SLOT_NONE, 0.8), ctx);  // the built-in default ran
  b.decide(window(7, 0.8), ctx);               // a slot that is no arm
  auto after = b.state();
  EXPECT_EQ(after["credited_windows"], before["credited_windows"]);
  EXPECT_EQ(after["cumulative_reward"], before["cumulative_reward"]);
  for (uint32_t slot : {0u, 1u, 2u}) EXPECT_EQ((*arm(after, slot))["pulls_total"], (*arm(before, slot))["pulls_total"]);
  EXPECT_LT((*arm(after, 0))["pulls"].get<double>(), (*arm(before, 0))["pulls"].get<double>());  // it fades
  EXPECT_EQ(after["windows"], 12);
}

TEST(Bandit, CreditsTheArmThatRanWithThePreviousWindowsContext) {
  Bandit b;
  auto ctx = context(2);
  Window first = window(2, 0.8);
  first.cpu_pressure = 0.5;  // the context the next window's reward is paired with
  b.decide(first, ctx);
  b.decide(window(2, 0.3), ctx);
  auto s = b.state();
  EXPECT_EQ((*arm(s, 2))["pulls_total"], 1);
  EXPECT_DOUBLE_EQ(s["cumulative_reward"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(s["context"][2].get<double>(), 0.0);  // the state shows the latest window's context
  // What was learnt is about the context of the first window.
  Bandit::Context x{1, 0, 0.5, 0.6, 0};
  Bandit::Context y{1, 0, 0, 0.6, 0};
  EXPECT_LT(b.estimate(2, x).mean, b.estimate(2, y).mean);
}

TEST(Bandit, DecidesEveryNWindows) {
  BanditOptions o;
  o.decide_every = 5;
  Bandit b(o);
  auto ctx = context(0);
  int proposals = 0;
  for (int i = 0; i < 100; ++i)
    if (auto d = b.decide(window(0, 0.1), ctx); d.slot) {
      EXPECT_EQ(i % 5, 0) << "window " << i;
      ++proposals;
    }
  EXPECT_GT(proposals, 0);
}

TEST(Bandit, TheContextIsSmallAndBounded) {
  Objective obj;
  obj.limits.front().max_ms = 20;
  Window w;
  w.period_s = 0.1;
  w.cpus = 2;
  w.wait_p99_ms[AKTS_CLASS_LC] = 200;  // 10x the objective: capped at 4x
  w.cpu_pressure = 0.3;
  w.run_ms[AKTS_CLASS_BE] = 100;  // half of 2 CPUs for 100 ms
  w.app_requests_processing = 4;
  auto x = Bandit::context(w, obj);
  EXPECT_EQ(x, (Bandit::Context{1, 1, 0.3, 0.5, 0.5}));
  EXPECT_EQ(Bandit::context(Window{}, obj), (Bandit::Context{1, 0, 0, 0, 0}));
}

}  // namespace
}  // namespace akts
