// The metrics scraper against a real HTTP server on this host: it delivers
// scrapes, refuses a body past its cap, and stops promptly while a request
// hangs (the reasoning thread and the daemon's shutdown never wait on it).
#include "telemetry/scraper.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

namespace akts {
namespace {

using namespace std::chrono_literals;

struct Server {
  httplib::Server srv;
  int port = 0;
  std::thread t;
  std::atomic<int> mode{0};  // 0 ok, 1 huge, 2 hang, 3 slow (answers after 300 ms, as a starved server does)
  std::atomic<bool> quit{false};
  Server() {
    srv.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      if (mode == 1) {
        res.set_content(std::string(MetricsScraper::kMaxBody + 1000, '#'), "text/plain");
      } else if (mode == 3) {
        std::this_thread::sleep_for(300ms);
        res.set_content("llamacpp:requests_processing 4\n", "text/plain");
      } else if (mode == 2) {
        for (int i = 0; i < 300 && !quit; ++i) std::this_thread::sleep_for(10ms);
        res.set_content("llamacpp:requests_processing 1\n", "text/plain");
      } else {
        res.set_content("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 3\n", "text/plain");
      }
    });
    port = srv.bind_to_any_port("127.0.0.1");
    t = std::thread([this] { srv.listen_after_bind(); });
    while (!srv.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~Server() {
    quit = true;
    srv.stop();
    t.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port) + "/metrics"; }
};

std::optional<PromScrape> wait_take(MetricsScraper& s, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (auto p = s.latest()) return p->metrics;
    std::this_thread::sleep_for(10ms);
  }
  return std::nullopt;
}

TEST(MetricsScraper, DeliversScrapes) {
  Server srv;
  auto s = MetricsScraper::start(srv.url(), 50ms);
  ASSERT_TRUE(s) << s.error().to_string();
  auto p = wait_take(**s, 3s);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p->value("llamacpp:requests_processing"), 3);
}

TEST(MetricsScraper, ABodyPastTheCapIsAFailure) {
  Server srv;
  srv.mode = 1;
  auto s = MetricsScraper::start(srv.url(), 50ms);
  ASSERT_TRUE(s);
  EXPECT_FALSE(wait_take(**s, 1500ms));
  EXPECT_GT((*s)->failures(), 0u);
}

TEST(MetricsScraper, ASlowServerIsHeardWithinTheBudgetAndOnlyThen) {
  Server srv;
  srv.mode = 3;
  auto within = MetricsScraper::start(srv.url(), 50ms, 1000ms);
  auto past = MetricsScraper::start(srv.url(), 50ms);  // the default budget: 4 periods, 200 ms
  ASSERT_TRUE(within && past);
  auto p = wait_take(**within, 3s);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p->value("llamacpp:requests_processing"), 4);
  EXPECT_FALSE((*past)->latest());
  EXPECT_GT((*past)->failures(), 0u);
}

TEST(MetricsScraper, StopsPromptlyWhileARequestHangs) {
  Server srv;
  srv.mode = 2;
  auto s = MetricsScraper::start(srv.url(), 2000ms);  // read timeout 2 s: a hang outlasts the test's patience
  ASSERT_TRUE(s);
  std::this_thread::sleep_for(200ms);  // the request is in flight
  auto t0 = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
}

TEST(MetricsScraper, RefusesWhatItCannotUse) {
  EXPECT_FALSE(MetricsScraper::start("https://127.0.0.1:1/metrics", 100ms));
  EXPECT_FALSE(MetricsScraper::start("127.0.0.1:9090", 100ms));
}

TEST(MetricsScraper, AHostThatDoesNotResolveYetStopsNothing) {
  auto s = MetricsScraper::start("http://no-such-host.invalid:9090/metrics", 100ms);
  ASSERT_TRUE(s);  // it retries on its own thread; the daemon starts
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE((*s)->latest());
  EXPECT_GE((*s)->failures(), 1u);
  auto t0 = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
}

}  // namespace
}  // namespace akts
