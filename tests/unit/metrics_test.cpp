// The metrics without a daemon: the exposition formats rendered from a stats
// answer (read back by our strict reader; promtool reads the real daemon's in
// the guest), the Accept negotiation, refusals of a malformed answer, the
// process figures from a fake /proc, the arbiter's switch counters, and the
// HTTP endpoint's hand-off to a main loop.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>

#include <httplib.h>

#include "common/http_url.h"
#include "metrics/exposition.h"
#include "metrics/http_endpoint.h"
#include "metrics/process_self.h"
#include "reasoning/arbiter.h"
#include "telemetry/guard.h"
#include "telemetry/prometheus.h"
#include "telemetry/stats.h"

namespace akts {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;
using metrics::Format;

// A stats answer shaped as DaemonBackend::stats makes it.
json sample_stats() {
  Stats s;
  s.entries[0] = 100;
  s.fallthrough[0] = 3;
  s.calls[0][0] = 60;
  s.calls[1][1] = 37;
  s.wait_hist[AKTS_CLASS_LC][10] = 5;  // [1024, 2048) ns
  s.wait_hist[AKTS_CLASS_LC][20] = 2;  // [~1 ms, ~2 ms)
  s.wait_hist[AKTS_CLASS_LC][AKTS_WAIT_BUCKETS - 1] = 1;  // above 2^31 ns: only +Inf holds it
  s.wait_ns[AKTS_CLASS_LC] = 4'000'000'000;
  s.run_ns[AKTS_CLASS_BE] = 1'500'000'000;
  s.quantum_ends = 4;
  s.quantum_hist[3] = 4;
  s.quantum_overrun_ns = 40;
  json j = s.to_json();
  j["guard"] = {{"classes",
                 {{"lc", {{"oldest_waiting_ms", 12.5}, {"longest_wait_ms", 250.0}, {"rescues", 7}}},
                  {"be", {{"oldest_waiting_ms", 0.0}, {"longest_wait_ms", 3.0}, {"rescues", 0}}}}},
                {"rescue_failed", 1}};
  j["breaker"] = {{"params", {{"armed", true}}},
                  {"tripped", false},
                  {"trips", 2},
                  {"trips_by_reason", {{"oldest_wait", 2}, {"wait_p99", 0}}}};
  j["reasoning"] = {{"controller", "detector"},
                    {"arbiter", {{"switches", {{"operator", 3}, {"controller", 9}}}}},
                    {"verdicts", {{"applied", 9}, {"min_dwell", 4}, {"invalid_output", 1}}},
                    {"objective_now",
                     {{{"signal", "request_latency_p99"}, {"max_ms", 2000.0}, {"observed_ms", 2500.0}, {"met", false}},
                      {{"signal", "tpot_p99"}, {"max_ms", 200.0}, {"observed_ms", nullptr}, {"met", true}}}}};
  j["window"] = {{"seq", 1234}, {"unix_s", 1.8e9}, {"app", {{"requests_processing", 3.0}, {"requests_waiting", 1.0}}}};
  j["telemetry_health"] = {{"metrics_scrapes", {{"ok", 50}, {"failed", 2}}}, {"kernel_read_errors", 0}};
  j["reload"] = {{"reloads", 5}, {"refused", 2}, {"last", {{"ok", true}, {"changed", {"objective"}}}}};
  j["selected"] = 1;
  j["effective"] = AKTS_SLOT_NONE;
  j["policy_names"] = {{"0", "latency"}, {"1", "throughput"}};
  j["managed"] = {{"lc", 2}, {"be", 5}};
  j["scheduler"] = {{"state", "enabled"}, {"attached", true}};
  j["process"] = {{"cpu_seconds", 1.25}, {"resident_bytes", 4096.0}, {"start_time_seconds", 1.7e9}, {"open_fds", 9}};
  return j;
}

PromScrape rendered(const json& stats, Format f = Format::kPrometheus) {
  auto text = metrics::render(stats, {"0.1.0", "abc"}, f);
  EXPECT_TRUE(text) << (text ? "" : text.error().to_string());
  auto scrape = parse_prometheus_text(text ? *text : "");
  EXPECT_TRUE(scrape) << (scrape ? "" : scrape.error().to_string());
  return scrape ? *scrape : PromScrape{};
}

TEST(Metrics, TheTextFormatCarriesEveryFamilyWithConventionalNamesAndTypes) {
  auto s = rendered(sample_stats());
  EXPECT_EQ(s.value("akts_build_info", {{"version", "0.1.0"}, {"commit", "abc"}}), 1);
  EXPECT_EQ(s.types["akts_build_info"], "gauge");
  EXPECT_EQ(s.value("akts_selected_slot"), 1);
  EXPECT_EQ(s.value("akts_effective_slot"), -1);  // the built-in default
  EXPECT_EQ(s.value("akts_policy_info", {{"slot", "1"}, {"policy", "throughput"}}), 1);
  EXPECT_EQ(s.value("akts_switches_total", {{"cause", "operator"}}), 3);
  EXPECT_EQ(s.value("akts_switches_total", {{"cause", "controller"}}), 9);
  EXPECT_EQ(s.value("akts_switches_total", {{"cause", "breaker"}}), 2);
  EXPECT_EQ(s.value("akts_controller_decisions_total", {{"verdict", "min_dwell"}}), 4);
  EXPECT_EQ(s.value("akts_breaker_trips_total", {{"reason", "oldest_wait"}}), 2);
  EXPECT_EQ(s.value("akts_oldest_waiter_age_seconds", {{"class", "lc"}}), 0.0125);
  EXPECT_EQ(s.value("akts_longest_wait_seconds", {{"class", "lc"}}), 0.25);
  EXPECT_EQ(s.value("akts_guard_rescues_total", {{"class", "lc"}}), 7);
  EXPECT_EQ(s.value("akts_run_seconds_total", {{"class", "be"}}), 1.5);
  EXPECT_EQ(s.value("akts_managed_processes", {{"class", "be"}}), 5);
  EXPECT_EQ(s.value("akts_callback_entries_total", {{"callback", "select_cpu"}}), 100);
  EXPECT_EQ(s.value("akts_policy_calls_total", {{"slot", "0"}, {"policy", "latency"}}), 60);
  EXPECT_EQ(s.value("akts_policy_calls_total", {{"slot", "1"}, {"policy", "throughput"}}), 37);
  EXPECT_EQ(s.value("process_cpu_seconds_total"), 1.25);
  // The objective per limit; a limit without a reading has no observed sample.
  EXPECT_EQ(s.value("akts_objective_limit_seconds", {{"signal", "request_latency_p99"}}), 2.0);
  EXPECT_EQ(s.value("akts_objective_observed_seconds", {{"signal", "request_latency_p99"}}), 2.5);
  EXPECT_EQ(s.value("akts_objective_met", {{"signal", "request_latency_p99"}}), 0);
  EXPECT_EQ(s.value("akts_objective_met", {{"signal", "tpot_p99"}}), 1);
  EXPECT_EQ(s.value("akts_objective_limit_seconds", {{"signal", "tpot_p99"}}), 0.2);
  EXPECT_FALSE(s.value("akts_objective_observed_seconds", {{"signal", "tpot_p99"}}));
  EXPECT_EQ(s.value("akts_policy_running", {{"slot", "-1"}, {"policy", "default"}}), 1);  // effective: none
  EXPECT_EQ(s.value("akts_policy_running", {{"slot", "1"}, {"policy", "throughput"}}), 0);
  {
    json j = sample_stats();
    j["effective"] = 1;
    auto r = rendered(j);
    EXPECT_EQ(r.value("akts_policy_running", {{"slot", "1"}, {"policy", "throughput"}}), 1);
    EXPECT_EQ(r.value("akts_policy_running", {{"slot", "0"}, {"policy", "latency"}}), 0);
    EXPECT_EQ(r.value("akts_policy_running", {{"slot", "-1"}, {"policy", "default"}}), 0);
    j["effective"] = 5;  // an empty slot: the dispatcher falls through to the built-in default
    r = rendered(j);
    EXPECT_EQ(r.value("akts_policy_running", {{"slot", "-1"}, {"policy", "default"}}), 1);
    EXPECT_EQ(r.value("akts_policy_running", {{"slot", "1"}, {"policy", "throughput"}}), 0);
    // A limit without its max or its verdict leaves that metric out.
    j["reasoning"]["objective_now"] = {{{"signal", "tpot_p99"}, {"observed_ms", 5.0}}, {{"signal", "lc_wait_p99"}, {"max_ms", 20.0}}};
    r = rendered(j);
    EXPECT_FALSE(r.value("akts_objective_limit_seconds", {{"signal", "tpot_p99"}}));
    EXPECT_EQ(r.value("akts_objective_limit_seconds", {{"signal", "lc_wait_p99"}}), 0.02);
    EXPECT_FALSE(r.value("akts_objective_met", {{"signal", "lc_wait_p99"}}));
  }
  EXPECT_EQ(s.value("akts_telemetry_windows_total"), 1234);
  EXPECT_EQ(s.value("akts_telemetry_last_window_timestamp_seconds"), 1.8e9);
  EXPECT_EQ(s.value("akts_app_requests", {{"state", "running"}}), 3);
  EXPECT_EQ(s.value("akts_app_requests", {{"state", "waiting"}}), 1);
  EXPECT_EQ(s.value("akts_app_scrapes_total", {{"outcome", "failed"}}), 2);
  EXPECT_EQ(s.value("akts_telemetry_read_errors_total"), 0);
  EXPECT_EQ(s.value("akts_config_reloads_total", {{"outcome", "applied"}}), 3);
  EXPECT_EQ(s.value("akts_config_reloads_total", {{"outcome", "refused"}}), 2);
  EXPECT_EQ(s.value("akts_config_last_reload_successful"), 1);
  {
    json j = sample_stats();
    j["reload"]["last"]["ok"] = false;
    EXPECT_EQ(rendered(j).value("akts_config_last_reload_successful"), 0);
    j["reload"] = {{"reloads", 0}, {"refused", 0}, {"last", nullptr}};  // none yet: the config at start holds
    EXPECT_EQ(rendered(j).value("akts_config_last_reload_successful"), 1);
    j["reload"] = {{"reloads", 1}, {"refused", 2}, {"last", nullptr}};
    EXPECT_FALSE(metrics::render(j, {"0.1.0", "abc"}, Format::kPrometheus));
  }
  for (const auto& [name, type] : s.types) {
    EXPECT_EQ(type == "counter", name.ends_with("_total")) << name << " " << type;
  }
  EXPECT_EQ(s.types["akts_wait_seconds"], "histogram");
}

TEST(Metrics, WaitBucketsAreCumulativeInSecondsAndTheTopBucketOnlyInInf) {
  auto s = rendered(sample_stats());
  auto bucket = [&](const std::string& le) { return s.value("akts_wait_seconds_bucket", {{"class", "lc"}, {"le", le}}); };
  EXPECT_EQ(bucket("1.024e-06"), 0);  // 2^10 ns: below bucket 10's upper edge... its lower one
  EXPECT_EQ(bucket("2.048e-06"), 5);
  EXPECT_EQ(bucket("0.002097152"), 7);
  EXPECT_EQ(bucket("2.147483648"), 7);  // the last finite edge: the top bucket's wait is above it
  EXPECT_EQ(bucket("+Inf"), 8);
  EXPECT_EQ(s.value("akts_wait_seconds_count", {{"class", "lc"}}), 8);
  EXPECT_EQ(s.value("akts_wait_seconds_sum", {{"class", "lc"}}), 4.0);
  // Every bucket is at least the one before it.
  double prev = -1;
  for (const auto& smp : s.samples)
    if (smp.name == "akts_wait_seconds_bucket" && smp.labels.at("class") == "be") {
      EXPECT_GE(smp.value, prev);
      prev = smp.value;
    }
}

TEST(Metrics, OpenMetricsNamesFamiliesWithoutSuffixesAndEndsWithEof) {
  auto text = metrics::render(sample_stats(), {"0.1.0", "abc"}, Format::kOpenMetrics);
  ASSERT_TRUE(text);
  EXPECT_TRUE(text->ends_with("# EOF\n"));
  EXPECT_NE(text->find("# TYPE akts_switches counter\n"), std::string::npos);
  EXPECT_NE(text->find("akts_switches_total{cause=\"operator\"} 3\n"), std::string::npos);
  EXPECT_NE(text->find("# TYPE akts_build info\n"), std::string::npos);
  EXPECT_NE(text->find("akts_build_info{version=\"0.1.0\",commit=\"abc\"} 1\n"), std::string::npos);
  EXPECT_EQ(text->find("# TYPE akts_switches_total"), std::string::npos);
  // The text format has no EOF marker and no info type.
  auto plain = metrics::render(sample_stats(), {"0.1.0", "abc"}, Format::kPrometheus);
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->find("# EOF"), std::string::npos);
  EXPECT_NE(plain->find("# TYPE akts_switches_total counter\n"), std::string::npos);
}

