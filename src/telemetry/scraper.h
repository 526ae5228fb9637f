// The application's metrics endpoint, scraped on a thread of its own: a slow
// or stalled endpoint (a server that trickles its answer, a body that never
// ends) costs windows their application figures, never the reasoning thread
// its period or the daemon its shutdown. The host is resolved once, when the
// scraper starts; a body past 4 MiB is cut off and counted as a failure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/result.h"
#include "telemetry/prometheus.h"

namespace httplib {
class Client;
}

namespace akts {

class MetricsScraper {
 public:
  // url: http://host:port[/path] (path default /metrics). Refuses a URL it
  // cannot parse or a host it cannot resolve.
  static Result<std::unique_ptr<MetricsScraper>> start(const std::string& url, std::chrono::milliseconds period);
  ~MetricsScraper();  // stops a request in flight (within ~10 ms once it is on the wire) and joins
  MetricsScraper(const MetricsScraper&) = delete;
  MetricsScraper& operator=(const MetricsScraper&) = delete;

  // The latest complete scrape that has not been taken yet.
  std::optional<PromScrape> take();
  uint64_t failures() const { return failures_.load(); }
  uint64_t successes() const { return successes_.load(); }

  static constexpr size_t kMaxBody = 4 << 20;

 private:
  MetricsScraper(std::string url, std::string path, std::unique_ptr<httplib::Client> cli,
                 std::chrono::milliseconds period);
  void run();

  std::string url_, path_;
  std::unique_ptr<httplib::Client> cli_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  bool stop_ = false, in_request_ = false;
  std::optional<PromScrape> latest_;
  std::atomic<uint64_t> failures_{0}, successes_{0};
  std::thread thread_;
};

}  // namespace akts
