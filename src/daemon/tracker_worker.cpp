// The tracker's scan thread and the snapshot the status answer reads.
#include "daemon/tracker_worker.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "akts.h"

namespace akts {

TrackerWorker::TrackerWorker(ProcessTracker& tracker, std::chrono::milliseconds period,
                             std::unique_ptr<ProcConnector> events, std::chrono::milliseconds rescan_period)
    : tracker_(tracker), scan_period_(period), events_(std::move(events)), rescan_period_(rescan_period) {
  if (events_) {
    stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!stop_fd_) {
      spdlog::warn("process events off (no eventfd: {}): scanning /proc every {} ms", std::strerror(errno),
                   scan_period_.count());
      events_.reset();
    }
  }
}

std::chrono::milliseconds TrackerWorker::current_period() const {
  return events_ && !events_failed_ ? std::max(scan_period_, rescan_period_.load()) : scan_period_;
}

TrackerWorker::~TrackerWorker() { stop(); }

void TrackerWorker::start() {
  if (thread_.joinable()) return;
  stopping_ = false;  // again after a stop: the daemon pauses it while it reloads the scheduler
  if (events_ && !events_failed_) {
    uint64_t n;
    while (::read(stop_fd_.get(), &n, sizeof(n)) > 0) {
    }
    // What came while it was stopped is not read here (that could take long): the first scan, at once, covers
    // it, and replaying those events afterwards only repeats what the scan did.
    events_thread_ = std::thread([this] { events_loop(); });
  }
  thread_ = std::thread([this] { loop(); });
}

void TrackerWorker::stop() {
  {
    std::lock_guard lock(wake_mu_);  // so the worker cannot miss it between its check and its wait
    stopping_ = true;
  }
  wake_.notify_all();
  if (stop_fd_) {
    uint64_t one = 1;
    (void)!::write(stop_fd_.get(), &one, sizeof(one));
  }
  if (events_thread_.joinable()) events_thread_.join();
  if (thread_.joinable()) thread_.join();
}

// Lets a waiting request take the tracker between two processes (mu_ held through `lock`).
static void let_waiting_in(std::unique_lock<std::mutex>& lock, const std::atomic<int>& waiting,
                           const std::atomic<bool>& stopping) {
  if (waiting.load() == 0) return;
  lock.unlock();
  while (waiting.load() > 0 && !stopping) std::this_thread::yield();
  lock.lock();
}

void TrackerWorker::scan_once() {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t since;  // events handled after this are newer than the listing
  uint64_t rules;  // the rules it is read for (a listing of other rules may lack the cgroups they need)
  {
    std::lock_guard lock(mu_);
    since = tracker_.event_seq();
    rules = tracker_.rules_generation();
  }
  // Reading /proc needs no lock: requests are never held up by it.
  auto listing = tracker_.list_processes(&stopping_);
  if (!listing) return;
  std::unique_lock lock(mu_);
  if (tracker_.rules_generation() != rules) {  // new rules came meanwhile: a pass with them, at once
    rescan_now_ = true;
    return;
  }
  tracker_.apply(*listing, since, &stopping_, [&] { let_waiting_in(lock, waiting_, stopping_); });
  auto c = capture();
  lock.unlock();
  publish(std::move(c));
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard sl(stats_mu_);
  ++scans_;
  last_scan_ms_ = ms;
  max_scan_ms_ = std::max(max_scan_ms_, ms);
}

void TrackerWorker::handle_events(const std::vector<ProcEvent>& evs) {
  {
    std::lock_guard sl(stats_mu_);
    events_seen_ += evs.size();
  }
  // The processes the events name, each once, in order: a new process (not a new thread, which its process's
  // policy already covers and the next scan records), an exec, a new name; and any thread's exit, which may
  // be its process's end.
  struct Todo {
    uint32_t tgid;
    bool exit;
    uint64_t ts;  // the first event's timestamp
  };
  std::vector<Todo> todo;
  std::unordered_map<uint64_t, size_t> seen;  // (tgid, exit) -> index
  for (const auto& e : evs) {
    const bool exit = e.kind == ProcEvent::Kind::kExit;
    if (!e.tgid || (e.kind == ProcEvent::Kind::kFork && !e.new_process())) continue;
    if (seen.emplace((uint64_t{e.tgid} << 1) | exit, todo.size()).second) todo.push_back({e.tgid, exit, e.timestamp_ns});
  }
  if (todo.empty()) return;
  std::vector<uint64_t> lags;
  {
    // As a request does: a scan in progress lets us in between two of its processes.
    waiting_.fetch_add(1);
    std::unique_lock lock(mu_);
    waiting_.fetch_sub(1);
    for (const auto& t : todo) {
      if (stopping_) break;
      let_waiting_in(lock, waiting_, stopping_);
      if (t.exit)
        tracker_.exited(t.tgid);
      else
        tracker_.refresh(t.tgid);
      timespec now{};
      ::clock_gettime(CLOCK_MONOTONIC, &now);
      uint64_t now_ns = static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
      lags.push_back(now_ns > t.ts ? now_ns - t.ts : 0);
    }
  }
  // The snapshots cost O(processes) to rebuild: the scan thread does it, once for however many batches came
  // meanwhile, off this thread and off the tracker's next events. The kernel's classes are already written.
  {
    std::lock_guard wl(wake_mu_);
    dirty_ = true;
  }
  wake_.notify_all();
  std::lock_guard sl(stats_mu_);
  for (uint64_t lag : lags) {
    int b = lag ? std::min(31, 63 - __builtin_clzll(lag)) : 0;
    ++lag_hist_[static_cast<size_t>(b)];
    lag_sum_ns_ += lag;
    ++lag_count_;
  }
}

