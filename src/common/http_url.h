// http://host:port[/path] as the config writes it (an llm endpoint, a metrics
// endpoint), split and checked, and the HOST:PORT a server listens on. No
// https: akts has no TLS.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace akts {

struct HttpUrl {
  std::string host;    // a host name or an IPv4 address
  uint16_t port = 0;
  std::string prefix;  // "" or "/path", no trailing slash
};

// Where a server listens: "HOST:PORT", "[::1]:PORT", or a bare "PORT" on `default_host` when one is given.
// `what` names the option in errors ("--http", "--metrics-listen"). Port 0 means any free port.
struct ListenAddress {
  std::string host;  // as written, without IPv6 brackets
  int port = 0;
};
Result<ListenAddress> parse_listen_address(std::string_view text, std::string_view what,
                                           std::string_view default_host = {});

// `what` names the setting in errors ("llm.endpoint", "telemetry.metrics_url").
Result<HttpUrl> parse_http_url(std::string_view text, std::string_view what);

// The host to connect to: "localhost" as 127.0.0.1, so the common case needs
// no name lookup (akts is linked statically, and a static glibc's lookups
// lean on the running system's NSS); anything else as written.
std::string connect_host(const HttpUrl& u);

// An IPv4 address for host (a literal as it is), looked up once; the error
// says why not. Callers resolve before a run so no request waits on DNS.
Result<std::string> resolve_ipv4(const std::string& host);

}  // namespace akts
