// Watches the kernel log (/dev/kmsg) from a point in time on, and says which
// new lines are trouble: an Oops, BUG, WARNING, panic, or a sched_ext error.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/fd.h"
#include "common/result.h"

namespace akts {

// True for a kernel log line that a clean run must not produce.
bool is_kernel_trouble(std::string_view line);

class KernelLogWatch {
 public:
  // Starts watching from now on (earlier lines are skipped).
  static Result<KernelLogWatch> start();
  KernelLogWatch(KernelLogWatch&& o) noexcept = default;
  KernelLogWatch& operator=(KernelLogWatch&&) = delete;

  // Every line logged since start() or the previous call.
  std::vector<std::string> read_new();

 private:
  explicit KernelLogWatch(Fd fd) : fd_(std::move(fd)) {}
  Fd fd_;
};

}  // namespace akts
