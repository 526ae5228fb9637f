// The metrics scraper's thread, its bounds and its stop.
#include "telemetry/scraper.h"

#include <signal.h>

#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "common/interrupt.h"

namespace akts {
Result<std::unique_ptr<MetricsScraper>> MetricsScraper::start(const std::string& url,
                                                              std::chrono::milliseconds period,
                                                              std::chrono::milliseconds timeout) {
  auto e = parse_http_url(url, "telemetry.metrics_url");
  if (!e) return e.error();
  if (timeout.count() <= 0) timeout = 4 * period;
  auto s = std::unique_ptr<MetricsScraper>(new MetricsScraper(url, *e, period, timeout));
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

MetricsScraper::MetricsScraper(std::string url, HttpUrl u, std::chrono::milliseconds period,
                               std::chrono::milliseconds timeout)
    : url_(std::move(url)), u_(std::move(u)), period_(period), timeout_(timeout) {}

MetricsScraper::~MetricsScraper() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  std::unique_lock lk(mu_);
  interrupt_until_idle(lk, done_cv_, in_request_, [this] {
    std::lock_guard l(mu_);
    if (cli_) cli_->stop();
  });
  lk.unlock();
  if (thread_.joinable()) thread_.join();
}

std::optional<AppScrape> MetricsScraper::latest() const {
  std::lock_guard lk(mu_);
  if (!latest_) return std::nullopt;
  return AppScrape{*latest_, std::chrono::duration<double>(std::chrono::steady_clock::now() - latest_at_).count(),
                   seq_, server_};
}

bool MetricsScraper::connect_client() {
  auto ip = resolve_ipv4(connect_host(u_));
  if (!ip) {
    if (failures_.fetch_add(1) == 0)
      spdlog::warn("metrics: {}; retrying every 5 s, windows carry no application figures meanwhile",
                   ip.error().message);
    return false;
  }
  auto cli = std::make_unique<httplib::Client>(*ip, u_.port);
  auto t = std::max<std::chrono::milliseconds>(timeout_, std::chrono::milliseconds(10));
  // The connect is bounded by a period: the kernel, not a starved server, answers it, and the
  // destructor's stop() waits while a connect is under way (httplib connects under its lock).
  cli->set_connection_timeout(std::min(t, std::max<std::chrono::milliseconds>(period_, std::chrono::milliseconds(50))));
  cli->set_read_timeout(t);
  cli->set_write_timeout(t);
  // The name as written, not the address: a virtual host or an ingress routes by it.
  cli->set_default_headers({{"Host", fmt::format("{}:{}", u_.host, u_.port)}});
  std::lock_guard lk(mu_);
  cli_ = std::move(cli);
  return true;
}

std::optional<std::string> MetricsScraper::get(const std::string& path, size_t max_body, std::string& why) {
  try {
    std::string body;
    bool too_big = false, too_slow = false;
    auto deadline = std::chrono::steady_clock::now() + timeout_;
    auto res = cli_->Get(path, [&](const char* data, size_t n) {
      too_big = body.size() + n > max_body;
      too_slow = std::chrono::steady_clock::now() > deadline;
      if (too_big || too_slow) return false;
      body.append(data, n);
      return true;
    });
    if (too_big)
      why = fmt::format("the answer is larger than {} bytes", max_body);
    else if (too_slow)
      why = fmt::format("the answer took longer than {} ms", timeout_.count());
    else if (!res)
      why = httplib::to_string(res.error());
    else if (res->status != 200)
      why = fmt::format("HTTP {}", res->status);
    else
      return body;
  } catch (const std::exception& ex) {
    why = ex.what();
  }
  return std::nullopt;
}

std::string MetricsScraper::info_path(const std::string& metrics_path) {
  return metrics_path.substr(0, metrics_path.rfind('/') + 1) + "info";
}

void MetricsScraper::run() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);  // a shut socket fails a write with EPIPE instead
  const std::string path = u_.prefix.empty() ? "/metrics" : u_.prefix;
  auto next = std::chrono::steady_clock::now();
  std::unique_lock lk(mu_);
  while (!stop_) {
    if (!cli_) {
      lk.unlock();
      bool ok = connect_client();
      lk.lock();
      if (!ok) {
        cv_.wait_for(lk, std::chrono::seconds(5), [this] { return stop_; });
        continue;
      }
    }
    in_request_ = true;
    lk.unlock();
    std::optional<PromScrape> got;
    std::chrono::steady_clock::time_point got_at{};
    std::string why;
    if (auto body = get(path, kMaxBody, why)) {
      got_at = std::chrono::steady_clock::now();  // the scrape's time, not the /info question's after it
      if (auto p = parse_prometheus_text(*body); !p)
        why = p.error().message;
      else
        got = std::move(*p);
    }
    // An empty scrape: what the server says it is, every 5 s at most, until it prints a metric (a fresh TGI).
    std::string server;
    if (got && got->samples.empty() && std::chrono::steady_clock::now() >= next_info_) {
      next_info_ = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      std::string why_info;
      if (auto body = get(info_path(path), 64 << 10, why_info)) {
        auto j = nlohmann::json::parse(*body, nullptr, false);
        if (j.is_object() && j.contains("router") && j["router"].is_string() && j["router"].get<std::string>().size() <= 100)
          server = j["router"].get<std::string>();
      }
    }
    lk.lock();
    if (!server.empty()) server_ = server;
    in_request_ = false;
    done_cv_.notify_all();
    if (got) {
      successes_.fetch_add(1);
      failures_in_a_row_ = 0;
      latest_ = std::move(got);
      latest_at_ = got_at;
      ++seq_;
    } else {
      failures_.fetch_add(1);
      if (failures_in_a_row_++ % 100 == 0)
        spdlog::warn("metrics scrape of {} failed ({}); windows carry no application figures until it answers",
                     url_, why);
    }
    next += period_;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + period_;
    cv_.wait_until(lk, next, [this] { return stop_; });
  }
}

}  // namespace akts
