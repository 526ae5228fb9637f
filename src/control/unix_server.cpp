#include "control/unix_server.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace akts::control {
namespace {

Result<sockaddr_un> make_addr(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path))
    return errorf(ErrorKind::kInvalidArgument, "socket path {} is longer than {} bytes", path,
                  sizeof(addr.sun_path) - 1);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return addr;
}

// Sends all of `s` by the deadline: the client side only (rpc_call). 0, ETIMEDOUT past the deadline, or the errno.
int send_all(int fd, const std::string& s, std::chrono::steady_clock::time_point deadline) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) return errno;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ETIMEDOUT;
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) < 0 && errno != EINTR) return errno;
      continue;
    }
    off += static_cast<size_t>(n);
  }
  return 0;
}

constexpr int kRetryAfterMs = 20;  // the pause an evicted client is asked to take before it comes back
// Full of busy clients, the listener rests this long before it is looked at again (for a client that has stalled
// since): under the daemon's 100 ms tick, so each tick looks.
constexpr std::chrono::milliseconds kFullRecheck{50};

}  // namespace

Result<std::unique_ptr<UnixServer>> UnixServer::listen(const std::string& path, mode_t mode, const Dispatcher& d,
                                                       ServerLimits limits, gid_t group) {
  auto addr = make_addr(path);
  if (!addr) return addr.error();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0) {
    // Only a stale socket may be replaced: never a file, a directory or a symlink's target.
    if (!S_ISSOCK(st.st_mode))
      return errorf(ErrorKind::kInvalidArgument, "{} exists and is not a socket; remove it or choose another path",
                    path);
    Fd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe) return sys_error("socket", errno);
    int rc = ::connect(probe.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr));
    int e = errno;
    probe.reset();
    // A full backlog (EAGAIN) is a live daemon too; only "refused" means nobody listens.
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS)
      return errorf(ErrorKind::kBusy, "another akts daemon is listening on {}", path);
    if (e != ECONNREFUSED) return sys_error("cannot probe the socket at " + path, e);
    ::unlink(path.c_str());  // stale: its daemon is gone
  }
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) return sys_error("socket", errno);
  // Created with no access for anyone, then opened up to exactly `mode`.
  mode_t old = ::umask(0777);
  int rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr));
  int bind_errno = errno;
  ::umask(old);
  if (rc != 0) return sys_error("cannot bind " + path, bind_errno);
  // The group first, then the mode: the socket is never open to a group it was not meant for.
  if ((group != static_cast<gid_t>(-1) && ::fchownat(AT_FDCWD, path.c_str(), static_cast<uid_t>(-1), group,
                                                      AT_SYMLINK_NOFOLLOW) != 0) ||
      ::chmod(path.c_str(), mode) != 0 || ::listen(fd.get(), 64) != 0) {
    int e = errno;
    fd.reset();
    ::unlink(path.c_str());
    return sys_error("cannot listen on " + path, e);
  }
  return std::unique_ptr<UnixServer>(new UnixServer(path, std::move(fd), d, limits));
}

UnixServer::~UnixServer() {
  clients_.clear();  // each client's Fd closes its connection
  if (listen_fd_) {
    listen_fd_.reset();
    ::unlink(path_.c_str());
  }
}

std::vector<pollfd> UnixServer::poll_fds() const {
  auto now = Clock::now();
  // Full of busy clients: new connections wait in the kernel's backlog until one leaves (or, now and then, to
  // see whether one has stalled and may be evicted). Waiting there costs the loop nothing.
  bool full = clients_.size() >= limits_.max_clients && now < full_until_;
  short listen_ev = now < accept_paused_until_ || full ? 0 : POLLIN;
  std::vector<pollfd> fds{{listen_fd_.get(), listen_ev, 0}};
  for (const auto& [fd, c] : clients_) {
    short ev = c.eof ? 0 : POLLIN;
    if (!c.out.empty()) ev |= POLLOUT;
    fds.push_back({fd, ev, 0});
  }
  return fds;
}

void UnixServer::drop(int fd) { clients_.erase(fd); }

int UnixServer::least_recent_evictable() const {
  auto victim = clients_.end();
  auto now = Clock::now();
  for (auto it = clients_.begin(); it != clients_.end(); ++it) {
    const Client& c = it->second;
    int unread = 0;
    bool busy = !c.out.empty() || c.backlog || !c.in.empty() ||
                (::ioctl(it->first, FIONREAD, &unread) == 0 && unread > 0);  // a request not read yet
    // Busy but without progress for a while (a line dribbled in, answers not read): fair game.
    if (busy && now - c.last_progress < limits_.stall_timeout) continue;
    if (victim == clients_.end() || c.last_active < victim->second.last_active) victim = it;
  }
  return victim == clients_.end() ? -1 : victim->first;
}

