// The bandit controller: a discounted LinUCB over the policy library, rewarded
// by the objective, and a simulator with known per-arm reward distributions
// that drives it through the same decide() path as the daemon (tests, bench).
//
// Arms are the filled slots, keyed by slot (a slot that empties drops its arm;
// one refilled with another policy starts afresh). Each window credits
// objective.reward(w) to the arm that ran in it (w.effective_slot), paired with
// the context of the previous window, the one the decision was made on; a
// window whose effective slot is no arm (the built-in default) credits nothing.
// Every window discounts every arm's statistics by gamma (D-LinUCB, Russac et
// al. 2019), so old evidence fades, an arm not run for a while regains its
// exploration bonus and a change of the best arm is followed.
//
// The context (d = 5, each in [0, 1]), from the window just observed:
//   x0  1                                     (bias: the arm's mean reward)
//   x1  min(observed / objective max, 4) / 4  (0 when there is no sample)
//   x2  host CPU pressure
//   x3  batch CPU share
//   x4  application requests in flight r, as r / (r + 4)  (0 when not scraped)
// Each arm's model is ridge regression on reward - 1 with a prior precision
// P = diag(0.5, 1, 1, 1, 1) kept undiscounted: an arm with no evidence, or
// whose evidence has faded, is estimated at 1, the top of the reward's range,
// so it is tried (again) whatever the level of the rewards; that optimism
// weighs as much as half a window's evidence.
//   A = gamma * (A - P) + P + x x^T,  b = gamma * b + (reward - 1) x,
//   mean(x) = 1 + x . A^-1 b,  UCB(x) = mean(x) + alpha * sqrt(x . A^-1 x).
// It proposes the arm with the highest UCB, but an arm other than the one
// running only when its UCB beats the running arm's by switch_penalty.
//
// The defaults were tuned in the simulator below (3 and 4 arms, the best mean
// 0.1 above the others at levels 0.2 to 0.9, noise sd 0.2, and a change of the
// best arm): a memory of ~500 windows is long enough to tell arms 0.1 apart
// through that noise with a few percent of windows spent exploring, and short
// enough to follow a change within a few hundred windows.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "reasoning/controller.h"

namespace akts {

struct BanditOptions {
  double alpha = 0.05;           // exploration: weight of the confidence width in the UCB
  double gamma = 0.998;          // per-window discount of every arm's evidence (memory of ~1/(1-gamma) windows)
  double switch_penalty = 0.02;  // UCB margin a new arm needs over the running one
  uint64_t seed = 1;             // tie-breaks between arms of equal UCB
  uint32_t decide_every = 1;     // windows between decisions (learning happens every window)

  bool operator==(const BanditOptions&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

class Bandit : public Controller {
 public:
  static constexpr size_t kDim = 5;
  using Context = std::array<double, kDim>;

  struct Estimate {
    uint32_t slot = AKTS_SLOT_NONE;
    double mean = 0, ucb = 0;
  };
  struct Choice {
    std::optional<Estimate> best;     // nullopt: no arms
    std::optional<Estimate> running;  // nullopt: what runs is no arm
    bool stay = true;                 // the best arm runs, or does not beat the running one by the penalty
  };

  explicit Bandit(BanditOptions o = {});
  std::string name() const override { return "bandit"; }
  ControllerDecision decide(const Window& w, const ControllerContext& ctx) override;
  nlohmann::json state() const override;

  // The pieces decide() is made of, in its order.
  static Context context(const Window& w, const Objective& obj);
  // Adds an arm per new slot, resets one whose policy changed, drops the emptied.
  void sync_arms(const std::vector<SlotInfo>& slots);
  // One window: discounts every arm, then credits `reward` at context x to the
  // arm of `slot` (nothing when it is no arm).
  void observe(uint32_t slot, const Context& x, double reward);
  Estimate estimate(uint32_t slot, const Context& x) const;  // slot must be an arm
  Choice choose(const Context& x, uint32_t running);         // draws tie-breaks

  bool is_arm(uint32_t slot) const { return arms_.count(slot) != 0; }
  double cumulative_reward() const { return cumulative_reward_; }

 private:
  struct Arm {
    std::string name;
    std::array<double, kDim * kDim> a{};  // row-major
    Context b{};
    double pulls = 0;  // discounted
    uint64_t pulls_total = 0;
    double reward_total = 0;  // undiscounted, for the regret estimate
  };
  static Arm fresh(const std::string& name);

  BanditOptions o_;
  std::mt19937_64 rng_;
  std::map<uint32_t, Arm> arms_;
  std::optional<Context> prev_x_;  // the context of the previous window
  Context last_x_{};
  uint32_t running_ = AKTS_SLOT_NONE;
  uint32_t since_decision_ = 0;
  uint64_t windows_ = 0, credited_ = 0;
  double cumulative_reward_ = 0;
};

// The simulator: arm i is slot i, with a fixed mean reward per phase; each
// window's reward is the running arm's mean + N(0, noise_sd), clamped to
// [0, 1], and reaches the bandit as a synthetic Window whose objective reward
// is that value (no LC sample and a batch share of 2r - 1 above 0.5, an LC wait
// p99 of max * 0.5 / r below), so it goes through decide() like the daemon's.
// The simulator is the arbiter: a proposed arm runs from the next window. The
// first window runs an arm drawn from the seed.
struct BanditSimStep {
  uint32_t step = 0, phase = 0;
  uint32_t arm = 0;   // the arm that ran in this window (what the previous decision chose)
  double reward = 0;  // what the bandit was credited: the objective's reward of the window
  // Cumulative pseudo-regret (expected rewards, from the arms' means) up to and
  // including this step: against the one arm with the best mean over the whole
  // run, and against the best arm of each step's phase.
  double regret_vs_best_fixed = 0, regret_vs_dynamic_oracle = 0;
};

struct BanditSimResult {
  std::vector<BanditSimStep> steps;
  uint32_t best_fixed_arm = 0;  // the best fixed arm in hindsight
  std::vector<uint32_t> best_arm_by_phase;
  std::vector<double> best_share_last_quarter;  // per phase: share of its last quarter's steps that ran its best arm
  uint32_t switches = 0;                        // changes of the running arm
  double regret_vs_best_fixed() const { return steps.empty() ? 0 : steps.back().regret_vs_best_fixed; }
  double regret_vs_dynamic_oracle() const { return steps.empty() ? 0 : steps.back().regret_vs_dynamic_oracle; }
};

// means_by_phase[p][i]: arm i's mean reward in phase p (every phase names every arm).
BanditSimResult simulate_bandit(const BanditOptions& o, const std::vector<std::vector<double>>& means_by_phase,
                                uint32_t steps_per_phase, double noise_sd, uint64_t seed);

}  // namespace akts
