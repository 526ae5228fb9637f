// The process tracker on a thread of its own: a long /proc scan never delays
// the control socket, a switch or a signal. Reading /proc takes no lock;
// applying it does, and lets waiting requests in between two processes, so a
// request that changes classes waits for one process's handling, not for a
// scan. Status reads a snapshot, refreshed by the worker after every scan and
// every change, and never waits.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "classify/process_tracker.h"

namespace akts {

class TrackerWorker {
 public:
  TrackerWorker(ProcessTracker& tracker, std::chrono::milliseconds period);
  ~TrackerWorker();
  TrackerWorker(const TrackerWorker&) = delete;
  TrackerWorker& operator=(const TrackerWorker&) = delete;

  // Starts the worker thread: a scan at once, then one every period.
  void start();
  // Cancels a scan in progress and joins the thread (idempotent).
  void stop();

  // Runs f(tracker) under the tracker's lock; the worker refreshes the
  // snapshot right after (not here: that would cost the caller's thread a
  // rebuild per request).
  template <class F>
  auto with_tracker(F&& f) {
    waiting_.fetch_add(1);
    std::unique_lock lock(mu_);
    waiting_.fetch_sub(1);
    auto r = f(tracker_);
    lock.unlock();
    {
      std::lock_guard wl(wake_mu_);
      dirty_ = true;
    }
    wake_.notify_all();
    return r;
  }
  // Runs f(tracker) under the tracker's lock, for a reading: no snapshot refresh.
  template <class F>
  auto read_tracker(F&& f) {
    waiting_.fetch_add(1);
    std::unique_lock lock(mu_);
    waiting_.fetch_sub(1);
    return f(tracker_);
  }
  // Managed processes as of the last scan or change.
  nlohmann::json snapshot() const;
  // How many of them are in each class (indexed by AKTS_CLASS_*), as of the same moment.
  std::array<uint64_t, 2> class_counts() const;
  // The tracker's record (ProcessTracker::record) as of the last scan or
  // change, serialised, with a generation that grows when it changes. Never
  // older than a previous answer: snapshots are published under the tracker's lock.
  struct Record {
    uint64_t gen = 0;
    std::shared_ptr<const std::string> json;
  };
  Record record_snapshot() const;
  // Publishes both snapshots now (after a request changed the tracker, before it is answered).
  void publish_now();

 private:
  void loop();
  void scan_once();  // takes mu_, yields it to waiting requests between processes
  void publish();    // with mu_ held

  ProcessTracker& tracker_;
  std::chrono::milliseconds period_;
  std::mutex mu_;  // the tracker
  std::atomic<int> waiting_{0};  // requests waiting for mu_
  std::atomic<bool> dirty_{false};  // a request changed the tracker since the last snapshot
  mutable std::mutex snap_mu_;
  nlohmann::json snap_ = nlohmann::json::array();
  std::array<uint64_t, 2> counts_{};
  std::shared_ptr<const std::string> record_;
  uint64_t record_gen_ = 0;
  uint64_t record_version_ = 0;  // the tracker's version record_ was made from (under mu_)
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace akts
