// The daemon's loop: one poll() over named event sources, each with its handler. An event source (a descriptor,
// or a group of them such as the control socket's listener and clients) is added with its handler; nothing
// refers to a source by its position in the poll set.
#pragma once

#include <poll.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace akts {

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
