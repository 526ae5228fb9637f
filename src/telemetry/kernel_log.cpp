#include "telemetry/kernel_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace akts {

bool is_kernel_trouble(std::string_view line) {
  static constexpr std::string_view kAlways[] = {"Oops", "BUG:", "WARNING:", "Kernel panic",
                                                 "general protection fault", "watchdog: BUG"};
  for (auto p : kAlways)
    if (line.find(p) != std::string_view::npos) return true;
  if (line.find("sched_ext") != std::string_view::npos) {
    // A clean unregister logs "disabled (unregistered from user space)"; any
    // other reason for "disabled (...)" is an ejection (error, stall, sysrq...).
    for (auto p : {"runtime error", "stall", "error"})
      if (line.find(p) != std::string_view::npos) return true;
    if (line.find("disabled (") != std::string_view::npos &&
        line.find("disabled (unregistered from user space)") == std::string_view::npos)
      return true;
  }
  return false;
}

Result<KernelLogWatch> KernelLogWatch::start() {
  Fd fd(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return sys_error("cannot open /dev/kmsg", errno);
  if (::lseek(fd.get(), 0, SEEK_END) < 0) return sys_error("cannot seek /dev/kmsg", errno);
  return KernelLogWatch(std::move(fd));
}

std::vector<std::string> KernelLogWatch::read_new() {
  std::vector<std::string> lines;
  char buf[8192];
  while (fd_) {
    ssize_t n = ::read(fd_.get(), buf, sizeof(buf) - 1);
    if (n < 0) {
      if (errno == EPIPE) continue;  // records were overwritten; go on with the next
      break;                         // EAGAIN: nothing more
    }
    std::string_view rec(buf, static_cast<size_t>(n));
    // "prio,seq,usec,flags;message\n continuation lines"
    auto semi = rec.find(';');
    auto msg = semi == std::string_view::npos ? rec : rec.substr(semi + 1);
    auto nl = msg.find('\n');
    lines.emplace_back(msg.substr(0, nl));
  }
  return lines;
}

}  // namespace akts
