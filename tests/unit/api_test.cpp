#include "control/api.h"

#include <gtest/gtest.h>

#include "akts.h"

namespace akts::control {
namespace {

// A backend with no kernel behind it: records what the API asked it to do.
class FakeBackend : public ControlBackend {
 public:
  std::vector<PolicyView> policies() const override {
    return {{0, "latency", "l", "burst"}, {1, "throughput", "t", "quiet"}};
  }
  uint32_t slot_count() const override { return AKTS_MAX_SLOTS; }
  uint32_t selected() const override { return selected_; }
  uint32_t effective() const override { return selected_; }
  Status select(uint32_t slot) override {
    ++selects;
    selected_ = slot;
    return {};
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
  Status hold(uint32_t slot, std::chrono::milliseconds d) override {
    held = {slot, d};
    return {};
  }
  bool release() override { return true; }
  Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) override {
    controller_calls.emplace_back(name, dry_run);
    return json{{"controller", name.value_or("none")}};
  }
  json telemetry(size_t last) const override { return {{"last", last}}; }
  json decisions(size_t limit) const override { return json::array({limit}); }
  Result<size_t> push_latencies(const std::vector<double>& ms) override {
    pushed.insert(pushed.end(), ms.begin(), ms.end());
    return ms.size();
  }
  std::optional<std::pair<uint32_t, std::chrono::milliseconds>> held;
  std::vector<std::pair<std::optional<std::string>, std::optional<bool>>> controller_calls;
  std::vector<double> pushed;