TEST(Metrics, LabelValuesAreEscapedAndValidUtf8) {
  json j = sample_stats();
  j["policy_names"] = {{"0", "we\"ird\\na\nme \xff"}};
  auto text = metrics::render(j, {"0.1.0", "abc"}, Format::kPrometheus);
  ASSERT_TRUE(text);
  EXPECT_NE(text->find(R"(policy="we\"ird\\na\nme )" "\xef\xbf\xbd" R"(")"), std::string::npos) << *text;
  auto s = parse_prometheus_text(*text);
  ASSERT_TRUE(s) << s.error().to_string();
}

TEST(Metrics, AMalformedAnswerIsRefusedAndAMissingFieldLeavesItsMetricOut) {
  for (const char* bad : {R"({"selected": "one"})", R"({"wait": {"lc": {"log2_histogram": 3}}})",
                          R"({"policy_names": [1]})", R"({"reasoning": {"verdicts": {"applied": "x"}}})",
                          R"({"reasoning": {"objective_now": [{"signal": 3, "max_ms": 5}]}})",
                          R"({"reasoning": {"objective_now": [{"signal": "tpot_p99", "max_ms": "5"}]}})",
                          R"({"reasoning": {"objective_now": {"signal": "tpot_p99"}}})",
                          R"({"window": {"seq": "7"}})", "[]"}) {
    auto r = metrics::render(json::parse(bad), {"0.1.0", "abc"}, Format::kPrometheus);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_NE(r.error().message.find("malformed"), std::string::npos);
    }
  }
  auto s = rendered(json::object());
  EXPECT_EQ(s.value("akts_build_info", {{"version", "0.1.0"}, {"commit", "abc"}}), 1);
  EXPECT_FALSE(s.value("akts_selected_slot"));
}

