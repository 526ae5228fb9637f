#include "config/daemon_config.h"

#include <gtest/gtest.h>

#include "akts.h"

namespace akts {
namespace {

const std::vector<std::string> kKnown = {"latency", "throughput"};

TEST(Config, ParsesAFullConfig) {
  auto c = parse_config(R"({
    "socket": "/run/x.sock", "socket_mode": "0660", "policies": ["throughput", "latency"],
    "initial": "latency", "switch_all": true, "scan_interval_ms": 50,
    "classes": [{"class": "lc", "comm": "llama-server"}, {"class": "be", "cgroup": "/batch/"},
                {"class": "lc", "pid": 42}]})",
                        kKnown);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->socket_path, "/run/x.sock");
  EXPECT_EQ(c->socket_mode, 0660u);
  EXPECT_EQ(c->policies, (std::vector<std::string>{"throughput", "latency"}));
  EXPECT_TRUE(c->switch_all);
  ASSERT_EQ(c->matchers.size(), 3u);
  EXPECT_EQ(c->matchers[1].value, "/batch");  // trailing slash dropped
  EXPECT_EQ(c->matchers[2].kind, Matcher::Kind::kPid);
  EXPECT_EQ(c->matchers[2].cls, static_cast<uint32_t>(AKTS_CLASS_LC));
}

TEST(Config, EmptyObjectGivesDefaults) {
  auto c = parse_config("{}", kKnown);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->socket_mode, 0600u);
  EXPECT_EQ(c->policies.size(), 2u);
}

TEST(Config, RefusesBadConfigsNamingTheKey) {
  struct Case {
    const char* text;
    const char* mentions;
  } cases[] = {
      {"", "JSON"},
      {"[]", "object"},
      {R"({"sockett": "/x"})", "sockett"},
      {R"({"socket": "relative.sock"})", "socket"},
      {R"({"socket_mode": "0666"})", "others"},
      {R"({"socket_mode": "rw"})", "octal"},
      {R"({"socket_mode": 600})", "octal"},
      {R"({"policies": []})", "policies"},
      {R"({"policies": ["nosuch"]})", "nosuch"},
      {R"({"initial": "nosuch"})", "initial"},
      {R"({"initial": 5})", "initial"},
      {R"({"initial": -1})", "initial"},
      {R"({"switch_all": "yes"})", "switch_all"},
      {R"({"scan_interval_ms": 0})", "scan_interval_ms"},
      {R"({"scan_interval_ms": 0.5})", "scan_interval_ms"},
      {R"({"classes": {}})", "classes"},
      {R"({"classes": [{"comm": "x"}]})", "class"},
      {R"({"classes": [{"class": "rt", "comm": "x"}]})", "class"},
      {R"({"classes": [{"class": "lc"}]})", "exactly one"},
      {R"({"classes": [{"class": "lc", "comm": "x", "pid": 3}]})", "exactly one"},
      {R"({"classes": [{"class": "lc", "comm": "a-very-long-command-name"}]})", "15"},
      {R"({"classes": [{"class": "lc", "cgroup": "serving"}]})", "absolute"},
      {R"({"classes": [{"class": "lc", "pid": 0}]})", "pid"},
      {R"({"classes": [{"class": "lc", "pid": "12"}]})", "pid"},
      {R"({"classes": [{"class": "lc", "exe": "x"}]})", "exe"},
      {R"({"telemetry": {"metrics_timeout": "5"}})", "metrics_timeout"},
      {R"({"socket_group": "akts"})", "socket_group read and write"},
      {R"({"socket_group": ""})", "socket_group"},
      {R"({"audit_log": "relative.jsonl"})", "audit_log"},
      {R"({"audit_log": 3})", "audit_log"},
      {R"({"telemetry": {"metrics_timeout": "2m"}})", "metrics_timeout"},
      {R"({"telemetry": {"metrics_timeoutt": "1s"}})", "metrics_timeoutt"},
      {R"({"breaker": true})", "breaker"},
      {R"({"breaker": {"armed": "yes"}})", "breaker.armed"},
      {R"({"breaker": {"trip_at": "1s"}})", "trip_at"},
      {R"({"breaker": {"oldest_wait": "190ms"}})", "max_wait"},  // the guard (200 ms) would rescue first
      {R"({"breaker": {"oldest_wait": 100}})", "breaker.oldest_wait"},
      {R"({"breaker": {"oldest_wait": "-1ms"}})", "breaker.oldest_wait"},
      {R"({"breaker": {"safe_slot": "nosuch"}})", "breaker.safe_slot"},
      {R"({"breaker": {"safe_slot": 7}})", "breaker.safe_slot"},  // a slot, but no configured policy there
      {R"({"breaker": {"safe_slot": -1}})", "breaker.safe_slot"},
      {R"({"breaker": {"safe_slot": ""}})", "breaker.safe_slot"},
      {R"({"breaker": {"class": "rt"}})", "class"},
      {R"({"breaker": {"cooldown": "10ms"}})", "cooldown"},
      {R"({"breaker": {"wait_p99": "0.5ms"}})", "wait_p99"},
      {R"({"breaker": {"rescues": 0.5}})", "breaker.rescues"},
      {R"({"breaker": {"window": "2m"}})", "window"},
      {R"({"breaker": {"min_samples": 0}})", "breaker.min_samples"},
      {R"({"guard": {"quantum_timer": "10us"}})", "quantum_timer"},
      {R"({"guard": {"quantum_timer": "1s"}})", "quantum_timer"},
      {R"({"guard": {"quantum_timer": 250}})", "guard.quantum_timer"},
      {R"({"guard": {"quantum": "250us"}})", "quantum_timer"},
      {R"({"restart": true})", "restart"},
      {R"({"restart": {"on_eject": 1}})", "restart.on_eject"},
      {R"({"restart": {"max": -1}})", "restart.max"},
      {R"({"restart": {"window": "0s"}})", "restart.window"},
      {R"({"restart": {"forever": true}})", "forever"},
  };
  for (const auto& c : cases) {
    auto r = parse_config(c.text, kKnown);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().kind, ErrorKind::kInvalidArgument);
    EXPECT_NE(r.error().message.find(c.mentions), std::string::npos) << c.text << " -> " << r.error().message;
  }
}

