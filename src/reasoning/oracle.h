// The oracle controller: follows a schedule written in advance (the paper's
// oracle-driven switching, for experiments whose phases are known). Times
// are relative to the first window the controller sees; with "loop" the
// schedule repeats.
//
//   {"loop": false, "steps": [{"at": "0s", "policy": "throughput"},
//                             {"at": "8s", "policy": "latency"},
//                             {"at": "16s", "policy": "throughput"}]}
//
// A policy is a name or a slot number; the daemon checks every step against
// the filled slots when the controller is chosen, and refuses the schedule
// (changing nothing) if one names no policy.
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
  std::vector<OracleStep> steps;  // sorted by at_s, the first at 0
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
  OracleSchedule s_;
  std::vector<uint32_t> slots_;  // per step
  std::optional<double> t0_;
  size_t current_ = 0;
};

}  // namespace akts
