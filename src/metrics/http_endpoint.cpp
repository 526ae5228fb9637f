// The /metrics listener and its hand-off to the daemon's main loop.
#include "metrics/http_endpoint.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "common/fd.h"
#include "common/text.h"

namespace akts::metrics {

struct MetricsEndpoint::Impl {
  // One scrape waiting for the main loop.
  struct Scrape {
    Format format;
    bool done = false;
    int status = 503;
    std::string body;
  };

  EndpointOptions o;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  Fd efd;  // readable when scrapes wait for the main loop, or the listener ended
  std::atomic<bool> listener_done{false};
  // The listening socket httplib created, and a duplicate of our own. stop() shuts the duplicate down, which
  // ends httplib's accept loop as an accept error would: httplib's own stop() would shut down and close its
  // socket's number, which after a failed accept it has closed already and another file may have taken.
  int sock = -1;  // httplib's: closed here only where httplib will not (a start that fails)
  Fd own;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Scrape>> waiting;  // under mu
  bool stopping = false;                        // under mu
  bool failed = false;                          // under mu: the listener ended before stop()

  explicit Impl(EndpointOptions opts) : o(std::move(opts)) {}

  void get_metrics(const httplib::Request& req, httplib::Response& res) {
    auto s = std::make_shared<Scrape>();
    s->format = negotiate(req.get_header_value("Accept"));
    std::unique_lock lock(mu);
    if (stopping) {
      res.status = 503;
      res.set_content("akts: the daemon is stopping\n", "text/plain; charset=utf-8");
      return;
    }
    waiting.push_back(s);
    uint64_t one = 1;
    (void)!::write(efd.get(), &one, sizeof(one));  // a full counter (2^64 - 2 scrapes) still reads as readable
    bool answered = cv.wait_for(lock, o.wait, [&] { return s->done || stopping; });
    if (!answered || !s->done) {
      // Not answered in time: take it back, so the main loop does not render for nobody.
      for (auto it = waiting.begin(); it != waiting.end(); ++it)
        if (*it == s) {
          waiting.erase(it);
          break;
        }
      res.status = 503;
      res.set_content(stopping ? "akts: the daemon is stopping\n"
                               : fmt::format("akts: the daemon did not answer within {} ms (reloading its "
                                             "scheduler?)\n",
                                             o.wait.count()),
                      "text/plain; charset=utf-8");
      return;
    }
    res.status = s->status;
    if (s->status == 200)
      res.set_content(std::move(s->body), std::string(content_type(s->format)));
    else
      res.set_content(std::move(s->body), "text/plain; charset=utf-8");
  }
};

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsEndpoint::~MetricsEndpoint() { stop(); }

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::start(const EndpointOptions& o) {
  auto impl = std::make_unique<Impl>(o);
  Impl* p = impl.get();
  p->efd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!p->efd) return sys_error("eventfd", errno);
  // A scrape is a GET without a body; a client that sends one slowly is let go after 5 s, an idle kept-alive
  // connection after 1 s (each holds one of the listener's threads while it lasts, and stop() waits for it).
  p->http.set_payload_max_length(4096);
  // httplib's default also sets SO_REUSEPORT, which would let a second daemon bind the same port and take
  // half the scrapes: reuse an address in TIME_WAIT (a restart), never share a live one.
  p->http.set_socket_options([p](socket_t sock) {  // each candidate address's socket; the last one listens
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    p->sock = sock;
  });
  p->http.set_read_timeout(5, 0);
  p->http.set_write_timeout(5, 0);
  p->http.set_keep_alive_timeout(1);
  p->http.Get("/metrics", [p](const httplib::Request& req, httplib::Response& res) { p->get_metrics(req, res); });
  p->http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("akts daemon: metrics at /metrics (Prometheus text, or OpenMetrics when the Accept header "
                    "asks for application/openmetrics-text)\n",
                    "text/plain; charset=utf-8");
  });
  auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("akts: /metrics is read with GET\n", "text/plain; charset=utf-8");
  };
  p->http.Post("/metrics", not_allowed);
  p->http.Put("/metrics", not_allowed);
  p->http.Delete("/metrics", not_allowed);
  p->http.Patch("/metrics", not_allowed);
  std::string bind_host = o.host == "localhost" ? "127.0.0.1" : o.host;
  if (o.port == 0) {
    p->port = p->http.bind_to_any_port(bind_host);
    if (p->port < 0) return errorf(ErrorKind::kSystem, "cannot bind {} on any port", excerpt(bind_host));
  } else {
    if (!p->http.bind_to_port(bind_host, o.port))
      return errorf(ErrorKind::kSystem, "cannot listen on {}:{} (in use, or not an address of this machine?)",
                    excerpt(bind_host), o.port);
    p->port = o.port;
  }
  // From here on the bound socket is ours to close on an error: httplib's Server does not close it.
  p->own.reset(::fcntl(p->sock, F_DUPFD_CLOEXEC, 0));
  if (!p->own) {
    int e = errno;
    ::close(p->sock);
    return sys_error("dup of the metrics socket", e);
  }
  auto ep = std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint(std::move(impl)));
  try {
    p->thread = std::thread([p] {
      try {
        p->http.listen_after_bind();
      } catch (const std::exception&) {
        // The first thread of its pool, or memory, could not be had, before any accept: the socket is
        // still open, and no one else will close it. (A later thread of the pool failing terminates.)
        ::close(p->sock);
      }
      {
        std::lock_guard lock(p->mu);
        p->failed = !p->stopping;
      }
      p->listener_done = true;
      // httplib's accept loop also ends for good on an accept error other than EMFILE, EINTR and EAGAIN
      // (ENFILE, ENOBUFS, a network error Linux passes on from a pending connection): wake the main loop.
      uint64_t one = 1;
      (void)!::write(p->efd.get(), &one, sizeof(one));
    });
  } catch (const std::exception& e) {  // no thread (EAGAIN): the port is let go with the socket
    ::close(p->sock);
    return errorf(ErrorKind::kSystem, "cannot start the metrics listener's thread: {}", e.what());
  }
  // Wait for the loop to run (or for its end, should it fail at once).
  while (!p->http.is_running() && !p->listener_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (p->listener_done && !p->http.is_running()) {
    ep->stop();
    return errorf(ErrorKind::kSystem, "the listener on {}:{} ended as it started", excerpt(bind_host), p->port);
  }
  return ep;
}

