// Watches the kernel log (/dev/kmsg) from a point in time on, and says which
// new lines are trouble: an Oops, BUG, WARNING, panic, or a sched_ext error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace akts {

// True for a kernel log line that a clean run must not produce.
bool is_kernel_trouble(std::string_view line);

class KernelLogWatch {
 public:
  // Starts watching from now on (earlier lines are skipped).
  static Result<KernelLogWatch> start();
  KernelLogWatch(KernelLogWatch&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  KernelLogWatch& operator=(KernelLogWatch&&) = delete;
  ~KernelLogWatch();

  // Every line logged since start() or the previous call.
  std::vector<std::string> read_new();

 private:
  explicit KernelLogWatch(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace akts
