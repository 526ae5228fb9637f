// The metrics scraper against a real HTTP server on this host: it delivers
// scrapes, refuses a body past its cap, and stops promptly while a request
// hangs (the reasoning thread and the daemon's shutdown never wait on it).
#include "telemetry/scraper.h"
#include "wait_until.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

namespace akts {
namespace {

using namespace std::chrono_literals;

// Bounds on time are seconds, so that a loaded machine (ASan, ctest -j2, a guest on both cores) passes, and below
// what the defect each guards against would take (a stop that waited for a hung request: a minute).
constexpr auto kPatience = 30s;  // how long a test waits for what must come

struct Server {
  httplib::Server srv;
  int port = 0;
  std::thread t;
  // 0 ok, 1 huge, 2 hang (until the server stops, or a minute), 3 slow (answers after 300 ms, as a starved server
  // does), 4 a fresh TGI (an empty /metrics; GET /info says what it is)
  std::atomic<int> mode{0};
  std::atomic<int> hanging{0};  // requests the hang holds now
  std::atomic<int> infos{0};    // GET /info answered
  std::atomic<bool> quit{false};
  Server() {
    srv.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      if (mode == 1) {
        res.set_content(std::string(MetricsScraper::kMaxBody + 1000, '#'), "text/plain");
      } else if (mode == 3) {
        std::this_thread::sleep_for(300ms);
        res.set_content("llamacpp:requests_processing 4\n", "text/plain");
      } else if (mode == 2) {
        ++hanging;
        for (int i = 0; i < 6000 && !quit; ++i) std::this_thread::sleep_for(10ms);
        --hanging;
        res.set_content("llamacpp:requests_processing 1\n", "text/plain");
      } else if (mode == 4) {
        res.set_content("", "text/plain");
      } else {
        res.set_content("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 3\n", "text/plain");
      }
    });
    // TGI's GET /info (router/src/lib.rs, Info): the fields it fills, "router" from its crate's name.
    srv.Get("/info", [this](const httplib::Request&, httplib::Response& res) {
      ++infos;
      res.set_content(R"({"model_id":"bigscience/bloom-560m","model_sha":null,"model_pipeline_tag":"text-generation",)"
                      R"("max_concurrent_requests":128,"max_best_of":2,"max_stop_sequences":4,"max_input_tokens":1024,)"
                      R"("max_total_tokens":2048,"validation_workers":2,"max_client_batch_size":4,)"
                      R"("router":"text-generation-router","version":"3.3.6-dev0","sha":null,"docker_label":null})",
                      "application/json");
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

// Waits for `done` (polled), at most kPatience; says whether it came.
template <class F>
bool wait_until(F done) { return akts::test::wait_until(done, kPatience); }

TEST(MetricsScraper, DeliversScrapes) {
  Server srv;
  auto s = MetricsScraper::start(srv.url(), 50ms);
  ASSERT_TRUE(s) << s.error().to_string();
  auto p = wait_take(**s, kPatience);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p->value("llamacpp:requests_processing"), 3);
}

TEST(MetricsScraper, AnEmptyScrapeAsksTheServerWhatItIsAndAFullOneDoesNot) {
  Server srv;
  srv.mode = 4;
  auto s = MetricsScraper::start(srv.url(), 20ms);
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_TRUE(wait_until([&] {
    auto p = (*s)->latest();
    return p && p->server == "text-generation-router";
  }));
  EXPECT_TRUE((*s)->latest()->metrics.samples.empty());
  // Every 5 s at most: 20 scrapes a second asked it once in the first second.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(srv.infos, 1);
  EXPECT_EQ(MetricsScraper::info_path("/metrics"), "/info");
  EXPECT_EQ(MetricsScraper::info_path("/engine/metrics"), "/engine/info");

  Server full;  // a server whose scrape has metrics is never asked
  auto f = MetricsScraper::start(full.url(), 20ms);
  ASSERT_TRUE(f);
  ASSERT_TRUE(wait_take(**f, kPatience));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(full.infos, 0);
  EXPECT_EQ((*f)->latest()->server, "");
}

TEST(MetricsScraper, ABodyPastTheCapIsAFailure) {
  Server srv;
  srv.mode = 1;
  auto s = MetricsScraper::start(srv.url(), 50ms);
  ASSERT_TRUE(s);
  EXPECT_FALSE(wait_take(**s, 1500ms));
  EXPECT_TRUE(wait_until([&] { return (*s)->failures() > 0; }));
}

TEST(MetricsScraper, ASlowServerIsHeardWithinTheBudgetAndOnlyThen) {
  Server srv;
  srv.mode = 3;
  auto within = MetricsScraper::start(srv.url(), 50ms, 10000ms);  // 300 ms: well within, however loaded the machine
  auto past = MetricsScraper::start(srv.url(), 50ms);             // the default budget: 4 periods, 200 ms
  ASSERT_TRUE(within && past);
  auto p = wait_take(**within, kPatience);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p->value("llamacpp:requests_processing"), 4);
  // Past the budget: cut at its deadline, however late the answer is read.
  EXPECT_TRUE(wait_until([&] { return (*past)->failures() > 0; }));
  EXPECT_FALSE((*past)->latest());
}

TEST(MetricsScraper, StopsPromptlyWhileARequestHangs) {
  Server srv;
  srv.mode = 2;
  // A budget of a minute: a stop that waited for the request would wait until the hang or the budget ends.
  auto s = MetricsScraper::start(srv.url(), 2000ms, 60000ms);
  ASSERT_TRUE(s);
  ASSERT_TRUE(wait_until([&] { return srv.hanging > 0; }));  // the request is in flight
  auto t0 = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // documented: ~10 ms
}

TEST(MetricsScraper, RefusesWhatItCannotUse) {
  EXPECT_FALSE(MetricsScraper::start("https://127.0.0.1:1/metrics", 100ms));
  EXPECT_FALSE(MetricsScraper::start("127.0.0.1:9090", 100ms));
}

TEST(MetricsScraper, AHostThatDoesNotResolveYetStopsNothing) {
  auto s = MetricsScraper::start("http://no-such-host.invalid:9090/metrics", 100ms);
  ASSERT_TRUE(s);  // it retries on its own thread; the daemon starts
  // Resolving failed: it waits 5 s before it tries again.
  EXPECT_TRUE(wait_until([&] { return (*s)->failures() >= 1; }));
  EXPECT_FALSE((*s)->latest());
  auto t0 = std::chrono::steady_clock::now();
  s->reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2500ms);  // the stop wakes it: not the rest of its 5 s wait
}

}  // namespace
}  // namespace akts
