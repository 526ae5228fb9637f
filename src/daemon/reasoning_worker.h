// The reasoning plane on a thread of its own: every telemetry period it reads
// the kernel's counters, the host's /proc files and the application's
// metrics endpoint, builds a window, and hands it to the reasoning plane
// (controller, arbiter, decision log). A slow scrape or controller delays
// only this thread, never the control socket.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "reasoning/reasoning_config.h"
#include "reasoning/reasoning_plane.h"
#include "telemetry/sampler.h"
#include "telemetry/scraper.h"

namespace akts {

class ExecutionPlane;

// The real sources: the execution plane, /proc, the metrics scraper's latest answer.
class PlaneSource : public TelemetrySource {
 public:
  // scraper: null when no metrics endpoint is configured.
  PlaneSource(const ExecutionPlane& plane, std::unique_ptr<MetricsScraper> scraper);
  Result<KernelReading> read_kernel() override;
  HostReading read_host() override;
  std::optional<AppScrape> scrape_app() override;
  nlohmann::json health() const;
  // Before it is read: this one's scrape counts go on from prev's (a reload's new telemetry): counters never go back.
  void continue_from(const PlaneSource& prev);

 private:
  const ExecutionPlane& plane_;
  std::unique_ptr<MetricsScraper> scraper_;
  uint64_t carried_ok_ = 0, carried_failed_ = 0;  // the scrapes of the sources before it
  uint32_t cpus_;
};

class ReasoningWorker {
 public:
  ReasoningWorker(ReasoningPlane& rp, TelemetrySource& src, PushedSamples& pushed, std::chrono::milliseconds period);
  ~ReasoningWorker();
  // Before start(): how old a scrape may be for a window to carry its figures (Sampler::set_app_max_age).
  void set_app_max_age(std::chrono::milliseconds age) { sampler_.set_app_max_age(age.count() / 1e3); }
  // Before start(): which series of the application's metrics mean what.
  void set_app_metrics(const AppMetricsChoice& metrics) { sampler_.set_app_metrics(metrics); }
  ReasoningWorker(const ReasoningWorker&) = delete;
  ReasoningWorker& operator=(const ReasoningWorker&) = delete;
  // Before start(), `prev` stopped: this one's windows go on from prev's, in number and in time (a reload's new
  // telemetry), so the decision log's outcomes and the controllers' clocks run on.
  void continue_from(const ReasoningWorker& prev);
  void start();
  void stop();  // idempotent; joins
  uint64_t read_errors() const { return read_errors_.load(); }
  std::chrono::milliseconds period() const { return period_; }

 private:
  void loop();
  ReasoningPlane& rp_;
  TelemetrySource& src_;
  PushedSamples& pushed_;
  std::chrono::milliseconds period_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();  // a window's t_s counts from it
  Sampler sampler_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::atomic<uint64_t> read_errors_{0};
  std::thread thread_;
};

}  // namespace akts