TEST(Metrics, NegotiationFollowsTheAcceptHeadersQValues) {
  // What Prometheus 2.x sends.
  EXPECT_EQ(metrics::negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                               "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Format::kOpenMetrics);
  EXPECT_EQ(metrics::negotiate("text/plain;version=0.0.4"), Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate(""), Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate("*/*"), Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate("application/openmetrics-text; q=0"), Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate("text/plain;q=0.9, application/openmetrics-text;q=0.5"), Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate("application/openmetrics-text;q=bogus"), Format::kPrometheus);
  EXPECT_EQ(metrics::negotiate(",,;;\xff"), Format::kPrometheus);
}

TEST(Metrics, ListenAddressesAreCheckedAndAPortAloneIsLoopback) {
  auto a = parse_listen_address("9464", "--metrics-listen", "127.0.0.1");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9464);
  a = parse_listen_address("[::1]:80", "--metrics-listen", "127.0.0.1");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "::1");
  a = parse_listen_address("::1:80", "--http");  // unbracketed, as akts mcp --http always took it
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "::1");
  for (const char* bad : {"", ":80", "host:", "host:65536", "host:-1", "9464"})
    EXPECT_FALSE(parse_listen_address(bad, "--http")) << bad;  // no default host: a port alone is refused too
}

