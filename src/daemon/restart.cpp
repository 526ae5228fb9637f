// RestartGate and restart_after_exit: the daemon's answer to the kernel ending its scheduler.
#include "daemon/restart.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace akts {

bool RestartGate::allow(std::chrono::steady_clock::time_point now) {
  while (!times_.empty() && now - times_.front() > p_.window) times_.pop_front();
  if (times_.size() >= p_.max) return false;
  times_.push_back(now);
  return true;
}

void report_exit(const ExitInfo& ei) {
  spdlog::error("the kernel ejected the scheduler: {} ({}){}", ei.kind_name, ei.reason,
                ei.message.empty() ? "" : ": " + ei.message);
  if (!ei.dump.empty()) spdlog::error("debug dump:\n{}", ei.dump);
}

RestartOutcome restart_after_exit(const ExitInfo& ei, int64_t restart_flag, const RestartPolicy& policy,
                                  RestartGate& gate, PlaneControl& plane, PlaneOptions opts, uint32_t safe_slot,
                                  const RestartHooks& hooks, std::chrono::steady_clock::time_point now) {
  RestartOutcome out;
  out.requested = restart_flag > 0 && (ei.exit_code & restart_flag) != 0;
  if (out.requested)
    spdlog::warn("the kernel asked akts to restart: {} ({}){}", ei.kind_name, ei.reason,
                 ei.message.empty() ? "" : ": " + ei.message);
  else
    report_exit(ei);
  if (!(out.requested ? policy.on_request : policy.on_eject)) return out;
  if (!gate.allow(now)) {
    spdlog::error("{} restarts within {} s already (restart.max): giving up", gate.recent(), policy.window.count());
    return out;
  }
  // Nothing else touches the plane while it reloads: the workers pause. (The daemon's thread runs this, so the
  // control socket waits for it.)
  const auto began = std::chrono::steady_clock::now();
  hooks.pause();
  out.slot = out.requested ? plane.selected() : safe_slot;
  opts.initial_slot = out.slot;
  auto st = plane.reload(opts);
  if (st) {
    hooks.reapply();
    st = plane.attach();
  }
  if (!st) {
    spdlog::error("could not attach again: {}", st.error().to_string());
    return out;
  }
  hooks.reloaded();
  hooks.resume();
  out.restarted = true;
  out.took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
  out.why = fmt::format("{} ({}): loaded and attached again in {:.0f} ms on {}", ei.kind_name, ei.reason, out.took_ms,
                        out.slot < opts.policies.size() ? fmt::format("slot {} ({})", out.slot, opts.policies[out.slot])
                                                        : std::string("the built-in default"));
  spdlog::info("{}", out.why);
  return out;
}

}  // namespace akts
