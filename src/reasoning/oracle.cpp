// The oracle's schedule file and its replay.
#include "reasoning/oracle.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/text.h"
#include "telemetry/sampler.h"

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
      if (j.contains("phases")) return bad_schedule("give \"steps\" (times) or \"phases\" (names), not both");
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
    } else if (key == "phases") {
      if (!v.is_object() || v.empty() || v.size() > 64)
        return bad_schedule("\"phases\" must be an object of 1 to 64 phase names, each to a policy");
      for (const auto& [name, pol] : v.items()) {
        if (auto st = PushedSamples::check_phase(name); !st) return bad_schedule(st.error().message);
        if (pol.is_string())
          s.phases.emplace_back(name, pol.get<std::string>());
        else if (pol.is_number_unsigned())
          s.phases.emplace_back(name, std::to_string(pol.get<uint64_t>()));
        else
          return bad_schedule(fmt::format("phase {}: the policy must be a name or a slot number", quote_escaped(name)));
      }
    } else {
      return bad_schedule(fmt::format("unknown key \"{}\" (expected loop, steps, phases)", excerpt(key)));
    }
  }
  if (!s.phases.empty()) {
    if (s.loop) return bad_schedule("\"loop\" is for a schedule of times, not of phases");
    return s;
  }
  if (s.steps.empty()) return bad_schedule("missing \"steps\" (or \"phases\")");
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
  auto resolve = [&](const std::string& p) -> std::optional<uint32_t> {
    std::optional<uint32_t> slot;
    for (const auto& f : slots)
      if (f.name == p || std::to_string(f.slot) == p) slot = f.slot;
    return slot;
  };
  for (size_t i = 0; i < s.steps.size(); ++i) {
    auto slot = resolve(s.steps[i].policy);
    if (!slot)
      return bad_schedule(
          fmt::format("step {}: '{}' is not a loaded policy or filled slot", i, excerpt(s.steps[i].policy)));
    resolved.push_back(*slot);
  }
  for (const auto& [name, policy] : s.phases) {
    auto slot = resolve(policy);
    if (!slot)
      return bad_schedule(fmt::format("phase {}: '{}' is not a loaded policy or filled slot", quote_escaped(name),
                                      excerpt(policy)));
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

ControllerDecision Oracle::decide_phase(const Window& w, const ControllerContext& ctx) {
  phase_ = w.app_phase;
  if (w.app_phase.empty()) return {std::nullopt, "no phase holds (none said yet, or the load said it is over)"};
  size_t i = 0;
  while (i < s_.phases.size() && s_.phases[i].first != w.app_phase) ++i;
  if (i == s_.phases.size()) return {std::nullopt, fmt::format("phase {} names no policy", quote_escaped(w.app_phase))};
  const uint32_t want = slots_[i];
  const std::string since =
      w.app_phase_age_ms ? fmt::format(" (began {:.0f} ms before the window's end)", *w.app_phase_age_ms) : "";
  if (ctx.locked || want == ctx.running || !ctx.filled(want))
    return {std::nullopt, fmt::format("phase {}: {}{}", quote_escaped(w.app_phase), s_.phases[i].second, since)};
  return {want, fmt::format("phase {} says {}{}", quote_escaped(w.app_phase), s_.phases[i].second, since)};
}

ControllerDecision Oracle::decide(const Window& w, const ControllerContext& ctx) {
  if (!s_.phases.empty()) return decide_phase(w, ctx);
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
  if (!s_.phases.empty())
    return {{"phases", s_.phases.size()}, {"phase", phase_.empty() ? nlohmann::json(nullptr) : nlohmann::json(phase_)}};
  return {{"step", current_}, {"steps", s_.steps.size()}, {"loop", s_.loop}, {"started", t0_.has_value()}};
}

}  // namespace akts
