// The bandit's context, discounted per-arm ridge regression, UCB choice with a
// switching penalty, and the simulator that drives it with synthetic windows.
#include "reasoning/bandit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace akts {
namespace {

constexpr size_t kD = Bandit::kDim;
// The undiscounted prior precision: on the bias, half an observation's worth
// of optimism; on the context's coefficients, the usual ridge of 1.
constexpr double kRidge[kD] = {0.5, 1, 1, 1, 1};
constexpr double kPrior = 1.0;  // the reward an arm without evidence is estimated at (the top of the range)
constexpr double kTie = 1e-12;

double finite01(double v) { return std::isfinite(v) ? std::clamp(v, 0.0, 1.0) : 0.0; }

// Solves A y = v for the symmetric positive definite A (row-major, kD x kD) by
// Cholesky; A = the diagonal prior precision + a discounted sum of outer
// products, so it always is.
Bandit::Context solve(const std::array<double, kD * kD>& a, const Bandit::Context& v) {
  std::array<double, kD * kD> l{};
  for (size_t i = 0; i < kD; ++i)
    for (size_t j = 0; j <= i; ++j) {
      double s = a[i * kD + j];
      for (size_t k = 0; k < j; ++k) s -= l[i * kD + k] * l[j * kD + k];
      if (i == j)
        l[i * kD + i] = std::sqrt(std::max(s, 1e-12));
      else
        l[i * kD + j] = s / l[j * kD + j];
    }
  Bandit::Context y{}, x{};
  for (size_t i = 0; i < kD; ++i) {  // L y = v
    double s = v[i];
    for (size_t k = 0; k < i; ++k) s -= l[i * kD + k] * y[k];
    y[i] = s / l[i * kD + i];
  }
  for (size_t i = kD; i-- > 0;) {  // L^T x = y
    double s = y[i];
    for (size_t k = i + 1; k < kD; ++k) s -= l[k * kD + i] * x[k];
    x[i] = s / l[i * kD + i];
  }
  return x;
}

double dot(const Bandit::Context& a, const Bandit::Context& b) {
  double s = 0;
  for (size_t i = 0; i < kD; ++i) s += a[i] * b[i];
  return s;
}

std::string slot_text(uint32_t slot) { return slot == AKTS_SLOT_NONE ? "none" : fmt::format("{}", slot); }

}  // namespace

Bandit::Bandit(BanditOptions o) : o_(o), rng_(o.seed) {
  o_.decide_every = std::max<uint32_t>(o_.decide_every, 1);
  since_decision_ = o_.decide_every - 1;  // the first window decides
}

Bandit::Arm Bandit::fresh(const std::string& name) {
  Arm a;
  a.name = name;
  for (size_t i = 0; i < kD; ++i) a.a[i * kD + i] = kRidge[i];
  return a;
}

Bandit::Context Bandit::context(const Window& w, const Objective& obj) {
  Context x{};
  x[0] = 1;
  if (auto p = obj.pressure(w)) x[1] = finite01(std::min(*p, 4.0) / 4);  // the worst limit's observed / max
  x[2] = finite01(w.cpu_pressure);
  x[3] = finite01(w.batch_share());
  if (w.app_requests_processing && std::isfinite(*w.app_requests_processing)) {
    double r = std::max(0.0, *w.app_requests_processing);
    x[4] = r / (r + 4);
  }
  return x;
}

void Bandit::sync_arms(const std::vector<SlotInfo>& slots) {
  for (auto it = arms_.begin(); it != arms_.end();) {
    bool filled = std::any_of(slots.begin(), slots.end(), [&](const SlotInfo& s) { return s.slot == it->first; });
    it = filled ? std::next(it) : arms_.erase(it);
  }
  for (const auto& s : slots) {
    auto it = arms_.find(s.slot);
    if (it == arms_.end())
      arms_.emplace(s.slot, fresh(s.name));
    else if (it->second.name != s.name)
      it->second = fresh(s.name);  // another policy in the slot: what was learnt is about the old one
  }
}

