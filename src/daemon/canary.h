// Admission's gate 5, the canary: a newly admitted policy held selected for a while, the circuit breaker armed,
// each telemetry window judged, and reverted (the previous slot selected again, the policy evicted) at the first
// sign of harm. One canary at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "daemon/plane_control.h"
#include "reasoning/reasoning_plane.h"
#include "repository/policy_repository.h"

namespace akts {

class Canary {
 public:
  using Clock = std::chrono::steady_clock;
  struct Deps {
    PlaneControl& plane;
    ReasoningPlane& reasoning;
    std::chrono::nanoseconds guard_bound;              // the guard's max_wait: an LC wait past half of it reverts
    std::function<void()> persist;                     // the state file, after the canary selects or reverts
    std::function<void(const PolicyRecord&)> passed;   // the record of a policy whose canary passed
    std::function<std::string(uint32_t)> policy_name;  // the policy in a slot ("" when none)
  };
  explicit Canary(Deps d) : d_(std::move(d)) {}

  bool running() const { return run_ && run_->state == State::kRunning; }
  std::string name() const { return run_ ? run_->name : ""; }
  Clock::duration remaining(Clock::time_point now) const { return run_ ? run_->end - now : Clock::duration{}; }

  // Starts the canary of `name`, just loaded into `slot`: arms the breaker for its length (if the configuration
  // had it disarmed) and holds `slot` selected. Refused, with the policy evicted again, when the breaker cannot
  // be read, is in a trip's cool-down or cannot be armed, or the slot cannot be held; the error says which and
  // whether the eviction worked. A refusal keeps the last canary's report.
  Status start(uint32_t slot, const std::string& name, PolicyRecord record, std::chrono::milliseconds length,
               Clock::time_point now = Clock::now());
  // At every tick: judges each telemetry window since the last poll. Reverted when an operator selected another
  // slot (theirs stands; the policy is evicted), the breaker tripped or overrode it, the guard had to rescue LC
  // work, an LC task waited past half the guard's bound, or the objective failed three windows in a row although
  // it held in 80% of the windows before the canary. Passed (the record kept) when its length ran out first.
  void poll(Clock::time_point now = Clock::now());
  // The plane was loaded again (a kernel restart or an ejection): the admitted policy went with the old programs,
  // so a running canary fails and the slot it replaced is selected again.
  void plane_reloaded(Clock::time_point now = Clock::now());
  // The last canary's report; null when none ran.
  nlohmann::json to_json(Clock::time_point now = Clock::now()) const;

 private:
  enum class State { kRunning, kPassed, kFailed };
  static const char* state_name(State s);
  struct Run {
    uint32_t slot = 0, previous = 0;
    std::string name;
    PolicyRecord record;
    Clock::time_point start, end, ended;
    double baseline_met = 1;       // the objective's share of met windows before the canary
    uint64_t last_seq = 0;         // windows up to this one are not the canary's
    uint64_t trips0 = 0;           // the breaker's trips when it began
    BreakerParams breaker_before;  // its settings then, put back after when the canary armed it
    bool disarm_after = false;     // the configuration had the breaker disarmed: the canary armed it
    size_t windows = 0, unmet_streak = 0;
    State state = State::kRunning;
    std::string reason;
  };
  double baseline_met() const;
  void end(const std::string& why, bool revert, Clock::time_point now);

  Deps d_;
  std::optional<Run> run_;
};

}  // namespace akts
