// The reasoning thread and the daemon's real telemetry sources.
#include "daemon/reasoning_worker.h"

#include <unistd.h>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "exec/execution_plane.h"

namespace akts {

PlaneSource::PlaneSource(const ExecutionPlane& plane, TelemetryConfig cfg)
    : plane_(plane), cfg_(std::move(cfg)), cpus_(static_cast<uint32_t>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)))) {}

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
  }
  if (auto q = plane_.count_queued()) k.queued = *q;
  k.selected = plane_.selected();
  k.effective = plane_.effective_slot();
  k.cpus = cpus_;
  return k;
}

HostReading PlaneSource::read_host() { return read_host_files(); }

std::optional<PromScrape> PlaneSource::scrape_app() {
  if (cfg_.metrics_url.empty()) return std::nullopt;
  auto u = parse_llm_endpoint(cfg_.metrics_url);
  if (!u) return std::nullopt;
  httplib::Client cli(u->host, u->port);
  // At most half a period: a stalled endpoint costs one window its app figures, no more.
  auto budget = std::max<std::chrono::milliseconds>(cfg_.period / 2, std::chrono::milliseconds(5));
  cli.set_connection_timeout(budget);
  cli.set_read_timeout(budget);
  cli.set_write_timeout(budget);
  auto res = cli.Get(u->prefix.empty() ? "/metrics" : u->prefix);
  if (!res || res->status != 200) {
    if (scrape_failures_.fetch_add(1) % 100 == 0)
      spdlog::warn("metrics scrape of {} failed ({}); windows carry no application figures until it answers",
                   cfg_.metrics_url, res ? fmt::format("HTTP {}", res->status) : httplib::to_string(res.error()));
    return std::nullopt;
  }
  auto p = parse_prometheus_text(res->body);
  if (!p) {
    scrape_failures_.fetch_add(1);
    return std::nullopt;
  }
  return *p;
}

ReasoningWorker::ReasoningWorker(ReasoningPlane& rp, TelemetrySource& src, PushedSamples& pushed,
                                 std::chrono::milliseconds period)
    : rp_(rp), src_(src), pushed_(pushed), period_(period) {}

ReasoningWorker::~ReasoningWorker() { stop(); }

void ReasoningWorker::start() { thread_ = std::thread([this] { loop(); }); }

void ReasoningWorker::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ReasoningWorker::loop() {
  auto t0 = std::chrono::steady_clock::now();
  auto next = t0;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    double t_s = std::chrono::duration<double>(now - t0).count();
    try {
      auto w = sampler_.sample(t_s, src_, pushed_.drain());
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
