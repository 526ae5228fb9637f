// The control API's backend in the daemon (control::ControlBackend): each method of the socket, the CLI and MCP
// answered from the execution plane, the tracker, the reasoning plane and the policy repository; admission's
// gates 2 to 5 (gate 5, the canary, in daemon/canary.h).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "config/daemon_config.h"
#include "control/api.h"
#include "daemon/canary.h"
#include "daemon/plane_control.h"
#include "daemon/tracker_worker.h"
#include "exec/execution_plane.h"
#include "reasoning/reasoning_plane.h"
#include "repository/policy_repository.h"
#include "telemetry/sampler.h"

namespace akts {

class DaemonBackend : public control::ControlBackend {
 public:
  using json = nlohmann::json;
  // `persist` writes the state file (before a switch, a hold or a class is answered); `health` is the
  // telemetry's health report.
  DaemonBackend(ExecutionPlane& plane, TrackerWorker& tracker, ReasoningPlane& reasoning, PushedSamples& pushed,
                std::function<json()> health, const DaemonConfig& cfg, std::function<void()> persist);
  DaemonBackend(const DaemonBackend&) = delete;  // its canary calls back into this one
  DaemonBackend& operator=(const DaemonBackend&) = delete;

  std::vector<control::PolicyView> policies() const override;
  Result<std::array<uint64_t, AKTS_MAX_PARAMS>> param_values(uint32_t slot) const override;
  Status set_param(uint32_t slot, const ParamDesc& d, uint64_t value) override;
  uint32_t slot_count() const override { return AKTS_MAX_SLOTS; }
  uint32_t selected() const override { return plane_.selected(); }
  uint32_t effective() const override { return plane_.effective_slot(); }
  // An operator's switch: through the arbiter, so a hold refuses it and controllers give way.
  Result<uint32_t> select(uint32_t slot) override;
  Status hold(uint32_t slot, std::chrono::milliseconds d) override;
  bool release() override;
  Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) override;
  json telemetry(size_t last) const override;
  json objective() const override { return reasoning_.objective().to_json(); }
  json policy_record(const std::string& name) const override;
  // Admission's gates 2 to 4 (src/admission/), then gate 5's start when a canary is asked for (poll_canary()
  // judges it): each verdict goes back with its evidence.
  Result<json> admit(const AdmitRequest& r) override;
  json admission() const override;
  Result<json> evict(uint32_t slot) override;
  Result<size_t> record_result(const std::string& policy, const ResultRecord& r) override;
  Status set_objective(const Objective& objective) override;
  json decisions(size_t limit) const override { return reasoning_.log(limit); }
  Result<size_t> push_latencies(const std::vector<double>& ms) override { return pushed_.push(ms); }
  Result<size_t> push_tpot(const std::vector<double>& ms, const std::vector<double>& decode_ms) override {
    return pushed_.push_tpot(ms, decode_ms);
  }
  Status push_waiting(double waiting_ms) override { return pushed_.report_waiting(waiting_ms); }
  Status push_phase(const std::string& name) override { return pushed_.say_phase(name); }
  json status() const override;
  Result<json> stats(bool reset_longest) override;
  Status classify(uint32_t pid, uint32_t cls) override;
  Result<json> class_of(uint32_t pid) override;
  Result<json> hint(uint32_t tid, std::optional<std::chrono::nanoseconds> remaining) override;
  Status unclassify(uint32_t pid) override;

  // v1.reload and status's "reload": the daemon's reload (daemon/reload.h), given once the daemon has one.
  struct ReloadHooks {
    std::function<Result<json>()> reload;
    std::function<json()> state;
  };
  void set_reload(ReloadHooks h) { reload_ = std::move(h); }
  Result<json> reload() override;

  // Gate 5, on the daemon's loop at every tick: each new telemetry window of a running canary is judged.
  void poll_canary() { canary_.poll(); }
  // The plane was loaded again (the kernel asked for a restart, or ejected it): a running canary fails, and
  // BPF's counters start afresh (stats' "loads").
  void plane_reloaded() {
    ++loads_;
    canary_.plane_reloaded();
  }

 private:
  static json name_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
  std::string policy_name(uint32_t slot) const;
  json breaker_json() const;
  json guard_json() const;
  void put_record(const PolicyRecord& rec);

  ExecutionPlane& plane_;
  ExecutionPlaneControl control_;
  TrackerWorker& tracker_;
  ReasoningPlane& reasoning_;
  PushedSamples& pushed_;
  std::function<json()> health_;
  const DaemonConfig& cfg_;  // the daemon's: a reload replaces it (on the loop's thread, as every request here)
  std::function<void()> persist_;
  std::chrono::steady_clock::time_point started_;
  std::optional<PolicyRepository> repository_;
  Canary canary_;
  json last_admission_;
  ReloadHooks reload_;
  uint64_t loads_ = 1;  // how many times the scheduler was loaded (1 + restarts and re-attaches)
};

}  // namespace akts
