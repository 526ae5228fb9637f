// Splitting and checking http://host:port[/path].
#include "common/http_url.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>

#include <fmt/format.h>

#include "common/parse.h"
#include "common/text.h"

namespace akts {
namespace {

bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool path_char(char c) { return host_char(c) || c == '/' || c == '~'; }

std::string q(std::string_view s) { return "\"" + excerpt(s, 60) + "\""; }

}  // namespace

Result<ListenAddress> parse_listen_address(std::string_view text, std::string_view what,
                                           std::string_view default_host) {
  size_t colon = text.rfind(':');
  std::string host;
  std::string_view port_text;
  if (colon == std::string_view::npos && !default_host.empty()) {
    host = default_host;
    port_text = text;
  } else if (colon == std::string_view::npos || colon == 0) {
    return errorf(ErrorKind::kInvalidArgument, "{}: {} is not HOST:PORT (e.g. 127.0.0.1:9090)", what, q(text));
  } else {
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    // "[::1]:9090"; the unbracketed "::1:9090" is read as before: all after the last colon is the port.
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  }
  auto port = parse_u32(port_text, fmt::format("{} port", what));
  if (!port) return port.error();
  if (*port > 65535) return errorf(ErrorKind::kInvalidArgument, "{}: port {} is out of range", what, *port);
  return ListenAddress{host, static_cast<int>(*port)};
}

Result<HttpUrl> parse_http_url(std::string_view text, std::string_view what) {
  constexpr std::string_view kForm = "http://host:port with an optional path, e.g. http://127.0.0.1:8081";
  if (text.starts_with("https://"))
    return errorf(ErrorKind::kInvalidArgument, "{}: {} uses https, but akts has no TLS: use {}", what, q(text), kForm);
  if (!text.starts_with("http://"))
    return errorf(ErrorKind::kInvalidArgument, "{}: {} must be {}", what, q(text), kForm);
  std::string_view rest = text.substr(7);
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  size_t colon = authority.rfind(':');
  if (colon == std::string_view::npos)
    return errorf(ErrorKind::kInvalidArgument, "{}: {} has no port; it must be {}", what, q(text), kForm);
  std::string_view host = authority.substr(0, colon);
  if (host.empty() || !std::all_of(host.begin(), host.end(), host_char))
    return errorf(ErrorKind::kInvalidArgument,
                  "{}: {} is not a host name or IPv4 address (letters, digits, '.', '-', '_')", what, q(host));
  auto port = parse_u32(authority.substr(colon + 1), fmt::format("{}'s port", what));
  if (!port) return port.error();
  if (*port == 0 || *port > 65535)
    return errorf(ErrorKind::kInvalidArgument, "{}: port {} is not in 1-65535", what, *port);
  if (!std::all_of(path.begin(), path.end(), path_char))
    return errorf(ErrorKind::kInvalidArgument, "{}: path {} may hold only letters, digits, '/', '.', '-', '_' and '~'",
                  what, q(path));
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return HttpUrl{std::string(host), static_cast<uint16_t>(*port), std::string(path)};
}

std::string connect_host(const HttpUrl& u) { return u.host == "localhost" ? "127.0.0.1" : u.host; }

Result<std::string> resolve_ipv4(const std::string& host) {
  in_addr a{};
  if (inet_pton(AF_INET, host.c_str(), &a) == 1) return host;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || !res) {
    if (res) freeaddrinfo(res);
    return errorf(ErrorKind::kSystem, "cannot resolve '{}' to an IPv4 address: {}", host,
                  rc != 0 ? gai_strerror(rc) : "no address");
  }
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof(buf));
  freeaddrinfo(res);
  return std::string(buf);
}

}  // namespace akts
