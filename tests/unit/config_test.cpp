#include "classify/config.h"

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

TEST(Config, MissingFileIsAnError) {
  auto r = load_config("/nonexistent/akts.json", kKnown);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().to_string().find("/nonexistent/akts.json"), std::string::npos);
}

}  // namespace
}  // namespace akts
