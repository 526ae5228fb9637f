// A control backend with no kernel behind it, for the API's and the MCP server's tests.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "akts.h"
#include "control/api.h"

namespace akts::control {

// A backend with no kernel behind it: records what the API asked it to do.
class FakeBackend : public ControlBackend {
 public:
  std::vector<PolicyView> policies() const override {
    std::vector<PolicyView> v = {{0, "latency", "l", "burst", "", {}}, {1, "throughput", "t", "quiet", "", {}}};
    ParamDesc slice;
    slice.name = "slice";
    slice.type = AKTS_PARAM_DURATION;
    slice.def = 20000000;
    slice.min = 100000;
    slice.max = 100000000;
    slice.unit = "ns";
    v[1].params.push_back(slice);
    return v;
  }
  // Live parameters: slot -> values; sets recorded.
  Result<std::array<uint64_t, AKTS_MAX_PARAMS>> param_values(uint32_t slot) const override {
    std::array<uint64_t, AKTS_MAX_PARAMS> v{};
    if (slot == 1) v[0] = slice_now;
    return v;
  }
  Status set_param(uint32_t slot, const ParamDesc& d, uint64_t value) override {
    param_sets.push_back({slot, d.index, value});
    if (slot == 1 && d.index == 0) slice_now = value;
    return {};
  }
  uint64_t slice_now = 20000000;
  std::vector<std::array<uint64_t, 3>> param_sets;
  uint32_t slot_count() const override { return AKTS_MAX_SLOTS; }
  uint32_t selected() const override { return selected_; }
  uint32_t effective() const override { return selected_; }
  Result<uint32_t> select(uint32_t slot) override {
    ++selects;
    return std::exchange(selected_, slot);
  }
  json status() const override { return {{"ok", true}}; }
  Result<json> stats(bool reset_longest) override {
    if (reset_longest) ++resets;
    return json{{"n", 1}};
  }
  int resets = 0;
  Status classify(uint32_t pid, uint32_t cls) override {
    classified.emplace_back(pid, cls);
    return {};
  }
  Status unclassify(uint32_t) override { return {}; }
  Result<json> class_of(uint32_t pid) override { return json{{"pid", pid}}; }
  Result<json> hint(uint32_t tid, std::optional<std::chrono::nanoseconds> remaining) override {
    hints.emplace_back(tid, remaining);
    return json{{"pid", tid}};
  }
  std::vector<std::pair<uint32_t, std::optional<std::chrono::nanoseconds>>> hints;
  Status hold(uint32_t slot, std::chrono::milliseconds d) override {
    held = {slot, d};
    return {};
  }
  bool release() override { return true; }
  Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) override {
    controller_calls.emplace_back(name, dry_run);
    return json{{"controller", name.value_or("none")}};
  }
  // The daemon's shape; "last" tells the test what was asked.
  json telemetry(size_t last) const override {
    return {{"period_s", 0.1}, {"objective", objective_.to_json()}, {"health", json::object()},
            {"windows", json::array()}, {"last", last}};
  }
  json decisions(size_t limit) const override { return json::array({{{"limit", limit}}}); }
  json objective() const override { return objective_.to_json(); }
  json policy_record(const std::string& name) const override {
    for (const auto& r : records)
      if (r.name == name) return r.to_json();
    return nullptr;
  }
  Result<size_t> record_result(const std::string& policy, const ResultRecord& r) override {
    for (auto& rec : records)
      if (rec.name == policy) {
        rec.results.push_back(r);
        return rec.results.size();
      }
    return errorf(ErrorKind::kInvalidArgument, "no policy '{}' in the repository", policy);
  }
  std::vector<PolicyRecord> records;
  Result<json> admit(const AdmitRequest& r) override {
    admits.push_back(r);
    return json{{"admitted", true}, {"name", r.name}};
  }
  json admission() const override { return nullptr; }
  Result<json> evict(uint32_t slot) override {
    evicted.push_back(slot);
    return json{{"slot", slot}};
  }
  std::vector<AdmitRequest> admits;
  std::vector<uint32_t> evicted;
  Status set_objective(const Objective& o) override {
    objective_ = o;
    ++objective_sets;
    return {};
  }
  Objective objective_;
  int objective_sets = 0;
  Result<size_t> push_latencies(const std::vector<double>& ms) override {
    pushed.insert(pushed.end(), ms.begin(), ms.end());
    return ms.size();
  }
  Result<size_t> push_tpot(const std::vector<double>& ms, const std::vector<double>& decode_ms) override {
    pushed_tpot.insert(pushed_tpot.end(), ms.begin(), ms.end());
    pushed_decode.insert(pushed_decode.end(), decode_ms.begin(), decode_ms.end());
    return ms.size();
  }
  std::vector<double> pushed_tpot, pushed_decode;
  Status push_waiting(double waiting_ms) override {
    waiting.push_back(waiting_ms);
    return {};
  }
  std::vector<double> waiting;
  Status push_phase(const std::string& name) override {
    phases.push_back(name);
    return {};
  }
  Result<json> reload() override {
    ++reloads;
    if (!reload_refusal.empty()) return errorf(ErrorKind::kInvalidArgument, "{}", reload_refusal);
    return json{{"ok", true}, {"changed", json::array({"objective"})}};
  }
  int reloads = 0;
  std::string reload_refusal;  // non-empty: reload() refuses with it
  std::vector<std::string> phases;
  std::optional<std::pair<uint32_t, std::chrono::milliseconds>> held;
  std::vector<std::pair<std::optional<std::string>, std::optional<bool>>> controller_calls;
  std::vector<double> pushed;

  uint32_t selected_ = 0;
  int selects = 0;
  std::vector<std::pair<uint32_t, uint32_t>> classified;
};

}  // namespace akts::control
