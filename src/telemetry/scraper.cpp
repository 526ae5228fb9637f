// The metrics scraper's thread, its bounds and its stop.
#include "telemetry/scraper.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <signal.h>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include "common/http_url.h"
#include "common/interrupt.h"

namespace akts {
namespace {

// Resolves host to an IPv4 address once, so no later request waits on DNS.
Result<std::string> resolve_once(const std::string& host) {
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res); rc != 0 || !res)
    return errorf(ErrorKind::kInvalidArgument, "telemetry.metrics_url: cannot resolve '{}': {}", host,
                  gai_strerror(rc));
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  freeaddrinfo(res);
  return std::string(buf);
}

}  // namespace

Result<std::unique_ptr<MetricsScraper>> MetricsScraper::start(const std::string& url,
                                                              std::chrono::milliseconds period) {
  auto e = parse_http_url(url, "telemetry.metrics_url");
  if (!e) return e.error();
  auto ip = resolve_once(connect_host(*e));
  if (!ip) return ip.error();
  auto cli = std::make_unique<httplib::Client>(*ip, e->port);
  auto t = std::max<std::chrono::milliseconds>(period, std::chrono::milliseconds(50));
  cli->set_connection_timeout(t);
  cli->set_read_timeout(t);
  cli->set_write_timeout(t);
  std::string path = e->prefix.empty() ? "/metrics" : e->prefix;
  auto s = std::unique_ptr<MetricsScraper>(new MetricsScraper(url, path, std::move(cli), period));
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

MetricsScraper::MetricsScraper(std::string url, std::string path, std::unique_ptr<httplib::Client> cli,
                               std::chrono::milliseconds period)
    : url_(std::move(url)), path_(std::move(path)), cli_(std::move(cli)), period_(period) {}

MetricsScraper::~MetricsScraper() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  std::unique_lock lk(mu_);
  interrupt_until_idle(lk, done_cv_, in_request_, [this] { cli_->stop(); });
  lk.unlock();
  if (thread_.joinable()) thread_.join();
}

std::optional<PromScrape> MetricsScraper::take() {
  std::lock_guard lk(mu_);
  std::optional<PromScrape> out;
  out.swap(latest_);
  return out;
}

void MetricsScraper::run() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);  // a shut socket fails a write with EPIPE instead
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lk(mu_);
  while (!stop_) {
    in_request_ = true;
    lk.unlock();
    std::optional<PromScrape> got;
    std::string why;
    try {
      std::string body;
      bool too_big = false;
      auto res = cli_->Get(path_, [&](const char* data, size_t n) {
        if (body.size() + n > kMaxBody) {
          too_big = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
      if (too_big)
        why = fmt::format("the answer is larger than {} bytes", kMaxBody);
      else if (!res)
        why = httplib::to_string(res.error());
      else if (res->status != 200)
        why = fmt::format("HTTP {}", res->status);
      else if (auto p = parse_prometheus_text(body); !p)
        why = p.error().message;
      else
        got = std::move(*p);
    } catch (const std::exception& ex) {
      why = ex.what();
    }
    if (got) {
      successes_.fetch_add(1);
    } else if (failures_.fetch_add(1) % 100 == 0) {
      spdlog::warn("metrics scrape of {} failed ({}); windows carry no application figures until it answers", url_,
                   why);
    }
    lk.lock();
    in_request_ = false;
    done_cv_.notify_all();
    if (got) latest_ = std::move(got);
    next += period_;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period_;
    cv_.wait_until(lk, next, [this] { return stop_; });
  }
}

}  // namespace akts
