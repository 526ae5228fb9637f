// The regime detector's signal, smoothing and switching rule.
#include "reasoning/detector.h"

#include <algorithm>

#include <fmt/format.h>

namespace akts {

double Detector::signal(const Window& w) const {
  double target = o_.lc_wait_p99_target_ms > 0 ? o_.lc_wait_p99_target_ms : 1;
  double s = std::max(w.wait_p99_ms[AKTS_CLASS_LC], w.oldest_wait_ms[AKTS_CLASS_LC]) / target;
  if (w.app_requests_processing && o_.app_busy_requests > 0)
    s = std::max(s, *w.app_requests_processing / o_.app_busy_requests);
  return s;
}

ControllerDecision Detector::decide(const Window& w) {
  double s = signal(w);
  if (!started_) {
    ewma_ = s;
    started_ = true;
  } else {
    ewma_ += (s > ewma_ ? o_.alpha_up : o_.alpha_down) * (s - ewma_);
  }
  ++dwell_;
  // Confirmed on the raw signal: a lone spike lifts the slow-falling average
  // for several periods, but the signal itself only once.
  above_ = s >= o_.enter ? above_ + 1 : 0;
  if (!burst_ && above_ >= o_.confirm && ewma_ >= o_.enter && dwell_ >= o_.min_dwell) {
    burst_ = true;
    dwell_ = 0;
    return {o_.burst_slot, fmt::format("burst: LC signal >= {:.2f} for {} periods (smoothed {:.2f})", o_.enter,
                                       above_, ewma_)};
  }
  if (burst_ && ewma_ <= o_.leave && dwell_ >= o_.min_dwell) {
    burst_ = false;
    dwell_ = 0;
    return {o_.calm_slot, fmt::format("calm: smoothed LC signal {:.2f} <= {:.2f}", ewma_, o_.leave)};
  }
  return {std::nullopt, fmt::format("hold: smoothed LC signal {:.2f} ({})", ewma_, burst_ ? "burst" : "calm")};
}

}  // namespace akts
