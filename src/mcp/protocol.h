// The Model Context Protocol (revision 2025-11-25) without a transport: a
// Session takes one JSON-RPC message at a time and returns its answer; the
// stdio and Streamable HTTP transports (mcp/stdio.h, mcp/http.h) carry them.
//
// What a session does:
//   - lifecycle: `initialize` first (the version is negotiated: the client's
//     if supported, else the latest), then anything; `ping` at any time;
//     every other request before `initialize` is refused (-32600);
//   - tools/list, resources/list, resources/templates/list page by an opaque
//     cursor (page_size entries a page); a cursor it did not give is -32602;
//   - tools/call: an unknown tool is -32602 (invalid params); arguments that
//     are not an object, miss a required name, or that the tool refuses come
//     back as a result with isError, and change nothing;
//   - notifications/cancelled: the named request, if still running, sees its
//     flag set and gets no answer;
//   - notifications and the client's responses get no answer; a batch (a JSON
//     array) is refused: batches are not part of this revision.
// handle() may be called from several threads at once (a long tool call
// while pings and cancellations arrive). It never throws.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::mcp {

using json = nlohmann::json;

inline constexpr std::string_view kLatestProtocol = "2025-11-25";
// Newest first.
const std::vector<std::string>& supported_protocols();

struct Tool {
  std::string name;
  std::string title;
  std::string description;
  json input_schema;   // a JSON Schema object ("type": "object")
  json output_schema;  // likewise; every successful result's structuredContent conforms
  json annotations;    // readOnlyHint, destructiveHint, idempotentHint, openWorldHint
  // The result (an object, the structuredContent) or an error, which the
  // caller gets as a result with isError. `cancelled` turns true when the
  // client cancels the call; a long tool checks it and stops early.
  std::function<Result<json>(const json& arguments, const std::atomic<bool>& cancelled)> run;
};

struct ResourceText {
  std::string uri;
  std::string mime_type;
  std::string text;
};

// Resources are read live (the policies change with the daemon's library).
struct Resources {
  // Each: {uri, name, title?, description?, mimeType?}.
  std::function<Result<json>()> list;
  // Templates: {uriTemplate, name, description?, mimeType?}.
  json templates = json::array();
  // nullopt: no such resource (-32002).
  std::function<Result<std::optional<ResourceText>>(const std::string& uri)> read;
};

struct ServerInfo {
  std::string name = "akts";
  std::string title;
  std::string version;
  std::string instructions;  // sent in the initialize result: how to use the tools
  size_t page_size = 50;
};

// What every session shares: the tools and resources.
class Server {
 public:
  Server(ServerInfo info, std::vector<Tool> tools, Resources resources);
  const ServerInfo& info() const { return info_; }
  const std::vector<Tool>& tools() const { return tools_; }
  const Tool* find_tool(std::string_view name) const;
  const Resources& resources() const { return resources_; }

 private:
  ServerInfo info_;
  std::vector<Tool> tools_;
  Resources resources_;
};

class Session {
 public:
  explicit Session(const Server& server) : server_(server) {}
  // The answer to one message, or nullopt when none is due.
  std::optional<std::string> handle(std::string_view message);
  bool initialized() const;
  // Marks every running call cancelled (the transport is closing); calls that
  // start afterwards are cancelled at once.
  void cancel_all();
  // A transport that runs tools/call on another thread calls this first, on
  // the reading thread, so that a cancellation read right after the request
  // finds it even before the call's thread begins.
  void expect_call(std::string_view message);

 private:
  json dispatch(const std::string& method, const json& params, const json& id);
  json call_tool(const json& params, const json& id, bool* suppress);
  json list_page(const json& params, const json& all, const char* key);
  json read_resource(const json& params);

  const Server& server_;
  mutable std::mutex mu_;
  std::string version_;  // negotiated at initialize
  struct Running {
    std::shared_ptr<std::atomic<bool>> cancelled = std::make_shared<std::atomic<bool>>(false);
    bool started = false;  // false: reserved by expect_call, its call not begun
  };
  std::map<std::string, Running> running_;  // id.dump() -> its call
  bool closing_ = false;                    // cancel_all() was called
};

// A JSON-RPC error answer (id null when the request's id could not be read).
std::string error_message(const json& id, int code, std::string_view message);

}  // namespace akts::mcp