TEST(Metrics, ProcessFiguresComeFromProcAndACommWithParenthesesIsRead) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("akts-proc-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "42" / "fd");
  std::ofstream(dir / "42" / "fd" / "0") << "";
  std::ofstream(dir / "42" / "fd" / "1") << "";
  // Fields 14 (utime) and 15 (stime) in ticks, 22 (start) in ticks since boot, 24 (rss) in pages.
  std::ofstream(dir / "42" / "stat") << "42 (a) (b c) S 1 1 1 0 -1 4194560 0 0 0 0 " << 3 * ::sysconf(_SC_CLK_TCK)
                                     << " " << ::sysconf(_SC_CLK_TCK) << " 0 0 20 0 1 0 "
                                     << 10 * ::sysconf(_SC_CLK_TCK) << " 1000 5 18446744073709551615\n";
  std::ofstream(dir / "stat") << "cpu  1 2 3\nbtime 1700000000\n";
  auto p = metrics::read_process(dir.string(), "42");
  ASSERT_TRUE(p) << p.error().to_string();
  EXPECT_EQ((*p)["cpu_seconds"], 4.0);
  EXPECT_EQ((*p)["start_time_seconds"], 1700000010.0);
  EXPECT_EQ((*p)["resident_bytes"], 5.0 * ::sysconf(_SC_PAGESIZE));
  EXPECT_EQ((*p)["open_fds"], 2);
  std::ofstream(dir / "42" / "stat") << "42 (a) S 1\n";
  EXPECT_FALSE(metrics::read_process(dir.string(), "42"));
  EXPECT_FALSE(metrics::read_process(dir.string(), "43"));
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(metrics::read_process());  // this process
}