TEST(Config, AScrapeBudgetForAServerTheSchedulerStarves) {
  auto c = parse_config(R"({"telemetry": {"period": "100ms", "metrics_url": "http://127.0.0.1:8080/metrics",
                                          "metrics_timeout": "1s"}})",
                        kKnown);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->reasoning.telemetry.metrics_timeout, std::chrono::milliseconds(1000));
  auto d = parse_config("{}", kKnown);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->reasoning.telemetry.metrics_timeout.count(), 0);  // four periods
}

TEST(Config, AGroupMayShareTheSocketAndTheAuditLogCanBeTurnedOff) {
  auto c = parse_config(R"({"socket_mode": "0660", "socket_group": "akts", "audit_log": ""})", kKnown);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->socket_group, "akts");
  EXPECT_EQ(c->audit_log, "");
  auto d = parse_config("{}", kKnown);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->audit_log, "/var/log/akts/audit.jsonl");  // on unless turned off
  EXPECT_EQ(d->socket_group, "");
}

TEST(Config, TheBreakerIsArmedByDefaultAndItsSafeSlotNamesAPolicy) {
  auto d = parse_config("{}", kKnown);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->breaker.armed);
  EXPECT_EQ(d->breaker.safe_slot, AKTS_SLOT_NONE);  // the built-in default
  EXPECT_EQ(d->breaker.cls, static_cast<uint32_t>(AKTS_CLASS_LC));
  EXPECT_EQ(d->breaker.oldest, std::chrono::milliseconds(150));
  auto c = parse_config(R"({"policies": ["throughput", "latency"],
                            "breaker": {"safe_slot": "latency", "oldest_wait": "100ms", "wait_p99": "40ms",
                                        "cooldown": "10s", "calm": "2s", "rescues": 0, "class": "be"}})",
                        kKnown);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->breaker.safe_slot, 1u);
  EXPECT_EQ(c->breaker.p99, std::chrono::milliseconds(40));
  EXPECT_EQ(c->breaker.rescues, 0u);
  EXPECT_EQ(c->breaker.cls, static_cast<uint32_t>(AKTS_CLASS_BE));
  auto k = c->breaker.to_kernel();
  EXPECT_EQ(k.armed, 1u);
  EXPECT_EQ(k.oldest_ns, 100000000u);
  EXPECT_EQ(BreakerParams::from_kernel(k).to_json(), c->breaker.to_json());
  auto off = parse_config(R"({"breaker": {"armed": false, "safe_slot": 0}})", kKnown);
  ASSERT_TRUE(off.ok()) << off.error().to_string();
  EXPECT_FALSE(off->breaker.armed);
  EXPECT_EQ(off->breaker.safe_slot, 0u);
  // The quantum timer: off unless given; a duration or "off".
  EXPECT_EQ(off->guard.quantum_timer.count(), 0);
  auto qt = parse_config(R"({"guard": {"quantum_timer": "250us"}})", kKnown);
  ASSERT_TRUE(qt.ok()) << qt.error().to_string();
  EXPECT_EQ(qt->guard.to_kernel().quantum_period_ns, 250000u);
  EXPECT_EQ(GuardParams::from_kernel(qt->guard.to_kernel()).quantum_timer, qt->guard.quantum_timer);
  auto qt_off = parse_config(R"({"guard": {"quantum_timer": "off"}})", kKnown);
  ASSERT_TRUE(qt_off.ok()) << qt_off.error().to_string();
  EXPECT_EQ(qt_off->guard.quantum_timer.count(), 0);
  // Unless given, the threshold follows the guard: 3/4 of max_wait, two periods below it at most.
  auto short_guard = parse_config(R"({"guard": {"max_wait": "100ms", "period": "10ms"}})", kKnown);
  ASSERT_TRUE(short_guard.ok()) << short_guard.error().to_string();
  EXPECT_EQ(short_guard->breaker.oldest, std::chrono::milliseconds(75));
  // A short guard: room for the default threshold, or a clear refusal naming the guard; disarmed, anything goes.
  auto tight = parse_config(R"({"guard": {"max_wait": "30ms", "period": "20ms"}})", kKnown);
  ASSERT_FALSE(tight.ok());
  EXPECT_NE(tight.error().message.find("guard"), std::string::npos) << tight.error().message;
  auto tight_off = parse_config(R"({"guard": {"max_wait": "30ms", "period": "20ms"}, "breaker": {"armed": false}})", kKnown);
  EXPECT_TRUE(tight_off.ok()) << tight_off.error().to_string();
  // A longer guard makes room for a later trip.
  auto g = parse_config(R"({"guard": {"max_wait": "500ms"}, "breaker": {"oldest_wait": "400ms"}})", kKnown);
  EXPECT_TRUE(g.ok()) << g.error().to_string();
}

TEST(Config, RestartsOnRequestByDefaultAndOnEjectionWhenAsked) {
  auto d = parse_config("{}", kKnown);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->restart.on_request);
  EXPECT_FALSE(d->restart.on_eject);
  auto c = parse_config(R"({"restart": {"on_eject": true, "max": 1, "window": "1m"}})", kKnown);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_TRUE(c->restart.on_eject);
  EXPECT_EQ(c->restart.max, 1u);
  EXPECT_EQ(c->restart.window, std::chrono::seconds(60));
}

TEST(Config, MissingFileIsAnError) {
  auto r = load_config("/nonexistent/akts.json", kKnown);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("/nonexistent/akts.json"), std::string::npos);
}

}  // namespace
}  // namespace akts
