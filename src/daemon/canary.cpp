// Gate 5: the canary's start, its judgement of each window, its end (passed, or reverted and evicted).
#include "daemon/canary.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "telemetry/window.h"

namespace akts {

using nlohmann::json;

Status Canary::start(uint32_t slot, const std::string& name, PolicyRecord record, std::chrono::milliseconds length,
                     Clock::time_point now) {
  Run c;
  c.slot = slot;
  c.previous = d_.plane.selected();
  c.name = name;
  c.record = std::move(record);
  c.start = now;
  c.end = now + length;
  c.baseline_met = baseline_met();
  // A canary that cannot start takes the new policy out again (under the arbiter's lock: nothing selects it).
  auto refuse = [&](const std::string& why) -> Status {
    auto ev = d_.reasoning.exclusive([&] { return d_.plane.evict(slot); });
    return errorf(ErrorKind::kBusy, "{}", why + (ev ? "; the policy was evicted" : "; it stays loaded: " + ev.error().message));
  };
  auto b0 = d_.plane.read_breaker();
  if (!b0) return refuse("cannot read the circuit breaker: " + b0.error().message);
  if (b0->tripped()) return refuse("the circuit breaker holds its safe slot (a trip's cool-down): try again after it");
  c.trips0 = b0->state.trips;
  c.breaker_before = b0->params;
  // Armed throughout, whatever the configuration says: a canary without the breaker is not one.
  if (!b0->params.armed) {
    BreakerParams armed = b0->params;
    armed.armed = true;
    if (auto st = d_.plane.set_breaker(armed); !st) return refuse("cannot arm the circuit breaker: " + st.error().message);
    c.disarm_after = true;
  }
  if (auto st = d_.reasoning.hold(slot, name, length); !st) {
    if (c.disarm_after) (void)d_.plane.set_breaker(b0->params);
    return refuse("cannot select it: " + st.error().message);
  }
  // The window in flight began under the previous slot: judging starts with the one after it.
  auto latest = d_.reasoning.latest();
  c.last_seq = (latest ? latest->seq : 0) + 1;
  run_ = std::move(c);
  d_.persist();
  return {};
}

void Canary::poll(Clock::time_point now) {
  if (!running()) return;
  Run& c = *run_;
  std::string why;
  // An operator who released the canary's hold and switched: theirs stands, whatever else happened since;
  // the unproven policy goes if it can.
  const bool revert = d_.plane.selected() == c.slot;
  if (!revert)
    why = fmt::format("an operator selected slot {} during the canary", d_.plane.selected());
  else if (auto b = d_.plane.read_breaker(); !b || b->state.trips > c.trips0 || b->tripped())
    why = b ? "the circuit breaker tripped" : "the circuit breaker cannot be read: " + b.error().message;
  const double bound_ms = std::chrono::duration<double, std::milli>(d_.guard_bound).count();
  const Objective objective = d_.reasoning.objective();
  for (const auto& wj : d_.reasoning.windows(50)) {
    auto w = Window::from_json(wj);
    if (!w || w->seq <= c.last_seq || !why.empty()) continue;
    c.last_seq = w->seq;
    ++c.windows;
    if (w->effective_slot != c.slot)
      why = fmt::format("slot {} ran instead (the override)", w->effective_slot);
    else if (w->rescues[AKTS_CLASS_LC] > 0)
      why = fmt::format("the guard had to rescue LC work ({} rescues in a window)", w->rescues[AKTS_CLASS_LC]);
    else if (w->oldest_wait_ms[AKTS_CLASS_LC] > bound_ms / 2)
      why = fmt::format("an LC task waited {:.0f} ms (half the guard's bound is {:.0f} ms)",
                        w->oldest_wait_ms[AKTS_CLASS_LC], bound_ms / 2);
    else if (!objective.met(*w) && c.baseline_met >= 0.8 && ++c.unmet_streak >= 3)
      why = fmt::format("the objective ({}) failed 3 windows in a row; it held in {:.0f}% before",
                        objective.describe(), 100 * c.baseline_met);
    else if (objective.met(*w))
      c.unmet_streak = 0;
  }
  if (why.empty() && now < c.end) return;
  end(why, revert, now);
}

void Canary::plane_reloaded(Clock::time_point now) {
  if (running())
    end("the scheduler was loaded again (a kernel restart or an ejection): the admitted policy is gone", true, now);
}

void Canary::end(const std::string& why, bool revert, Clock::time_point now) {
  Run& c = *run_;
  d_.reasoning.release_hold_on(c.slot);  // the canary's own hold only: an operator's hold or grace stays
  if (c.disarm_after) {
    // As configured again; a trip in progress runs to its end (disarming never ends one).
    if (auto st = d_.plane.set_breaker(c.breaker_before); !st)
      spdlog::warn("the circuit breaker stays armed after the canary: {}", st.error().to_string());
    c.disarm_after = false;
  }
  if (why.empty()) {
    c.state = State::kPassed;
    c.reason = fmt::format("{} windows without degradation", c.windows);
    spdlog::info("canary of {} passed: {}", c.name, c.reason);
    d_.reasoning.note("operator", "canary", fmt::format("the canary of {} passed: {}", c.name, c.reason), {{"slot", c.slot}});
    d_.passed(c.record);
  } else {
    c.state = State::kFailed;
    c.reason = why;
    if (revert) (void)d_.reasoning.operator_switch(c.previous, d_.policy_name(c.previous));
    auto ev = d_.reasoning.exclusive([&] { return d_.plane.evict(c.slot); });
    spdlog::warn("canary of {} failed ({}): {}, {}", c.name, why,
                 revert ? fmt::format("slot {} selected again", c.previous) : std::string("the operator's selection stands"),
                 ev ? "the policy evicted" : "not evicted: " + ev.error().message);
    d_.reasoning.note("operator", "canary",
                      fmt::format("the canary of {} failed: {}; {}", c.name, why,
                                  revert ? fmt::format("reverted to slot {}", c.previous) : std::string("not reverted")),
                      {{"slot", c.slot}, {"previous", c.previous}, {"evicted", static_cast<bool>(ev)}});
  }
  c.ended = now;
  d_.persist();
}

double Canary::baseline_met() const {
  size_t n = 0, met = 0;
  const Objective objective = d_.reasoning.objective();
  for (const auto& wj : d_.reasoning.windows(30))
    if (auto w = Window::from_json(wj)) {
      ++n;
      met += objective.met(*w) ? 1 : 0;
    }
  return n ? static_cast<double>(met) / static_cast<double>(n) : 1.0;
}

const char* Canary::state_name(State s) {
  switch (s) {
    case State::kPassed: return "passed";
    case State::kFailed: return "failed";
    case State::kRunning: break;
  }
  return "running";
}

json Canary::to_json(Clock::time_point now) const {
  if (!run_) return nullptr;
  const Run& c = *run_;
  return {{"state", state_name(c.state)},
          {"reason", c.reason},
          {"slot", c.slot},
          {"previous", c.previous},
          {"windows", c.windows},
          {"baseline_met", c.baseline_met},
          {"elapsed_s", std::chrono::duration<double>((c.state == State::kRunning ? now : c.ended) - c.start).count()},
          {"length_s", std::chrono::duration<double>(c.end - c.start).count()}};
}

}  // namespace akts
