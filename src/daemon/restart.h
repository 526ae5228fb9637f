// The restart path: after the kernel ends the scheduler (it asked for a restart, or ejected it), whether to load
// and attach again (the configuration's restart policy, at most restart.max within restart.window), and doing it
// with nothing else touching the plane meanwhile.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "config/daemon_config.h"
#include "daemon/plane_control.h"
#include "exec/execution_plane.h"

namespace akts {

// At most `max` restarts within `window`: the next one is refused.
class RestartGate {
 public:
  explicit RestartGate(const RestartPolicy& p) : p_(p) {}
  bool allow(std::chrono::steady_clock::time_point now);
  size_t recent() const { return times_.size(); }

 private:
  RestartPolicy p_;
  std::deque<std::chrono::steady_clock::time_point> times_;
};

// The daemon's parts around the plane, called in this order on a restart: pause (the workers stop touching the
// plane), [reload], reapply (classes into the new maps), [attach], reloaded (what depends on the old programs
// learns they went), resume. On a failed reload only pause has run, on a failed attach pause and reapply: the
// workers stay stopped either way.
struct RestartHooks {
  std::function<void()> pause, reapply, reloaded, resume;
};

struct RestartOutcome {
  bool restarted = false;  // false: the daemon stops with exit status 1 (the log says why)
  bool requested = false;  // the kernel asked for the restart (else it ejected the scheduler)
  uint32_t slot = 0;       // the slot attached again: the selection kept on a request, the safe slot on an ejection
  double took_ms = 0;
  std::string why;         // for the decision log, on a restart
};

// The kernel ended the scheduler (`ei`; `restart_flag` is the exit code's restart bit, 0 when this kernel names
// none). Restarts on a request when restart.on_request is set, on an ejection when restart.on_eject is set, and
// only while `gate` allows; `opts` is how the plane was loaded (its initial slot is replaced).
// `now` counts for the gate.
RestartOutcome restart_after_exit(const ExitInfo& ei, int64_t restart_flag, const RestartPolicy& policy,
                                  RestartGate& gate, PlaneControl& plane, PlaneOptions opts, uint32_t safe_slot,
                                  const RestartHooks& hooks,
                                  std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

// The kernel's reason for an ejection, and its debug dump, to the log.
void report_exit(const ExitInfo& ei);

}  // namespace akts
