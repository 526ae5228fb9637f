// The learner: a controller whose only required setting is the objective.
// Window by window it runs, among the filled slots, the policy with the most
// batch work of those it expects to meet the objective at the present load,
// and it learns that expectation from what it sees under each policy.
//
// The load of a window (load(), features.h): the application's requests in
// flight (running + waiting) when the window has them, else the latency-
// critical tasks running or waiting on average. It is binned on a half-octave
// scale (bin_of(): [0, 0.5), then bins a factor sqrt(2) wide: [0.5, 0.71),
// [0.71, 1), [1, 1.41), ... [2, 2.83), [2.83, 4), ... [181, 256), [256, inf)),
// so two requests in flight and three are two loads, and a batching engine's
// 64 have a bin of their own, not the last. A decision is made on the peak
// load of the last load_hold (5) windows, so a burst's lulls read as
// the burst; an outcome is credited at the peak load over the time it spans
// (a latency of L ms that ended up to S ms ago is the load's of the last L + S
// ms, below). Once a window has had
// the application's figures, a window without them (a scrape the starved
// server answered late) is credited to nothing and decided on the last
// application load: the two loads are not one scale.
//
// Per policy (by name: slots move) and per load bin it counts windows that met
// and missed the objective, and sums the batch share. Evidence is shared
// along the load, as a policy that met the objective at some load should at
// a lower one: a policy's misses at bin b count its misses at b and below,
// its meets those at b and above. It expects a policy to meet the objective
// at b (`good`) when that evidence has at least min_evidence windows and
// a miss rate, (misses + 1/2) / (windows + 1), of at most miss_rate.
//
// Evidence ages: every count is discounted by half every half_life_s (10 min)
// of the learner's clock: the wall-clock time of its first window
// (Window::unix_s; 0 for windows without it), then the windows' periods
// added, so a step of the wall clock during a run neither freezes nor rushes
// it. A discount, not a sliding window: it needs no history of windows, only
// a count and the time it was last aged per cell, so the state file stays
// small and ages across a restart (a cell read from the file is aged by the
// time since it was last aged, on the wall clock; one dated after the new
// run's start counts as of that start, and a back-off is never longer than
// retry_max_s from then); and old evidence fades smoothly instead of
// vanishing at once. Verdicts are taken back: a policy judged not to serve a
// load (known there and not good, or an exploration there that ended with a
// verdict, below) is tried again after a back-off of retry_after_s (1 min)
// doubled at each verdict since it last served there, at most retry_max_s
// (1 h): what it knew at that load itself is then forgotten (once the retry
// runs), so it may be explored there. A verdict that shows a failure (a miss
// of its own, the early signal, known not to serve) holds at heavier loads
// too, until its back-off ends (Cell::failed_until), as a miss counts upward:
// a policy that failed a lighter load is not explored at a heavier one
// meanwhile. The others (the load rose, a miss not its own, out of windows,
// a lock) hold at their load only: they show nothing about a heavier one.
// With no policy good, a policy not yet known at the present load is tried
// unless it backs off at that load itself. Misses at lighter loads are kept, and
// still count at that load: a retry cannot lift a ban at a lighter one. Once
// it is known good there, its verdicts there are cleared, and its failures at
// lighter loads no longer hold above them.
//
// A window is credited to the policy that ran all of it, with an outcome that
// is that policy's own (each limit's two parts, Limit::ended_ms and
// waiting_ms; with several limits, Learner::credit combines them: a miss of
// one is a miss, one past its max by no doing of this policy is no outcome):
//   - the oldest still waiting past the objective's ceiling is a miss (a
//     starved server answers nothing, so only the wait shows it): the
//     policy's own when the wait began under it (waiting <= ran), or when
//     nothing ended in the window (no progress) and it has waited past the
//     ceiling while the policy ran (ran - a period > the ceiling): a backlog
//     the last policy left, being answered, is not blamed on this one;
//     every such miss needs the policy to have run past the ceiling;
//   - else (no wait past the ceiling, or one that is not the policy's) the
//     p99 of what ended in the window: a latency of L ms whose end
//     lies up to S ms before the window's end began L + S ms before it, so it
//     counts only when the policy has run at least L + S ms (S: the window for
//     pushed latencies, the time since the scrape before for a latency
//     histogram's; Window::app_latency_span_ms);
//   - a wait still under the ceiling is no outcome: it may yet end either side
//     of it (counting it as met would credit a policy with the windows in
//     which its backlog was still building).
// What runs at the learner's first window has run since before it: its
// windows count at once. A window with nothing ended and nothing waiting
// counts as met only at no load (nothing latency-critical waited); elsewhere
// it counts toward the batch share only.
//
// Each window, not locked (decide()):
//   - good policies at the present bin: the one with the highest batch share
//     (at that bin, else at the nearest bin with any, else 1: a policy never
//     seen run might give batch work the most). Away from a
//     policy not good here at once; from a good one to a better one only when
//     it gives batch work min_gain (3%) more, preferred `relax_after` windows
//     in a row.
//   - none good: the running policy stays until it is known at this bin
//     (min_evidence credited windows: two policies it knows nothing of do not
//     trade places), unless it has missed more than met there; then, or once
//     it is known not good there, a policy not yet known there and not
//     missing more than meeting there is tried, the one with the most batch
//     work: only trying can show it good. With no such policy, the one least
//     expected to miss (posterior mean, prior 1/2): of those within 0.05 of
//     the lowest (one outcome aged apart reads apart), the running policy,
//     else the one with more batch work; when both are known there, away from
//     the running policy only for one expected to miss less by at least
//     miss_rate (policies that miss alike would otherwise trade places on
//     the evidence each gathers).
//   - exploring: when the present window met the objective, the load's bin has
//     held for explore_stable (10) windows after the one it changed in, and a
//     policy with more batch work than the choice is unknown at this bin and
//     not backing off there (nor failed at a lighter load within its back-off),
//     it runs until it is known at the bin it began at,
//     for at most explore_max (30) windows whatever the objective's ceiling
//     (shorter than a phase; a policy whose own latencies take longer than
//     that to be its own, p99 plus a period, cannot be shown good by one).
//     It ends at once when the load's bin rises out of the one it began at
//     (the load moved, or the policy moved it: a closed loop) and when, for
//     any limit, the oldest wait that began under it passes early_wait (1/2)
//     of that limit's max (an early signal, before a full ceiling of
//     violation): verdicts without
//     a count; when the bin falls (no verdict: a lighter load); and at its
//     first window that misses the objective: a miss of its own (credit()
//     says whose a window's outcome is) counts as min_evidence misses at the
//     load it was credited at, the experiment's answer; one that is not its
//     own is a verdict without a count. An exploration that did not show the
//     policy good goes back to the policy that ran before it (the load it
//     returns to may be one the exploration raised, a closed loop, where
//     nothing is known yet), proposed until the arbiter takes it or something
//     else moves the selection. Something else moving the selection away
//     from the explored policy ends it without a count, and with a verdict
//     when a lock (the breaker's, an operator's) did. A retry forgets what it
//     knew at that load once the retry runs. At most one per explore_every
//     windows.
//
// Learnt state persists in a file of its own (LearnerOptions::state_path,
// never the daemon's state file: the config refuses that path, its lock and
// selection files, the decision log, the audit log and the socket):
// {"format": "akts learner state",
// "version": 4, "objectives": {OBJECTIVE JSON: {"policies": {NAME: cells}}}}, cells
// being kBins-long arrays "met", "missed", "share_sum", "share_n" (aged counts),
// "at" (the clock, in seconds, they were last aged at), "tries" (verdicts
// since it last served), "retry_at" (the clock it may be tried again at; 0:
// no verdict) and "failed_until" (the clock a failure holds at heavier loads
// until; 0: none). A version 3 file is read as it is, with no failure carried
// upward. A version 1 file (counts without ages) or 2 (octave bins) is set
// aside as any file of this format that fails to load (below): its evidence has
// no age to keep, or no half-octave bin to go to.
// It is read at the first window (when the objective is known; a regular file
// of at most 16 MiB, the one read decide() waits for) and written, on a thread
// of its own (decide() never waits for a write), every
// save_every windows with news and when the controller goes; every objective's
// and policy's entry is kept, checked and rewritten from what was read. A file
// of this format that fails to load (a field of the wrong type, counts that
// are not counts) is reported (state(), the log), set aside whole as
// PATH.unreadable (.1 to .9 when taken; never over one), and learning starts
// afresh. A file that is not of this format (unparsable JSON included), not a
// regular file, cannot be read, or cannot be set aside is reported and never
// written (learning goes on in memory, and state() says so all along).
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "reasoning/controller.h"

