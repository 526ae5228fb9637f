// The interface every controller implements: a telemetry window in, a slot
// or "no change" out. The daemon's arbiter (not the controller) enforces the
// minimum dwell, the switch rate limit and the precedence of the breaker's
// override, an operator's hold and an operator's switch; it tells the
// controller what actually runs, so a controller does not fight them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reasoning/objective.h"
#include "telemetry/window.h"

namespace akts {

// What the config and v1.controller accept; "none" leaves the selection to operators.
inline const std::vector<std::string> kControllerNames = {"none", "detector", "bandit", "learner", "llm", "oracle"};

// A filled slot, as controllers (and the llm's prompt) see it.
struct SlotInfo {
  uint32_t slot = 0;
  std::string name;
  std::string summary;
  std::string pick_when;
};

struct ControllerContext {
  std::vector<SlotInfo> slots;  // the filled slots
  uint32_t running = AKTS_SLOT_NONE;  // the effective slot: what runs now, whoever chose it
  // True while the controller's choice cannot apply (a hold, an override, an
  // operator's recent switch): controllers keep learning but propose nothing.
  bool locked = false;
  Objective objective;

  bool filled(uint32_t slot) const {
    for (const auto& s : slots)
      if (s.slot == slot) return true;
    return false;
  }
};

struct ControllerDecision {
  std::optional<uint32_t> slot;  // nullopt: no change
  std::string why;               // for the decision log
  // The controller's raw output where it has one (the llm's answer), and
  // whether that output was refused (malformed, an empty slot, a timeout).
  std::optional<std::string> raw;
  bool refused = false;
  // A slow controller: true when this decision reports an answer (accepted,
  // agreed, discarded or refused), false for the windows in between.
  bool answer = false;
  // Why an output was refused, as a category ("malformed", "empty_slot",
  // "timeout", "http_error"): repeats of one category are counted, not logged.
  std::string refusal;
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string name() const = 0;
  // Called once per window, in order, from one thread. Must not block: a slow
  // controller (the llm) works asynchronously and answers in a later window.
  virtual ControllerDecision decide(const Window& w, const ControllerContext& ctx) = 0;
  // The controller's own state for status and the decision log (optional).
  virtual nlohmann::json state() const { return nlohmann::json::object(); }
};

}  // namespace akts
