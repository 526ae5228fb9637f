// The oracle controller: knows the load's phases (the paper's oracle-driven
// switching, for experiments whose phases are known), in one of two forms.
//
// A schedule of times, relative to the first window the controller sees; with
// "loop" the schedule repeats:
//
//   {"loop": false, "steps": [{"at": "0s", "policy": "throughput"},
//                             {"at": "8s", "policy": "latency"},
//                             {"at": "16s", "policy": "throughput"}]}
//
// Or a policy per phase, on the load's own clock: the load (a load generator,
// an application) says each phase's name as it begins (v1.push "phase",
// Window::app_phase), and the oracle runs that phase's policy from the first
// window that carries it (at most a period after the phase began, however
// slow the machine or late the load's start). Before any phase is said, after
// the load said it is over (v1.push phase null), for a phase the map does not
// name, and in a daemon restarted mid-phase until the next phase is said, it
// changes nothing:
//
//   {"phases": {"steady": "throughput", "burst": "latency"}}
//
// A policy is a name or a slot number; the daemon checks every step (or
// phase) against the filled slots when the controller is chosen, and refuses
// the schedule (changing nothing) if one names no policy.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "reasoning/controller.h"

namespace akts {

struct OracleStep {
  double at_s = 0;
  std::string policy;  // as written
};

struct OracleSchedule {
  bool loop = false;
  std::vector<OracleStep> steps;  // sorted by at_s, the first at 0 (empty with phases)
  std::vector<std::pair<std::string, std::string>> phases;  // phase name -> policy as written (empty with steps)
  double length_s() const;        // the last step's time (a loop's period is the last step's time)
  static Result<OracleSchedule> parse(std::string_view text);
  static Result<OracleSchedule> load(const std::string& path);
};

class Oracle : public Controller {
 public:
  // Resolves every step against the filled slots; refuses a step naming none.
  static Result<std::unique_ptr<Oracle>> create(OracleSchedule s, const std::vector<SlotInfo>& slots);
  std::string name() const override { return "oracle"; }
  ControllerDecision decide(const Window& w, const ControllerContext& ctx) override;
  nlohmann::json state() const override;

 private:
  Oracle(OracleSchedule s, std::vector<uint32_t> slots) : s_(std::move(s)), slots_(std::move(slots)) {}
  size_t step_at(double elapsed_s) const;
  ControllerDecision decide_phase(const Window& w, const ControllerContext& ctx);
  OracleSchedule s_;
  std::vector<uint32_t> slots_;  // per step, or per phase
  std::string phase_;            // the last phase seen (phases form)
  std::optional<double> t0_;
  size_t current_ = 0;
};

}  // namespace akts
