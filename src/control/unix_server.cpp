#include "control/unix_server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

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

bool write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, 1000) <= 0) return false;  // a client that does not read is dropped
        continue;
      }
      return false;
    }
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Result<std::unique_ptr<UnixServer>> UnixServer::listen(const std::string& path, mode_t mode, const Dispatcher& d) {
  auto addr = make_addr(path);
  if (!addr) return addr.error();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (std::filesystem::exists(path)) {
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr)) == 0;
    if (probe >= 0) ::close(probe);
    if (live) return errorf(ErrorKind::kBusy, "another akts daemon is listening on {}", path);
    ::unlink(path.c_str());  // stale: its daemon is gone
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return sys_error("socket", errno);
  // Created with no access for anyone, then opened up to exactly `mode`.
  mode_t old = ::umask(0777);
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr));
  int bind_errno = errno;
  ::umask(old);
  if (rc != 0) {
    ::close(fd);
    return sys_error("cannot bind " + path, bind_errno);
  }
  if (::chmod(path.c_str(), mode) != 0 || ::listen(fd, 16) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(path.c_str());
    return sys_error("cannot listen on " + path, e);
  }
  return std::unique_ptr<UnixServer>(new UnixServer(path, fd, d));
}

UnixServer::~UnixServer() {
  for (auto& [fd, buf] : clients_) ::close(fd);
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    ::unlink(path_.c_str());
  }
}

std::vector<pollfd> UnixServer::poll_fds() const {
  std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
  for (const auto& [fd, buf] : clients_) fds.push_back({fd, POLLIN, 0});
  return fds;
}

void UnixServer::accept_clients() {
  while (true) {
    int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) return;
    if (clients_.size() >= 64) {  // a bound on what misbehaving clients can hold
      ::close(c);
      continue;
    }
    clients_.emplace(c, std::string());
  }
}

bool UnixServer::serve(int fd) {
  std::string& buf = clients_[fd];
  char chunk[16384];
  while (true) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      return false;
    }
    buf.append(chunk, static_cast<size_t>(n));
    if (buf.size() > kMaxRequestBytes + 1 && buf.find('\n') == std::string::npos) {
      write_all(fd, make_error_response(nullptr, kInvalidRequest,
                                        fmt::format("request exceeds the limit of {} bytes", kMaxRequestBytes))
                            .dump() +
                        "\n");
      return false;
    }
  }
  size_t nl;
  while ((nl = buf.find('\n')) != std::string::npos) {
    std::string line = buf.substr(0, nl);
    buf.erase(0, nl + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::string resp = d_.handle(line);
    if (!resp.empty() && !write_all(fd, resp + "\n")) return false;
  }
  return true;
}

void UnixServer::on_ready(const std::vector<pollfd>& fds) {
  for (const auto& p : fds) {
    if (!p.revents) continue;
    if (p.fd == listen_fd_) {
      accept_clients();
      continue;
    }
    if (!clients_.count(p.fd)) continue;
    if ((p.revents & (POLLIN | POLLHUP | POLLERR)) && !serve(p.fd)) {
      ::close(p.fd);
      clients_.erase(p.fd);
    }
  }
}

Result<json> rpc_call(const std::string& socket_path, const std::string& method, const json& params,
                      int timeout_ms) {
  auto addr = make_addr(socket_path);
  if (!addr) return addr.error();
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return sys_error("socket", errno);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&*addr), sizeof(*addr)) != 0) {
    int e = errno;
    ::close(fd);
    if (e == ENOENT || e == ECONNREFUSED)
      return errorf(ErrorKind::kUnsupported, "no akts daemon is listening on {} (start one with: sudo akts daemon)",
                    socket_path);
    if (e == EACCES)
      return errorf(ErrorKind::kSystem, "permission denied on {} (the socket is for its owner; try sudo)",
                    socket_path);
    return sys_error("cannot connect to " + socket_path, e);
  }
  json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
  if (!write_all(fd, req.dump() + "\n")) {
    ::close(fd);
    return sys_error("cannot send to the daemon", errno);
  }
  std::string buf;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (buf.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      ::close(fd);
      return errorf(ErrorKind::kTimeout, "the daemon did not answer {} within {} ms", method, timeout_ms);
    }
    char chunk[65536];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      ::close(fd);
      return make_error(ErrorKind::kSystem, "the daemon closed the connection");
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  json resp = json::parse(buf.substr(0, buf.find('\n')), nullptr, false);
  if (resp.is_discarded()) return make_error(ErrorKind::kSystem, "the daemon's answer is not JSON");
  if (resp.contains("error")) {
    const auto& e = resp["error"];
    int code = e.value("code", 0);
    ErrorKind kind = code == kInvalidParams || code == kInvalidRequest || code == kMethodNotFound
                         ? ErrorKind::kInvalidArgument
                     : code == kBusy ? ErrorKind::kBusy
                                     : ErrorKind::kKernel;
    Error err = make_error(kind, e.value("message", std::string("error")));
    if (e.contains("data") && e["data"].contains("details"))
      for (const auto& d : e["data"]["details"]) err.details.push_back(d.get<std::string>());
    return err;
  }
  return resp.value("result", json());
}

}  // namespace akts::control
