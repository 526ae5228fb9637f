// The regime detector: a controller that watches leading signals of
// latency-critical load (LC wait p99 and the oldest LC waiter against the
// objective, the application's in-flight requests), smooths them with an
// asymmetric EWMA (quick up, slow down, as scx_lavd does) and switches with
// hysteresis, a confirmation period and a minimum dwell, so steady noise and a
// lone spike do not make it flap.
#pragma once

#include <cstdint>

#include "reasoning/controller.h"

namespace akts {

struct DetectorOptions {
  uint32_t burst_slot = 0;             // the latency policy
  uint32_t calm_slot = 1;              // the throughput policy
  double lc_wait_p99_target_ms = 20;   // the objective: LC wait p99 at most this
  double app_busy_requests = 1;        // in-flight requests at which the application counts as busy
  double alpha_up = 0.8, alpha_down = 0.15;
  double enter = 1.0, leave = 0.4;     // on the smoothed signal (1.0 = at the objective)
  uint32_t confirm = 2;                // consecutive periods of the raw signal above `enter` to switch in
  uint32_t min_dwell = 5;              // periods in a regime before leaving it
};

class Detector : public Controller {
 public:
  explicit Detector(DetectorOptions o = {}) : o_(o) {}
  std::string name() const override { return "detector"; }
  ControllerDecision decide(const Window& w) override;
  // The raw signal of a window: 1.0 means LC work is at the objective.
  double signal(const Window& w) const;
  double smoothed() const { return ewma_; }
  bool in_burst() const { return burst_; }

 private:
  DetectorOptions o_;
  double ewma_ = 0;
  bool started_ = false, burst_ = false;
  uint32_t above_ = 0, dwell_ = 0;
};

}  // namespace akts