void Bandit::observe(uint32_t slot, const Context& x, double reward) {
  const double g = o_.gamma;
  for (auto& [_, arm] : arms_) {
    for (size_t i = 0; i < kD; ++i)
      for (size_t j = 0; j < kD; ++j) arm.a[i * kD + j] = g * arm.a[i * kD + j] + (i == j ? (1 - g) * kRidge[i] : 0.0);
    for (auto& v : arm.b) v *= g;
    arm.pulls *= g;
  }
  auto it = arms_.find(slot);
  if (it == arms_.end()) return;
  reward = finite01(reward);
  auto& arm = it->second;
  for (size_t i = 0; i < kD; ++i) {
    for (size_t j = 0; j < kD; ++j) arm.a[i * kD + j] += x[i] * x[j];
    arm.b[i] += (reward - kPrior) * x[i];
  }
  arm.pulls += 1;
  ++arm.pulls_total;
  arm.reward_total += reward;
  ++credited_;
  cumulative_reward_ += reward;
}

Bandit::Estimate Bandit::estimate(uint32_t slot, const Context& x) const {
  const auto& arm = arms_.at(slot);
  Context theta = solve(arm.a, arm.b), ainv_x = solve(arm.a, x);
  double mean = kPrior + dot(theta, x);
  return {slot, mean, mean + o_.alpha * std::sqrt(std::max(0.0, dot(x, ainv_x)))};
}

Bandit::Choice Bandit::choose(const Context& x, uint32_t running) {
  Choice c;
  std::vector<Estimate> all;
  for (const auto& [slot, _] : arms_) all.push_back(estimate(slot, x));
  if (all.empty()) return c;
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& e : all) top = std::max(top, e.ucb);
  std::vector<Estimate> ties;
  for (const auto& e : all) {
    if (e.slot == running) c.running = e;
    if (e.ucb >= top - kTie) ties.push_back(e);
  }
  auto runs = std::find_if(ties.begin(), ties.end(), [&](const Estimate& e) { return e.slot == running; });
  if (runs != ties.end())
    c.best = *runs;  // a tie goes to what runs
  else if (ties.size() == 1)
    c.best = ties.front();
  else
    c.best = ties[std::uniform_int_distribution<size_t>(0, ties.size() - 1)(rng_)];
  c.stay = c.running && (c.best->slot == running || c.best->ucb < c.running->ucb + o_.switch_penalty);
  return c;
}

ControllerDecision Bandit::decide(const Window& w, const ControllerContext& ctx) {
  ++windows_;
  sync_arms(ctx.slots);
  Context x = context(w, ctx.objective);
  // What ran in this window earns its reward, in the state it was chosen for.
  if (prev_x_) observe(w.effective_slot, *prev_x_, ctx.objective.reward(w));
  prev_x_ = x;
  last_x_ = x;
  running_ = ctx.running;
  if (++since_decision_ < o_.decide_every)
    return {std::nullopt, fmt::format("learning: next decision in {} windows", o_.decide_every - since_decision_)};
  since_decision_ = 0;

  Choice c = choose(x, ctx.running);
  if (!c.best) return {std::nullopt, "no arms: no filled slot"};
  auto name = [&](uint32_t slot) { return arms_.at(slot).name; };
  std::string best =
      fmt::format("slot {} ({}) UCB {:.3f} (mean {:.3f})", c.best->slot, name(c.best->slot), c.best->ucb, c.best->mean);
  std::string run = c.running ? fmt::format("running slot {} ({}) UCB {:.3f} (mean {:.3f})", c.running->slot,
                                            name(c.running->slot), c.running->ucb, c.running->mean)
                              : fmt::format("running slot {} is no arm", slot_text(ctx.running));
  if (ctx.locked) return {std::nullopt, fmt::format("locked: best {}; {}", best, run)};
  if (c.running && c.best->slot == c.running->slot) return {std::nullopt, fmt::format("stay: best is {}", best)};
  if (c.stay) return {std::nullopt, fmt::format("stay: best {}, not {:g} above the {}", best, o_.switch_penalty, run)};
  return {c.best->slot, fmt::format("pick {}; {}", best, run)};
}

