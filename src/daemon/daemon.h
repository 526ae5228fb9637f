// `akts daemon`: owns the scheduler. Loads and verifies the library once,
// attaches, serves the control socket, keeps classes in step with processes
// (its tracker thread), builds a telemetry window every period and lets the
// chosen controller propose switches through the arbiter (its reasoning
// thread), reports the kernel's reason if it ejects the scheduler, and on
// SIGINT or SIGTERM gives every process back and detaches cleanly.
#pragma once

#include "classify/config.h"

namespace akts {

// Runs until a signal or an ejection; returns the process exit status.
int run_daemon(const DaemonConfig& cfg);

}  // namespace akts