TEST(Metrics, TheArbiterCountsSwitchesThatChangedTheSelectionByCause) {
  uint32_t selected = 1;
  Arbiter a({[&] { return selected; }, [&](uint32_t s) { selected = s; }, [] { return false; }},
            ArbiterOptions{0ms, 30, 1s, false});
  auto t = Arbiter::Clock::time_point{} + 100s;
  ASSERT_TRUE(a.operator_switch(1, t));  // already selected: no change
  ASSERT_TRUE(a.operator_switch(0, t));
  ASSERT_TRUE(a.hold(1, 1s, t));
  auto v = a.controller_proposes(0, t + 500ms);
  EXPECT_EQ(v.kind, "locked");
  v = a.controller_proposes(1, t + 5s);
  EXPECT_EQ(v.kind, "unchanged");
  v = a.controller_proposes(0, t + 5s);
  EXPECT_EQ(v.kind, "applied");
  EXPECT_EQ(a.switches().operator_, 2u);
  EXPECT_EQ(a.switches().controller, 1u);
}

// A main loop for the endpoint: polls its fd and serves, until told to stop.
struct Loop {
  metrics::MetricsEndpoint& ep;
  std::atomic<bool> stop{false};
  std::atomic<int> renders{0};
  std::thread t;
  explicit Loop(metrics::MetricsEndpoint& e) : ep(e) {
    t = std::thread([this] {
      while (!stop) {
        pollfd p{ep.fd(), POLLIN, 0};
        if (::poll(&p, 1, 20) > 0)
          ep.serve([this](Format f) -> Result<std::string> {
            ++renders;
            return metrics::render(sample_stats(), {"0.1.0", "abc"}, f);
          });
      }
    });
  }
  ~Loop() {
    stop = true;
    t.join();
  }
};

TEST(MetricsEndpoint, ServesBothFormatsThroughTheMainLoopAndRefusesOtherMethods) {
  auto ep = metrics::MetricsEndpoint::start({"127.0.0.1", 0, 2000ms});
  ASSERT_TRUE(ep) << ep.error().to_string();
  Loop loop(**ep);
  httplib::Client c("127.0.0.1", (*ep)->port());
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_TRUE(parse_prometheus_text(r->body));
  r = c.Get("/metrics", {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_TRUE(r->body.ends_with("# EOF\n"));
  r = c.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  r = c.Get("/nope");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_GE(loop.renders.load(), 2);
}

TEST(MetricsEndpoint, AScrapeTheLoopDoesNotServeIsAnswered503AndStopAnswersTheRest) {
  auto ep = metrics::MetricsEndpoint::start({"127.0.0.1", 0, 200ms});
  ASSERT_TRUE(ep) << ep.error().to_string();
  httplib::Client c("127.0.0.1", (*ep)->port());
  auto r = c.Get("/metrics");  // nobody polls the fd
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_NE(r->body.find("did not answer"), std::string::npos);
  // A scrape waiting when the endpoint stops is answered, not left hanging.
  auto ep2 = metrics::MetricsEndpoint::start({"127.0.0.1", 0, 30000ms});
  ASSERT_TRUE(ep2);
  std::thread stopper([&] {
    std::this_thread::sleep_for(300ms);
    (*ep2)->stop();
  });
  httplib::Client c2("127.0.0.1", (*ep2)->port());
  auto t0 = std::chrono::steady_clock::now();
  auto r2 = c2.Get("/metrics");
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  if (r2) {
    EXPECT_EQ(r2->status, 503);  // or the connection closed as the listener stopped
  }
  // The same port twice is an error at start, not later.
  auto again = metrics::MetricsEndpoint::start({"127.0.0.1", (*ep)->port(), 200ms});
  EXPECT_FALSE(again);
}

// The listening socket of this process bound to 127.0.0.1:port, or -1.
int listening_fd(int port) {
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    int fd = std::stoi(e.path().filename().string());
    sockaddr_in a{};
    socklen_t len = sizeof(a);
    int listening = 0;
    socklen_t ll = sizeof(listening);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0 && a.sin_family == AF_INET &&
        ntohs(a.sin_port) == port && ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &ll) == 0 && listening)
      return fd;
  }
  return -1;
}

