// The daemon's /metrics listener on its event loop, and its relisten after a failed socket.
#include "daemon/metrics_listener.h"

#include <spdlog/spdlog.h>

#include "common/http_url.h"

namespace akts {

Result<std::unique_ptr<MetricsListener>> MetricsListener::start(const std::string& listen, Render render) {
  auto addr = parse_listen_address(listen, "metrics_listen", "127.0.0.1");
  if (!addr) return addr.error();
  metrics::EndpointOptions at;
  at.host = addr->host;
  at.port = addr->port;
  std::unique_ptr<MetricsListener> l(new MetricsListener(at, std::move(render)));
  auto m = metrics::MetricsEndpoint::start(l->at_);
  l->relisten_.started(Clock::now());
  if (!m) return errorf(ErrorKind::kSystem, "metrics: {}", m.error().to_string());
  l->http_ = std::move(*m);
  l->at_.port = l->http_->port();
  spdlog::info("metrics at {}{}", l->http_->url(),
               at.host == "127.0.0.1" || at.host == "::1" || at.host == "localhost"
                   ? ""
                   : " (not a loopback address: anyone who reaches it can read them)");
  return l;
}

std::string MetricsListener::url() const { return http_ ? http_->url() : std::string(); }

void MetricsListener::watch(EventLoop& loop) {
  loop_ = &loop;
  if (!http_) return;
  loop.add("metrics", http_->fd(), [this] {
    http_->serve(render_);
    if (http_->failed()) failed();  // its socket failed (an accept error): another, on the same address
  });
}

void MetricsListener::failed() {
  const std::string url = http_->url();
  if (loop_) loop_->remove("metrics");
  http_->stop();
  http_.reset();
  relisten_at_ = relisten_.listener_failed(Clock::now());
  spdlog::warn("metrics: the listener on {} failed (an accept error); listening again in {} s", url,
               relisten_.delay().count());
}

void MetricsListener::tick(Clock::time_point now) {
  if (now < relisten_at_) return;
  Result<std::unique_ptr<metrics::MetricsEndpoint>> m = errorf(ErrorKind::kSystem, "not started");
  try {
    m = metrics::MetricsEndpoint::start(at_);
  } catch (const std::exception& e) {  // no thread or no memory: a failed start, not the daemon's end
    m = errorf(ErrorKind::kSystem, "{}", e.what());
  }
  if (!m) {
    relisten_at_ = relisten_.start_failed(now);
    spdlog::warn("metrics: cannot listen again yet ({}); trying in {} s", m.error().to_string(),
                 relisten_.delay().count());
    return;
  }
  http_ = std::move(*m);
  relisten_.started(now);
  relisten_at_ = Clock::time_point::max();
  if (loop_) watch(*loop_);
  spdlog::info("metrics: listening again at {}", http_->url());
}

void MetricsListener::stop() {
  if (http_) http_->stop();
}

}  // namespace akts
