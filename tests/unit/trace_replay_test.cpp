// Controllers replayed over a telemetry trace recorded in the guest (the
// windows the daemon built while tests/guest/t_reasoning.sh ran: best-effort
// hogs throughout, a burst of latency-critical work in the middle). The
// burst's onset and end come from the trace itself: the first and last window
// in which LC tasks ran. Deterministic: the same trace, the same decisions.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "reasoning/bandit.h"
#include "reasoning/detector.h"
#include "reasoning/llm.h"

namespace akts {
namespace {

std::vector<Window> load_trace(const std::string& name) {
  std::ifstream f(std::string(AKTS_TEST_DATA_DIR) + "/" + name);
  std::vector<Window> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    auto w = Window::from_json(nlohmann::json::parse(line));
    if (w) out.push_back(*w);
  }
  return out;
}

ControllerContext context() {
  ControllerContext ctx;
  ctx.slots = {{0, "latency", "", ""}, {1, "throughput", "", ""}};
  ctx.running = 1;
  ctx.objective.limits.front().max_ms = 20;
  return ctx;
}

struct Switch {
  size_t at;
  uint32_t slot;
};

std::vector<Switch> replay(Controller& c, const std::vector<Window>& trace) {
  auto ctx = context();
  std::vector<Switch> out;
  for (size_t i = 0; i < trace.size(); ++i) {
    Window w = trace[i];
    w.effective_slot = ctx.running;  // what runs is what this replay chose, not what the recording ran
    if (auto d = c.decide(w, ctx); d.slot) {
      out.push_back({i, *d.slot});
      ctx.running = *d.slot;
    }
  }
  return out;
}

class GuestBurstTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_ = load_trace("guest_burst.jsonl");
    ASSERT_GT(trace_.size(), 100u) << "the recorded trace is missing or short";
    for (size_t i = 0; i < trace_.size(); ++i)
      if (trace_[i].run_ms[AKTS_CLASS_LC] > 0) {
        if (!onset_) onset_ = i;
        end_ = i;
      }
    ASSERT_TRUE(onset_) << "no LC work in the trace";
    ASSERT_GT(*onset_, 10u);
    ASSERT_LT(end_ + 10, trace_.size());
  }
  std::vector<Window> trace_;
  std::optional<size_t> onset_;
  size_t end_ = 0;
};

TEST_F(GuestBurstTrace, TheDetectorEntersWithinTwoPeriodsAndLeavesAfterTheBurst) {
  Detector d;
  auto s = replay(d, trace_);
  ASSERT_GE(s.size(), 2u);
  EXPECT_EQ(s[0].slot, 0u);
  EXPECT_GE(s[0].at, *onset_) << "switched before the burst";
  EXPECT_LE(s[0].at, *onset_ + 1) << "onset at window " << *onset_;
  EXPECT_EQ(s.back().slot, 1u);
  EXPECT_GT(s.back().at, end_) << "left before the burst ended (window " << end_ << ")";
  EXPECT_EQ(s.size(), 2u) << "flapped";
}

TEST_F(GuestBurstTrace, ReplaysAreDeterministic) {
  Detector d1, d2;
  auto a = replay(d1, trace_), b = replay(d2, trace_);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i].at == b[i].at && a[i].slot == b[i].slot);
  Bandit b1, b2;
  auto x = replay(b1, trace_), y = replay(b2, trace_);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_TRUE(x[i].at == y[i].at && x[i].slot == y[i].slot);
}

TEST_F(GuestBurstTrace, EveryWindowMakesAShortPrompt) {
  auto ctx = context();
  for (const auto& w : trace_) {
    std::string p = build_llm_prompt(w, ctx);
    EXPECT_LT(p.size(), 1500u);
    EXPECT_NE(p.find("Slot:"), std::string::npos);
  }
}

}  // namespace
}  // namespace akts