TEST(MetricsEndpoint, AListenerThatFailsWakesTheLoopAndSaysSo) {
  auto ep = metrics::MetricsEndpoint::start({"127.0.0.1", 0, 2000ms});
  ASSERT_TRUE(ep) << ep.error().to_string();
  EXPECT_FALSE((*ep)->failed());
  int lfd = listening_fd((*ep)->port());
  ASSERT_GE(lfd, 0);
  // A shut-down socket makes accept fail with EINVAL, which ends httplib's accept loop as ENFILE would.
  ASSERT_EQ(::shutdown(lfd, SHUT_RDWR), 0);
  pollfd p{(*ep)->fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1) << "the main loop was not woken";
  bool rendered = false;
  (*ep)->serve([&](Format) -> Result<std::string> {
    rendered = true;
    return std::string("x\n");
  });
  EXPECT_FALSE(rendered);  // no scrape waited
  EXPECT_TRUE((*ep)->failed());
  httplib::Client c("127.0.0.1", (*ep)->port());
  c.set_connection_timeout(1s);
  EXPECT_FALSE(c.Get("/metrics"));  // nothing answers there any more
  (*ep)->stop();  // returns: the thread has ended
  EXPECT_TRUE((*ep)->failed());
  // A new endpoint on the same port listens again (what the daemon does).
  auto again = metrics::MetricsEndpoint::start({"127.0.0.1", (*ep)->port(), 2000ms});
  ASSERT_TRUE(again) << again.error().to_string();
  std::atomic<bool> done{false};
  std::thread loop([&] {
    while (!done) {
      pollfd q{(*again)->fd(), POLLIN, 0};
      if (::poll(&q, 1, 50) == 1) (*again)->serve([](Format) -> Result<std::string> { return std::string("ok 1\n"); });
    }
  });
  httplib::Client c2("127.0.0.1", (*again)->port());
  auto r = c2.Get("/metrics");
  done = true;
  loop.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok 1\n");
}

TEST(MetricsEndpoint, AStoppedListenerHasNotFailed) {
  auto ep = metrics::MetricsEndpoint::start({"127.0.0.1", 0, 2000ms});
  ASSERT_TRUE(ep) << ep.error().to_string();
  (*ep)->stop();
  EXPECT_FALSE((*ep)->failed());
  (*ep)->stop();  // twice: nothing happens
  EXPECT_FALSE((*ep)->failed());
}

TEST(MetricsEndpoint, AFailedListenerIsStartedAgainLaterAndLaterButAlways) {
  using Clock = metrics::RelistenSchedule::Clock;
  metrics::RelistenSchedule r;
  Clock::time_point t{};
  r.started(t);
  t += 3600s;  // an hour of listening, then a failure: 1 s
  EXPECT_EQ(r.listener_failed(t), t + 1s);
  EXPECT_EQ(r.start_failed(t + 1s), t + 1s + 2s);  // the start fails: 2 s, then 4 s
  EXPECT_EQ(r.start_failed(t + 3s), t + 3s + 4s);
  t += 7s;
  r.started(t);
  t += 5s;  // a listener that lasted 5 s: twice the last delay
  EXPECT_EQ(r.listener_failed(t), t + 8s);
  for (int i = 0; i < 10; ++i) r.start_failed(t);
  EXPECT_EQ(r.delay(), 60s);  // at most a minute apart, never given up
  r.started(t);
  t += 61s;  // one that lasted a minute: 1 s again
  EXPECT_EQ(r.listener_failed(t), t + 1s);
}

}  // namespace
}  // namespace akts
