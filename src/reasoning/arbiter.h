// The arbiter: the one place a selection changes, and the precedence between
// those who may change it. Highest first:
//
//   1. the breaker's override word (BPF owns it; while it is active nothing
//      here can change what runs, and controllers are locked out);
//   2. an operator's hold (`akts hold POLICY --for 30s`): selects the policy
//      and refuses every other switch, an operator's and a hold on another
//      slot included, until it expires or is released;
//   3. an operator's switch (`akts switch`, v1.switch): applies at once and
//      locks controllers out for `operator_grace` (default 30 s), so a
//      controller does not undo a person's decision a period later;
//   4. the controller: applied only if nothing above is in force, the
//      selection has not changed for `min_dwell`, fewer than
//      `max_switches_per_minute` controller switches happened in the last
//      minute, and not in dry-run mode (then it is logged, never applied).
//
// Thread-safe: the socket thread (operators) and the reasoning thread
// (controllers) both come through here; the selection is written under the
// lock, so a hold cannot race a controller's switch. Time is passed in, so
// tests drive it without sleeping.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts {

struct ArbiterOptions {
  std::chrono::milliseconds min_dwell{1000};
  uint32_t max_switches_per_minute = 30;
  std::chrono::milliseconds operator_grace{30000};
  bool dry_run = false;

  bool operator==(const ArbiterOptions&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

class Arbiter {
 public:
  using Clock = std::chrono::steady_clock;
  struct Plane {
    std::function<uint32_t()> selected;
    std::function<void(uint32_t)> select;
    std::function<bool()> override_active;  // the breaker's word
  };
  struct Verdict {
    bool applied = false;
    std::string reason;  // why applied or not, for the decision log
    // The rule that decided, for counters: "applied", "locked" (the breaker, a hold, an operator's grace),
    // "unchanged" (already selected), "min_dwell", "rate_limit", "dry_run".
    std::string kind;
  };
  // Selection changes made through here, by cause (the breaker's override is the kernel's, counted there).
  struct Switches {
    uint64_t operator_ = 0;    // operators' switches and holds (a canary's revert included)
    uint64_t controller = 0;   // controllers' proposals applied
  };

  Arbiter(Plane plane, ArbiterOptions o) : plane_(std::move(plane)), o_(o) {}

  // An operator's switch. Refused while a hold is in force (name the hold). Returns the slot selected before,
  // read under the lock that orders it against every other switch: the one "previous" of this switch.
  Result<uint32_t> operator_switch(uint32_t slot, Clock::time_point now);
  // Holds `slot` until now + duration. While a hold is in force, a hold on
  // another slot is refused (release first); one on the same slot sets a new end.
  Status hold(uint32_t slot, std::chrono::milliseconds duration, Clock::time_point now);
  // Ends a hold (and the operator's grace); false if none was in force.
  bool release(Clock::time_point now);
  // Ends a hold on `slot` only (the canary's own), leaving a hold on another
  // slot and an operator's grace alone. True when there was one.
  bool release_hold_on(uint32_t slot, Clock::time_point now);
  // Runs fn while no selection can change through the arbiter (operators,
  // holds, controllers): replacing or evicting a slot checks that it is not
  // selected and then changes its programs, with no switch in between. fn
  // must not call back into the arbiter.
  Status exclusive(const std::function<Status()>& fn) {
    std::lock_guard lock(mu_);
    return fn();
  }
  // A controller's proposal; `slot` is already checked against the filled slots.
  Verdict controller_proposes(uint32_t slot, Clock::time_point now);
  // True when a controller's proposal could not apply now; `why` says which rule.
  bool locked(Clock::time_point now, std::string* why = nullptr) const;

  void set_dry_run(bool on);
  bool dry_run() const;
  // Its rules from now on (a reload): the dwell and the rate count from the switches already made, and a grace
  // already begun keeps its end.
  void set_options(const ArbiterOptions& o);
  uint32_t selected() const { return plane_.selected(); }
  bool override_active() const { return plane_.override_active && plane_.override_active(); }
  ArbiterOptions options() const;
  // The selection changed without the arbiter (a reload after the kernel ejected the scheduler): its age and the
  // last minute's changes count it, neither cause's counter does.
  void outside_change(uint32_t from, uint32_t to, Clock::time_point now = Clock::now());
  nlohmann::json state(Clock::time_point now) const;
  Switches switches() const;

 private:
  // locked() with mu_ held (the suffix says so, as elsewhere): whether a controller's proposal is refused now.
  bool refused_locked(Clock::time_point now, std::string* why) const;
  // mu_ held; counts a change (from != to) in `counter`.
  void note_change(uint32_t from, uint32_t to, Clock::time_point now, uint64_t& counter);

  Plane plane_;
  mutable std::mutex mu_;
  ArbiterOptions o_;
  std::optional<uint32_t> hold_slot_;
  Clock::time_point hold_until_{};
  Clock::time_point grace_from_{}, grace_until_{};  // an operator's grace (its length may change: set_options)
  std::optional<Clock::time_point> last_change_;
  std::deque<Clock::time_point> controller_switches_;  // within the last minute
  // Selection changes by either cause within the last minute (state()'s switches_last_minute), at most this many.
  static constexpr size_t kRecentChangesMax = 10000;
  mutable std::deque<Clock::time_point> recent_changes_;
  void prune_changes(Clock::time_point now) const;  // mu_ held
  Switches switches_;
};

}  // namespace akts
