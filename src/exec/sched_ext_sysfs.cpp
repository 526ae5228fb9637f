#include "exec/sched_ext_sysfs.h"

#include <filesystem>
#include <fstream>
#include <thread>

namespace akts {
namespace {

constexpr const char* kRoot = "/sys/kernel/sched_ext";

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

SchedExtState read_sched_ext_state() {
  SchedExtState s;
  s.supported = std::filesystem::is_directory(kRoot);
  if (!s.supported) return s;
  s.state = read_line(std::string(kRoot) + "/state");
  s.ops = read_line(std::string(kRoot) + "/root/ops");
  return s;
}

Status wait_sched_ext_state(const std::string& want, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string last;
  while (true) {
    last = read_sched_ext_state().state;
    if (last == want) return {};
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return errorf(ErrorKind::kTimeout, "sched_ext stayed '{}' for {} ms, waiting for '{}'", last, timeout.count(),
                want);
}

uint64_t read_hotplug_seq() {
  auto seq = read_line(std::string(kRoot) + "/hotplug_seq");
  return seq.empty() ? 0 : std::strtoull(seq.c_str(), nullptr, 10);
}

}  // namespace akts
