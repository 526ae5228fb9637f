// The regime detector: a controller that watches leading signals of
// latency-critical load (the objective's pressure: its worst limit's signal
// against that limit, e.g. LC wait p99 and the oldest LC waiter, or pushed
// request latency; LC demand, the
// share of the CPUs LC tasks ran plus the LC tasks waiting per CPU (a count,
// not the time waited, which adds up across threads waiting together), which
// a policy that makes LC wait cannot hide; the application's in-flight
// requests), smooths them with an asymmetric EWMA (quick up, slow
// down, as scx_lavd does) and changes regime with hysteresis, a confirmation
// period and a minimum dwell, so steady noise and a lone spike do not make it
// flap. It proposes its regime's slot whenever that is not what runs (after a
// hold ends, say) and nothing while the arbiter says it is locked out.
#pragma once

#include <cstdint>

#include "reasoning/controller.h"

namespace akts {

struct DetectorOptions {
  uint32_t burst_slot = 0;             // the latency policy
  uint32_t calm_slot = 1;              // the throughput policy
  double app_busy_requests = 1;        // in-flight requests at which the application counts as busy
  double lc_busy_share = 0.25;         // LC demand (run share + tasks waiting per CPU) at which LC is busy (0: ignore)
  double alpha_up = 0.8, alpha_down = 0.15;
  double enter = 1.0, leave = 0.4;     // on the smoothed signal (1.0 = at the objective)
  uint32_t confirm = 2;                // consecutive periods of the raw signal above `enter` to switch in
  uint32_t min_dwell = 5;              // periods in a regime before leaving it

  bool operator==(const DetectorOptions&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

class Detector : public Controller {
 public:
  explicit Detector(DetectorOptions o = {}) : o_(o), dwell_(o.min_dwell) {}  // no dwell owed at start
  std::string name() const override { return "detector"; }
  ControllerDecision decide(const Window& w, const ControllerContext& ctx) override;
  nlohmann::json state() const override;
  // The raw signal of a window: 1.0 means LC work is at the objective; at
  // most kMaxSignal, and 0 when a figure is not a finite number.
  static constexpr double kMaxSignal = 1000;
  double signal(const Window& w, const Objective& obj) const;
  double smoothed() const { return ewma_; }
  bool in_burst() const { return burst_; }

 private:
  DetectorOptions o_;
  double ewma_ = 0;
  bool started_ = false, burst_ = false;
  uint32_t above_ = 0, dwell_ = 0;
};

}  // namespace akts