void UnixServer::evict(int fd) {
  spdlog::debug("control socket: {} clients connected; closing the least recently active", clients_.size());
  // The notice, when every answer it was owed went out: each request it sent that has no answer before this line
  // was never run (a half line, complete lines waiting for their turn, bytes not read), so it may send them again
  // after the pause; notifications (no id) ran and are never answered. Answers still in `out` belong to requests
  // that ran and are lost with the close: no notice then, so nothing invites the client to send those again (and
  // no line lands inside a half-sent answer). Best effort: the close says the rest.
  if (clients_[fd].out.empty()) {
    std::string line = make_error_response(nullptr, kBusy,
                                           fmt::format("the daemon closed this connection to make room ({} clients "
                                                       "connected, this one the least recently active)",
                                                       clients_.size()),
                                           {{"retry_after_ms", kRetryAfterMs}})
                           .dump() +
                       "\n";
    (void)::send(fd, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  drop(fd);
}

void UnixServer::accept_clients() {
  while (true) {
    int victim = -1;
    if (clients_.size() >= limits_.max_clients && (victim = least_recent_evictable()) < 0) {
      // Every client is busy and making progress: a newcomer waits in the backlog (its connect() has completed,
      // its request waits unread), at no cost to anyone, and is accepted when a slot frees.
      full_until_ = Clock::now() + kFullRecheck;
      return;
    }
    int c = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {  // nobody came in (none waiting, or no fd for one): nobody is evicted either
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        spdlog::warn("control socket: cannot accept ({}); pausing new connections", std::strerror(errno));
        accept_paused_until_ = Clock::now() + std::chrono::milliseconds(200);
      }
      return;
    }
    if (victim >= 0) evict(victim);
    accepted_.fetch_add(1, std::memory_order_relaxed);
    Client& cl = clients_[c];
    cl.fd.reset(c);
    cl.last_active = cl.last_progress = Clock::now();
    // Who connected, as the kernel vouches for it (the audit log records it with each change).
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (::getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && len == sizeof(cred))
      cl.caller = Caller{cred.uid, cred.gid, cred.pid};
  }
}

bool UnixServer::backlog() const {
  // A client held back by its unread answers waits for POLLOUT, not for a turn.
  for (const auto& [fd, c] : clients_)
    if (c.backlog && c.out.size() <= limits_.max_output / 2) return true;
  return false;
}

void UnixServer::sweep(Clock::time_point now) {
  std::vector<int> idle;
  for (const auto& [fd, c] : clients_)
    if (now - c.last_active > limits_.idle_timeout) idle.push_back(fd);
  for (int fd : idle) drop(fd);
}

void UnixServer::answer_lines(Client& c, bool at_eof) {
  size_t start = 0, nl;
  c.backlog = false;
  while ((nl = c.in.find('\n', start)) != std::string::npos) {
    // The rest waits: for the next turn, or for the client to read what it has.
    if (c.answered >= limits_.lines_per_turn || c.out.size() > limits_.max_output / 2) {
      c.backlog = true;
      c.in.erase(0, start);
      return;
    }
    ++c.answered;
    std::string_view line(c.in.data() + start, nl - start);
    start = nl + 1;
    if (c.discarding) {  // the tail of an oversize line
      c.discarding = false;
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    std::string resp = d_.handle(line, c.caller);
    if (!resp.empty()) c.out += resp + "\n";
  }
  c.in.erase(0, start);
  if (!c.discarding && c.in.size() > kMaxRequestBytes) {
    // No newline within the limit: answer once, then skip to the next newline.
    c.out += make_error_response(nullptr, kInvalidRequest,
                                 fmt::format("request exceeds the limit of {} bytes", kMaxRequestBytes))
                 .dump() +
             "\n";
    c.discarding = true;
  }
  if (c.discarding) c.in.clear();
  if (at_eof && !c.discarding && !c.in.empty() && c.in.size() <= kMaxRequestBytes) {  // a last request without its newline
    std::string resp = d_.handle(c.in, c.caller);
    if (!resp.empty()) c.out += resp + "\n";
    c.in.clear();
  }
}

bool UnixServer::read_from(int fd, Client& c) {
  char chunk[16384];
  size_t budget = limits_.read_budget;
  while (budget > 0 && !c.eof) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n == 0) {
      c.eof = true;
      break;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      return false;
    }
    c.last_active = Clock::now();
    c.in.append(chunk, static_cast<size_t>(n));
    budget -= std::min(budget, static_cast<size_t>(n));
    answer_lines(c, false);  // as it arrives, so no line grows past the limit in memory
    if (!flush(fd, c)) return false;
    if (c.out.size() > limits_.max_output) return false;  // it sends but does not read
    if (c.backlog) break;  // its turn is over
  }
  if (c.eof && !c.backlog) answer_lines(c, true);
  if (!flush(fd, c)) return false;
  return c.out.size() <= limits_.max_output;
}

