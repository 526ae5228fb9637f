// akts top's model without a terminal: recorded answers of v1.stats and v1.log read into a View, and the View laid
// out for terminals large and small (src/top/top_view.h).
#include <gtest/gtest.h>

#include "akts.h"
#include "top/top_view.h"

namespace akts::top {
namespace {

using json = nlohmann::json;

json stats_answer() {
  return json::parse(R"({
    "policy_names": {"0": "latency", "1": "throughput", "2": "preempt"},
    "selected": 1, "effective": 1,
    "process": {"start_time_seconds": 1000.0},
    "reasoning": {"controller": "learner",
                  "objective": {"describe": "TTFT p99 <= 2s and TPOT p99 <= 200ms"},
                  "objective_now": [
                    {"signal": "request_latency_p99", "max_ms": 2000, "observed_ms": 2500, "margin_ms": -500, "met": false},
                    {"signal": "tpot_p99", "max_ms": 200, "observed_ms": null, "margin_ms": null, "met": true}],
                  "arbiter": {"dry_run": false, "hold": null, "operator_grace_remaining_s": 0,
                              "switches": {"operator": 2, "controller": 7}, "switches_last_minute": 3,
                              "selection_changed_ago_s": 12.5}},
    "window": {"period_s": 0.1, "cpus": 2,
               "classes": {"lc": {"wait_p50_ms": 0.2, "wait_p99_ms": 4.0, "oldest_wait_ms": 1.5, "run_ms": 50},
                           "be": {"wait_p50_ms": null, "wait_p99_ms": null, "oldest_wait_ms": 0, "run_ms": 150}},
               "app": {"requests_processing": 3, "requests_waiting": 1}},
    "guard": {"classes": {"lc": {"rescues": 4}, "be": {"rescues": 0}}},
    "breaker": {"params": {"armed": true}, "tripped": false, "trips": 1}})");
}

json log_answer() {
  return json::parse(R"({"decisions": [
    {"type": "decision", "time": "2026-12-06T15:00:01.100Z", "verdict": "applied: slot 0 -> 1", "why": "first"},
    {"type": "outcome", "time": "2026-12-06T15:00:02.000Z"},
    {"type": "decision", "time": "2026-12-06T15:00:03.250Z", "verdict": "applied: slot 2 -> 1", "why": "throughput is expected to meet the objective"},
    {"type": "outcome", "time": "2026-12-06T15:00:04.000Z"}]})");
}

TEST(TopView, ReadsTheDaemonsAnswers) {
  View v = read_view(stats_answer(), log_answer(), 1060.0);
  EXPECT_TRUE(v.connected);
  EXPECT_EQ(v.running, "throughput");
  EXPECT_FALSE(v.overridden);
  ASSERT_TRUE(v.running_for_s);
  EXPECT_DOUBLE_EQ(*v.running_for_s, 12.5);
  ASSERT_TRUE(v.uptime_s);
  EXPECT_DOUBLE_EQ(*v.uptime_s, 60.0);
  EXPECT_EQ(v.controller, "learner");
  EXPECT_EQ(v.last_decision_why, "throughput is expected to meet the objective");  // the newest decision
  ASSERT_EQ(v.limits.size(), 2u);
  EXPECT_FALSE(v.limits[0].met);
  EXPECT_FALSE(v.limits[1].observed_ms);
  EXPECT_DOUBLE_EQ(v.lc.cpu_share, 0.25);  // 50 ms of 2 CPUs x 100 ms
  EXPECT_DOUBLE_EQ(v.be.cpu_share, 0.75);
  EXPECT_DOUBLE_EQ(v.lc.rescues, 4);
  EXPECT_DOUBLE_EQ(v.switches_last_minute, 3);
  EXPECT_EQ(v.breaker_trips, 1);
  EXPECT_EQ(v.app_running, 3);
}

TEST(TopView, TheBreakersOverrideAndTheBuiltInDefaultAreNamed) {
  json s = stats_answer();
  s["effective"] = AKTS_SLOT_NONE;
  View v = read_view(s, json::object(), 0);
  EXPECT_EQ(v.running, "default (built-in)");
  EXPECT_EQ(v.selected, "throughput");
  EXPECT_TRUE(v.overridden);
  EXPECT_FALSE(v.uptime_s);  // no clock to measure it by
  auto lines = layout(v, 100, 24);
  EXPECT_NE(lines[0].find("breaker override; selected throughput"), std::string::npos) << lines[0];
}

TEST(TopView, AnOddAnswerLeavesDefaultsAndNeverThrows) {
  for (const char* odd : {R"({})", R"([])", R"({"policy_names": {"x": 1, "99": "far"}, "effective": "one"})",
                          R"({"reasoning": {"objective_now": [1, {"signal": 3}]}, "window": {"classes": []}})"}) {
    SCOPED_TRACE(odd);
    View v = read_view(json::parse(odd), json::parse(R"({"decisions": [{"type": 1}, "x"]})"), 0);
    EXPECT_EQ(v.running, "default (built-in)");
    EXPECT_NO_THROW(layout(v, 80, 20));
  }
}

TEST(TopView, TheLayoutFitsTheTerminalAndKeepsTheKeys) {
  View v = read_view(stats_answer(), log_answer(), 1060.0);
  for (auto [w, h] : {std::pair{120, 40}, std::pair{80, 24}, std::pair{40, 12}}) {
    auto lines = layout(v, w, h);
    ASSERT_EQ(lines.size(), static_cast<size_t>(h)) << w << "x" << h;
    for (const auto& l : lines) EXPECT_LE(l.size(), static_cast<size_t>(w) + 3 * 0) << l;
    EXPECT_NE(lines.back().find("q quit"), std::string::npos) << "the keys stay on the last line";
  }
  auto big = layout(v, 120, 40);
  std::string all;
  for (const auto& l : big) all += l + "\n";
  for (const char* want : {"running  throughput for 12.5 s", "control  learner", "MISSED", "500 ms over",
                           "3 in the last minute", "armed, 1 trip(s)", "3 running, 1 waiting", "25%", "75%"})
    EXPECT_NE(all.find(want), std::string::npos) << want << "\n" << all;
  // Too small: one line that says so.
  auto tiny = layout(v, 30, 8);
  ASSERT_EQ(tiny.size(), 1u);
  EXPECT_NE(tiny[0].find("needs 40x12"), std::string::npos) << tiny[0];  // first: a narrow terminal cuts the rest
}

TEST(TopView, ADaemonThatDoesNotAnswerIsShownAsSuch) {
  View v;
  v.error = "connect /run/akts/akts.sock: No such file or directory";
  auto lines = layout(v, 80, 24);
  EXPECT_NE(lines[0].find("does not answer"), std::string::npos);
  EXPECT_NE(lines[1].find("No such file"), std::string::npos);
}

TEST(TopView, DurationsReadAsAPersonWouldSayThem) {
  EXPECT_EQ(duration_text(0.35), "350 ms");
  EXPECT_EQ(duration_text(12.54), "12.5 s");
  EXPECT_EQ(duration_text(125), "2m05s");
  EXPECT_EQ(duration_text(7300), "2h01m");
  EXPECT_EQ(duration_text(std::nullopt), "-");
}

}  // namespace
}  // namespace akts::top