namespace akts {

struct LearnerOptions {
  double miss_rate = 0.1;        // the share of windows a good policy may miss
  uint32_t min_evidence = 5;     // credited windows before a policy's estimate at a load counts
  uint32_t relax_after = 3;      // windows a better good policy must be preferred before a switch to it
  double min_gain = 0.03;        // ... and how much more batch share it must give (relative): 3%
  uint32_t load_hold = 5;        // windows whose peak load a decision is made on
  uint32_t explore_stable = 10;  // windows the load's bin must have held before an exploration
  uint32_t explore_every = 50;   // windows between explorations (at most)
  double max_evidence = 400;     // per bin and policy, older evidence is scaled down past this
  double half_life_s = 600;      // evidence's weight halves every this long (the learner's clock)
  uint32_t explore_max = 30;     // an exploration's windows at most, whatever the objective's ceiling
  double early_wait = 0.5;       // an exploration ends once a wait that began under it passes this share of the ceiling
  double retry_after_s = 60;     // a verdict's first back-off; doubled at each verdict since the policy last served
  double retry_max_s = 3600;     // ... up to this
  std::string state_path;        // "" keeps what it learns in memory only
  uint32_t save_every = 50;      // windows between writes of the state file (when it learnt something)

  bool operator==(const LearnerOptions&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

class Learner : public Controller {
 public:
  static constexpr size_t kBins = 20;
  struct Cell {
    double met = 0, missed = 0;        // credited windows (aged)
    double share_sum = 0, share_n = 0;  // batch share, every window it ran (aged)
    double at = 0;                     // the learner's clock (s) the counts were last aged at
    double tries = 0;                  // verdicts against it here since it last served here
    double retry_at = 0;               // the clock (s) it may be tried again here at; 0: no verdict
    double failed_until = 0;           // ... when that verdict was a failure: it holds at heavier loads until then
  };
  using Cells = std::array<Cell, kBins>;
  struct Estimate {
    double windows = 0, miss_rate = 0.5, share = 1;  // share: 1 (optimism) for a policy never seen run
    bool good = false, known = false;  // known: windows >= min_evidence
    double retry_in_s = 0;    // how long until it may be explored here (0: it may): its back-off here or a failure's lighter
    double retry_here_s = 0;  // its back-off here alone
  };

  explicit Learner(LearnerOptions o = {});
  ~Learner() override;  // hands the last state to its writer and waits for the write
  Learner(const Learner&) = delete;
  Learner& operator=(const Learner&) = delete;
  std::string name() const override { return "learner"; }
  ControllerDecision decide(const Window& w, const ControllerContext& ctx) override;
  nlohmann::json state() const override;

  static double load(const Window& w);
  static size_t bin_of(double load);
  Estimate estimate(const std::string& policy, size_t bin) const;
  // Hands the state to the writer (a no-op without a file, or one it must not write); wait_saved() waits for
  // the write and returns its outcome, the error naming the path.
  void save();
  Status wait_saved();

  static constexpr const char* kFormat = "akts learner state";
  static constexpr size_t kMaxFileBytes = 16 << 20;

 private:
  void load_state(const Objective& obj);
  std::string read_state(const Objective& obj);  // "" when loaded (or no file); else why not
  void credit(const Window& w, const ControllerContext& ctx);
  Cell& aged(const std::string& policy, size_t bin);  // the cell, aged to now
  enum class Verdict { kNoShow, kFailed };  // kFailed: it was shown not to serve (it holds at heavier loads too)
  void judge(const std::string& policy, size_t bin, Verdict v = Verdict::kNoShow);  // a verdict: it backs off there
  void forget(const std::string& policy, size_t bin);  // what its estimate there sums, forgotten
  void end_exploration(const std::string& policy, const char* how);
  std::string name_of(const ControllerContext& ctx, uint32_t slot) const;
  std::map<std::string, Cells>& cells() { return all_[objective_key_]; }
  const std::map<std::string, Cells>& cells() const;
  void writer_loop();
  void warn_once(const std::string& what);

  LearnerOptions o_;
  // Every objective's cells, by policy name; the present objective's under objective_key_.
  std::map<std::string, std::map<std::string, Cells>> all_;
  std::string objective_key_;
  std::string load_error_;
  bool writable_ = true;  // false: the file is not ours to write (not of our format, unreadable, not set aside)
  bool loaded_ = false, dirty_ = false;
  uint32_t since_save_ = 0;
  std::string last_warning_;
  // The writer: the latest snapshot to write, and the outcome of the last write.
  std::thread writer_;
  std::mutex wmu_;
  std::condition_variable wcv_;
  std::optional<std::string> pending_;
  bool writing_ = false, stop_ = false;
  Status last_write_;
  // Application load: once seen, windows without it are not credited.
  bool app_seen_ = false;
  double last_app_load_ = 0;
  bool last_credit_missed_ = false;
  size_t last_credit_bin_ = 0;
  // What ran: the slot, its policy, and for how long (ms) without a switch.
  uint32_t ran_slot_ = AKTS_SLOT_NONE;
  double ran_ms_ = 0;
  bool seen_a_window_ = false;
  // The decision state.
  uint32_t preferred_ = AKTS_SLOT_NONE, preferred_for_ = 0;
  uint32_t exploring_ = AKTS_SLOT_NONE, explore_left_ = 0;
  size_t explore_bin_ = 0;  // the load the exploration was started at
  std::string explore_name_;  // the policy explored
  uint32_t explore_from_ = AKTS_SLOT_NONE;  // the slot that ran before it ...
  std::string explore_from_name_;           // ... and its policy
  bool explore_forget_ = false;             // a retry: forget what it knew here once it runs
  bool returning_ = false;                  // back to explore_from_ is proposed until it runs
  uint32_t exploring_was_ = AKTS_SLOT_NONE;  // the slot explored, while returning
  bool clock_started_ = false;
  std::string last_exploration_;  // how the last exploration ended
  double now_s_ = 0;         // the learner's clock: its first window's Window::unix_s (else 0) plus the periods since
  uint64_t windows_ = 0, last_explore_ = 0, explorations_ = 0, credited_ = 0;
  std::optional<uint64_t> first_exploration_end_;
  size_t last_bin_ = 0;
  // The loads of the last windows (a ring): a latency is the load's over its whole span, and a decision's load is
  // the peak of the last load_hold windows, so a burst's lulls read as the burst.
  static constexpr size_t kLoadMemory = 64;
  std::array<double, kLoadMemory> loads_{};
  uint64_t loads_n_ = 0;
  double peak_load(size_t windows) const;
  uint32_t bin_stable_for_ = 0;
  std::string running_name_;  // the policy running at the last window ("" for the built-in default)
  double last_load_ = 0;
};

}  // namespace akts
