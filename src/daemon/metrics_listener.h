// The daemon's /metrics listener on its event loop: the HTTP endpoint (metrics/http_endpoint.h), bound before the
// scheduler attaches; a scrape is answered on the loop's thread; a listener whose socket fails is started again on
// the same address and port later and later (RelistenSchedule), never given up.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "daemon/event_loop.h"
#include "metrics/exposition.h"
#include "metrics/http_endpoint.h"

namespace akts {

class MetricsListener {
 public:
  using Clock = std::chrono::steady_clock;
  using Render = std::function<Result<std::string>(metrics::Format)>;

  // Listens at `listen` ("HOST:PORT", or "PORT" on 127.0.0.1). Errors: a malformed address (kInvalidArgument), or
  // one that cannot be bound.
  static Result<std::unique_ptr<MetricsListener>> start(const std::string& listen, Render render);
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // Serves scrapes from `loop` (its source "metrics").
  void watch(EventLoop& loop);
  // From the loop's tick: a listener that failed is started again once its delay has passed.
  void tick(Clock::time_point now);
  // Answers the scrapes still waiting 503 and closes the port.
  void stop();
  std::string url() const;

 private:
  MetricsListener(metrics::EndpointOptions at, Render render) : at_(std::move(at)), render_(std::move(render)) {}
  void failed();

  metrics::EndpointOptions at_;  // the port as bound, so that a listener started again keeps it
  Render render_;
  std::unique_ptr<metrics::MetricsEndpoint> http_;
  metrics::RelistenSchedule relisten_;
  Clock::time_point relisten_at_ = Clock::time_point::max();  // while the listener is down: when to try again
  EventLoop* loop_ = nullptr;
};

}  // namespace akts
