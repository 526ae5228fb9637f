// The daemon's /metrics over HTTP (`akts daemon --metrics-listen`): a
// cpp-httplib listener whose threads hand each scrape to the daemon's main
// loop through an eventfd and wait for the text, so the daemon's state is
// read only on the thread that owns it, as for a control-socket request.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/result.h"
#include "metrics/exposition.h"

namespace akts::metrics {

struct EndpointOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: any free port (tests)
  // How long a scrape waits for the main loop before it is answered 503 (the daemon reloading its scheduler,
  // say). Prometheus's default scrape timeout is 10 s.
  std::chrono::milliseconds wait{5000};
};

class MetricsEndpoint {
 public:
  using Render = std::function<Result<std::string>(Format)>;

  // Binds now (an address in use is an error here, not later) and listens on a thread of its own.
  static Result<std::unique_ptr<MetricsEndpoint>> start(const EndpointOptions& o);
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // Readable while scrapes wait, and when the listener has just ended on its own: the main loop polls it,
  // then calls serve() and failed().
  int fd() const;
  // True once the listener has ended before stop(): httplib gives up on an accept error other than EMFILE,
  // EINTR and EAGAIN (its errno is not passed on), and from then on nothing answers at url(). Start another
  // endpoint to listen again (RelistenSchedule says when).
  bool failed() const;
  // Answers every waiting scrape with render(its format): on the caller's thread, each format rendered once.
  void serve(const Render& render);
  int port() const;
  std::string url() const;
  // Answers waiting and later scrapes 503, stops listening, joins the thread (idempotent).
  void stop();

 private:
  struct Impl;
  explicit MetricsEndpoint(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// When to start a failed listener again: 1 s after its failure the first time, or after one that had listened
// for a minute; twice the last delay (up to 60 s) after one that had not, and after each start that fails.
// Never given up: a file table that was full (ENFILE) empties in its own time.
class RelistenSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  void started(Clock::time_point now) { started_ = now; }
  // The listener failed at `now`: when to start the next.
  Clock::time_point listener_failed(Clock::time_point now);
  // A start failed at `now`: when to try again.
  Clock::time_point start_failed(Clock::time_point now);
  std::chrono::seconds delay() const { return delay_; }

 private:
  Clock::time_point started_{};
  std::chrono::seconds delay_{0};
};

}  // namespace akts::metrics
