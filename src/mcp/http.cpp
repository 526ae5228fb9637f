// The Streamable HTTP transport: loopback, Host/Origin checks, a bearer token, sessions.
#include "mcp/http.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/fd.h"
#include "common/text.h"

namespace akts::mcp {
namespace {

Result<std::string> random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("getrandom", errno);
    got += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char c : raw) hex += fmt::format("{:02x}", c);
  return hex;
}

bool equal_constant_time(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char d = 0;
  for (size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
  return d == 0;
}

// "localhost", "127.0.0.1", "[::1]", each with an optional ":port".
bool loopback_authority(std::string_view a) {
  std::string_view host = a;
  if (!a.empty() && a[0] == '[') {
    size_t close = a.find(']');
    if (close == std::string_view::npos) return false;
    host = a.substr(0, close + 1);
    std::string_view rest = a.substr(close + 1);
    if (!rest.empty() && rest[0] != ':') return false;
  } else if (size_t colon = a.find(':'); colon != std::string_view::npos) {
    host = a.substr(0, colon);
    for (char c : a.substr(colon + 1))
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return host == "localhost" || host == "127.0.0.1" || host == "[::1]";
}

std::string rpc_error_body(int code, std::string_view message) { return error_message(nullptr, code, message); }

}  // namespace

bool loopback_host_header(std::string_view host) { return loopback_authority(host); }

bool loopback_origin(std::string_view origin) {
  for (std::string_view scheme : {"http://", "https://"})
    if (origin.substr(0, scheme.size()) == scheme) return loopback_authority(origin.substr(scheme.size()));
  return false;
}

Result<std::string> load_or_create_token(const std::string& path, gid_t group) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd && errno == ENOENT) {
    auto tok = random_hex(32);
    if (!tok) return tok.error();
    mode_t mode = group == static_cast<gid_t>(-1) ? 0600 : 0640;
    if (auto st = write_file_atomically(path, *tok, {.mode = mode, .group = group}); !st) {
      Error e = st.error();
      e.message = "the token file: " + e.message;
      return e;
    }
    spdlog::info("mcp: created the HTTP credential {} (mode {:o})", path, mode);
    return *tok;
  }
  if (!fd) return sys_error("cannot open the token file " + path, errno);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) return sys_error("fstat " + path, errno);
  // Group read only for the group asked for: a 0640 file of another group would hand the token to its members.
  bool group_ok = (st.st_mode & 0070) == 0 ||
                  ((st.st_mode & 0070) == 0040 && group != static_cast<gid_t>(-1) && st.st_gid == group);
  if (!S_ISREG(st.st_mode) || (st.st_mode & 0007) || !group_ok || (st.st_uid != ::geteuid() && st.st_uid != 0))
    return errorf(ErrorKind::kInvalidArgument,
                  "the token file {} must be a regular file of this user or root that no other user can read or "
                  "write: mode 0600, or 0640 with the --group given; it is mode {:o}, owner {}, group {}",
                  path, st.st_mode & 07777, st.st_uid, st.st_gid);
  char buf[129];
  ssize_t n = ::read(fd.get(), buf, sizeof(buf));
  if (n < 0) return sys_error("cannot read the token file " + path, errno);
  std::string tok(buf, static_cast<size_t>(n));
  while (!tok.empty() && (tok.back() == '\n' || tok.back() == '\r')) tok.pop_back();
  if (tok.size() < 32 || tok.size() > 128)
    return errorf(ErrorKind::kInvalidArgument, "the token in {} must be 32 to 128 characters", path);
  for (char c : tok)
    if (!std::isgraph(static_cast<unsigned char>(c)))
      return errorf(ErrorKind::kInvalidArgument, "the token in {} must be printable ASCII without spaces", path);
  return tok;
}

struct HttpServer::Impl {
  const Server& server;
  HttpOptions o;
  httplib::Server http;
  std::thread thread;
  int port = 0;
  struct Entry {
    std::unique_ptr<Session> session;
    std::chrono::steady_clock::time_point last_used;
  };
  std::mutex mu;
  std::map<std::string, std::shared_ptr<Entry>> sessions;
  bool stopping = false;      // under mu: stop() began, no new work
  size_t calls_running = 0;  // under mu: tools/call in progress, at most o.max_calls

  Impl(const Server& s, HttpOptions opts) : server(s), o(std::move(opts)) {}

