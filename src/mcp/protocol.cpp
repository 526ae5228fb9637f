// MCP sessions: lifecycle, paging, tool calls, resources, cancellation.
#include "mcp/protocol.h"

#include <fmt/format.h>

#include "common/text.h"

namespace akts::mcp {
namespace {

constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kResourceNotFound = -32002;

struct RpcError {
  int code;
  std::string message;
};

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json text_result(const std::string& text, bool is_error) {
  return {{"content", json::array({{{"type", "text"}, {"text", text}}})}, {"isError", is_error}};
}

json tool_error(const Error& e) {
  std::string text = e.message;
  for (const auto& d : e.details) text += "\n" + d;
  return text_result(valid_utf8(text), true);
}

}  // namespace

const std::vector<std::string>& supported_protocols() {
  static const std::vector<std::string> v = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
  return v;
}

std::string error_message(const json& id, int code, std::string_view message) {
  return dump({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", valid_utf8(message)}}}});
}

Server::Server(ServerInfo info, std::vector<Tool> tools, Resources resources)
    : info_(std::move(info)), tools_(std::move(tools)), resources_(std::move(resources)) {
  if (info_.page_size == 0) info_.page_size = 1;
}

const Tool* Server::find_tool(std::string_view name) const {
  for (const auto& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

bool Session::initialized() const {
  std::lock_guard lock(mu_);
  return !version_.empty();
}

void Session::cancel_all() {
  std::lock_guard lock(mu_);
  closing_ = true;
  for (auto& [id, r] : running_) r.cancelled->store(true);
}

void Session::expect_call(std::string_view message) {
  json j = json::parse(message, nullptr, false);
  if (!j.is_object() || !j.contains("id") || j.value("method", json()) != "tools/call") return;
  std::lock_guard lock(mu_);
  running_.try_emplace(dump(j["id"]));
}

std::optional<std::string> Session::handle(std::string_view message) {
  json id = nullptr;
  try {
    json msg = json::parse(message, nullptr, /*allow_exceptions=*/false);
    if (msg.is_discarded()) return error_message(nullptr, kParseError, "parse error: not a JSON text");
    if (msg.is_array())
      return error_message(nullptr, kInvalidRequest,
                           "a JSON-RPC batch (an array) is not part of MCP 2025-11-25: send one message at a time");
    if (!msg.is_object() || msg.value("jsonrpc", json()) != "2.0")
      return error_message(nullptr, kInvalidRequest, "invalid request: an object with \"jsonrpc\": \"2.0\" is expected");
    bool has_id = msg.contains("id");
    if (has_id) {
      const json& i = msg["id"];
      if (!(i.is_string() || i.is_number_integer() || i.is_number_unsigned()))
        return error_message(nullptr, kInvalidRequest, "invalid request: the id must be a string or an integer");
      id = i;
    }
    if (!msg.contains("method")) {
      // The client's answer to a request of ours (we send none): nothing to say.
      if (has_id && (msg.contains("result") || msg.contains("error"))) return std::nullopt;
      return error_message(id, kInvalidRequest, "invalid request: no method");
    }
    if (!msg["method"].is_string()) return error_message(id, kInvalidRequest, "invalid request: method must be a string");
    const std::string method = msg["method"].get<std::string>();
    json params = msg.value("params", json::object());
    if (!params.is_object()) {
      if (!has_id) return std::nullopt;
      return error_message(id, kInvalidParams, "params must be an object");
    }

    if (!has_id) {  // a notification: acted on, never answered
      if (method == "notifications/cancelled") {
        json rid = params.value("requestId", json());
        std::lock_guard lock(mu_);
        if (auto it = running_.find(dump(rid)); it != running_.end()) it->second.cancelled->store(true);
      }
      return std::nullopt;
    }

    if (method == "tools/call") {
      bool suppress = false;
      json out = call_tool(params, id, &suppress);
      {
        // A reservation (expect_call) of a call refused before it began.
        std::lock_guard lock(mu_);
        if (auto it = running_.find(dump(id)); it != running_.end() && !it->second.started) running_.erase(it);
      }
      if (suppress) return std::nullopt;
      return dump(out);
    }
    return dump(dispatch(method, params, id));
  } catch (const std::exception& e) {
    return error_message(id, kInternalError, fmt::format("internal error: {}", e.what()));
  } catch (...) {
    return error_message(id, kInternalError, "internal error");
  }
}

json Session::dispatch(const std::string& method, const json& params, const json& id) {
  auto ok = [&](json result) { return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; };
  auto fail = [&](int code, std::string message) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", valid_utf8(message)}}}};
  };
  const ServerInfo& info = server_.info();

  if (method == "ping") return ok(json::object());
  if (method == "initialize") {
    if (!params.contains("protocolVersion") || !params["protocolVersion"].is_string())
      return fail(kInvalidParams, "initialize: protocolVersion (a string such as \"2025-11-25\") is missing");
    std::string asked = params["protocolVersion"].get<std::string>();
    std::string agreed(kLatestProtocol);
    for (const auto& v : supported_protocols())
      if (v == asked) agreed = v;
    {
      std::lock_guard lock(mu_);
      if (!version_.empty()) return fail(kInvalidRequest, "the session is already initialized");
      version_ = agreed;
    }
    json server_info = {{"name", info.name}, {"version", info.version}};
    if (!info.title.empty()) server_info["title"] = info.title;
    json result = {{"protocolVersion", agreed},
                   {"capabilities",
                    {{"tools", {{"listChanged", false}}}, {"resources", {{"listChanged", false}, {"subscribe", false}}}}},
                   {"serverInfo", server_info}};
    if (!info.instructions.empty()) result["instructions"] = info.instructions;
    return ok(result);
  }
  if (!initialized()) return fail(kInvalidRequest, fmt::format("{}: the session is not initialized (send initialize first)", method));

  if (method == "tools/list") {
    json all = json::array();
    for (const auto& t : server_.tools()) {
      json d = {{"name", t.name}, {"description", t.description}, {"inputSchema", t.input_schema}};
      if (!t.title.empty()) d["title"] = t.title;
      if (!t.output_schema.is_null()) d["outputSchema"] = t.output_schema;
      if (!t.annotations.is_null()) d["annotations"] = t.annotations;
      all.push_back(std::move(d));
    }
    json page = list_page(params, all, "tools");
    if (page.contains("error")) return fail(page["error"]["code"], page["error"]["message"]);
    return ok(page);
  }
  if (method == "resources/list") {
    const auto& res = server_.resources();
    Result<json> all = res.list ? res.list() : Result<json>(json::array());
    if (!all) return fail(kInternalError, "resources/list: " + all.error().message);
    json page = list_page(params, *all, "resources");
    if (page.contains("error")) return fail(page["error"]["code"], page["error"]["message"]);
    return ok(page);
  }
  if (method == "resources/templates/list") {
    json page = list_page(params, server_.resources().templates, "resourceTemplates");
    if (page.contains("error")) return fail(page["error"]["code"], page["error"]["message"]);
    return ok(page);
  }
  if (method == "resources/read") {
    json r = read_resource(params);
    if (r.contains("error")) return fail(r["error"]["code"], r["error"]["message"]);
    return ok(r);
  }
  return fail(kMethodNotFound, fmt::format("method not found: {}", excerpt(method)));
}

// A page of `all` under `key`, with nextCursor when more remain. The cursor is
// the offset, opaque to the client ("o<offset>").
json Session::list_page(const json& params, const json& all, const char* key) {
  size_t offset = 0;
  if (params.contains("cursor")) {
    const json& c = params["cursor"];
    bool good = c.is_string() && c.get_ref<const std::string&>().size() > 1 &&
                c.get_ref<const std::string&>().size() < 12 && c.get_ref<const std::string&>()[0] == 'o';
    if (good) {
      const std::string& s = c.get_ref<const std::string&>();
      for (size_t i = 1; i < s.size(); ++i) good = good && std::isdigit(static_cast<unsigned char>(s[i]));
      if (good) offset = std::stoul(s.substr(1));
      good = good && offset > 0 && offset < all.size();
    }
    if (!good) return {{"error", {{"code", kInvalidParams}, {"message", "invalid cursor (use the nextCursor of the last page)"}}}};
  }
  size_t size = server_.info().page_size;
  json items = json::array();
  for (size_t i = offset; i < all.size() && i < offset + size; ++i) items.push_back(all[i]);
  json out = {{key, items}};
  if (offset + size < all.size()) out["nextCursor"] = fmt::format("o{}", offset + size);
  return out;
}

json Session::read_resource(const json& params) {
  auto err = [](int code, std::string m) { return json{{"error", {{"code", code}, {"message", std::move(m)}}}}; };
  if (!params.contains("uri") || !params["uri"].is_string()) return err(kInvalidParams, "resources/read: uri (a string) is missing");
  const std::string& uri = params["uri"].get_ref<const std::string&>();
  const auto& res = server_.resources();
  if (!res.read) return err(kResourceNotFound, "resource not found: " + excerpt(uri));
  auto r = res.read(uri);
  if (!r) return err(kInternalError, "resources/read: " + r.error().message);
  if (!*r) return err(kResourceNotFound, "resource not found: " + excerpt(uri));
  const ResourceText& t = **r;
  return {{"contents", json::array({{{"uri", t.uri}, {"mimeType", t.mime_type}, {"text", valid_utf8(t.text)}}})}};
}

json Session::call_tool(const json& params, const json& id, bool* suppress) {
  auto fail = [&](int code, std::string message) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", valid_utf8(message)}}}};
  };
  auto ok = [&](json result) { return json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}; };
  if (!initialized()) return fail(kInvalidRequest, "tools/call: the session is not initialized (send initialize first)");
  if (!params.contains("name") || !params["name"].is_string()) return fail(kInvalidParams, "tools/call: name (a string) is missing");
  const std::string& name = params["name"].get_ref<const std::string&>();
  const Tool* tool = server_.find_tool(name);
  if (!tool) {
    std::string names;
    for (const auto& t : server_.tools()) names += (names.empty() ? "" : ", ") + t.name;
    return fail(kInvalidParams, fmt::format("unknown tool '{}' (tools: {})", excerpt(name), names));
  }
  json args = params.value("arguments", json::object());
  if (args.is_null()) args = json::object();
  if (!args.is_object()) return ok(text_result(fmt::format("{}: arguments must be an object", name), true));
  for (const auto& r : tool->input_schema.value("required", json::array()))
    if (r.is_string() && !args.contains(r.get<std::string>()))
      return ok(text_result(fmt::format("{}: missing argument \"{}\"", name, r.get<std::string>()), true));

  std::shared_ptr<std::atomic<bool>> flag;
  std::string key = dump(id);
  {
    std::lock_guard lock(mu_);
    auto [it, fresh] = running_.try_emplace(key);
    if (!fresh && it->second.started) return fail(kInvalidRequest, "a request with this id is still running");
    it->second.started = true;
    flag = it->second.cancelled;
    if (closing_) flag->store(true);
  }
  Result<json> r = make_error(ErrorKind::kSystem, "the tool did not run");
  try {
    if (!flag->load()) r = tool->run(args, *flag);
  } catch (const std::exception& e) {
    r = errorf(ErrorKind::kSystem, "{}: internal error: {}", name, e.what());
  } catch (...) {
    r = errorf(ErrorKind::kSystem, "{}: internal error", name);
  }
  {
    std::lock_guard lock(mu_);
    running_.erase(key);
  }
  if (flag->load()) {  // cancelled: the client expects no answer
    *suppress = true;
    return nullptr;
  }
  if (!r) return ok(tool_error(r.error()));
  json structured = r->is_object() ? *r : json{{"value", *r}};
  json result = text_result(structured.dump(2, ' ', false, json::error_handler_t::replace), false);
  result["structuredContent"] = std::move(structured);
  return ok(result);
}

}  // namespace akts::mcp