bool UnixServer::serve(int fd, Client& c, short revents) {
  c.answered = 0;  // a new turn
  if (c.backlog) {
    answer_lines(c, c.eof);
    if (!flush(fd, c) || c.out.size() > limits_.max_output) return false;
  }
  if (!c.backlog && (revents & (POLLIN | POLLHUP | POLLERR)) && !read_from(fd, c)) return false;
  if (!flush(fd, c)) return false;
  if ((revents & POLLERR) && !(revents & POLLIN)) return false;
  // Half-closed and every answer sent: done.
  return !(c.eof && !c.backlog && c.out.empty());
}

bool UnixServer::flush(int fd, Client& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN;
    }
    c.out.erase(0, static_cast<size_t>(n));
    c.last_active = Clock::now();
  }
  if (c.in.empty() && !c.backlog) c.last_progress = Clock::now();  // everything asked was answered and taken
  return true;
}

void UnixServer::on_ready(const std::vector<pollfd>& fds) {
  // Clients first, the listener last: a client's request already here is read
  // before new connections can push it out, and an fd closed below cannot be
  // handed to a new client while this pass still holds its old events.
  bool listener_ready = false;
  std::vector<int> served;
  for (const auto& p : fds) {
    if (p.fd == listen_fd_.get()) {
      listener_ready = p.revents != 0;
      continue;
    }
    auto it = clients_.find(p.fd);
    if (it == clients_.end() || (!p.revents && !it->second.backlog)) continue;
    served.push_back(p.fd);
    if (!serve(p.fd, it->second, p.revents)) drop(p.fd);
  }
  // Clients with a backlog that poll() did not report this time.
  std::vector<int> backlogged;
  for (const auto& [fd, c] : clients_)
    if (c.backlog && c.out.size() <= limits_.max_output / 2 &&
        std::find(served.begin(), served.end(), fd) == served.end())
      backlogged.push_back(fd);
  for (int fd : backlogged)
    if (!serve(fd, clients_[fd], 0)) drop(fd);
  if (listener_ready) accept_clients();
}

