// The oracle's schedule file and its replay.
#include "reasoning/oracle.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/text.h"

namespace akts {
namespace {

Error bad_schedule(std::string what) {
  return make_error(ErrorKind::kInvalidArgument, "oracle schedule: " + std::move(what));
}

}  // namespace

double OracleSchedule::length_s() const { return steps.empty() ? 0 : steps.back().at_s; }

Result<OracleSchedule> OracleSchedule::parse(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_schedule("not valid JSON");
  if (!j.is_object()) return bad_schedule("must be an object {\"steps\": [...]}");
  OracleSchedule s;
  for (const auto& [key, v] : j.items()) {
    if (key == "loop") {
      if (!v.is_boolean()) return bad_schedule("\"loop\" must be true or false");
      s.loop = v.get<bool>();
    } else if (key == "steps") {
      if (!v.is_array() || v.empty()) return bad_schedule("\"steps\" must be a non-empty array");
      if (v.size() > 10000) return bad_schedule("more than 10000 steps");
      for (size_t i = 0; i < v.size(); ++i) {
        const auto& st = v[i];
        if (!st.is_object() || st.size() != 2 || !st.contains("at") || !st.contains("policy"))
          return bad_schedule(fmt::format("step {} must be {{\"at\": \"8s\", \"policy\": \"latency\"}}", i));
        if (!st["at"].is_string()) return bad_schedule(fmt::format("step {}: \"at\" must be a duration such as \"8s\"", i));
        auto d = parse_duration(st["at"].get_ref<const std::string&>(), fmt::format("step {} at", i));
        if (!d) return d.error();
        OracleStep step;
        step.at_s = std::chrono::duration<double>(*d).count();
        if (st["policy"].is_string())
          step.policy = st["policy"].get<std::string>();
        else if (st["policy"].is_number_unsigned())
          step.policy = std::to_string(st["policy"].get<uint64_t>());
        else
          return bad_schedule(fmt::format("step {}: \"policy\" must be a policy name or a slot number", i));
        if (!s.steps.empty() && step.at_s <= s.steps.back().at_s)
          return bad_schedule(fmt::format("step {} at {:g} s is not after the previous step", i, step.at_s));
        s.steps.push_back(std::move(step));
      }
    } else {
      return bad_schedule(fmt::format("unknown key \"{}\" (expected loop, steps)", excerpt(key)));
    }
  }
  if (s.steps.empty()) return bad_schedule("missing \"steps\"");
  if (s.steps.front().at_s != 0) return bad_schedule("the first step must be at \"0s\"");
  if (s.loop && s.steps.size() < 2) return bad_schedule("a looping schedule needs at least two steps");
  return s;
}

Result<OracleSchedule> OracleSchedule::load(const std::string& path) {
  std::ifstream f(path);
  if (!f) return sys_error(fmt::format("cannot read the oracle schedule {}", path), errno);
  std::stringstream ss;
  ss << f.rdbuf();
  auto s = parse(ss.str());
  if (!s) return make_error(ErrorKind::kInvalidArgument, path + ": " + s.error().message);
  return s;
}

Result<std::unique_ptr<Oracle>> Oracle::create(OracleSchedule s, const std::vector<SlotInfo>& slots) {
  std::vector<uint32_t> resolved;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const auto& p = s.steps[i].policy;
    std::optional<uint32_t> slot;
    for (const auto& f : slots)
      if (f.name == p || std::to_string(f.slot) == p) slot = f.slot;
    if (!slot) return bad_schedule(fmt::format("step {}: '{}' is not a loaded policy or filled slot", i, excerpt(p)));
    resolved.push_back(*slot);
  }
  return std::unique_ptr<Oracle>(new Oracle(std::move(s), std::move(resolved)));
}

size_t Oracle::step_at(double elapsed_s) const {
  // With loop, the last step's time is the period: it marks the schedule's end and restarts at step 0.
  if (s_.loop && s_.length_s() > 0) elapsed_s = std::fmod(elapsed_s, s_.length_s());
  size_t i = 0;
  while (i + 1 < s_.steps.size() && s_.steps[i + 1].at_s <= elapsed_s) ++i;
  return i;
}

ControllerDecision Oracle::decide(const Window& w, const ControllerContext& ctx) {
  if (!t0_) t0_ = w.t_s - w.period_s;
  double elapsed = w.t_s - *t0_;
  current_ = step_at(elapsed);
  uint32_t want = slots_[current_];
  if (ctx.locked || want == ctx.running || !ctx.filled(want))
    return {std::nullopt, fmt::format("step {} ({}) at {:.1f} s", current_, s_.steps[current_].policy, elapsed)};
  return {want, fmt::format("schedule: step {} at {:g} s says {} (elapsed {:.2f} s)", current_,
                            s_.steps[current_].at_s, s_.steps[current_].policy, elapsed)};
}

nlohmann::json Oracle::state() const {
  return {{"step", current_}, {"steps", s_.steps.size()}, {"loop", s_.loop}, {"started", t0_.has_value()}};
}

}  // namespace akts
