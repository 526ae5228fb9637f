// The daemon's loop: one poll() over named event sources, each with its handler. An event source (a descriptor,
// or a group of them such as the control socket's listener and clients) is added with its handler; nothing
// refers to a source by its position in the poll set.
#pragma once

#include <poll.h>

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace akts {

// Signals as a descriptor the loop polls, so a handler runs in the loop and not in a signal handler. The signals
// are blocked while it lives; the mask before it comes back when it goes (after its descriptor is closed).
class SignalFd {
 public:
  static Result<SignalFd> open(std::initializer_list<int> signals);
  SignalFd(SignalFd&&) noexcept;
  SignalFd& operator=(SignalFd&&) = delete;
  SignalFd(const SignalFd&) = delete;
  ~SignalFd();
  int fd() const { return fd_.get(); }
  struct Signal {
    int signo = 0;
    uint32_t sender = 0;  // the process that sent it (kill(2)); 0 when the kernel did (a terminal's hang-up)
  };
  // The signals that came since the last read, in order (several may wait: a storm is read in one go).
  std::vector<Signal> read_all();

 private:
  SignalFd() = default;
  Fd fd_;
  sigset_t old_{};
  bool restore_ = false;
};

// A periodic timer as a descriptor the loop polls.
class TimerFd {
 public:
  // First after `first`, then every `period`.
  static Result<TimerFd> open(std::chrono::nanoseconds first, std::chrono::nanoseconds period);
  int fd() const { return fd_.get(); }
  uint64_t read();  // the expirations since the last read (0: none)

 private:
  Fd fd_;
};

class EventLoop {
 public:
  using Handler = std::function<void()>;
  // A source whose descriptors change from one poll to the next (the control socket: its listener and clients).
  struct Group {
    std::function<std::vector<pollfd>()> fds;               // asked for before each poll
    std::function<void(const std::vector<pollfd>&)> ready;  // after each poll, with their revents (even none)
    std::function<bool()> busy;                             // work already received waits: poll without blocking
  };

  // Watches `fd` for input: `on_readable` runs when poll() reports it (readable, hung up or in error). A source
  // of the same name is replaced. Sources run in the order they were added; one added or removed by a handler
  // takes effect at the next poll (a removed one does not run again, even in the round that removed it).
  void add(const std::string& name, int fd, Handler on_readable);
  void add_group(const std::string& name, Group group);
  void remove(const std::string& name);
  bool has(const std::string& name) const;
  // Ends run() when the running handler returns; the sources after it in this round do not run.
  void stop(int code);
  // Ends this round when the running handler returns (the sources after it do not run); the next poll follows.
  // For a handler that changed what the others' readiness referred to (the plane loaded again).
  void end_round() { round_over_ = true; }
  // Polls and dispatches until stop(). A poll() that fails (other than EINTR) ends it with 1. Returns the code.
  int run();

 private:
  struct Source {
    uint64_t id;
    std::string name;
    int fd = -1;  // -1: a group
    Handler on_readable;
    Group group;
  };
  const Source* find(uint64_t id) const;
  std::vector<Source> sources_;
  uint64_t next_id_ = 1;
  bool stopped_ = false;
  bool round_over_ = false;
  int code_ = 0;
};

}  // namespace akts
