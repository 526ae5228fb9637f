// Process events from the kernel's proc connector (netlink, CN_IDX_PROC):
// fork, exec, comm change and exit, as they happen, so the tracker classifies
// a new process within milliseconds instead of at its next /proc scan. Needs
// CONFIG_PROC_EVENTS and CAP_NET_ADMIN; without them the tracker scans.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace akts {

struct ProcEvent {
  enum class Kind { kFork, kExec, kComm, kExit };
  Kind kind = Kind::kExec;
  uint32_t pid = 0;   // the thread (for kFork: the child)
  uint32_t tgid = 0;  // its process
  uint64_t timestamp_ns = 0;  // CLOCK_MONOTONIC (since boot) when the kernel sent it
  // A new process, not a new thread: a fork whose child leads its own thread group.
  bool new_process() const { return kind == Kind::kFork && pid == tgid; }
};

// The events in a buffer of netlink messages as recv() returned it (other
// event kinds and other messages skipped). A truncated or malformed message
// ends the buffer: what came before it is kept.
std::vector<ProcEvent> parse_proc_events(std::span<const uint8_t> buf);

class ProcConnector {
 public:
  // Subscribes. An error says why not (no connector in this kernel, no CAP_NET_ADMIN).
  static Result<std::unique_ptr<ProcConnector>> open();
  ~ProcConnector();  // unsubscribes and closes
  ProcConnector(const ProcConnector&) = delete;
  ProcConnector& operator=(const ProcConnector&) = delete;

  int fd() const { return fd_.get(); }
  // Appends the events queued now (at most 256 datagrams' worth: call again while the fd is readable),
  // without blocking; datagrams not sent by the kernel are dropped. Sets *lost when the kernel dropped events
  // since the last read (its buffer overflowed): what happened meanwhile is unknown and a full scan is due.
  Status read(std::vector<ProcEvent>& out, bool* lost);

 private:
  explicit ProcConnector(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace akts
