// MCP over Streamable HTTP (revision 2025-11-25), one endpoint (POST, DELETE;
// GET is 405: the server sends nothing unasked). Who may reach it:
//   - it binds a loopback address only (127.0.0.1, ::1 or localhost);
//   - a request whose Host or Origin names anything but a loopback host is
//     403 (DNS rebinding: a web page cannot drive it through the browser);
//   - every request carries `Authorization: Bearer <token>`, the token in a
//     file only root (or the configured group) can read (TokenFile): else
//     401, so another local user cannot switch policies through it;
//   - initialize opens a session (MCP-Session-Id, 128 random bits); every
//     later request names it (missing: 400, unknown or ended: 404); DELETE
//     ends it; sessions idle for session_idle end, at most max_sessions live;
//   - MCP-Protocol-Version, when sent, must be a supported revision (else 400).
// A POST carrying a request is answered with application/json; one carrying
// a notification or a response gets 202 and no body. At most max_calls tool
// calls run at once; more are answered with an error. Known limit: a local
// process that opens many connections and sends a byte every few seconds can
// hold the 8 workers without a credential (a denial of service, not a way in).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "common/result.h"
#include "mcp/protocol.h"

namespace akts::mcp {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8765;  // 0: any free port (port() tells)
  std::string path = "/mcp";
  std::string token;  // required; see TokenFile
  size_t max_sessions = 32;
  std::chrono::seconds session_idle{3600};
  size_t max_body = size_t{4} << 20;
  size_t max_calls = 4;  // tools/call at once (the rest of the 8 workers stay for pings and cancellations)
};

// The credential: a file of 64 hex characters. Created (mode 0600, or 0640
// with group) when missing; an existing one is used only when it belongs to
// this user or root, nobody else may write it, others may not read it, and
// its group may read it only when it is the group given.
Result<std::string> load_or_create_token(const std::string& path, gid_t group = static_cast<gid_t>(-1));

// True for the Host or Origin values that name this machine's loopback.
bool loopback_host_header(std::string_view host);
bool loopback_origin(std::string_view origin);

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> start(const Server& server, HttpOptions o);
  ~HttpServer();
  int port() const;
  std::string url() const;
  // Cancels every running call, refuses new requests, stops listening and
  // returns when the server's threads have ended (a call that ignores its
  // cancellation is waited for). Called by the destructor too.
  void stop();

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace akts::mcp
