// EventLoop: a poll set built from the named sources at each round, and each source's handler after it.
#include "daemon/event_loop.h"

#include <signal.h>

#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

namespace akts {

Result<SignalFd> SignalFd::open(std::initializer_list<int> signals) {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : signals) sigaddset(&mask, s);
  SignalFd out;
  sigprocmask(SIG_BLOCK, &mask, &out.old_);
  out.restore_ = true;
  out.fd_.reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!out.fd_) return sys_error("signalfd", errno);  // out's destructor unblocks them again
  return out;
}

SignalFd::SignalFd(SignalFd&& o) noexcept : fd_(std::move(o.fd_)), old_(o.old_), restore_(std::exchange(o.restore_, false)) {}

SignalFd::~SignalFd() {
  fd_.reset();  // first: a signal pending then is delivered by the old mask, not lost in a closed descriptor
  if (restore_) sigprocmask(SIG_SETMASK, &old_, nullptr);
}

std::vector<SignalFd::Signal> SignalFd::read_all() {
  std::vector<Signal> out;
  signalfd_siginfo si{};
  while (::read(fd_.get(), &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si)))
    out.push_back({static_cast<int>(si.ssi_signo), si.ssi_code == SI_USER || si.ssi_code == SI_TKILL || si.ssi_code == SI_QUEUE ? si.ssi_pid : 0});
  return out;
}

Result<TimerFd> TimerFd::open(std::chrono::nanoseconds first, std::chrono::nanoseconds period) {
  TimerFd t;
  t.fd_.reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  if (!t.fd_) return sys_error("timerfd_create", errno);
  auto spec = [](std::chrono::nanoseconds d) {
    timespec ts{};
    ts.tv_sec = static_cast<time_t>(d.count() / 1000000000);
    ts.tv_nsec = static_cast<long>(d.count() % 1000000000);
    return ts;
  };
  itimerspec its{};
  its.it_value = spec(first);
  its.it_interval = spec(period);
  if (timerfd_settime(t.fd_.get(), 0, &its, nullptr) != 0) return sys_error("timerfd_settime", errno);
  return t;
}

uint64_t TimerFd::read() {
  uint64_t n = 0;
  if (::read(fd_.get(), &n, sizeof(n)) != static_cast<ssize_t>(sizeof(n))) return 0;
  return n;
}

void EventLoop::add(const std::string& name, int fd, Handler on_readable) {
  remove(name);
  sources_.push_back({next_id_++, name, fd, std::move(on_readable), {}});
}

void EventLoop::add_group(const std::string& name, Group group) {
  remove(name);
  sources_.push_back({next_id_++, name, -1, {}, std::move(group)});
}

void EventLoop::remove(const std::string& name) {
  std::erase_if(sources_, [&](const Source& s) { return s.name == name; });
}

bool EventLoop::has(const std::string& name) const {
  for (const auto& s : sources_)
    if (s.name == name) return true;
  return false;
}

void EventLoop::stop(int code) {
  stopped_ = true;
  code_ = code;
}

const EventLoop::Source* EventLoop::find(uint64_t id) const {
  for (const auto& s : sources_)
    if (s.id == id) return &s;
  return nullptr;
}

int EventLoop::run() {
  stopped_ = false;
  while (!stopped_) {
    // This round's poll set: each source's span in it, by the source's id (a handler may change sources_).
    struct Span {
      uint64_t id;
      size_t first, count;
    };
    std::vector<pollfd> fds;
    std::vector<Span> spans;
    bool busy = false;
    for (const auto& s : sources_) {
      Span sp{s.id, fds.size(), 0};
      if (s.fd >= 0) {
        fds.push_back({s.fd, POLLIN, 0});
      } else {
        for (const pollfd& p : s.group.fds()) fds.push_back(p);
        if (s.group.busy && s.group.busy()) busy = true;
      }
      sp.count = fds.size() - sp.first;
      spans.push_back(sp);
    }
    if (::poll(fds.data(), fds.size(), busy ? 0 : -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll: {}", std::strerror(errno));
      return 1;
    }
    round_over_ = false;
    for (const Span& sp : spans) {
      if (stopped_ || round_over_) break;
      const Source* s = find(sp.id);
      if (!s) continue;  // removed by an earlier handler of this round
      if (s->fd >= 0) {
        if (fds[sp.first].revents) {
          Handler h = s->on_readable;  // a copy: the handler may replace or remove its own source
          h();
        }
      } else {
        auto ready = s->group.ready;
        ready(std::vector<pollfd>(fds.begin() + static_cast<ptrdiff_t>(sp.first),
                                  fds.begin() + static_cast<ptrdiff_t>(sp.first + sp.count)));
      }
    }
  }
  return code_;
}

}  // namespace akts
