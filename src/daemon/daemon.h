// `akts daemon`: owns the scheduler. Loads and verifies the library once,
// attaches, serves the control socket, keeps classes in step with processes
// (its tracker thread), builds a telemetry window every period and lets the
// chosen controller propose switches through the arbiter (its reasoning
// thread), reports the kernel's reason if it ejects the scheduler (and loads
// and attaches again when the restart policy says so), and on SIGINT, SIGTERM
// or SIGHUP gives every process back and detaches cleanly.
#pragma once

#include "config/daemon_config.h"

namespace akts {

// Runs until a signal (a clean stop: 0, or 1 if the detach fails), an error
// (a start that fails, a re-attach that fails, the loop's poll() failing:
// non-zero), or an end of the scheduler by the kernel that the configuration's
// restart policy does not cover: an ejection without restart.on_eject, a
// restart request without restart.on_request, or one more than restart.max
// within restart.window (1). Every way out gives the processes back and
// detaches. Returns the process exit status.
int run_daemon(const DaemonConfig& cfg);

}  // namespace akts