void TrackerWorker::events_loop() {
  // Nothing thrown here may end the daemon: a failed batch is logged and a scan covers it. Should the
  // connector fail for good, the scans go back to their own period.
  std::vector<ProcEvent> evs;
  while (!stopping_) {
    pollfd fds[2] = {{events_->fd(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
      spdlog::error("process events: poll failed ({}): scanning /proc every {} ms from now on", std::strerror(errno),
                    scan_period_.count());
      events_failed_ = true;
      {
        std::lock_guard wl(wake_mu_);
        rescan_now_ = true;  // what happened since the last event is covered by a scan now
      }
      wake_.notify_all();
      break;
    }
    if (stopping_) break;
    bool lost = false, rescan = false;
    try {
      evs.clear();
      if (auto st = events_->read(evs, &lost); !st) {
        spdlog::warn("{}", st.error().to_string());
        rescan = true;
      }
      handle_events(evs);
    } catch (const std::exception& e) {
      spdlog::error("process events failed: {}", e.what());
      rescan = true;
    }
    if (lost) {
      std::lock_guard sl(stats_mu_);
      ++events_lost_;
    }
    if (lost || rescan) {
      {
        std::lock_guard wl(wake_mu_);
        rescan_now_ = true;
      }
      wake_.notify_all();
    }
  }
}

nlohmann::json TrackerWorker::stats() const {
  std::lock_guard sl(stats_mu_);
  return {{"mode", events_ && !events_failed_ ? "events" : "scan"},
          {"scan_period_ms", current_period().count()},
          {"scans", scans_},
          {"last_scan_ms", last_scan_ms_},
          {"max_scan_ms", max_scan_ms_},
          {"events", events_seen_},
          {"events_lost", events_lost_},
          {"event_lag_log2_histogram", lag_hist_},
          {"event_lag_ns", lag_sum_ns_}};
}

void TrackerWorker::loop() {
  // The first scan right away, then one per period; in between, the snapshot
  // is refreshed after requests changed something. Nothing thrown here may end
  // the daemon: a failed scan is logged and the next one tries again.
  auto next_scan = std::chrono::steady_clock::now();
  while (!stopping_) {
    try {
      if (rescan_now_.exchange(false) || std::chrono::steady_clock::now() >= next_scan) {
        scan_once();
        next_scan = std::chrono::steady_clock::now() + current_period();
      } else if (dirty_.exchange(false)) {
        Capture c;
        {
          std::lock_guard lock(mu_);
          c = capture();
        }
        publish(std::move(c));
      }
    } catch (const std::exception& e) {
      spdlog::error("process scan failed: {}", e.what());
    }
    std::unique_lock lock(wake_mu_);
    if (events_failed_) next_scan = std::min(next_scan, std::chrono::steady_clock::now() + scan_period_);
    wake_.wait_until(lock, next_scan, [this] { return stopping_.load() || dirty_.load() || rescan_now_.load(); });
  }
}

void TrackerWorker::set_rules(std::vector<Matcher> rules, std::chrono::milliseconds rescan_period) {
  read_tracker([&rules](ProcessTracker& t) {  // lets a pass in progress stop (ProcessTracker::apply)
    t.set_rules(std::move(rules));
    return 0;
  });
  rescan_period_ = rescan_period;
  {
    std::lock_guard wl(wake_mu_);
    rescan_now_ = true;
  }
  wake_.notify_all();
}

TrackerWorker::Capture TrackerWorker::capture() { return {tracker_.state(), ++capture_seq_}; }

void TrackerWorker::publish(Capture c) {
  auto j = ProcessTracker::to_json(c.state);
  std::array<uint64_t, 2> counts{};
  std::unordered_map<uint32_t, size_t> index;
  for (size_t i = 0; i < j.size(); ++i) {
    ++counts[j[i]["class"] == "lc" ? AKTS_CLASS_LC : AKTS_CLASS_BE];
    index.emplace(j[i]["pid"].get<uint32_t>(), i);
  }
  // The record is serialised again only when the tracker changed: a scan that found nothing new costs nothing here.
  bool changed;
  {
    std::lock_guard lock(snap_mu_);
    changed = !record_ || c.state.version != record_version_;
  }
  std::shared_ptr<const std::string> rec;
  if (changed) rec = std::make_shared<const std::string>(ProcessTracker::record(c.state).dump());
  std::lock_guard lock(snap_mu_);
  if (c.seq <= published_seq_) return;  // a newer one got here first
  published_seq_ = c.seq;
  snap_ = std::move(j);
  counts_ = counts;
  index_ = std::move(index);
  if (rec) {
    record_version_ = c.state.version;
    if (!record_ || *record_ != *rec) {
      record_ = std::move(rec);
      ++record_gen_;
    }
  }
}

void TrackerWorker::publish_now() {
  Capture c;
  {
    std::lock_guard lock(mu_);
    c = capture();
  }
  publish(std::move(c));
}

TrackerWorker::Record TrackerWorker::record_snapshot() const {
  std::lock_guard lock(snap_mu_);
  return {record_gen_, record_ ? record_ : std::make_shared<const std::string>("{\"processes\":[]}")};
}

nlohmann::json TrackerWorker::find(uint32_t pid) const {
  std::lock_guard lock(snap_mu_);
  auto it = index_.find(pid);
  return it == index_.end() ? nlohmann::json(nullptr) : snap_[it->second];
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