  void sweep() {  // mu held
    auto now = std::chrono::steady_clock::now();
    for (auto it = sessions.begin(); it != sessions.end();)
      if (now - it->second->last_used > o.session_idle) {
        it->second->session->cancel_all();
        it = sessions.erase(it);
      } else {
        ++it;
      }
  }

  // Host, Origin, credential: false when `res` already holds the refusal.
  bool admitted(const httplib::Request& req, httplib::Response& res) {
    std::string host = req.get_header_value("Host");
    if (!host.empty() && !loopback_host_header(host)) {
      res.status = 403;
      res.set_content(rpc_error_body(-32000, "Forbidden: the Host header must name this machine's loopback"),
                      "application/json");
      return false;
    }
    if (req.has_header("Origin") && !loopback_origin(req.get_header_value("Origin"))) {
      res.status = 403;
      res.set_content(rpc_error_body(-32000, "Forbidden: requests from this Origin are not accepted"),
                      "application/json");
      return false;
    }
    std::string auth = req.get_header_value("Authorization");
    static constexpr std::string_view kBearer = "Bearer ";
    if (auth.size() <= kBearer.size() || auth.compare(0, kBearer.size(), kBearer) != 0 ||
        !equal_constant_time(std::string_view(auth).substr(kBearer.size()), o.token)) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer realm=\"akts\"");
      res.set_content(rpc_error_body(-32000,
                                     "Unauthorized: send Authorization: Bearer <the token in akts mcp's token file>"),
                      "application/json");
      return false;
    }
    if (req.has_header("MCP-Protocol-Version")) {
      std::string v = req.get_header_value("MCP-Protocol-Version");
      bool known = false;
      for (const auto& s : supported_protocols()) known = known || s == v;
      if (!known) {
        res.status = 400;
        res.set_content(rpc_error_body(-32000, fmt::format("Bad Request: unsupported MCP-Protocol-Version {}",
                                                           excerpt(v))),
                        "application/json");
        return false;
      }
    }
    return true;
  }

  void post(const httplib::Request& req, httplib::Response& res) {
    if (!admitted(req, res)) return;
    std::string ctype = req.get_header_value("Content-Type");
    if (ctype.rfind("application/json", 0) != 0) {
      res.status = 415;
      res.set_content(rpc_error_body(-32000, "Unsupported Media Type: send application/json"), "application/json");
      return;
    }
    std::string accept = req.get_header_value("Accept");
    if (!accept.empty() && accept.find("application/json") == std::string::npos &&
        accept.find("*/*") == std::string::npos) {
      res.status = 406;
      res.set_content(rpc_error_body(-32000, "Not Acceptable: the answers are application/json"), "application/json");
      return;
    }
    json msg = json::parse(req.body, nullptr, false);
    bool initialize = msg.is_object() && msg.value("method", json()) == "initialize" && msg.contains("id");
    bool tool_call = msg.is_object() && msg.value("method", json()) == "tools/call" && msg.contains("id");
    std::shared_ptr<Entry> entry;
    std::string sid = req.get_header_value("MCP-Session-Id");
    {
      std::lock_guard lock(mu);
      if (stopping) {
        res.status = 503;
        res.set_content(rpc_error_body(-32000, "Service Unavailable: the server is stopping"), "application/json");
        return;
      }
      sweep();
      if (initialize) {
        if (sessions.size() >= o.max_sessions) {
          res.status = 503;
          res.set_content(rpc_error_body(-32000, "Service Unavailable: too many sessions; end one (DELETE)"),
                          "application/json");
          return;
        }
        auto id = random_hex(16);
        if (!id) {
          res.status = 500;
          res.set_content(rpc_error_body(-32603, id.error().message), "application/json");
          return;
        }
        sid = *id;
        entry = std::make_shared<Entry>();
        entry->session = std::make_unique<Session>(server);
      } else {
        if (sid.empty()) {
          res.status = 400;
          res.set_content(rpc_error_body(-32000, "Bad Request: no MCP-Session-Id (initialize first)"),
                          "application/json");
          return;
        }
        auto it = sessions.find(sid);
        if (it == sessions.end()) {
          res.status = 404;
          res.set_content(rpc_error_body(-32001, "Session not found: it ended or never was; initialize again"),
                          "application/json");
          return;
        }
        entry = it->second;
      }
      entry->last_used = std::chrono::steady_clock::now();
      // Long calls may not take every worker: pings and cancellations need one.
      if (tool_call && calls_running >= o.max_calls) {
        res.status = 200;
        res.set_content(error_message(msg["id"], -32000,
                                      fmt::format("too many tool calls running at once ({}); wait for one to end or "
                                                  "cancel one",
                                                  o.max_calls)),
                        "application/json");
        return;
      }
      if (tool_call) ++calls_running;
    }
    std::optional<std::string> answer;
    try {
      answer = entry->session->handle(req.body);
    } catch (...) {  // handle() catches everything itself; this keeps the count right whatever happens
      answer = error_message(nullptr, -32603, "internal error");
    }
    if (tool_call) {
      std::lock_guard lock(mu);
      --calls_running;
    }
    if (initialize && entry->session->initialized()) {
      std::lock_guard lock(mu);
      sessions[sid] = entry;
      res.set_header("MCP-Session-Id", sid);
    }
    if (!answer) {
      bool request = msg.is_object() && msg.contains("method") && msg.contains("id");
      if (request) {  // cancelled while it ran: the client no longer waits, but HTTP answers every request
        res.status = 200;
        res.set_content(error_message(msg["id"], -32800, "request cancelled"), "application/json");
      } else {
        res.status = 202;
      }
      return;
    }
    res.status = 200;
    res.set_content(*answer, "application/json");
  }

  void del(const httplib::Request& req, httplib::Response& res) {
    if (!admitted(req, res)) return;
    std::string sid = req.get_header_value("MCP-Session-Id");
    std::lock_guard lock(mu);
    auto it = sessions.find(sid);
    if (sid.empty() || it == sessions.end()) {
      res.status = sid.empty() ? 400 : 404;
      return;
    }
    it->second->session->cancel_all();
    sessions.erase(it);
    res.status = 204;
  }
};

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::start(const Server& server, HttpOptions o) {
  if (o.host != "127.0.0.1" && o.host != "::1" && o.host != "localhost")
    return errorf(ErrorKind::kInvalidArgument,
                  "the MCP HTTP transport binds a loopback address only (127.0.0.1, ::1, localhost), not {}",
                  excerpt(o.host));
  if (o.token.size() < 32) return make_error(ErrorKind::kInvalidArgument, "the MCP HTTP transport needs a token");
  if (o.path.empty() || o.path[0] != '/') return make_error(ErrorKind::kInvalidArgument, "the endpoint path must start with /");
  auto impl = std::make_unique<Impl>(server, std::move(o));
  Impl* p = impl.get();
  p->http.set_payload_max_length(p->o.max_body);
  // httplib's default also sets SO_REUSEPORT, which would let a second server bind the same port and take
  // half the sessions: reuse an address in TIME_WAIT (a restart), never share a live one.
  p->http.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  p->http.Post(p->o.path, [p](const httplib::Request& req, httplib::Response& res) { p->post(req, res); });
  p->http.Delete(p->o.path, [p](const httplib::Request& req, httplib::Response& res) { p->del(req, res); });
  p->http.Get(p->o.path, [p](const httplib::Request& req, httplib::Response& res) {
    if (!p->admitted(req, res)) return;
    res.status = 405;
    res.set_header("Allow", "POST, DELETE");
  });
  std::string bind_host = p->o.host == "localhost" ? "127.0.0.1" : p->o.host;
  if (p->o.port == 0) {
    p->port = p->http.bind_to_any_port(bind_host);
    if (p->port < 0) return errorf(ErrorKind::kSystem, "cannot bind {} on any port", bind_host);
  } else {
    if (!p->http.bind_to_port(bind_host, p->o.port))
      return errorf(ErrorKind::kSystem, "cannot bind {}:{} (in use?)", bind_host, p->o.port);
    p->port = p->o.port;
  }
  p->thread = std::thread([p] { p->http.listen_after_bind(); });
  // stop() before the loop runs would be lost: wait for it.
  for (int i = 0; i < 2000 && !p->http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

int HttpServer::port() const { return impl_->port; }

std::string HttpServer::url() const {
  std::string host = impl_->o.host == "::1" ? "[::1]" : impl_->o.host;
  return fmt::format("http://{}:{}{}", host, impl_->port, impl_->o.path);
}

void HttpServer::stop() {
  if (!impl_) return;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;  // a request past the checks after this line is refused with 503
    for (auto& [id, e] : impl_->sessions) e->session->cancel_all();
  }
  impl_->http.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace akts::mcp
