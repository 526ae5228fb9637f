// The daemon's parts that are made from the configuration as a whole, each a unit a reload can build again: the
// tracking (the classifier, the process tracker and its worker thread) and the reasoning (the reasoning plane with
// its controller, and its telemetry: the sources and the reasoning worker thread).
#pragma once

#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "classify/process_tracker.h"
#include "config/daemon_config.h"
#include "daemon/reasoning_worker.h"
#include "daemon/tracker_worker.h"
#include "exec/execution_plane.h"
#include "reasoning/reasoning_plane.h"

namespace akts {

struct Tracking {
  std::unique_ptr<Classifier> classifier;
  std::unique_ptr<ProcessTracker> tracker;
  std::unique_ptr<TrackerWorker> worker;  // not started
  // With the previous daemon's record (its explicit classes and its threads' own policies) taken up, if any.
  static Tracking make(const DaemonConfig& cfg, ExecutionPlane& plane, const std::optional<nlohmann::json>& prev_state);
  // The scan's period with process events: cgroup rules keep scan_interval_ms (a move raises no event).
  static std::chrono::milliseconds rescan_period(const DaemonConfig& cfg);
};

// The telemetry: the sources a window is read from (the plane, /proc, the application's metrics endpoint) and
// the thread that reads them every period into the reasoning plane.
struct Telemetry {
  std::unique_ptr<PlaneSource> source;
  std::unique_ptr<ReasoningWorker> worker;  // not started
  // An error (a metrics URL whose scraper cannot start) is the configuration's.
  static Result<Telemetry> make(const TelemetryConfig& tc, ExecutionPlane& plane, ReasoningPlane& rp,
                                PushedSamples& pushed);
};

struct Reasoning {
  std::unique_ptr<ReasoningPlane> plane;
  Telemetry telemetry;
  // Errors (a controller or a metrics URL that cannot be set up) are the configuration's: exit status 2.
  static Result<Reasoning> make(const DaemonConfig& cfg, ExecutionPlane& plane, PushedSamples& pushed);
};

}  // namespace akts
