// The objective: in words (Objective::from_words), what is understood and what is refused; several limits
// (the JSON form), every one required, and each one's margin.
#include "reasoning/objective.h"

#include <gtest/gtest.h>

namespace akts {
namespace {

TEST(ObjectiveWords, UnderstoodGoals) {
  struct Case {
    const char* words;
    Limit::Signal signal;
    double max_ms;
  };
  const Case cases[] = {
      {"keep the LC wait p99 under 20 ms", Limit::Signal::kLcWaitP99, 20},
      {"LC scheduling delay at most 5ms", Limit::Signal::kLcWaitP99, 5},
      {"queueing below 1500us", Limit::Signal::kLcWaitP99, 1.5},
      {"Request latency p99 below 0.5 s", Limit::Signal::kRequestLatencyP99, 500},
      {"TTFT under 300 milliseconds, then give batch the rest", Limit::Signal::kRequestLatencyP99, 300},
      {"time to first token within 2 seconds", Limit::Signal::kRequestLatencyP99, 2000},
      {"wait <= 250 \xc2\xb5s", Limit::Signal::kLcWaitP99, 0.25},
      {"keep the LC wait p99 under 500 microseconds", Limit::Signal::kLcWaitP99, 0.5},
      {"LC wait p99 must not exceed 20 ms", Limit::Signal::kLcWaitP99, 20},
      {"request latency p99 no more than 300ms", Limit::Signal::kRequestLatencyP99, 300},
      {"wait p99 below 0.5 s", Limit::Signal::kLcWaitP99, 500},
      {"TPOT p99 under 200 ms", Limit::Signal::kTpotP99, 200},
      {"time per output token at most 80ms", Limit::Signal::kTpotP99, 80},
  };
  for (const auto& c : cases) {
    auto o = Objective::from_words(c.words);
    ASSERT_TRUE(o) << c.words << ": " << o.error().to_string();
    ASSERT_EQ(o->limits.size(), 1u) << c.words;
    EXPECT_EQ(o->limits.front().signal, c.signal) << c.words;
    EXPECT_DOUBLE_EQ(o->limits.front().max_ms, c.max_ms) << c.words;
  }
}

TEST(ObjectiveWords, RefusedWithAReason) {
  const char* bad[] = {
      "",                                              // nothing
      "make it fast",                                  // no signal, no duration
      "keep latency under 20 ms",                      // no signal named
      "request wait under 20ms",                       // both signals
      "LC wait p99 under 20ms or 30ms",                // two durations
      "LC wait p99 low",                               // no duration
      "LC wait p95 under 20ms",                        // not the p99
      "request latency above 100ms",                   // a floor
      "request latency p99 > 100ms",                   // a floor
      "LC wait under -5 ms",                           // negative
      "LC wait under 0 ms",                            // zero (from_json's range)
      "LC wait under 2 hours",                         // no such unit: no duration
      "LC wait under 7200 s",                          // above an hour
      "0.3",                                           // what a model might say
      "wait under 20ms \xff",                          // not UTF-8
      "wait under .5 s",                               // would read as 5 s
      "wait under 1,5 s",                              // likewise
      "LC wait p75 under 20 ms",                       // another percentile
      "wait p99.99 under 5 ms",                        // likewise
      "95th percentile wait under 20 ms",              // likewise
      "max wait under 20 ms",                          // another statistic
      "request latency over 100 ms",                   // a floor
  };
  for (const char* words : bad) {
    auto o = Objective::from_words(words);
    EXPECT_FALSE(o) << words;
    if (!o) {
      EXPECT_FALSE(o.error().to_string().empty());
    }
  }
  EXPECT_FALSE(Objective::from_words(std::string(501, 'a')));
}

TEST(ObjectiveWords, OneLimitOnlyInWords) {
  // Two signals in words is ambiguous: the JSON form says which limit is which.
  for (const char* two : {"TTFT under 2 s and TPOT under 200 ms", "keep request latency and TPOT p99 under 200 ms",
                          "response time and time per output token p99 below 1 s"}) {
    auto o = Objective::from_words(two);
    ASSERT_FALSE(o) << two;
    EXPECT_NE(o.error().message.find("tpot_p99"), std::string::npos) << o.error().message;
  }
  // "requests" as TPOT's subject is not a second signal.
  auto subject = Objective::from_words("the requests' TPOT p99 under 150 ms");
  ASSERT_TRUE(subject) << subject.error().to_string();
  EXPECT_EQ(subject->limits.front().signal, Limit::Signal::kTpotP99);
}

Window app_window(std::optional<double> ttft_p99, std::optional<double> tpot_p99, double waiting = 0) {
  Window w;
  w.period_s = 0.1;
  w.cpus = 2;
  w.run_ms[AKTS_CLASS_BE] = 100;  // half the CPU
  w.app_latency_p99_ms = ttft_p99;
  w.app_tpot_p99_ms = tpot_p99;
  if (waiting > 0) w.app_waiting_oldest_ms = waiting;
  return w;
}

TEST(Objective, SeveralLimitsAreAllRequired) {
  auto o = Objective::from_json({{"ttft_p99", "2s"}, {"tpot_p99", 200}});
  ASSERT_TRUE(o) << o.error().to_string();
  ASSERT_EQ(o->limits.size(), 2u);
  // In the signals' order, whatever the keys' (JSON objects are read in key order) or spelling.
  EXPECT_EQ(o->limits[0].signal, Limit::Signal::kRequestLatencyP99);
  EXPECT_EQ(o->limits[0].max_ms, 2000);
  EXPECT_EQ(o->limits[1].signal, Limit::Signal::kTpotP99);
  EXPECT_EQ(o->limits[1].max_ms, 200);
  EXPECT_EQ(o->describe(), "request latency p99 <= 2000 ms and TPOT p99 <= 200 ms, then maximise batch CPU");
  auto spelt = Objective::from_json({{"request_latency_p99", 2000}, {"tpot_p99", "0.2s"}});
  ASSERT_TRUE(spelt);
  EXPECT_EQ(spelt->key(), o->key());

  // Both met: met, full latency reward; TTFT met and TPOT missed: missed, as the loadgen's goodput counts it.
  Window ok = app_window(1500, 150);
  EXPECT_TRUE(o->met(ok));
  EXPECT_DOUBLE_EQ(o->reward(ok), 0.75);
  Window slow_decode = app_window(1500, 400);
  EXPECT_FALSE(o->met(slow_decode));
  EXPECT_EQ(o->binding(slow_decode)->signal, Limit::Signal::kTpotP99);
  EXPECT_DOUBLE_EQ(*o->pressure(slow_decode), 2.0);
  EXPECT_DOUBLE_EQ(o->reward(slow_decode), 0.25);  // half of 200/400, no batch credit
  // A starved server: no first token, its oldest request waits past the TTFT limit; TPOT has no sample.
  Window starved = app_window(std::nullopt, std::nullopt, 5000);
  EXPECT_FALSE(o->met(starved));
  EXPECT_EQ(o->binding(starved)->signal, Limit::Signal::kRequestLatencyP99);
  EXPECT_FALSE(o->limits[1].observed_ms(starved));
  // Nothing observed: met, no binding limit.
  Window idle = app_window(std::nullopt, std::nullopt);
  EXPECT_TRUE(o->met(idle));
  EXPECT_EQ(o->binding(idle), nullptr);

  // Each limit's margin, for status, the decision log and the llm prompt.
  auto in = o->limits_in(slow_decode);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[1]["signal"], "tpot_p99");
  EXPECT_DOUBLE_EQ(in[1]["margin_ms"].get<double>(), -200);
  EXPECT_FALSE(in[1]["met"].get<bool>());
  EXPECT_DOUBLE_EQ(in[0]["margin_ms"].get<double>(), 500);
  EXPECT_EQ(o->margins(slow_decode),
            "request latency p99 1500.0 ms of 2000 (margin 500.0 ms), TPOT p99 400.0 ms of 200 (over by 200.0 ms); "
            "missed");
  EXPECT_EQ(o->margins(idle),
            "request latency p99: no sample (limit 2000 ms), TPOT p99: no sample (limit 200 ms); met");
  auto j = o->to_json();
  EXPECT_EQ(j["limits"].size(), 2u);
  EXPECT_FALSE(j.contains("signal"));  // no single signal to name
}

TEST(Objective, SeveralLimitsRefusedWithAReason) {
  EXPECT_FALSE(Objective::from_json(nlohmann::json::object()));
  EXPECT_FALSE(Objective::from_json({{"ttft_p99", "2s"}, {"request_latency_p99", "1s"}}));  // one signal twice
  EXPECT_FALSE(Objective::from_json({{"ttft_p99", "2s"}, {"e2e_p99", "9s"}}));             // not a signal
  EXPECT_FALSE(Objective::from_json({{"ttft_p99", "-2s"}}));
  EXPECT_FALSE(Objective::from_json({{"ttft_p99", "2s"}, {"max", "20ms"}}));  // the two forms mixed
  EXPECT_FALSE(Objective::from_json({{"tpot_p99", nullptr}}));
  auto one = Objective::from_json({{"signal", "tpot_p99"}, {"max", "150ms"}});
  ASSERT_TRUE(one);
  EXPECT_EQ(one->limits.front().signal, Limit::Signal::kTpotP99);
}

TEST(Objective, TheLearnersKeyForOneLimitIsWhatItWasBeforeSeveral) {
  // Files written before objectives had several limits are keyed by the old to_json's text: still found.
  EXPECT_EQ(Objective{}.key(),
            R"({"describe":"LC wait p99 <= 20 ms, then maximise batch CPU","max_ms":20.0,"signal":"lc_wait_p99"})");
  auto ttft = Objective::single(Limit::Signal::kRequestLatencyP99, 800);
  EXPECT_EQ(ttft.key(), R"({"describe":"request latency p99 <= 800 ms, then maximise batch CPU","max_ms":800.0,)"
                        R"("signal":"request_latency_p99"})");
  auto two = Objective::from_json({{"ttft_p99", "2s"}, {"tpot_p99", "200ms"}});
  ASSERT_TRUE(two);
  EXPECT_NE(two->key(), ttft.key());
}

}  // namespace
}  // namespace akts
