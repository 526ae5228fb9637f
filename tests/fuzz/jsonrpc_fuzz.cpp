// libFuzzer target: any bytes into the control API (JSON-RPC layer and the v1
// method set over a fake backend). It must never crash or throw, always answer
// with a JSON-RPC 2.0 response in valid UTF-8 (or nothing, for notifications),
// and never select a slot that is neither filled nor asked for with force.
// tests/fuzz/jsonrpc.dict steers it to multi-byte and invalid sequences.
#include <utility>
#include <cstdint>
#include <string_view>

#include "common/text.h"
#include "control/api.h"

namespace {

using akts::control::json;

class FuzzBackend : public akts::control::ControlBackend {
 public:
  std::vector<akts::control::PolicyView> policies() const override {
    return {{0, "latency", "", ""}, {1, "throughput", "", ""}};
  }
  uint32_t slot_count() const override { return 8; }
  uint32_t selected() const override { return selected_; }
  uint32_t effective() const override { return selected_; }
  akts::Result<uint32_t> select(uint32_t slot) override { return std::exchange(selected_, slot); }
  // What the system hands the daemon is not always valid UTF-8 (process names
  // from /proc are raw bytes cut at 15): answers must serialise anyway.
  json status() const override { return json{{"comm", std::string("srv\xe2\x82")}, {"bad", std::string("\xff")}}; }
  akts::Result<json> stats(bool) override { return json::object(); }
  akts::Status classify(uint32_t, uint32_t) override { return {}; }
  akts::Status unclassify(uint32_t) override { return {}; }
  akts::Result<json> class_of(uint32_t pid) override { return json{{"pid", pid}}; }
  akts::Result<json> hint(uint32_t tid, std::optional<std::chrono::nanoseconds>) override {
    return json{{"pid", tid}};
  }
  // A hold selects like a switch, never forced: the same invariant holds.
  akts::Status hold(uint32_t slot, std::chrono::milliseconds) override {
    selected_ = slot;
    return {};
  }
  bool release() override { return false; }
  akts::Result<json> controller(const std::optional<std::string>& name, std::optional<bool>) override {
    return json{{"controller", name.value_or("none")}};
  }
  json telemetry(size_t) const override { return json{{"windows", json::array()}}; }
  json objective() const override { return akts::Objective{}.to_json(); }
  akts::Status set_objective(const akts::Objective&) override { return {}; }
  json policy_record(const std::string&) const override { return nullptr; }
  akts::Result<size_t> record_result(const std::string&, const akts::ResultRecord&) override { return size_t{1}; }
  akts::Result<json> admit(const AdmitRequest&) override { return json::object(); }
  akts::Result<json> evict(uint32_t slot) override { return json{{"slot", slot}}; }
  akts::Result<std::array<uint64_t, AKTS_MAX_PARAMS>> param_values(uint32_t) const override {
    return std::array<uint64_t, AKTS_MAX_PARAMS>{};
  }
  akts::Status set_param(uint32_t, const akts::ParamDesc&, uint64_t) override { return {}; }
  json admission() const override { return nullptr; }
  json decisions(size_t) const override { return json::array({json{{"raw", std::string("0.\xff")}}}); }
  akts::Result<size_t> push_latencies(const std::vector<double>& ms) override { return ms.size(); }
  akts::Result<size_t> push_tpot(const std::vector<double>& ms, const std::vector<double>&) override {
    return ms.size();
  }
  akts::Status push_waiting(double) override { return {}; }
  akts::Status push_phase(const std::string&) override { return {}; }
  akts::Result<json> reload() override { return json{{"ok", true}, {"changed", json::array()}}; }
  uint32_t selected_ = 0;
};

bool valid_response(const json& r) {
  return r.is_object() && r.value("jsonrpc", "") == "2.0" && (r.contains("result") != r.contains("error"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FuzzBackend backend;
  static akts::control::Dispatcher d = [] {
    akts::control::Dispatcher x;
    akts::control::register_v1(x, backend);
    return x;
  }();
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // "force" may hide behind a JSON escape: check the invariant only when neither can be there.
  bool forced = in.find("force") != std::string_view::npos || in.find('\\') != std::string_view::npos;
  backend.selected_ = 0;
  std::string out = d.handle(in);
  if (!out.empty()) {
    if (!akts::is_valid_utf8(out)) __builtin_trap();
    json r = json::parse(out, nullptr, false);
    if (r.is_discarded()) __builtin_trap();
    if (r.is_array()) {
      for (const auto& e : r)
        if (!valid_response(e)) __builtin_trap();
    } else if (!valid_response(r)) {
      __builtin_trap();
    }
  }
  if (!forced && backend.selected_ > 1) __builtin_trap();  // only filled slots without force
  return 0;
}
