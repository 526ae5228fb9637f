// The tracker's scan thread and the snapshot the status answer reads.
#include "daemon/tracker_worker.h"

namespace akts {

TrackerWorker::TrackerWorker(ProcessTracker& tracker, std::chrono::milliseconds period)
    : tracker_(tracker), period_(period) {}

TrackerWorker::~TrackerWorker() { stop(); }

void TrackerWorker::start() {
  {
    std::lock_guard lock(mu_);
    tracker_.scan(&stopping_);
    publish();
  }
  thread_ = std::thread([this] { loop(); });
}

void TrackerWorker::stop() {
  stopping_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TrackerWorker::loop() {
  while (!stopping_) {
    {
      std::unique_lock lock(wake_mu_);
      wake_.wait_for(lock, period_, [this] { return stopping_.load(); });
    }
    if (stopping_) break;
    std::lock_guard lock(mu_);
    tracker_.scan(&stopping_);
    publish();
  }
}

void TrackerWorker::publish() {
  auto j = tracker_.to_json();
  std::lock_guard lock(snap_mu_);
  snap_ = std::move(j);
}

nlohmann::json TrackerWorker::snapshot() const {
  std::lock_guard lock(snap_mu_);
  return snap_;
}

}  // namespace akts
