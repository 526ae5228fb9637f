// The bounded-wait guard's settings and bound, without a kernel.
#include "telemetry/guard.h"

#include <gtest/gtest.h>

#include "config/daemon_config.h"

namespace akts {
namespace {

using namespace std::chrono_literals;

TEST(Guard, DefaultsAreValidAndMatchTheContract) {
  GuardParams g;
  EXPECT_TRUE(g.validate().ok());
  auto k = g.to_kernel();
  EXPECT_EQ(k.max_wait_ns, AKTS_GUARD_DEFAULT_MAX_WAIT_NS);
  EXPECT_EQ(k.rescue_slice_ns, AKTS_GUARD_DEFAULT_RESCUE_SLICE_NS);
  EXPECT_EQ(k.period_ns, AKTS_GUARD_DEFAULT_PERIOD_NS);
}

TEST(Guard, OffIsAnExplicitWordAndRoundTrips) {
  GuardParams g;
  g.enabled = false;
  EXPECT_EQ(g.to_kernel().max_wait_ns, AKTS_GUARD_OFF);
  EXPECT_FALSE(GuardParams::from_kernel(g.to_kernel()).enabled);
  // An unwritten map (all zero) means the defaults, never "off".
  auto z = GuardParams::from_kernel(akts_guard_params{});
  EXPECT_TRUE(z.enabled);
  EXPECT_EQ(z.max_wait, GuardParams{}.max_wait);
}

TEST(Guard, RefusesWhatBpfWouldClampOrWhatMakesNoSense) {
  auto with = [](auto f) {
    GuardParams g;
    f(g);
    return g.validate();
  };
  EXPECT_FALSE(with([](GuardParams& g) { g.max_wait = 0ns; }).ok());
  EXPECT_FALSE(with([](GuardParams& g) { g.max_wait = 31s; }).ok());
  EXPECT_FALSE(with([](GuardParams& g) { g.period = 500us; }).ok());
  EXPECT_FALSE(with([](GuardParams& g) { g.rescue_slice = 10us; }).ok());
  EXPECT_FALSE(with([](GuardParams& g) { g.period = 300ms; }).ok());        // above max_wait
  EXPECT_FALSE(with([](GuardParams& g) { g.rescue_slice = 30ms; }).ok());  // above the period
  EXPECT_TRUE(with([](GuardParams& g) { g.max_wait = 50ms; g.period = 5ms; }).ok());
}

TEST(Guard, BoundIsTheContractsFormula) {
  GuardParams g;  // W 200 ms, P 20 ms, R 2 ms
  // One task alone on its CPU: W + P + J.
  EXPECT_EQ(g.bound(1, 3ms, 4ms), 223ms);
  // Three tasks, a 4 ms tick: each other rescued task runs at most R plus the tick that ends it.
  EXPECT_EQ(g.bound(3, 3ms, 4ms), 235ms);
  // An unknown tick is taken as 10 ms (HZ=100).
  EXPECT_EQ(g.bound(3, 0ms, 0ms), 244ms);
  g.rescue_slice = 5ms;
  EXPECT_EQ(g.bound(2, 0ms, 4ms), 229ms);
  // A task two deep in a local DSQ a policy fills: W + 4 (P + J) + a tick.
  EXPECT_EQ(g.local_bound(2, 1ms, 4ms), 288ms);
  EXPECT_EQ(g.local_bound(2, 1ms, 0ms), 294ms);
  // Past R + tick + J <= P a firing may find the next run short of R: a period more per kick.
  g.rescue_slice = 18ms;
  EXPECT_EQ(g.local_bound(2, 1ms, 4ms), 200ms + 6 * 21ms + 4ms);
}

TEST(Guard, LongestWaitIsTheMaximumOverCpusWithItsPid) {
  akts_wait_max cpus[3]{};
  cpus[0].max_ns[AKTS_CLASS_BE] = 5;
  cpus[0].pid[AKTS_CLASS_BE] = 10;
  cpus[2].max_ns[AKTS_CLASS_BE] = 9;
  cpus[2].pid[AKTS_CLASS_BE] = 12;
  cpus[1].max_ns[AKTS_CLASS_LC] = 7;
  cpus[1].pid[AKTS_CLASS_LC] = 11;
  auto w = LongestWaits::max_over(cpus);
  EXPECT_EQ(w.ns[AKTS_CLASS_BE], 9u);
  EXPECT_EQ(w.pid[AKTS_CLASS_BE], 12u);
  EXPECT_EQ(w.ns[AKTS_CLASS_LC], 7u);
  EXPECT_EQ(w.pid[AKTS_CLASS_LC], 11u);
}

TEST(Guard, ConfigKeys) {
  auto c = parse_config(R"({"guard": {"max_wait": "100ms", "rescue_slice": "1ms", "period": "10ms"}})", {"latency"});
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->guard.max_wait, 100ms);
  EXPECT_EQ(c->guard.rescue_slice, 1ms);
  EXPECT_EQ(c->guard.period, 10ms);
  for (const char* bad : {R"({"guard": 5})", R"({"guard": {"max_wait": 100}})",
                          R"({"guard": {"max_wait": "100"}})", R"({"guard": {"maxwait": "100ms"}})",
                          R"({"guard": {"max_wait": "1h"}})", R"({"guard": {"period": "300ms"}})"}) {
    auto r = parse_config(bad, {"latency"});
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("guard"), std::string::npos) << r.error().message;
    }
  }
}

}  // namespace
}  // namespace akts
