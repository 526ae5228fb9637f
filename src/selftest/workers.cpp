#include "selftest/workers.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <thread>

#include <fmt/format.h>

namespace akts {
namespace {

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

[[noreturn]] void worker_main(const WorkerSpec& spec, uint64_t until_ns, int hold_fd, const std::atomic<int>* stop) {
  // Drop every inherited descriptor: a release pipe of another group left open
  // here would keep that group's workers from ever seeing EOF.
  for (int fd = 3; fd < 4096; ++fd)
    if (fd != hold_fd) close(fd);
  if (hold_fd >= 0) {
    char c;
    while (read(hold_fd, &c, 1) < 0 && errno == EINTR) {
    }
    close(hold_fd);
  }
  if (spec.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(spec.cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) _exit(3);
  }
  if (spec.nice != 0 && setpriority(PRIO_PROCESS, 0, spec.nice) != 0) _exit(3);
  sched_param param{};
  param.sched_priority = spec.fifo;
  if (sched_setscheduler(0, spec.fifo > 0 ? SCHED_FIFO : kSchedExt, &param) != 0) _exit(2);
  const uint64_t spin_ns = static_cast<uint64_t>(spec.spin.count()) * 1000;
  volatile uint64_t sink = 0;
  for (int i = 0; (until_ns ? now_ns() < until_ns : i < spec.iterations) && !stop->load(std::memory_order_relaxed);
       ++i) {
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
  void* shared = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return sys_error("mmap", errno);
  static_assert(std::atomic<int>::is_always_lock_free, "stop() needs an atomic that works across processes");
  g.stop_ = new (shared) std::atomic<int>(0);
  int hold[2] = {-1, -1};
  if (spec.held && pipe2(hold, O_CLOEXEC) != 0) return sys_error("pipe", errno);
  Fd hold_r(hold[0]);  // the parent's copy of the read end (each worker reads its own)
  g.release_fd_.reset(hold[1]);
  for (int i = 0; i < spec.count; ++i) {
    pid_t pid = fork();
    if (pid < 0) return sys_error("fork", errno);  // the destructor reaps those already started
    if (pid == 0) {
      if (hold[1] >= 0) close(hold[1]);  // the child's copy; it never returns (worker_main _exits)
      worker_main(spec, until_ns, hold[0], g.stop_);
    }
    g.pids_.push_back(pid);
  }
  return g;
}

void WorkerGroup::release() {
  release_fd_.reset();  // EOF wakes every held worker at once
}

void WorkerGroup::stop() {
  if (stop_) stop_->store(1, std::memory_order_relaxed);
}

WorkerOutcome WorkerGroup::wait(std::chrono::milliseconds timeout) {
  release();
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
        out.problems.push_back(fmt::format("worker {} could not enter SCHED_EXT (or SCHED_FIFO)", *it));
      else if (r == *it && WIFEXITED(status) && WEXITSTATUS(status) == 3)
        out.problems.push_back(fmt::format("worker {} could not set its CPU or nice value", *it));
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
  release();
  for (pid_t p : pids_) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
  if (stop_) munmap(stop_, sizeof(std::atomic<int>));
}

}  // namespace akts