int MetricsEndpoint::fd() const { return impl_->efd.get(); }

bool MetricsEndpoint::failed() const {
  std::lock_guard lock(impl_->mu);
  return impl_->failed;
}

int MetricsEndpoint::port() const { return impl_->port; }

std::string MetricsEndpoint::url() const {
  const std::string& h = impl_->o.host;
  return fmt::format("http://{}:{}/metrics", h.find(':') != std::string::npos ? "[" + h + "]" : h, impl_->port);
}

void MetricsEndpoint::serve(const Render& render) {
  uint64_t n;
  (void)!::read(impl_->efd.get(), &n, sizeof(n));
  std::deque<std::shared_ptr<Impl::Scrape>> batch;
  {
    std::lock_guard lock(impl_->mu);
    batch.swap(impl_->waiting);
  }
  if (batch.empty()) return;
  // Rendered outside the lock: a scrape that times out meanwhile finds itself gone from `waiting` and answers 503.
  std::optional<Result<std::string>> text[2];
  for (auto& s : batch) {
    auto& t = text[s->format == Format::kOpenMetrics ? 1 : 0];
    if (t) continue;
    try {
      t = render(s->format);
    } catch (const std::exception& e) {  // whatever the daemon's state throws is this scrape's 500, not its end
      t = Result<std::string>(errorf(ErrorKind::kSystem, "rendering the metrics failed: {}", e.what()));
    }
  }
  {
    std::lock_guard lock(impl_->mu);
    for (auto& s : batch) {
      const auto& t = *text[s->format == Format::kOpenMetrics ? 1 : 0];
      s->status = t ? 200 : 500;
      s->body = t ? *t : "akts: " + t.error().to_string() + "\n";
      s->done = true;
    }
  }
  impl_->cv.notify_all();
}

void MetricsEndpoint::stop() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->own) ::shutdown(impl_->own.get(), SHUT_RDWR);  // accept fails (EINVAL): httplib's loop ends
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_->own.reset();  // with httplib's socket closed by its loop, the port is free
}

RelistenSchedule::Clock::time_point RelistenSchedule::listener_failed(Clock::time_point now) {
  using std::chrono::seconds;
  delay_ = delay_.count() == 0 || now - started_ >= std::chrono::minutes(1) ? seconds(1)
                                                                           : std::min(2 * delay_, seconds(60));
  return now + delay_;
}

RelistenSchedule::Clock::time_point RelistenSchedule::start_failed(Clock::time_point now) {
  delay_ = std::min(2 * std::max(delay_, std::chrono::seconds(1)), std::chrono::seconds(60));
  return now + delay_;
}

}  // namespace akts::metrics
