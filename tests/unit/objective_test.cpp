// The objective in words (Objective::from_words): what is understood, and what is refused.
#include "reasoning/objective.h"

#include <gtest/gtest.h>

namespace akts {
namespace {

TEST(ObjectiveWords, UnderstoodGoals) {
  struct Case {
    const char* words;
    Objective::Signal signal;
    double max_ms;
  };
  const Case cases[] = {
      {"keep the LC wait p99 under 20 ms", Objective::Signal::kLcWaitP99, 20},
      {"LC scheduling delay at most 5ms", Objective::Signal::kLcWaitP99, 5},
      {"queueing below 1500us", Objective::Signal::kLcWaitP99, 1.5},
      {"Request latency p99 below 0.5 s", Objective::Signal::kRequestLatencyP99, 500},
      {"TTFT under 300 milliseconds, then give batch the rest", Objective::Signal::kRequestLatencyP99, 300},
      {"time to first token within 2 seconds", Objective::Signal::kRequestLatencyP99, 2000},
      {"wait <= 250 \xc2\xb5s", Objective::Signal::kLcWaitP99, 0.25},
      {"keep the LC wait p99 under 500 microseconds", Objective::Signal::kLcWaitP99, 0.5},
      {"LC wait p99 must not exceed 20 ms", Objective::Signal::kLcWaitP99, 20},
      {"request latency p99 no more than 300ms", Objective::Signal::kRequestLatencyP99, 300},
      {"wait p99 below 0.5 s", Objective::Signal::kLcWaitP99, 500},
  };
  for (const auto& c : cases) {
    auto o = Objective::from_words(c.words);
    ASSERT_TRUE(o) << c.words << ": " << o.error().to_string();
    EXPECT_EQ(o->signal, c.signal) << c.words;
    EXPECT_DOUBLE_EQ(o->max_ms, c.max_ms) << c.words;
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

}  // namespace
}  // namespace akts
