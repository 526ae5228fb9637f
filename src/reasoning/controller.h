// The interface every controller implements: a telemetry window in, a slot
// or "no change" out. The daemon (not the controller) enforces dwell and rate
// limits and the precedence of overrides, holds and operators.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "telemetry/window.h"

namespace akts {

struct ControllerDecision {
  std::optional<uint32_t> slot;  // nullopt: no change
  std::string why;               // for the decision log
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string name() const = 0;
  virtual ControllerDecision decide(const Window& w) = 0;
};

}  // namespace akts
