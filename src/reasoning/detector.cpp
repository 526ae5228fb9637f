// The regime detector's signal, smoothing and switching rule.
#include "reasoning/detector.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace akts {

double Detector::signal(const Window& w, const Objective& obj) const {
  double s = obj.pressure(w).value_or(0.0);  // the worst limit's observed / max
  double capacity_ms = w.period_s * 1e3 * std::max<uint32_t>(w.cpus, 1);
  // LC demand: the share of the CPUs LC tasks ran, plus the LC tasks waiting
  // per CPU (on average at the guard's firings, in the registered queues: a
  // policy that keeps tasks in local DSQs hides its waiters there, which the
  // kernel does not let BPF walk). A policy that makes LC wait in its queues
  // cannot hide it (CPU time alone drops under such a policy). Tasks waiting,
  // not time waited: the waits of many threads waiting together add up, and
  // a many-threaded server read busier under a policy that made it wait. An
  // older trace without the count falls back to the time waited.
  if (o_.lc_busy_share > 0 && capacity_ms > 0) {
    double waiting = w.tasks_waiting[AKTS_CLASS_LC]
                         ? *w.tasks_waiting[AKTS_CLASS_LC] / std::max<uint32_t>(w.cpus, 1)
                         : w.wait_ms[AKTS_CLASS_LC] / capacity_ms;
    s = std::max(s, (w.run_ms[AKTS_CLASS_LC] / capacity_ms + waiting) / o_.lc_busy_share);
  }
  if (w.app_requests_processing && o_.app_busy_requests > 0)
    s = std::max(s, *w.app_requests_processing / o_.app_busy_requests);
  // A bad figure must not poison the average: an infinity would turn it into NaN for good.
  return std::isfinite(s) ? std::clamp(s, 0.0, kMaxSignal) : 0.0;
}

ControllerDecision Detector::decide(const Window& w, const ControllerContext& ctx) {
  double s = signal(w, ctx.objective);
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
  std::string why;
  if (!burst_ && above_ >= o_.confirm && ewma_ >= o_.enter && dwell_ >= o_.min_dwell) {
    burst_ = true;
    dwell_ = 0;
    why = fmt::format("burst: signal {:.2f} >= {:.2f} for {} periods (smoothed {:.2f})", s, o_.enter, above_, ewma_);
  } else if (burst_ && ewma_ <= o_.leave && dwell_ >= o_.min_dwell) {
    burst_ = false;
    dwell_ = 0;
    why = fmt::format("calm: smoothed signal {:.2f} <= {:.2f}", ewma_, o_.leave);
  }
  uint32_t want = burst_ ? o_.burst_slot : o_.calm_slot;
  if (ctx.locked || want == ctx.running)
    return {std::nullopt, fmt::format("stay: {} (smoothed signal {:.2f})", burst_ ? "burst" : "calm", ewma_)};
  if (why.empty())
    why = fmt::format("{} regime, but slot {} runs (smoothed signal {:.2f})", burst_ ? "burst" : "calm",
                      ctx.running, ewma_);
  return {want, why};
}

nlohmann::json Detector::state() const {
  return {{"regime", burst_ ? "burst" : "calm"}, {"smoothed_signal", ewma_}, {"periods_in_regime", dwell_},
          {"burst_slot", o_.burst_slot}, {"calm_slot", o_.calm_slot}};
}

}  // namespace akts
