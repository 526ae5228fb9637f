// The tracker's scan thread and the snapshot the status answer reads.
#include "daemon/tracker_worker.h"

#include <spdlog/spdlog.h>

#include "akts.h"

namespace akts {

TrackerWorker::TrackerWorker(ProcessTracker& tracker, std::chrono::milliseconds period)
    : tracker_(tracker), period_(period) {}

TrackerWorker::~TrackerWorker() { stop(); }

void TrackerWorker::start() {
  if (thread_.joinable()) return;
  stopping_ = false;  // again after a stop: the daemon pauses it while it reloads the scheduler
  thread_ = std::thread([this] { loop(); });
}

void TrackerWorker::stop() {
  {
    std::lock_guard lock(wake_mu_);  // so the worker cannot miss it between its check and its wait
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TrackerWorker::scan_once() {
  // Reading /proc needs no lock: requests are never held up by it.
  auto listing = tracker_.list_processes(&stopping_);
  if (!listing) return;
  std::unique_lock lock(mu_);
  tracker_.apply(*listing, &stopping_, [&] {
    if (waiting_.load() == 0) return;
    lock.unlock();  // a request is waiting: let it through
    while (waiting_.load() > 0 && !stopping_) std::this_thread::yield();
    lock.lock();
  });
  publish();
}

void TrackerWorker::loop() {
  // The first scan right away, then one per period; in between, the snapshot
  // is refreshed after requests changed something. Nothing thrown here may end
  // the daemon: a failed scan is logged and the next one tries again.
  auto next_scan = std::chrono::steady_clock::now();
  while (!stopping_) {
    try {
      if (std::chrono::steady_clock::now() >= next_scan) {
        scan_once();
        next_scan = std::chrono::steady_clock::now() + period_;
      } else if (dirty_.exchange(false)) {
        std::lock_guard lock(mu_);
        publish();
      }
    } catch (const std::exception& e) {
      spdlog::error("process scan failed: {}", e.what());
    }
    std::unique_lock lock(wake_mu_);
    wake_.wait_until(lock, next_scan, [this] { return stopping_.load() || dirty_.load(); });
  }
}

void TrackerWorker::publish() {
  auto j = tracker_.to_json();
  std::array<uint64_t, 2> counts{};
  for (const auto& m : j) ++counts[m["class"] == "lc" ? AKTS_CLASS_LC : AKTS_CLASS_BE];
  // The record is serialised again only when the tracker changed: a scan that found nothing new costs nothing here.
  std::shared_ptr<const std::string> rec;
  if (!record_ || tracker_.version() != record_version_) {
    rec = std::make_shared<const std::string>(tracker_.record().dump());
    record_version_ = tracker_.version();
  }
  std::lock_guard lock(snap_mu_);
  snap_ = std::move(j);
  counts_ = counts;
  if (rec && (!record_ || *record_ != *rec)) {
    record_ = std::move(rec);
    ++record_gen_;
  }
}

void TrackerWorker::publish_now() {
  std::lock_guard lock(mu_);
  publish();
}

TrackerWorker::Record TrackerWorker::record_snapshot() const {
  std::lock_guard lock(snap_mu_);
  return {record_gen_, record_ ? record_ : std::make_shared<const std::string>("{\"processes\":[]}")};
}

std::array<uint64_t, 2> TrackerWorker::class_counts() const {
  std::lock_guard lock(snap_mu_);
  return counts_;
}

nlohmann::json TrackerWorker::snapshot() const {
  std::lock_guard lock(snap_mu_);
  return snap_;
}

}  // namespace akts
