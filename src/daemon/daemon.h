// `akts daemon`: owns the scheduler. Loads and verifies the library once,
// attaches, serves the control socket, keeps classes in step with processes
// (its tracker thread), builds a telemetry window every period and lets the
// chosen controller propose switches through the arbiter (its reasoning
// thread), reports the kernel's reason if it ejects the scheduler (and loads
// and attaches again when the restart policy says so), reloads its config on
// SIGHUP (daemon/reload.h), and on SIGINT, SIGTERM, or the SIGHUP of the
// terminal it runs on closing, gives every process back and detaches cleanly.
//
// The daemon is one object, built as scx's schedulers and the kernel's loaders
// are: init() makes its parts in order (the checks, the state the last daemon
// left, the plane, the tracker, the reasoning plane, the socket, /metrics) and
// attaches; run() serves them on one event loop and tears them down.
#pragma once

#include <memory>

#include "config/daemon_config.h"
#include "daemon/reload.h"

namespace akts {

class Daemon {
 public:
  // `reload`: the config read again, as `cfg` was (SIGHUP, v1.reload).
  Daemon(DaemonConfig cfg, Reloader::Loader reload);
  ~Daemon();                                 // what init() made and run() did not take down (the plane detaches)
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;
  // 0 once attached and ready to run; else the exit status of the start that failed (nothing stays attached).
  int init();
  // Serves until a signal (a clean stop: 0, or 1 if the detach fails), the loop's poll() failing, or an end of
  // the scheduler by the kernel that the restart policy does not cover (1); then gives the processes back and
  // detaches. Returns the exit status.
  int run();

 private:
  struct Parts;
  int load();            // the state the last daemon left, the plane
  void track();          // the classifier, the tracker and its worker, the state writer
  int reason();          // the reasoning plane, its controller and telemetry
  int serve();           // the backend, the socket, /metrics
  void wire();           // the loop's sources
  void tick();           // the loop's 100 ms tick
  Result<nlohmann::json> reload(const std::string& source);
  int teardown(int exit_code);
  DaemonConfig cfg_;  // a reload that passes replaces it
  std::unique_ptr<Parts> p_;
};

// Runs until a signal (a clean stop: 0, or 1 if the detach fails), an error
// (a start that fails, a re-attach that fails, the loop's poll() failing:
// non-zero), or an end of the scheduler by the kernel that the configuration's
// restart policy does not cover: an ejection without restart.on_eject, a
// restart request without restart.on_request, or one more than restart.max
// within restart.window (1). Every way out gives the processes back and
// detaches. Returns the process exit status.
int run_daemon(DaemonConfig cfg, Reloader::Loader reload);

}  // namespace akts
