#include "config/daemon_config.h"

#include <set>

#include <gtest/gtest.h>

#include "akts.h"
#include "config/config_diff.h"

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

// A reload compares the running config with the file's: each key's change is told apart, by whether a reload
// may make it (config_diff.h); every key of both lists has a case here.
TEST(ConfigDiff, EachKeyIsToldApartAsLiveOrReadAtStartOnly) {
  const std::vector<std::pair<std::string, const char*>> cases = {
      {"socket", R"({"socket": "/run/other.sock"})"},
      {"socket_mode", R"({"socket_mode": "0660"})"},
      {"socket_group", R"({"socket_group": "akts"})"},
      {"audit_log", R"({"audit_log": ""})"},
      {"repository", R"({"repository": ""})"},
      {"state_file", R"({"state_file": ""})"},
      {"metrics_listen", R"({"metrics_listen": "9100"})"},
      {"policies", R"({"policies": ["throughput", "latency"]})"},
      {"initial", R"({"initial": "1"})"},
      {"switch_all", R"({"switch_all": true})"},
      {"scan_interval_ms", R"({"scan_interval_ms": 50})"},
      {"process_events", R"({"process_events": false})"},
      {"rescan_interval_ms", R"({"rescan_interval_ms": 5000})"},
      {"guard", R"({"guard": {"max_wait": "300ms"}})"},
      {"breaker", R"({"breaker": {"armed": false}})"},
      {"restart", R"({"restart": {"max": 5}})"},
      {"classes", R"({"classes": [{"class": "lc", "comm": "llama-server"}]})"},
      {"objective", R"({"objective": {"signal": "lc_wait_p99", "max": "30ms"}})"},
      {"controller", R"({"controller": {"name": "detector"}})"},
      {"telemetry", R"({"telemetry": {"period": "200ms"}})"},
      {"decision_log", R"({"decision_log": {"path": "/tmp/akts-decisions.jsonl"}})"},
  };
  // socket_mode 0660 in both: a group needs it.
  auto base = parse_config(R"({"socket_mode": "0660"})", kKnown);
  ASSERT_TRUE(base.ok());
  std::set<std::string> live(std::begin(kLiveKeys), std::end(kLiveKeys));
  std::set<std::string> restart(std::begin(kRestartKeys), std::end(kRestartKeys));
  std::set<std::string> covered;
  for (const auto& [key, text] : cases) {
    auto doc = nlohmann::json::parse(text);
    if (key != "socket_mode") doc["socket_mode"] = "0660";
    else doc["socket_mode"] = "0600";
    auto next = parse_config(doc.dump(), kKnown);
    ASSERT_TRUE(next.ok()) << key << ": " << next.error().to_string();
    ConfigDiff d = diff_configs(*base, *next);
    const bool is_live = live.count(key) != 0;
    EXPECT_EQ(d.live, is_live ? std::vector<std::string>{key} : std::vector<std::string>{}) << key;
    EXPECT_EQ(d.restart, is_live ? std::vector<std::string>{} : std::vector<std::string>{key}) << key;
    covered.insert(key);
    EXPECT_TRUE(is_live != (restart.count(key) != 0)) << key << " is in exactly one list";
  }
  for (const auto& k : live) EXPECT_TRUE(covered.count(k)) << k;
  for (const auto& k : restart) EXPECT_TRUE(covered.count(k)) << k;
  // The arbiter's settings live in the controller's part of the file.
  auto dwell = parse_config(R"({"socket_mode": "0660", "controller": {"min_dwell": "2s"}})", kKnown);
  ASSERT_TRUE(dwell.ok());
  EXPECT_EQ(diff_configs(*base, *dwell).live, std::vector<std::string>{"controller"});
}

TEST(ConfigDiff, AKeyWrittenWithItsDefaultOrAnotherWayIsNoChange) {
  auto base = parse_config(R"({"breaker": {"safe_slot": "0"}, "metrics_listen": "9100"})", kKnown);
  auto same = parse_config(R"({"guard": {"max_wait": "200ms"}, "objective": {"signal": "lc_wait_p99", "max": "20ms"},
                               "controller": {"name": "none"}, "telemetry": {"period": "100ms"}, "classes": [],
                               "policies": ["latency", "throughput"], "initial": "latency",
                               "breaker": {"safe_slot": "latency"}, "metrics_listen": "127.0.0.1:9100",
                               "rescan_interval_ms": 100})",
                           kKnown);
  ASSERT_TRUE(base.ok() && same.ok()) << (same.ok() ? "" : same.error().to_string());
  ConfigDiff d = diff_configs(*base, *same);
  EXPECT_TRUE(d.live.empty()) << d.live.front();
  EXPECT_TRUE(d.restart.empty()) << d.restart.front();
}

TEST(ConfigDiff, TheDetectorsPoliciesAreComparedBySlot) {
  auto a = parse_config(R"({"controller": {"name": "detector", "detector": {"burst": "latency", "calm": "1"}}})", kKnown);
  auto b = parse_config(R"({"controller": {"name": "detector", "detector": {"burst": "0", "calm": "throughput"}}})", kKnown);
  auto c = parse_config(R"({"controller": {"name": "detector", "detector": {"burst": "throughput", "calm": "latency"}}})",
                        kKnown);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << (a.ok() ? b.ok() ? c.error().to_string() : b.error().to_string() : a.error().to_string());
  EXPECT_TRUE(diff_configs(*a, *b).live.empty());
  EXPECT_EQ(diff_configs(*a, *c).live, std::vector<std::string>{"controller"});
}

}  // namespace
}  // namespace akts
