// The application's metrics endpoint, scraped on a thread of its own: a slow
// or stalled endpoint (a server that trickles its answer, a body that never
// ends) costs windows their application figures, never the reasoning thread
// its period or the daemon its shutdown. The host name is resolved on that
// thread too, until it resolves (retried every 5 s; a daemon starting before
// the network does is not stopped by it), then once only; a body past 4 MiB,
// or one that takes longer than its budget (4 periods unless told), is cut off
// and counted as a failure. While the scrape is empty (a fresh TGI prints no
// metric before its first request), GET /info (beside the metrics path) is
// asked every 5 s at most for the server's "router", which recognition uses
// (a question with a budget of its own, after the scrape, whose age it leaves alone).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/http_url.h"
#include "common/result.h"
#include "telemetry/sampler.h"

namespace httplib {
class Client;
}

namespace akts {

class MetricsScraper {
 public:
  // url: http://host:port[/path] (path default /metrics). Refuses a URL it cannot parse.
  // timeout: the budget of one scrape (connecting, each read, the whole answer); 0: four periods.
  static Result<std::unique_ptr<MetricsScraper>> start(const std::string& url, std::chrono::milliseconds period,
                                                       std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  ~MetricsScraper();  // stops a request in flight (within ~10 ms once it is on the wire) and joins
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  // The latest complete scrape (nullopt until one succeeds), with its age and number.
  std::optional<AppScrape> latest() const;
  uint64_t failures() const { return failures_.load(); }
  uint64_t successes() const { return successes_.load(); }

  static constexpr size_t kMaxBody = 4 << 20;

 private:
  MetricsScraper(std::string url, HttpUrl u, std::chrono::milliseconds period, std::chrono::milliseconds timeout);
  void run();
  bool connect_client();  // resolves the host and makes the client (this thread)
  // One GET within the scrape's budget and max_body bytes; nullopt with `why` on any failure or status but 200.
  std::optional<std::string> get(const std::string& path, size_t max_body, std::string& why);

 public:
  // "/metrics" -> "/info", "/engine/metrics" -> "/engine/info".
  static std::string info_path(const std::string& metrics_path);

 private:

  std::string url_;
  HttpUrl u_;
  std::unique_ptr<httplib::Client> cli_;  // set once by the thread, under mu_
  std::chrono::milliseconds period_;
  std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  bool stop_ = false, in_request_ = false;
  std::optional<PromScrape> latest_;
  std::chrono::steady_clock::time_point latest_at_{};
  uint64_t seq_ = 0;
  std::string server_;  // the server's GET /info "router", once asked (under mu_)
  std::chrono::steady_clock::time_point next_info_{};  // the thread's own
  uint64_t failures_in_a_row_ = 0;
  std::atomic<uint64_t> failures_{0}, successes_{0};
  std::thread thread_;
};

}  // namespace akts
