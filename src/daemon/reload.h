// Reload: the daemon's config read again and what changed in it applied to the running daemon, or the whole file
// refused. `akts reload` (which `systemctl reload akts` runs), v1.reload and SIGHUP ask for one.
//
// The contract (docs/deploy.md, "Reload"):
//  - The file is read and checked as at start (`akts daemon --check-config`), with the daemon's own flags merged
//    again: a flag still wins over the file.
//  - A reload applies what differs from the config the daemon last took (at start, or at its last reload that
//    passed). A key the file leaves as it was keeps its live value: an operator's v1.objective or `akts
//    controller` stays until the file itself changes that key.
//  - Live keys (config/config_diff.h's kLiveKeys): classes, objective, controller (its name and settings, and
//    the arbiter's dry_run, min_dwell, max_switches_per_minute, operator_grace), telemetry, decision_log.
//  - The other keys (kRestartKeys) are read at start only. A file that changes one is refused, the refusal naming
//    each; a restart applies them (`systemctl restart akts`: the selection and the explicit classes survive it
//    through the state file).
//  - Refused whole, nothing changed, the error in the log and in v1.status's "reload": a file that does not read,
//    parse or pass a check; a restart key changed; a part that cannot be built (a metrics URL's scraper, a
//    controller its factory refuses, a decision log at a new path that does not open).
//  - Every reload keeps the selection, a hold and an operator's grace, the explicit classes, the decision history
//    and the windows (their numbers and clock run on; so do the telemetry's counters).
//  - classes: the new rules judge every process at a pass that starts at once (ProcessTracker::set_rules).
//  - objective: set as v1.objective sets it (logged, source "reload"). The learner files evidence under the new
//    objective from the next window, starting from what it has for that objective (nothing, the first time), as
//    after a restart; the old objective's evidence stays (in memory and in its state file).
//  - controller: the running controller (the file's, or one an operator chose) runs on, with what it learnt,
//    unless the file names another controller (that one is built) or changes the running one's own settings (it
//    is built anew); another controller's settings only shape the ones an operator may choose later. Of the
//    arbiter's rules, those the file changed apply (a dry run an operator turned on stays unless the file changes
//    dry_run). A new learner decides from the window after its predecessor is gone, which writes its state file as it
//    goes: the new one reads that (a learner without a state file starts afresh). An oracle's schedule file is
//    read when the oracle is built: an edit to the file under the same name needs `akts controller oracle`.
//  - telemetry: new sources and a new reasoning thread when it changed; the reload waits for the window under way.
//  - decision_log: when it changed, the lines already queued reach the old file (the reload waits for them), the
//    rest the new one. A file moved away (logrotate) is followed by a new one at the next line, reload or not.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "config/config_diff.h"
#include "config/daemon_config.h"
#include "daemon/parts.h"

namespace akts {

// What a reload changes: the daemon's parts, and its config, which a reload that passes replaces.
struct ReloadTargets {
  DaemonConfig& cfg;
  Tracking& tracking;
  Reasoning& reasoning;
  ExecutionPlane& plane;
  PushedSamples& pushed;
};

class Reloader {
 public:
  // The config as the daemon's start read it: the file and the flags, checked (daemon_command.cpp).
  using Loader = std::function<Result<DaemonConfig>()>;
  explicit Reloader(Loader load) : load_(std::move(load)) {}

  // One reload now, asked by `source` ("SIGHUP", "socket"). Returns the outcome ({ok: true, changed: [keys],
  // took_ms, ...}), or the refusal as an error of kind kInvalidArgument (the file's, or what it asks for that
  // cannot be built); kSystem only when an exception stopped it while applying (what came before stays: state()'s
  // "partial"). Either way it is logged and kept for state(). On the loop's thread only.
  Result<nlohmann::json> reload(const ReloadTargets& t, const std::string& source);
  // A SIGHUP asks for a reload at the loop's next tick: a storm of them is one reload per tick at most.
  void request() { pending_ = true; }
  bool take_request() { return std::exchange(pending_, false); }
  // {"reloads", "refused", "failed", "last": the last outcome with "at" (RFC 3339), "source", "ok", "changed" or
  // "error" and "partial"}.
  nlohmann::json state() const;

 private:
  Result<std::vector<std::string>> apply(const ReloadTargets& t);
  Loader load_;
  bool pending_ = false;
  uint64_t reloads_ = 0, refused_ = 0, failed_ = 0;  // failed: stopped by an exception while applying
  nlohmann::json last_ = nullptr;
};

// Whether a SIGHUP means the daemon's terminal closed (it stops cleanly, as SIGHUP made it before it meant
// reload) rather than an operator's reload. Only a daemon started on a terminal (one of 0, 1, 2 a terminal then)
// can lose one; for it, a SIGHUP is the terminal's when
//  - the kernel sent it (a hang-up) and the terminal has hung up: a descriptor that was one fails isatty() with
//    EIO now, or
//  - its parent sent it (the one at start or the one now): what a shell (its jobs on exit), sudo (which relays
//    its own terminal's SIGHUP to the command it runs in a pty of its own, Debian's use_pty) or script do when
//    their terminal goes. So `kill -HUP` from the shell that started it stops it too: in a terminal, reload with
//    `akts reload` (or kill -HUP from another shell).
// Any other process's kill -HUP reloads; so does every SIGHUP of a daemon with no terminal (systemd, nohup,
// setsid with its output redirected), whatever sent it (runit's sv hup is its parent's).
class TerminalWatch {
 public:
  TerminalWatch();  // notes which of 0, 1, 2 are terminals now
  // `sender`: the signal's sending process (SignalFd::Signal::sender; 0: the kernel).
  bool closed(uint32_t sender) const;

 private:
  std::vector<int> ttys_;
  uint32_t parent_;  // at start
};

}  // namespace akts
