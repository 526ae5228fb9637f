// The daemon's reaper: a small process forked before anything is loaded. It
// waits for the daemon to end (its pipe's write end closes with the daemon,
// however it dies); if the daemon did not give its processes back itself
// (SIGKILL, a crash), the reaper gives every thread the daemon moved into
// SCHED_EXT its own policy back, from the state file, and marks the file
// reaped, keeping the explicit classes and the selection for the next daemon.
// It leaves the daemon's session and ignores SIGTERM, SIGINT and SIGHUP: a
// terminal that closes, or systemd's SIGTERM to what is left of a crashed
// service's cgroup, must not stop it; its work after the end is bounded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "classify/process_tracker.h"
#include "common/fd.h"
#include "common/result.h"

namespace akts {

class Reaper {
 public:
  // Forks the reaper. Call before any thread starts and before any BPF object
  // is opened: the child keeps nothing of the daemon but the pipe and stderr.
  // `close_fd` (the state lock's descriptor, if already open) is closed in the
  // child first thing: the reaper must never hold the daemon's lock.
  static Result<Reaper> start(const std::string& state_path, int close_fd = -1);
  Reaper(Reaper&& o) noexcept : pid_(std::exchange(o.pid_, -1)), pipe_w_(std::move(o.pipe_w_)) {}
  Reaper& operator=(Reaper&&) = delete;
  ~Reaper();
  // A clean stop (after the daemon wrote a clean state): tells the reaper it
  // has nothing to do, lets it see the end and waits for it.
  void finish();
  pid_t pid() const { return pid_; }

 private:
  Reaper(pid_t pid, Fd pipe_w) : pid_(pid), pipe_w_(std::move(pipe_w)) {}
  pid_t pid_ = -1;
  Fd pipe_w_;
};

// What the reaper does once the daemon `daemon_pid` is gone (exposed for tests):
// under the state lock, if the state file is that daemon's and neither clean nor
// reaped, release its record's threads and mark it reaped. Returns the number of
// threads given back, or 0 when there was nothing to do.
Result<size_t> reap_state(const std::string& state_path, pid_t daemon_pid, const std::string& proc_root = "/proc",
                          SchedPolicyOps& ops = system_sched_policy_ops(),
                          std::chrono::milliseconds lock_wait = std::chrono::seconds(10));

}  // namespace akts
