// `akts mcp`: the MCP server over the daemon's control socket (stdio, or Streamable HTTP on loopback).
#pragma once

#include <string>

namespace akts::cli {

struct McpFlags {
  std::string socket = "/run/akts/akts.sock";
  std::string http;  // "HOST:PORT"; empty: stdio
  std::string path = "/mcp";
  std::string token_file = "/run/akts/mcp.token";
  std::string group;  // may read the token file (and so use the HTTP transport)
  size_t page_size = 50;
  bool workloads = true;
};

int cmd_mcp(const McpFlags& f);

}  // namespace akts::cli
