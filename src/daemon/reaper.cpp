// The reaper: gives a dead daemon's threads their own policy back.
#include "daemon/reaper.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>

#include <fmt/format.h>

#include "classify/process_tracker.h"
#include "daemon/state_file.h"

namespace akts {

Result<size_t> reap_state(const std::string& state_path, pid_t daemon_pid, const std::string& proc_root,
                          SchedPolicyOps& ops, std::chrono::milliseconds lock_wait) {
  // A new daemon may already hold the lock: it wrote its own state, naming this record, before anything else.
  auto lock = StateLock::acquire(state_path, lock_wait);
  if (!lock) return lock.error();
  auto st = load_state(state_path);
  if (!st) return st.error();
  if (!*st) return size_t{0};
  nlohmann::json& s = **st;  // load_state checked the types of daemon_pid, clean, reaped and tracker
  if (s["daemon_pid"].get<uint64_t>() != static_cast<uint64_t>(daemon_pid) || s["clean"].get<bool>() ||
      s["reaped"].get<bool>())
    return size_t{0};
  auto n = ProcessTracker::release_record(s["tracker"], proc_root, ops);
  if (!n) return n.error();
  for (auto& p : s["tracker"]["processes"]) p["threads"] = nlohmann::json::array();
  s["reaped"] = true;
  if (auto w = save_state(state_path, s.dump()); !w) return w.error();
  return *n;
}

Result<Reaper> Reaper::start(const std::string& state_path, int close_fd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return sys_error("cannot create the reaper's pipe", errno);
  Fd rd(fds[0]), wr(fds[1]);  // the parent's; the child never returns from below (it _exits)
  const pid_t daemon = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return sys_error("cannot fork the reaper", errno);
  if (pid == 0) {
    // The child: the pipe's read end and stderr, nothing else of the daemon (never its lock).
    if (close_fd >= 0 && close_fd != fds[0] && close_fd != 2) ::close(close_fd);
    if (::dup2(fds[0], 3) < 0) _exit(1);
    if (::syscall(SYS_close_range, 4u, UINT_MAX, 0u) != 0)
      for (int fd = 4; fd < 65536; ++fd) ::close(fd);  // no close_range (an old kernel, a seccomp filter)
    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull >= 0) {
      ::dup2(devnull, 0);
      ::dup2(devnull, 1);
    }
    ::prctl(PR_SET_NAME, "akts-reaper", 0, 0, 0);
    ::setsid();  // out of the daemon's session: a closing terminal's SIGHUP does not reach it
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(sig, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    char b = 0, last = 0;
    while (true) {
      ssize_t r = ::read(3, &b, 1);
      if (r == 1) last = b;
      if (r == 0 || (r < 0 && errno != EINTR)) break;
    }
    if (last == 'c') _exit(0);  // a clean stop said so: nothing to do, no lock to wait for
    int rc = 1;
    try {
      auto n = reap_state(state_path, daemon, "/proc");
      if (!n)
        fprintf(stderr, "akts-reaper: %s\n", n.error().to_string().c_str());
      else if (*n)
        fprintf(stderr, "akts-reaper: the daemon (pid %d) ended without giving its processes back: %zu thread(s) "
                        "got their own policy back\n", static_cast<int>(daemon), *n);
      rc = n ? 0 : 1;
    } catch (const std::exception& e) {
      fprintf(stderr, "akts-reaper: %s\n", e.what());
    }
    _exit(rc);  // never back into the daemon's code
  }
  rd.reset();
  return Reaper(pid, std::move(wr));
}

void Reaper::finish() {
  if (pipe_w_) (void)!::write(pipe_w_.get(), "c", 1);
  pipe_w_.reset();
  if (pid_ <= 0) return;
  // Told it was clean, it exits at once; wait up to 5 s in any case.
  for (int i = 0; i < 500; ++i) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

Reaper::~Reaper() { finish(); }

}  // namespace akts
