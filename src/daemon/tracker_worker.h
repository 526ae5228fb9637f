// The process tracker on threads of its own: a long /proc scan never delays
// the control socket, a switch or a signal. Reading /proc takes no lock;
// applying it does, and lets waiting requests in between two processes, so a
// request that changes classes waits for one process's handling, not for a
// scan. Status reads a snapshot, refreshed after every scan and every change
// (and, by the scan thread, soon after each batch of events), and never waits.
//
// With the kernel's proc connector (classify/proc_events.h) a second thread
// handles each fork, exec, rename and exit as it comes, and the periodic scan
// becomes a slow safety net (the rescan period); events the kernel dropped
// bring the next scan forward. Without it, the scan runs every period.
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
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "classify/proc_events.h"
#include "common/fd.h"
#include "classify/process_tracker.h"

namespace akts {

class TrackerWorker {
 public:
  // `events`: the proc connector, or null to rely on scans alone (every `period`); with it, scans run every
  // `rescan_period`.
  TrackerWorker(ProcessTracker& tracker, std::chrono::milliseconds period,
                std::unique_ptr<ProcConnector> events = nullptr,
                std::chrono::milliseconds rescan_period = std::chrono::milliseconds(30000));
  ~TrackerWorker();
  TrackerWorker(const TrackerWorker&) = delete;
  TrackerWorker& operator=(const TrackerWorker&) = delete;

  // Starts the worker thread (a scan at once, then one every period) and the events thread.
  void start();
  // Cancels a scan in progress and joins the threads (idempotent).
  void stop();
  // The tracker's own figures, for v1.stats: its mode, scans and their duration, events handled and lost,
  // and each event's lag from the kernel's timestamp to its process handled (log2 buckets of ns).
  nlohmann::json stats() const;

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
  // One managed process's entry in that snapshot (without copying the rest), or null.
  nlohmann::json find(uint32_t pid) const;
  // The tracker's record (ProcessTracker::record) as of the last scan or
  // change, serialised, with a generation that grows when it changes. Never
  // older than a previous answer: captures are numbered under the tracker's lock, and one is never published
  // after a newer one.
  struct Record {
    uint64_t gen = 0;
    std::shared_ptr<const std::string> json;
  };
  Record record_snapshot() const;
  // Publishes both snapshots now (after a request changed the tracker, before it is answered).
  void publish_now();
  // New class rules (a reload), under the tracker's lock, and a pass at once that applies them to every
  // process (ProcessTracker::set_rules); with process events, scans from now on every `rescan_period`.
  void set_rules(std::vector<Matcher> rules, std::chrono::milliseconds rescan_period);

 private:
  void loop();
  void events_loop();
  void scan_once();  // takes mu_, yields it to waiting requests between processes
  void handle_events(const std::vector<ProcEvent>& evs);  // takes mu_, as scan_once
  // The snapshots, in two steps: the tracker's state copied with mu_ held (cheap), then the JSON made from it
  // and published without it (O(processes)), so events and requests wait only for the copy. A capture older
  // than one already published is dropped: a snapshot never goes back in time.
  struct Capture {
    ProcessTracker::State state;
    uint64_t seq = 0;
  };
  Capture capture();  // with mu_ held
  void publish(Capture c);

  ProcessTracker& tracker_;
  std::chrono::milliseconds scan_period_;  // without events (or once they failed)
  std::mutex mu_;  // the tracker
  std::atomic<int> waiting_{0};  // requests waiting for mu_
  std::atomic<bool> dirty_{false};  // a request changed the tracker since the last snapshot
  mutable std::mutex snap_mu_;
  nlohmann::json snap_ = nlohmann::json::array();
  std::array<uint64_t, 2> counts_{};
  std::unordered_map<uint32_t, size_t> index_;  // pid -> its entry in snap_
  std::shared_ptr<const std::string> record_;
  uint64_t record_gen_ = 0;
  uint64_t record_version_ = 0;  // the tracker's version record_ was made from (under snap_mu_)
  uint64_t capture_seq_ = 0;     // under mu_
  uint64_t published_seq_ = 0;   // under snap_mu_
  std::mutex wake_mu_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;

  std::unique_ptr<ProcConnector> events_;
  std::atomic<std::chrono::milliseconds> rescan_period_;  // set_rules() may change it
  Fd stop_fd_;  // an eventfd that wakes the events thread to stop
  std::thread events_thread_;
  std::atomic<bool> rescan_now_{false};  // events were lost: scan at once
  std::atomic<bool> events_failed_{false};  // the connector failed for good: scans every scan_period_
  std::chrono::milliseconds current_period() const;
  mutable std::mutex stats_mu_;  // the figures below
  uint64_t scans_ = 0, events_seen_ = 0, events_lost_ = 0;
  double last_scan_ms_ = 0, max_scan_ms_ = 0;
  std::array<uint64_t, 32> lag_hist_{};
  uint64_t lag_sum_ns_ = 0, lag_count_ = 0;
};

}  // namespace akts