  uint32_t selected_ = 0;
  int selects = 0;
  std::vector<std::pair<uint32_t, uint32_t>> classified;
};

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override { register_v1(d_, b_); }
  json rpc(const std::string& method, const json& params) {
    json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
    return json::parse(d_.handle(req.dump()));
  }
  FakeBackend b_;
  Dispatcher d_;
};

TEST_F(ApiTest, SwitchByIndexAndName) {
  auto r = rpc("v1.switch", {{"target", 1}});
  EXPECT_EQ(r["result"]["selected"], 1);
  EXPECT_EQ(r["result"]["policy"], "throughput");
  r = rpc("v1.switch", {{"target", "latency"}});
  EXPECT_EQ(r["result"]["selected"], 0);
  EXPECT_EQ(r["result"]["previous"], 1);
  r = rpc("v1.switch", {{"target", "1"}});
  EXPECT_EQ(r["result"]["selected"], 1);
  EXPECT_EQ(b_.selects, 3);
}

// The inputs the issue names, and what an agent emits: each refused, nothing selected.
TEST_F(ApiTest, BadSwitchTargetsChangeNothing) {
  b_.selected_ = 1;
  const json bad[] = {"0.3", 0.3, "-1", -1, "abc", "99", 99, "", "2", 2, "0xffffffffff",
                      4294967296ull, nullptr, true, json::array({0}), json::object(), " 1", "1 "};
  for (const auto& t : bad) {
    auto r = rpc("v1.switch", {{"target", t}});
    ASSERT_TRUE(r.contains("error")) << t.dump();
    EXPECT_EQ(r["error"]["code"], kInvalidParams) << t.dump();
  }
  EXPECT_EQ(b_.selects, 0);
  EXPECT_EQ(b_.selected_, 1u);
  // Wrong shapes of the request itself.
  EXPECT_EQ(rpc("v1.switch", json::object())["error"]["code"], kInvalidParams);
  EXPECT_EQ(rpc("v1.switch", {{"target", 0}, {"slot", 0}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(rpc("v1.switch", {{"target", 0}, {"force", "yes"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(b_.selects, 0);
}

TEST_F(ApiTest, ForceSelectsAnEmptyOrOutOfRangeSlot) {
  auto r = rpc("v1.switch", {{"target", 5}, {"force", true}});
  EXPECT_EQ(r["result"]["selected"], 5);
  EXPECT_TRUE(r["result"]["policy"].is_null());
  r = rpc("v1.switch", {{"target", 4294967295ull}, {"force", true}});
  EXPECT_EQ(r["result"]["selected"], 4294967295ull);
  // force does not make a non-number into one
  EXPECT_TRUE(rpc("v1.switch", {{"target", "0.3"}, {"force", true}}).contains("error"));
}

TEST_F(ApiTest, MessagesSayWhatIsWrong) {
  auto msg = [&](const json& t) { return rpc("v1.switch", {{"target", t}})["error"]["message"].get<std::string>(); };
  EXPECT_NE(msg("abc").find("neither a slot number nor a policy name"), std::string::npos);
  EXPECT_NE(msg(5).find("empty"), std::string::npos);
  EXPECT_NE(msg(99).find("out of range"), std::string::npos);
  EXPECT_NE(msg(-1).find("negative"), std::string::npos);
  EXPECT_NE(msg(0.3).find("whole number"), std::string::npos);
}

TEST_F(ApiTest, Classify) {
  auto r = rpc("v1.classify", {{"pid", 42}, {"class", "lc"}});
  EXPECT_EQ(r["result"]["class"], "lc");
  ASSERT_EQ(b_.classified.size(), 1u);
  EXPECT_EQ(b_.classified[0], std::make_pair(42u, static_cast<uint32_t>(AKTS_CLASS_LC)));
  for (const json& p : {json{{"pid", 0}, {"class", "lc"}}, json{{"pid", 42}, {"class", "LC"}},
                        json{{"pid", 42}, {"class", "rt"}}, json{{"pid", -3}, {"class", "be"}},
                        json{{"pid", "42"}, {"class", "be"}}, json{{"pid", 42}}, json{{"class", "be"}}})
    EXPECT_EQ(rpc("v1.classify", p)["error"]["code"], kInvalidParams) << p.dump();
  EXPECT_EQ(b_.classified.size(), 1u);
}

TEST_F(ApiTest, ListsPoliciesAndVersion) {
  auto r = rpc("v1.policies", json::object());
  EXPECT_EQ(r["result"]["slots"], AKTS_MAX_SLOTS);
  EXPECT_EQ(r["result"]["policies"].size(), 2u);
  r = rpc("v1.version", json::object());
  EXPECT_EQ(r["result"]["api_version"], kApiVersion);
  EXPECT_EQ(rpc("v1.status", {{"x", 1}})["error"]["code"], kInvalidParams);
}

}  // namespace
TEST_F(ApiTest, StatsResetsLongestWaitsOnlyWhenAsked) {
  EXPECT_EQ(rpc("v1.stats", json::object())["result"]["n"], 1);
  EXPECT_EQ(b_.resets, 0);
  EXPECT_EQ(rpc("v1.stats", {{"reset_longest", true}})["result"]["n"], 1);
  EXPECT_EQ(b_.resets, 1);
  auto r = rpc("v1.stats", {{"reset_longest", "yes"}});
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
  EXPECT_EQ(b_.resets, 1);
  r = rpc("v1.stats", {{"reset", true}});
  EXPECT_EQ(r["error"]["code"], kInvalidParams);
}

TEST_F(ApiTest, HoldValidatesLikeASwitchAndNeedsADuration) {
  auto r = rpc("v1.hold", {{"target", "latency"}, {"duration", "30s"}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["slot"], 0);
  ASSERT_TRUE(b_.held);
  EXPECT_EQ(b_.held->second, std::chrono::seconds(30));
  b_.held.reset();
  for (const json& p :
       {json{{"target", "latency"}}, json{{"target", "latency"}, {"duration", "0s"}},
        json{{"target", "latency"}, {"duration", "25h"}}, json{{"target", "latency"}, {"duration", 30}},
        json{{"target", "latency"}, {"duration", "-1s"}}, json{{"target", 5}, {"duration", "1s"}},
        json{{"target", "0.3"}, {"duration", "1s"}}, json{{"target", "-1"}, {"duration", "1s"}},
        json{{"duration", "1s"}}, json{{"target", 0}, {"duration", "1s"}, {"force", true}}})
    EXPECT_EQ(rpc("v1.hold", p)["error"]["code"], kInvalidParams) << p.dump();
  EXPECT_FALSE(b_.held);
  EXPECT_TRUE(rpc("v1.release", json::object())["result"]["released"]);
}

TEST_F(ApiTest, ControllerNamesAndFlagsAreChecked) {
  EXPECT_TRUE(rpc("v1.controller", json::object()).contains("result"));
  EXPECT_TRUE(rpc("v1.controller", {{"name", "detector"}, {"dry_run", true}}).contains("result"));
  for (const json& p : {json{{"name", "Detector"}}, json{{"name", ""}}, json{{"name", 1}},
                        json{{"dry_run", "yes"}}, json{{"nme", "detector"}}})
    EXPECT_EQ(rpc("v1.controller", p)["error"]["code"], kInvalidParams) << p.dump();
  ASSERT_EQ(b_.controller_calls.size(), 2u);
  EXPECT_EQ(*b_.controller_calls[1].first, "detector");
  EXPECT_EQ(*b_.controller_calls[1].second, true);
}

TEST_F(ApiTest, PushTakesAllOrNothing) {
  EXPECT_EQ(rpc("v1.push", {{"latency_ms", {1.5, 20}}})["result"]["accepted"], 2);
  for (const json& p : {json{{"latency_ms", json::array()}}, json{{"latency_ms", {1, -1}}},
                        json{{"latency_ms", {1, "2"}}}, json{{"latency_ms", {1, nullptr}}},
                        json{{"latency_ms", 3}}, json{{"latency_ms", {4e6}}}, json::object(),
                        json{{"latency_ms", std::vector<double>(10001, 1.0)}}})
    EXPECT_EQ(rpc("v1.push", p)["error"]["code"], kInvalidParams) << p.dump().substr(0, 80);
  EXPECT_EQ(b_.pushed.size(), 2u);
}

TEST_F(ApiTest, TelemetryAndLogLimits) {
  EXPECT_EQ(rpc("v1.telemetry", json::object())["result"]["last"], 1);
  EXPECT_EQ(rpc("v1.telemetry", {{"last", 600}})["result"]["last"], 600);
  EXPECT_EQ(rpc("v1.log", {{"limit", 7}})["result"]["decisions"][0], 7);
  for (const json& p : {json{{"last", 0}}, json{{"last", 601}}, json{{"last", "5"}}, json{{"last", 1.5}}})
    EXPECT_EQ(rpc("v1.telemetry", p)["error"]["code"], kInvalidParams) << p.dump();
  for (const json& p : {json{{"limit", 0}}, json{{"limit", 501}}, json{{"limit", -1}}})
    EXPECT_EQ(rpc("v1.log", p)["error"]["code"], kInvalidParams) << p.dump();
}

}  // namespace akts::control
