// The control socket: a UNIX stream socket carrying newline-delimited
// JSON-RPC requests and responses. Driven by the daemon's poll loop: the
// server hands out its descriptors and is told which are ready.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "control/jsonrpc.h"

namespace akts::control {

class UnixServer {
 public:
  // Binds `path` (mode `mode`). Refuses when another process is listening
  // there; removes a stale socket file left by a dead one.
  static Result<std::unique_ptr<UnixServer>> listen(const std::string& path, mode_t mode, const Dispatcher& d);
  ~UnixServer();

  // Descriptors to poll for input, listener first.
  std::vector<pollfd> poll_fds() const;
  // Handles readiness reported by poll() for the fds returned above.
  void on_ready(const std::vector<pollfd>& fds);
  const std::string& path() const { return path_; }

 private:
  UnixServer(std::string path, int fd, const Dispatcher& d) : path_(std::move(path)), listen_fd_(fd), d_(d) {}
  void accept_clients();
  // false when the client is to be dropped
  bool serve(int fd);

  std::string path_;
  int listen_fd_;
  const Dispatcher& d_;
  std::unordered_map<int, std::string> clients_;  // fd -> bytes received, not yet a full line
};

// Client side: one request, one response, with a timeout.
Result<json> rpc_call(const std::string& socket_path, const std::string& method, const json& params,
                      int timeout_ms = 10000);

}  // namespace akts::control
