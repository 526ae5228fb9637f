// The breaker watch: notices the circuit breaker's trips and releases (BPF acts alone) and tells the log and the
// decision log.
#pragma once

#include <cstdint>

#include "daemon/plane_control.h"
#include "reasoning/reasoning_plane.h"

namespace akts {

class BreakerWatch {
 public:
  // At every tick. Counts from zero: after the plane is loaded again, a new BreakerWatch.
  void poll(const PlaneControl& plane, ReasoningPlane& reasoning);

 private:
  uint64_t trips_ = 0;
  uint64_t released_ns_ = 0;
};

}  // namespace akts
