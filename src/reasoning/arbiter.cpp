// The arbiter's precedence rules (see arbiter.h).
#include "reasoning/arbiter.h"

#include <fmt/format.h>

namespace akts {
namespace {

double seconds(Arbiter::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

bool Arbiter::refused_locked(Clock::time_point now, std::string* why) const {
  auto say = [&](std::string s) {
    if (why) *why = std::move(s);
    return true;
  };
  if (plane_.override_active && plane_.override_active()) return say("the breaker's override is in force");
  if (hold_slot_ && now < hold_until_)
    return say(fmt::format("held at slot {} for {:.1f} s more", *hold_slot_, seconds(hold_until_ - now)));
  if (now < grace_until_)
    return say(fmt::format("an operator switched {:.1f} s ago; controllers wait {:.1f} s more",
                           seconds(now - grace_from_), seconds(grace_until_ - now)));
  return false;
}

bool Arbiter::locked(Clock::time_point now, std::string* why) const {
  std::lock_guard lock(mu_);
  return refused_locked(now, why);
}

void Arbiter::note_change(uint32_t from, uint32_t to, Clock::time_point now, uint64_t& counter) {
  if (from == to) return;
  last_change_ = now;
  ++counter;
  prune_changes(now);
  if (recent_changes_.size() < kRecentChangesMax) recent_changes_.push_back(now);
}

void Arbiter::outside_change(uint32_t from, uint32_t to, Clock::time_point now) {
  std::lock_guard lock(mu_);
  uint64_t uncounted = 0;
  note_change(from, to, now, uncounted);
}

void Arbiter::prune_changes(Clock::time_point now) const {
  while (!recent_changes_.empty() && now - recent_changes_.front() >= std::chrono::minutes(1))
    recent_changes_.pop_front();
}

Result<uint32_t> Arbiter::operator_switch(uint32_t slot, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (hold_slot_ && now < hold_until_ && slot != *hold_slot_)
    return errorf(ErrorKind::kInvalidArgument,
                  "slot {} is held for {:.1f} s more (akts release ends the hold); nothing changed", *hold_slot_,
                  seconds(hold_until_ - now));
  uint32_t prev = plane_.selected();
  plane_.select(slot);
  note_change(prev, slot, now, switches_.operator_);
  grace_from_ = now;
  grace_until_ = now + o_.operator_grace;
  return prev;
}

Status Arbiter::hold(uint32_t slot, std::chrono::milliseconds duration, Clock::time_point now) {
  if (duration <= std::chrono::milliseconds(0))
    return make_error(ErrorKind::kInvalidArgument, "a hold needs a positive duration");
  std::lock_guard lock(mu_);
  if (hold_slot_ && now < hold_until_ && slot != *hold_slot_)
    return errorf(ErrorKind::kInvalidArgument,
                  "slot {} is held for {:.1f} s more; akts release ends that hold first; nothing changed", *hold_slot_,
                  seconds(hold_until_ - now));
  uint32_t prev = plane_.selected();
  plane_.select(slot);
  note_change(prev, slot, now, switches_.operator_);
  hold_slot_ = slot;
  hold_until_ = now + duration;
  return {};
}

bool Arbiter::release(Clock::time_point now) {
  std::lock_guard lock(mu_);
  bool was = (hold_slot_ && now < hold_until_) || now < grace_until_;
  hold_slot_.reset();
  grace_until_ = {};
  return was;
}

bool Arbiter::release_hold_on(uint32_t slot, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (!hold_slot_ || *hold_slot_ != slot) return false;
  bool was = now < hold_until_;
  hold_slot_.reset();
  return was;
}

Arbiter::Verdict Arbiter::controller_proposes(uint32_t slot, Clock::time_point now) {
  std::lock_guard lock(mu_);
  std::string why;
  if (refused_locked(now, &why)) return {false, why, "locked"};
  uint32_t prev = plane_.selected();
  if (prev == slot) return {false, "already selected", "unchanged"};
  if (last_change_ && now - *last_change_ < o_.min_dwell)
    return {false,
            fmt::format("minimum dwell: the selection changed {:.2f} s ago (min {:.2f} s)",
                        seconds(now - *last_change_), seconds(o_.min_dwell)),
            "min_dwell"};
  while (!controller_switches_.empty() && now - controller_switches_.front() >= std::chrono::minutes(1))
    controller_switches_.pop_front();
  if (controller_switches_.size() >= o_.max_switches_per_minute)
    return {false,
            fmt::format("rate limit: {} controller switches in the last minute (max {})", controller_switches_.size(),
                        o_.max_switches_per_minute),
            "rate_limit"};
  if (o_.dry_run) return {false, "dry run: logged, not applied", "dry_run"};
  plane_.select(slot);
  note_change(prev, slot, now, switches_.controller);
  controller_switches_.push_back(now);
  return {true, fmt::format("applied: slot {} -> {}", prev, slot), "applied"};
}

Arbiter::Switches Arbiter::switches() const {
  std::lock_guard lock(mu_);
  return switches_;
}

void Arbiter::set_dry_run(bool on) {
  std::lock_guard lock(mu_);
  o_.dry_run = on;
}

void Arbiter::set_options(const ArbiterOptions& o) {
  std::lock_guard lock(mu_);
  o_ = o;
}

bool Arbiter::dry_run() const {
  std::lock_guard lock(mu_);
  return o_.dry_run;
}

ArbiterOptions Arbiter::options() const {
  std::lock_guard lock(mu_);
  return o_;
}

nlohmann::json Arbiter::state(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  std::string why;
  bool is_locked = refused_locked(now, &why);
  nlohmann::json hold = nullptr;
  if (hold_slot_ && now < hold_until_) hold = {{"slot", *hold_slot_}, {"remaining_s", seconds(hold_until_ - now)}};
  prune_changes(now);
  return {{"locked", is_locked},
          {"locked_because", is_locked ? nlohmann::json(why) : nlohmann::json(nullptr)},
          {"hold", hold},
          {"operator_grace_remaining_s", now < grace_until_ ? seconds(grace_until_ - now) : 0.0},
          {"dry_run", o_.dry_run},
          {"min_dwell_s", seconds(o_.min_dwell)},
          {"max_switches_per_minute", o_.max_switches_per_minute},
          {"operator_grace_s", seconds(o_.operator_grace)},
          {"switches", {{"operator", switches_.operator_}, {"controller", switches_.controller}}},
          // Changes of the selection by either cause in the last minute (at most kRecentChangesMax), and how long
          // ago the last one was (null: none since the daemon started).
          {"switches_last_minute", recent_changes_.size()},
          {"selection_changed_ago_s",
           last_change_ ? nlohmann::json(std::max(0.0, seconds(now - *last_change_))) : nlohmann::json(nullptr)}};
}

}  // namespace akts
