// MCP over stdio: one JSON-RPC message per line on stdin, one answer per line
// on stdout (nothing else is ever written there; logs go to stderr). Tool
// calls run on their own threads (at most max_running at once; more are
// refused) so that pings and cancellations are answered while a workload runs.
// A line longer than max_line is answered with a parse error and skipped.
// At end of input every running call is cancelled and waited for.
#pragma once

#include <cstddef>

#include "mcp/protocol.h"

namespace akts::mcp {

struct StdioOptions {
  int in_fd = 0;
  int out_fd = 1;
  size_t max_line = size_t{4} << 20;
  size_t max_running = 4;
};

// Serves one session until end of input; returns the exit status (0).
int serve_stdio(const Server& server, StdioOptions o = {});

}  // namespace akts::mcp