namespace {

constexpr int64_t kMaxBusyWaitMs = 10000;  // how long rpc_call keeps coming back to a daemon that evicts it
constexpr int64_t kMinAttemptMs = 50;      // a new attempt needs at least this much of the deadline left

// One connection, one request. `retry_after_ms` is set when the daemon's first line is its notice that the request
// was not run (UnixServer::evict): it may be sent again.
Result<json> rpc_once(const sockaddr_un& addr, const std::string& socket_path, const std::string& method,
                      const std::string& request, std::chrono::steady_clock::time_point deadline, int timeout_ms,
                      int& retry_after_ms) {
  retry_after_ms = -1;
  auto left_ms = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
  };
  Fd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) return sys_error("socket", errno);
  const int fd = sock.get();
  // A daemon that accepts nothing (stopped, or its backlog full) holds connect() at most until the deadline; an
  // interrupted connect() waits again for what is left of it, not for the whole timeout.
  int rc;
  do {
    int64_t connect_ms = std::max<int64_t>(left_ms(), 1);
    timeval tv{static_cast<time_t>(connect_ms / 1000), static_cast<suseconds_t>(connect_ms % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR && left_ms() > 0);
  if (rc != 0) {
    int e = errno;
    sock.reset();
    if (e == ENOENT || e == ECONNREFUSED)
      return errorf(ErrorKind::kUnsupported, "no akts daemon is listening on {} (start one with: sudo akts daemon)",
                    socket_path);
    if (e == EACCES)
      return errorf(ErrorKind::kSystem, "permission denied on {} (the socket is for its owner; try sudo)",
                    socket_path);
    if (e == EAGAIN || e == EINPROGRESS || e == EINTR)
      return errorf(ErrorKind::kTimeout, "the daemon on {} accepted no connection within {} ms", socket_path,
                    timeout_ms);
    return sys_error("cannot connect to " + socket_path, e);
  }
  int send_errno = send_all(fd, request, deadline);
  bool sent = send_errno == 0;
  // Read the answer; after a failed send, only what is already there (the notice that the request was not read).
  std::string buf;
  bool closed = false;
  while (buf.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    int wait = sent ? static_cast<int>(std::max<int64_t>(left_ms(), 0)) : 0;
    if (sent && wait <= 0) break;
    int ready = ::poll(&p, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;
    char chunk[65536];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      closed = true;
      break;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  sock.reset();
  if (buf.find('\n') == std::string::npos) {
    if (send_errno == ETIMEDOUT)
      return errorf(ErrorKind::kTimeout, "the daemon did not take {} within {} ms", method, timeout_ms);
    if (!sent) return sys_error("cannot send to the daemon", send_errno);
    if (closed) return make_error(ErrorKind::kSystem, "the daemon closed the connection");
    return errorf(ErrorKind::kTimeout, "the daemon did not answer {} within {} ms", method, timeout_ms);
  }
  json resp = json::parse(buf.substr(0, buf.find('\n')), nullptr, false);
  const json* err = resp.is_object() && resp.contains("id") && resp["id"].is_null() && resp.contains("error") &&
                            resp["error"].is_object()
                        ? &resp["error"]
                        : nullptr;
  if (err && err->contains("code") && (*err)["code"] == kBusy && err->contains("data") && (*err)["data"].is_object() &&
      (*err)["data"].contains("retry_after_ms") && (*err)["data"]["retry_after_ms"].is_number_integer())
    retry_after_ms = static_cast<int>(std::clamp<int64_t>((*err)["data"]["retry_after_ms"].get<int64_t>(), 1, 1000));
  if (!sent && retry_after_ms < 0) return sys_error("cannot send to the daemon", send_errno);
  return result_of(resp);
}

}  // namespace

Result<json> rpc_call(const std::string& socket_path, const std::string& method, const json& params,
                      int timeout_ms) {
  auto addr = make_addr(socket_path);
  if (!addr) return addr.error();
  json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
  std::string request = req.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  auto start = std::chrono::steady_clock::now();
  auto deadline = start + std::chrono::milliseconds(timeout_ms);
  auto busy_until = start + std::chrono::milliseconds(std::min<int64_t>(timeout_ms, kMaxBusyWaitMs));
  thread_local std::minstd_rand jitter(static_cast<unsigned>(start.time_since_epoch().count() ^ ::gettid()));
  for (int attempt = 0;; ++attempt) {
    int retry_after_ms = -1;
    auto r = rpc_once(*addr, socket_path, method, request, deadline, timeout_ms, retry_after_ms);
    if (retry_after_ms < 0) return r;
    // Not run, so sent again after the daemon's pause, doubled each time (to 16x) and spread so that clients
    // evicted together do not come back together; while the attempt after it still has time to be answered.
    auto pause = std::chrono::milliseconds(static_cast<int64_t>(
        retry_after_ms * (1 << std::min(attempt, 4)) * std::uniform_real_distribution<double>(0.5, 1.5)(jitter)));
    auto next = std::chrono::steady_clock::now() + pause;
    if (next + std::chrono::milliseconds(std::max<int64_t>(retry_after_ms, kMinAttemptMs)) > busy_until) {
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
      return errorf(ErrorKind::kBusy, "the daemon on {} closed {}'s connection unread for {} ms ({} attempts): {}",
                    socket_path, method, waited.count(), attempt + 1, r.ok() ? std::string() : r.error().message);
    }
    std::this_thread::sleep_for(pause);
  }
}

Result<json> result_of(const json& resp) {
  if (!resp.is_object() || (!resp.contains("result") && !resp.contains("error")))
    return make_error(ErrorKind::kSystem, "the daemon's answer is not a JSON-RPC response");
  if (resp.contains("error")) {
    const json& e = resp["error"];
    int code = e.is_object() && e.contains("code") && e["code"].is_number_integer() ? e["code"].get<int>() : 0;
    ErrorKind kind = code == kInvalidParams || code == kInvalidRequest || code == kMethodNotFound
                         ? ErrorKind::kInvalidArgument
                     : code == kBusy ? ErrorKind::kBusy
                                     : ErrorKind::kKernel;
    std::string message = e.is_object() && e.contains("message") && e["message"].is_string()
                              ? e["message"].get<std::string>()
                              : std::string("the daemon refused without saying why");
    Error err = make_error(kind, message);
    if (e.is_object() && e.contains("data") && e["data"].is_object() && e["data"].contains("details") &&
        e["data"]["details"].is_array())
      for (const auto& d : e["data"]["details"])
        if (d.is_string()) err.details.push_back(d.get<std::string>());
    return err;
  }
  return resp["result"];
}

}  // namespace akts::control
