// The reasoning plane: the current controller, the arbiter that applies (or
// refuses) what it proposes, the objective, the decision log and the recent
// windows. The daemon feeds it one window per period from its reasoning
// thread and routes operators' switches, holds and releases through it from
// the socket thread. Nothing here needs a kernel: tests drive it with
// recorded windows and a fake selection.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/fd.h"
#include "reasoning/arbiter.h"
#include "reasoning/controller.h"
#include "reasoning/decision_log.h"
#include "reasoning/objective.h"

namespace akts {

// Builds a controller by name ("detector", "bandit", "llm", "oracle") for the
// filled slots; refuses an unknown name or settings that do not fit the slots.
using ControllerFactory =
    std::function<Result<std::unique_ptr<Controller>>(const std::string& name, const std::vector<SlotInfo>& slots)>;

struct ReasoningOptions {
  Objective objective;
  ArbiterOptions arbiter;
  DecisionLogOptions log;
  size_t windows_kept = 600;  // v1.telemetry's history (60 s at 100 ms)
};

class ReasoningPlane {
 public:
  using Clock = Arbiter::Clock;
  ReasoningPlane(ReasoningOptions o, Arbiter::Plane plane, std::function<std::vector<SlotInfo>()> slots,
                 ControllerFactory factory);
  ~ReasoningPlane();
  Status open_log() { return log_.open(); }

  // One period: keeps the window, writes due outcomes, asks the controller,
  // passes its proposal through the arbiter, logs the decision.
  void on_window(const Window& w, Clock::time_point now = Clock::now());

  // "none" stops controlling (the selection stays). Refused (nothing changes)
  // if the factory refuses. Logged with `source` ("operator", "config").
  Status set_controller(const std::string& name, const std::string& source = "operator");
  // Both at once, under one lock, dry run first: `akts controller detector
  // --dry-run` never lets the new controller apply a decision.
  Status configure(const std::optional<std::string>& name, std::optional<bool> dry_run,
                   const std::string& source = "operator");
  std::string controller_name() const;
  void set_dry_run(bool on);

  // A reload's changes (src/daemon/reload.h), logged with `source`. The caller builds what can fail first (a
  // controller with slots(), a log file with DecisionLog::open_file), so that a refused reload changes nothing.
  std::vector<SlotInfo> slots() const { return slots_(); }
  // `controller` (null: none) runs from the next window, and `factory` builds every later one (v1.controller).
  void install_controller(ControllerFactory factory, std::unique_ptr<Controller> controller, const std::string& source);
  ArbiterOptions arbiter_options() const { return arbiter_.options(); }
  // The arbiter's rules, and its dry run (logged when it changes, as set_dry_run).
  void set_arbiter_options(const ArbiterOptions& o, const std::string& source);
  // Every later controller (v1.controller) from `factory`; the running one runs on.
  void set_factory(ControllerFactory factory) { factory_ = std::move(factory); }
  void retarget_log(DecisionLogOptions o, Fd fd) { log_.retarget(std::move(o), std::move(fd)); }

  // Operators (logged with source "operator"). A switch returns the slot selected before it: the value its
  // decision-log record gives as "previous", read once, under the lock that orders it against controllers.
  Result<uint32_t> operator_switch(uint32_t slot, const std::string& policy, Clock::time_point now = Clock::now());
  Status hold(uint32_t slot, const std::string& policy, std::chrono::milliseconds d,
              Clock::time_point now = Clock::now());
  bool release(Clock::time_point now = Clock::now());
  // Ends a hold on `slot` only (Arbiter::release_hold_on), logged when there was one.
  bool release_hold_on(uint32_t slot, Clock::time_point now = Clock::now());
  // Runs fn with every selection through the arbiter held off (Arbiter::exclusive).
  Status exclusive(const std::function<Status()>& fn) { return arbiter_.exclusive(fn); }

  // What the kernel did on its own (the circuit breaker's trips and releases), into the decision log.
  void note(const std::string& source, const std::string& action, const std::string& why,
            const nlohmann::json& extra = nlohmann::json::object());
  // The selection changed without the arbiter (Arbiter::outside_change).
  void outside_change(uint32_t from, uint32_t to) { arbiter_.outside_change(from, to); }

  Objective objective() const;
  // A new objective from now on (logged with `source`, the old and the new):
  // controllers, the bandit's reward and decision outcomes read it at the next window.
  void set_objective(const Objective& objective, const std::string& source = "operator");
  std::optional<Window> latest() const;
  nlohmann::json windows(size_t limit) const;
  nlohmann::json log(size_t limit) const { return log_.recent(limit); }
  // Its "verdicts" count the controller's proposals by the rule that decided them (kVerdictKinds), and its
  // "arbiter"'s "switches" the selection changes by cause.
  nlohmann::json state(Clock::time_point now = Clock::now()) const;
  // Arbiter::Verdict's kinds, and "invalid_output" (an answer that names no filled slot).
  static constexpr const char* kVerdictKinds[] = {"applied",    "invalid_output", "locked", "unchanged",
                                                  "min_dwell", "rate_limit",     "dry_run"};

 private:
  nlohmann::json verdicts_json() const;  // mu_ held
  nlohmann::json summary(const Window& w) const;
  void record(nlohmann::json rec, const std::optional<Window>& at);  // mu_ held
  std::optional<Window> last_window() const;                          // mu_ held
  void set_dry_run_locked(bool on, const std::string& source = "operator");  // mu_ held
  // mu_ held: `next` (null: none) in place of the running controller, which is retired; logged.
  void replace_controller_locked(std::unique_ptr<Controller> next, const std::string& name, const std::string& source,
                                 const std::string& note);

  ReasoningOptions o_;
  Arbiter arbiter_;
  std::function<std::vector<SlotInfo>()> slots_;
  ControllerFactory factory_;  // the loop thread's (set_controller, configure, install_controller)
  DecisionLog log_;

  mutable std::mutex mu_;  // everything below
  std::unique_ptr<Controller> controller_;
  std::vector<std::unique_ptr<Controller>> retired_;  // destroyed on the reasoning thread
  std::deque<Window> windows_;
  struct Pending {
    uint64_t id;
    uint64_t seq;  // the window the decision was made on
  };
  std::vector<Pending> pending_;
  struct Last {
    std::string source;
    std::optional<uint32_t> proposed;
    std::string verdict_kind;
    bool refused_output = false;
  };
  std::optional<Last> last_;
  uint64_t decisions_ = 0, applied_ = 0, refused_outputs_ = 0, suppressed_ = 0;
  std::map<std::string, uint64_t> verdicts_;
};

}  // namespace akts
