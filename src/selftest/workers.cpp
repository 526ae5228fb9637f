#include "selftest/workers.h"

#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include <fmt/format.h>

namespace akts {
namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

[[noreturn]] void worker_main(const WorkerSpec& spec, uint64_t until_ns) {
  sched_param param{};
  if (sched_setscheduler(0, kSchedExt, &param) != 0) _exit(2);
  const uint64_t spin_ns = static_cast<uint64_t>(spec.spin.count()) * 1000;
  volatile uint64_t sink = 0;
  for (int i = 0; until_ns ? now_ns() < until_ns : i < spec.iterations; ++i) {
    uint64_t end = now_ns() + spin_ns;
    while (now_ns() < end) sink = sink + 1;
    if (spec.sleep.count() > 0) {
      timespec ts{0, static_cast<long>(spec.sleep.count()) * 1000};
      nanosleep(&ts, nullptr);
    }
  }
  _exit(0);
}

}  // namespace

Result<WorkerGroup> WorkerGroup::spawn(const WorkerSpec& spec) {
  WorkerGroup g;
  g.started_ = std::chrono::steady_clock::now();
  uint64_t until_ns = 0;
  if (spec.until != std::chrono::steady_clock::time_point{}) {
    auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(spec.until - g.started_).count();
    until_ns = now_ns() + static_cast<uint64_t>(left > 0 ? left : 0);
  }
  for (int i = 0; i < spec.count; ++i) {
    pid_t pid = fork();
    if (pid < 0) return sys_error("fork", errno);  // the destructor reaps those already started
    if (pid == 0) worker_main(spec, until_ns);
    g.pids_.push_back(pid);
  }
  return g;
}

WorkerOutcome WorkerGroup::wait(std::chrono::milliseconds timeout) {
  WorkerOutcome out;
  out.started = static_cast<int>(pids_.size());
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<pid_t> left = pids_;
  while (!left.empty()) {
    for (auto it = left.begin(); it != left.end();) {
      int status = 0;
      pid_t r = waitpid(*it, &status, WNOHANG);
      if (r == 0) {
        ++it;
        continue;
      }
      if (r == *it && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        ++out.completed;
      else if (r == *it && WIFEXITED(status) && WEXITSTATUS(status) == 2)
        out.problems.push_back(fmt::format("worker {} could not enter SCHED_EXT", *it));
      else
        out.problems.push_back(fmt::format("worker {} ended abnormally (status {:#x})", *it, status));
      it = left.erase(it);
    }
    if (left.empty()) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (pid_t p : left) {
        kill(p, SIGKILL);
        waitpid(p, nullptr, 0);
        out.problems.push_back(fmt::format("worker {} did not finish within {} ms", p, timeout.count()));
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  pids_.clear();
  return out;
}

WorkerGroup::~WorkerGroup() {
  for (pid_t p : pids_) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
}

}  // namespace akts