nlohmann::json Bandit::state() const {
  auto arms = nlohmann::json::array();
  double best_avg = -1;
  for (const auto& [slot, arm] : arms_) {
    auto e = estimate(slot, last_x_);
    double avg = arm.pulls_total ? arm.reward_total / static_cast<double>(arm.pulls_total) : 0.0;
    if (arm.pulls_total) best_avg = std::max(best_avg, avg);
    arms.push_back({{"slot", slot},
                    {"name", arm.name},
                    {"mean", e.mean},
                    {"ucb", e.ucb},
                    {"pulls", arm.pulls},
                    {"pulls_total", arm.pulls_total},
                    {"average_reward", avg}});
  }
  // A trace only rewards the arm that ran, so regret is not observable: this
  // estimates it with each arm's average reward as observed.
  double regret = best_avg < 0 ? 0.0 : best_avg * static_cast<double>(credited_) - cumulative_reward_;
  return {{"arms", arms},
          {"context", last_x_},
          {"running", running_ == AKTS_SLOT_NONE ? nlohmann::json(nullptr) : nlohmann::json(running_)},
          {"windows", windows_},
          {"credited_windows", credited_},
          {"cumulative_reward", cumulative_reward_},
          {"regret_vs_best_observed_arm", regret},
          {"alpha", o_.alpha},
          {"gamma", o_.gamma},
          {"switch_penalty", o_.switch_penalty},
          {"decide_every", o_.decide_every}};
}

namespace {

// A window whose objective reward is r (see bandit.h).
Window sim_window(uint32_t step, double r, const Objective& obj) {
  Window w;
  w.seq = step + 1;
  w.period_s = 0.1;
  w.t_s = 0.1 * (step + 1);
  w.cpus = 1;
  if (r >= 0.5) {
    w.run_ms[AKTS_CLASS_BE] = (2 * r - 1) * w.period_s * 1000.0;
  } else {
    w.waits[AKTS_CLASS_LC] = 1;
    w.wait_p99_ms[AKTS_CLASS_LC] = obj.limits.front().max_ms * 0.5 / std::max(r, 1e-6);
  }
  return w;
}

uint32_t argmax(const std::vector<double>& v) {
  return static_cast<uint32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

}  // namespace

BanditSimResult simulate_bandit(const BanditOptions& o, const std::vector<std::vector<double>>& means_by_phase,
                                uint32_t steps_per_phase, double noise_sd, uint64_t seed) {
  BanditSimResult res;
  if (means_by_phase.empty() || means_by_phase[0].empty()) return res;
  const size_t k = means_by_phase[0].size();
  ControllerContext ctx;
  for (uint32_t i = 0; i < k; ++i) ctx.slots.push_back({i, fmt::format("arm{}", i), "", ""});
  ctx.objective = Objective::single(Limit::Signal::kLcWaitP99, 20);

  std::vector<double> total(k, 0.0);
  for (const auto& m : means_by_phase) {
    for (size_t i = 0; i < k; ++i) total[i] += m.at(i);
    res.best_arm_by_phase.push_back(argmax(m));
  }
  res.best_fixed_arm = argmax(total);

  Bandit bandit(o);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, noise_sd);
  ctx.running = static_cast<uint32_t>(rng() % k);
  double reg_fixed = 0, reg_dyn = 0;
  uint32_t step = 0;
  for (uint32_t p = 0; p < means_by_phase.size(); ++p) {
    const auto& m = means_by_phase[p];
    const double best = m[res.best_arm_by_phase[p]];
    uint32_t from = steps_per_phase - steps_per_phase / 4, hits = 0;
    for (uint32_t i = 0; i < steps_per_phase; ++i, ++step) {
      uint32_t arm = ctx.running;
      double r = std::clamp(m[arm] + noise(rng), 0.0, 1.0);
      Window w = sim_window(step, r, ctx.objective);
      w.selected_slot = w.effective_slot = arm;
      reg_fixed += m[res.best_fixed_arm] - m[arm];
      reg_dyn += best - m[arm];
      res.steps.push_back({step, p, arm, ctx.objective.reward(w), reg_fixed, reg_dyn});
      if (i >= from && arm == res.best_arm_by_phase[p]) ++hits;
      if (auto d = bandit.decide(w, ctx); d.slot && *d.slot != ctx.running) {
        ctx.running = *d.slot;
        ++res.switches;
      }
    }
    res.best_share_last_quarter.push_back(steps_per_phase > from ? double(hits) / (steps_per_phase - from) : 0.0);
  }
  return res;
}

}  // namespace akts
