// Worker processes for the self-test: each puts itself in SCHED_EXT (so the
// dispatcher manages it in partial mode) and alternates CPU work and sleep,
// which drives every dispatched callback (wakeups, queueing, preemption).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "classify/process_tracker.h"  // kSchedExt
#include "common/fd.h"
#include "common/result.h"

namespace akts {

struct WorkerSpec {
  int count = 8;
  int iterations = 200;                         // spin + sleep rounds (ignored when `until` is set)
  std::chrono::microseconds spin{200};          // CPU work per round
  std::chrono::microseconds sleep{100};         // sleep per round (0: pure CPU hog)
  std::chrono::steady_clock::time_point until{};  // run until this time instead of `iterations`
  int nice = 0;
  int cpu = -1;       // pin to this CPU (-1: any)
  bool held = false;  // wait for release() before entering SCHED_EXT (so the parent can classify them first)
  int fifo = 0;       // > 0: SCHED_FIFO at this priority instead of SCHED_EXT (a higher class that interrupts)
};

struct WorkerOutcome {
  int started = 0;
  int completed = 0;  // exited 0 by themselves
  std::vector<std::string> problems;
  double seconds = 0;
};

class WorkerGroup {
 public:
  static Result<WorkerGroup> spawn(const WorkerSpec& spec);
  WorkerGroup(WorkerGroup&& o) noexcept
      : pids_(std::move(o.pids_)),
        release_fd_(std::move(o.release_fd_)),
        stop_(std::exchange(o.stop_, nullptr)),
        started_(o.started_) {}
  ~WorkerGroup();

  // Lets held workers go (see WorkerSpec::held).
  void release();
  // Asks every worker to end now, before its `until` or its iterations: each sees it after its current round and
  // exits 0, as it would at its end; wait() collects them. For a check that has judged what it measured, whose
  // workers' remaining time would only be waited out. A worker that cannot run (starved) cannot see it either, and
  // wait() still reports it at its timeout.
  void stop();
  // Waits for every worker; kills those still running at the timeout.
  WorkerOutcome wait(std::chrono::milliseconds timeout);
  const std::vector<pid_t>& pids() const { return pids_; }

 private:
  WorkerGroup() = default;
  std::vector<pid_t> pids_;
  Fd release_fd_;  // write end of the pipe held workers block on
  std::atomic<int>* stop_ = nullptr;  // in memory shared with the workers (stop())
  std::chrono::steady_clock::time_point started_;
};

}  // namespace akts
