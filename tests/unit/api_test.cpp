#include "control/api.h"

#include <gtest/gtest.h>

#include "akts.h"
#include "fake_control_backend.h"

namespace akts::control {
namespace {

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

TEST_F(ApiTest, ParamsListTheValuesInForceAndSetChangesOne) {
  auto r = rpc("v1.params", json::object());
  ASSERT_TRUE(r.contains("result")) << r.dump();
  ASSERT_EQ(r["result"]["policies"].size(), 2u);
  EXPECT_TRUE(r["result"]["policies"][0]["params"].empty());
  EXPECT_EQ(r["result"]["policies"][1]["params"][0]["name"], "slice");
  EXPECT_EQ(r["result"]["policies"][1]["params"][0]["text"], "20ms");
  r = rpc("v1.set", {{"target", "throughput.slice"}, {"value", "5ms"}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["previous"], 20000000);
  EXPECT_EQ(r["result"]["value"], 5000000);
  EXPECT_EQ(r["result"]["text"], "5ms");
  r = rpc("v1.set", {{"target", "1.slice"}, {"value", 3000000}});
  EXPECT_EQ(r["result"]["policy"], "throughput") << r.dump();
  EXPECT_EQ(rpc("v1.params", {{"target", "throughput"}})["result"]["policies"][0]["params"][0]["value"], 3000000);
  ASSERT_EQ(b_.param_sets.size(), 2u);
}

TEST_F(ApiTest, BadParameterChangesAreRefusedAndChangeNothing) {
  const json bad[] = {
      {{"target", "throughput.slice"}, {"value", "50us"}},     // below the range
      {{"target", "throughput.slice"}, {"value", "1s"}},       // above it
      {{"target", "throughput.slice"}, {"value", "0.3"}},      // no unit, not whole
      {{"target", "throughput.slice"}, {"value", -1}},
      {{"target", "throughput.slice"}, {"value", ""}},
      {{"target", "throughput.slice"}, {"value", "fast please"}},
      {{"target", "throughput.slice"}, {"value", nullptr}},
      {{"target", "throughput.slice"}},                         // no value
      {{"target", "throughput.quantum"}, {"value", "5ms"}},    // no such parameter
      {{"target", "latency.slice"}, {"value", "5ms"}},         // latency has none here
      {{"target", "nosuch.slice"}, {"value", "5ms"}},
      {{"target", "throughput"}, {"value", "5ms"}},            // no dot
      {{"target", "a.b.c"}, {"value", "5ms"}},
      {{"target", 1}, {"value", "5ms"}},
      {{"target", "throughput.slice"}, {"value", "5ms"}, {"extra", 1}},
  };
  for (const auto& p : bad) {
    auto r = rpc("v1.set", p);
    ASSERT_TRUE(r.contains("error")) << p.dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_EQ(r["error"]["code"], kInvalidParams) << p.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  EXPECT_TRUE(b_.param_sets.empty());
  EXPECT_EQ(b_.slice_now, 20000000u);
  EXPECT_EQ(rpc("v1.params", {{"target", "nosuch"}})["error"]["code"], kInvalidParams);
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

TEST_F(ApiTest, HintTakesADurationOrNanosecondsAndRefusesTheRest) {
  EXPECT_EQ(rpc("v1.hint", {{"pid", 42}, {"remaining", "30ms"}})["result"]["pid"], 42);
  EXPECT_TRUE(rpc("v1.hint", {{"pid", 43}, {"remaining", 5000000}}).contains("result"));
  EXPECT_TRUE(rpc("v1.hint", {{"pid", 44}, {"clear", true}}).contains("result"));
  ASSERT_EQ(b_.hints.size(), 3u);
  EXPECT_EQ(b_.hints[0].second, std::chrono::nanoseconds(30000000));
  EXPECT_EQ(b_.hints[1].second, std::chrono::nanoseconds(5000000));
  EXPECT_FALSE(b_.hints[2].second.has_value());
  // Every malformed request is an invalid-params error and reaches no backend.
  for (const json& p :
       {json{{"pid", 42}}, json{{"remaining", "30ms"}}, json{{"pid", 0}, {"remaining", "30ms"}},
        json{{"pid", -1}, {"remaining", "30ms"}}, json{{"pid", 42}, {"remaining", "0.3"}},
        json{{"pid", 42}, {"remaining", 0.3}}, json{{"pid", 42}, {"remaining", -1}},
        json{{"pid", 42}, {"remaining", ""}}, json{{"pid", 42}, {"remaining", "about a second"}},
        json{{"pid", 42}, {"remaining", "500ns"}}, json{{"pid", 42}, {"remaining", "3601s"}},
        json{{"pid", 42}, {"remaining", 3600000000001ull}}, json{{"pid", 42}, {"remaining", 18446744073709551615ull}},
        json{{"pid", 42}, {"remaining", "30ms"}, {"clear", true}}, json{{"pid", 42}, {"clear", "yes"}},
        json{{"pid", 42}, {"remaining", "\u00e9ms"}}, json{{"pid", 42}, {"remaining", "30ms"}, {"tid", 1}}})
    EXPECT_EQ(rpc("v1.hint", p)["error"]["code"], kInvalidParams) << p.dump();
  EXPECT_EQ(b_.hints.size(), 3u);
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
  // The oldest unanswered request's wait: alone, or with latencies; a bad half takes neither.
  EXPECT_EQ(rpc("v1.push", {{"waiting_ms", 7000}})["result"]["waiting_ms"], 7000);
  auto both = rpc("v1.push", {{"latency_ms", {3}}, {"waiting_ms", 0}});
  EXPECT_EQ(both["result"]["accepted"], 1);
  EXPECT_EQ(both["result"]["waiting_ms"], 0);
  for (const json& p : {json{{"waiting_ms", -1}}, json{{"waiting_ms", "7"}}, json{{"waiting_ms", nullptr}},
                        json{{"waiting_ms", 4e6}}, json{{"waiting_ms", {1}}},
                        json{{"latency_ms", {5}}, {"waiting_ms", -1}}, json{{"latency_ms", {-5}}, {"waiting_ms", 1}},
                        json{{"waiting", 1}}}) {
    EXPECT_EQ(rpc("v1.push", p)["error"]["code"], kInvalidParams) << p.dump();
  }
  EXPECT_NE(rpc("v1.push", {{"waiting_ms", -1}})["error"]["message"].get<std::string>().find("waiting_ms = -1"),
            std::string::npos);
  EXPECT_EQ(b_.pushed, (std::vector<double>{1.5, 20, 3}));
  EXPECT_EQ(b_.waiting, (std::vector<double>{7000, 0}));
  // The load's phase: a name, alone or with the rest; a bad one takes nothing of the call.
  EXPECT_EQ(rpc("v1.push", {{"phase", "burst"}})["result"]["phase"], "burst");
  EXPECT_EQ(rpc("v1.push", {{"phase", "ünïcødé"}, {"waiting_ms", 5}})["result"]["phase"], "ünïcødé");
  for (const json& p : {json{{"phase", ""}}, json{{"phase", 1}}, json{{"phase", json::array()}},
                        json{{"phase", std::string(65, 'a')}}, json{{"phase", "a\nb"}},
                        json{{"phase", "burst"}, {"waiting_ms", -1}}, json{{"phase", ""}, {"latency_ms", {1}}}})
    EXPECT_EQ(rpc("v1.push", p)["error"]["code"], kInvalidParams) << p.dump();
  // Times per output token: alone or with the rest; a bad one, or a bad part beside them, takes nothing.
  auto tp = rpc("v1.push", {{"tpot_ms", {42.5, 61}}, {"decode_ms", {900, 1200}}, {"latency_ms", {9}}});
  EXPECT_EQ(tp["result"]["tpot_accepted"], 2) << tp.dump();
  EXPECT_EQ(tp["result"]["accepted"], 1) << tp.dump();
  for (const json& p :
       {json{{"tpot_ms", json::array()}, {"decode_ms", json::array()}}, json{{"tpot_ms", {1, -1}}, {"decode_ms", {1, 1}}},
        json{{"tpot_ms", "5"}, {"decode_ms", "5"}}, json{{"tpot_ms", {5}}},  // no decode times
        json{{"decode_ms", {5}}}, json{{"tpot_ms", {5, 6}}, {"decode_ms", {5}}},
        json{{"tpot_ms", {5}}, {"decode_ms", {-5}}}, json{{"tpot_ms", {5}}, {"decode_ms", {5}}, {"waiting_ms", -1}},
        json{{"tpot_ms", {5}}, {"decode_ms", {5}}, {"latency_ms", {-1}}}, json{{"tpot_ms", {4e6}}, {"decode_ms", {1}}}})
    EXPECT_EQ(rpc("v1.push", p)["error"]["code"], kInvalidParams) << p.dump();
  EXPECT_NE(rpc("v1.push", {{"tpot_ms", {1, -1}}, {"decode_ms", {1, 1}}})["error"]["message"].get<std::string>().find(
                "tpot_ms[1] = -1"),
            std::string::npos);
  EXPECT_EQ(b_.pushed_tpot, (std::vector<double>{42.5, 61}));
  EXPECT_EQ(b_.pushed_decode, (std::vector<double>{900, 1200}));
  EXPECT_EQ(b_.pushed, (std::vector<double>{1.5, 20, 3, 9}));
  auto over = rpc("v1.push", {{"phase", nullptr}});  // the load is over
  ASSERT_TRUE(over.contains("result")) << over.dump();
  EXPECT_TRUE(over["result"]["phase"].is_null()) << over.dump();
  EXPECT_EQ(b_.phases, (std::vector<std::string>{"burst", "ünïcødé", ""}));
  EXPECT_EQ(b_.pushed, (std::vector<double>{1.5, 20, 3, 9}));
  EXPECT_EQ(b_.waiting, (std::vector<double>{7000, 0, 5}));
}

TEST_F(ApiTest, TelemetryAndLogLimits) {
  EXPECT_EQ(rpc("v1.telemetry", json::object())["result"]["last"], 1);
  EXPECT_EQ(rpc("v1.telemetry", {{"last", 600}})["result"]["last"], 600);
  EXPECT_EQ(rpc("v1.log", {{"limit", 7}})["result"]["decisions"][0]["limit"], 7);
  for (const json& p : {json{{"last", 0}}, json{{"last", 601}}, json{{"last", "5"}}, json{{"last", 1.5}}})
    EXPECT_EQ(rpc("v1.telemetry", p)["error"]["code"], kInvalidParams) << p.dump();
  for (const json& p : {json{{"limit", 0}}, json{{"limit", 501}}, json{{"limit", -1}}})
    EXPECT_EQ(rpc("v1.log", p)["error"]["code"], kInvalidParams) << p.dump();
}

TEST_F(ApiTest, ObjectiveInWordsOrAsConfig) {
  auto r = rpc("v1.objective", json::object());
  EXPECT_EQ(r["result"]["changed"], false);
  EXPECT_EQ(b_.objective_sets, 0);
  r = rpc("v1.objective", {{"goal", "keep request latency p99 under 400 ms"}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["objective"]["signal"], "request_latency_p99");
  EXPECT_EQ(r["result"]["objective"]["max_ms"], 400.0);
  r = rpc("v1.objective", {{"objective", {{"signal", "lc_wait_p99"}, {"max", "15ms"}}}});
  EXPECT_EQ(r["result"]["objective"]["max_ms"], 15.0);
  EXPECT_EQ(b_.objective_sets, 2);
  // Refused: nothing changes.
  for (const json& p : {json{{"goal", "0.3"}}, json{{"goal", ""}}, json{{"goal", 20}}, json{{"goal", nullptr}},
                        json{{"objective", {{"signal", "lc_wait_p99"}}}}, json{{"objective", "20ms"}},
                        json{{"goal", "wait under 5ms"}, {"objective", {{"max", "5ms"}}}}, json{{"max", "5ms"}}}) {
    r = rpc("v1.objective", p);
    EXPECT_EQ(r["error"]["code"], kInvalidParams) << p.dump() << " -> " << r.dump();
  }
  EXPECT_EQ(b_.objective_sets, 2);
  EXPECT_EQ(b_.objective_.limits.front().max_ms, 15.0);
}

TEST_F(ApiTest, ResultsGoToTheRepositoryAndComeBackWithTheDocs) {
  PolicyRecord rec;
  rec.name = "latency";
  rec.description = "l";
  rec.pick_when = "burst";
  b_.records.push_back(rec);
  json result = {{"workload", "hackbench"}, {"metrics", {{"seconds", 1.25}}}, {"source", "test"}};
  auto r = rpc("v1.result", {{"policy", "latency"}, {"result", result}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["results"], 1);
  for (const json& p : {json{{"policy", "latency"}}, json{{"policy", "nope"}, {"result", result}},
                        json{{"policy", "../x"}, {"result", result}},
                        json{{"policy", "latency"}, {"result", {{"workload", "w"}, {"metrics", {{"x", "fast"}}}}}},
                        json{{"policy", "latency"}, {"result", {{"workload", "w"}, {"metrics", {{"x", 1}}}, {"y", 1}}}}})
    EXPECT_EQ(rpc("v1.result", p)["error"]["code"], kInvalidParams) << p.dump();
  EXPECT_EQ(b_.records[0].results.size(), 1u);
  auto docs = rpc("v1.policies", {{"docs", true}})["result"]["policies"];
  EXPECT_EQ(docs[0]["results"][0]["metrics"]["seconds"], 1.25);
  EXPECT_TRUE(docs[1]["results"].empty());  // throughput has no record here
  EXPECT_FALSE(rpc("v1.policies", json::object())["result"]["policies"][0].contains("results"));
}

TEST_F(ApiTest, AdmitAndEvictCheckTheirParameters) {
  auto r = rpc("v1.admit", {{"object", "/tmp/x.bpf.o"}, {"name", "fifo"}, {"slot", 3}, {"force_untested", true}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  ASSERT_EQ(b_.admits.size(), 1u);
  EXPECT_EQ(b_.admits[0].name, "fifo");
  EXPECT_EQ(b_.admits[0].slot, 3u);
  EXPECT_TRUE(b_.admits[0].force_untested);
  for (const json& p : {json::object(), json{{"object", "x.bpf.o"}}, json{{"object", ""}}, json{{"object", 5}},
                        json{{"object", "/x.o"}, {"name", "../etc"}}, json{{"object", "/x.o"}, {"name", "Fifo"}},
                        json{{"object", "/x.o"}, {"slot", AKTS_MAX_SLOTS}}, json{{"object", "/x.o"}, {"slot", -1}},
                        json{{"object", "/x.o"}, {"slot", "1"}}, json{{"object", "/x.o"}, {"force_untested", "yes"}},
                        json{{"object", "/x.o"}, {"record", "rel.json"}}, json{{"object", "/x.o"}, {"extra", 1}},
                        json{{"object", "/x.o"}, {"description", std::string(501, 'd')}},
                        json{{"object", "/x.o"}, {"replace", true}},
                        json{{"object", "/x.o"}, {"replace", true}, {"slot", 1}, {"canary", "5s"}},
                        json{{"object", "/x.o"}, {"canary", "0.5s"}}, json{{"object", "/x.o"}, {"canary", "1h"}}})
    EXPECT_EQ(rpc("v1.admit", p)["error"]["code"], kInvalidParams) << p.dump();
  EXPECT_EQ(b_.admits.size(), 1u);
  r = rpc("v1.evict", {{"target", "throughput"}});
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(b_.evicted, std::vector<uint32_t>{1});
  for (const json& t : {json("nope"), json(5), json("0.3"), json(-1), json(nullptr)})
    EXPECT_EQ(rpc("v1.evict", {{"target", t}})["error"]["code"], kInvalidParams) << t.dump();
  EXPECT_EQ(b_.evicted.size(), 1u);
}

TEST_F(ApiTest, AReloadTakesNoParametersAndARefusalIsAnError) {
  auto r = rpc("v1.reload", json::object());
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["changed"], json::array({"objective"}));
  EXPECT_EQ(rpc("v1.reload", {{"file", "/etc/other.json"}})["error"]["code"], kInvalidParams);
  EXPECT_EQ(b_.reloads, 1);  // the malformed request reached nothing
  b_.reload_refusal = "policies is read at start only";
  r = rpc("v1.reload", json::object());
  ASSERT_TRUE(r.contains("error"));
  EXPECT_NE(r["error"]["message"].get<std::string>().find("policies is read at start only"), std::string::npos);
}

}  // namespace akts::control
