// The reasoning thread and the daemon's real telemetry sources.
#include "daemon/reasoning_worker.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "exec/execution_plane.h"

namespace akts {

PlaneSource::PlaneSource(const ExecutionPlane& plane, std::unique_ptr<MetricsScraper> scraper)
    : plane_(plane),
      scraper_(std::move(scraper)),
      cpus_(static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)))) {}

Result<KernelReading> PlaneSource::read_kernel() {
  KernelReading k;
  auto s = plane_.read_stats();
  if (!s) return s.error();
  k.stats = *s;
  auto g = plane_.read_guard();
  if (!g) return g.error();
  for (uint32_t c = 0; c < AKTS_NR_CLASSES; ++c) {
    k.oldest_wait_ns[c] = g->state.oldest_wait_ns[c];
    k.rescues[c] = g->state.rescues[c];
    k.waiting_sum[c] = g->state.waiting_sum[c];
  }
  k.guard_runs = g->state.runs;
  if (auto q = plane_.count_queued()) k.queued = *q;
  k.selected = plane_.selected();
  k.effective = plane_.effective_slot();
  k.cpus = cpus_;
  return k;
}

HostReading PlaneSource::read_host() { return read_host_files(); }

// The scraper's latest answer since the last window; its own thread bears any wait.
std::optional<AppScrape> PlaneSource::scrape_app() { return scraper_ ? scraper_->latest() : std::nullopt; }

nlohmann::json PlaneSource::health() const {
  if (!scraper_ && !carried_ok_ && !carried_failed_) return {{"metrics_scrapes", nullptr}};
  return {{"metrics_scrapes",
           {{"ok", carried_ok_ + (scraper_ ? scraper_->successes() : 0)},
            {"failed", carried_failed_ + (scraper_ ? scraper_->failures() : 0)}}}};
}

void PlaneSource::continue_from(const PlaneSource& prev) {
  carried_ok_ = prev.carried_ok_ + (prev.scraper_ ? prev.scraper_->successes() : 0);
  carried_failed_ = prev.carried_failed_ + (prev.scraper_ ? prev.scraper_->failures() : 0);
}

ReasoningWorker::ReasoningWorker(ReasoningPlane& rp, TelemetrySource& src, PushedSamples& pushed,
                                 std::chrono::milliseconds period)
    : rp_(rp), src_(src), pushed_(pushed), period_(period) {}

ReasoningWorker::~ReasoningWorker() { stop(); }

void ReasoningWorker::start() {
  if (thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = false;  // again after a stop: a reloaded scheduler's counters start from zero
  }
  sampler_.reset_kernel();
  thread_ = std::thread([this] { loop(); });
}

void ReasoningWorker::continue_from(const ReasoningWorker& prev) {
  epoch_ = prev.epoch_;
  sampler_.continue_after(prev.sampler_.last_seq());
  read_errors_ = prev.read_errors_.load();  // a counter (akts_telemetry_*): never back
}

void ReasoningWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReasoningWorker::loop() {
  // Its clock runs on across a stop and start (a reloaded scheduler): a controller's time never goes back.
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    double t_s = std::chrono::duration<double>(now - epoch_).count();
    try {
      auto w = sampler_.sample(t_s, src_, &pushed_);
      if (!w) {
        if (read_errors_.fetch_add(1) % 100 == 0) spdlog::warn("telemetry: {}", w.error().to_string());
      } else if (*w) {
        rp_.on_window(**w, now);
      }
    } catch (const std::exception& e) {
      // Nothing here should throw; if it does, the daemon keeps its scheduler and its socket.
      if (read_errors_.fetch_add(1) % 100 == 0) spdlog::error("reasoning thread: {}", e.what());
    }
    // Fixed rate; after a stall, skip the missed periods rather than burst.
    next += period_;
    if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + period_;
    lock.lock();
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

}  // namespace akts
