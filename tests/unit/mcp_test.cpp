// The MCP server without a daemon: the protocol (lifecycle, paging, tool calls,
// cancellation, bad input), akts's tools over the control API (a fake backend
// behind the real register_v1), the stdio and HTTP transports, the token file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "control/api.h"
#include "control/unix_server.h"
#include "fake_control_backend.h"
#include "mcp/http.h"
#include "mcp/protocol.h"
#include "mcp/stdio.h"
#include "mcp/tools.h"

namespace akts::mcp {
namespace {

// The subset of JSON Schema the tools' schemas use: type, properties, required, items, enum.
bool conforms(const json& v, const json& schema, std::string* why, const std::string& at = "$") {
  auto type_ok = [&](const std::string& t) {
    return (t == "object" && v.is_object()) || (t == "array" && v.is_array()) || (t == "string" && v.is_string()) ||
           (t == "integer" && (v.is_number_integer() || v.is_number_unsigned())) ||
           (t == "number" && v.is_number()) || (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null());
  };
  if (schema.contains("type")) {
    bool ok = false;
    if (schema["type"].is_array())
      for (const auto& t : schema["type"]) ok = ok || type_ok(t.get<std::string>());
    else
      ok = type_ok(schema["type"].get<std::string>());
    if (!ok) return *why = at + ": type is not " + schema["type"].dump(), false;
  }
  if (schema.contains("enum")) {
    bool ok = false;
    for (const auto& e : schema["enum"]) ok = ok || e == v;
    if (!ok) return *why = at + ": not in the enum", false;
  }
  if (v.is_object()) {
    for (const auto& r : schema.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return *why = at + ": missing " + r.get<std::string>(), false;
    const json props = schema.value("properties", json::object());
    for (const auto& [k, s] : props.items())
      if (v.contains(k) && !conforms(v[k], s, why, at + "." + k)) return false;
  }
  if (v.is_array() && schema.contains("items"))
    for (size_t i = 0; i < v.size(); ++i)
      if (!conforms(v[i], schema["items"], why, at + "[" + std::to_string(i) + "]")) return false;
  return true;
}

class McpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    control::register_v1(d_, b_);
    up_ = [this](const std::string& method, const json& params) -> Result<json> {
      ++calls_;
      json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", method}, {"params", params}};
      return control::result_of(json::parse(d_.handle(req.dump())));
    };
  }
  std::unique_ptr<Server> make_server(size_t page_size = 50, WorkloadRunner w = nullptr) {
    ServerInfo info;
    info.version = "test";
    info.instructions = akts_instructions();
    info.page_size = page_size;
    return std::make_unique<Server>(info, akts_tools(up_, std::move(w)), akts_resources(up_));
  }
  static json send(Session& s, const json& msg) {
    auto a = s.handle(msg.dump(-1, ' ', false, json::error_handler_t::replace));
    return a ? json::parse(*a) : json();
  }
  static json request(Session& s, int id, const std::string& method, const json& params = json::object()) {
    return send(s, {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
  }
  static json init(Session& s, const std::string& version = "2025-11-25") {
    return request(s, 0, "initialize",
                   {{"protocolVersion", version}, {"capabilities", json::object()},
                    {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
  }
  static json call(Session& s, const std::string& tool, const json& args) {
    return request(s, 9, "tools/call", {{"name", tool}, {"arguments", args}});
  }

  control::FakeBackend b_;
  control::Dispatcher d_;
  Upstream up_;
  int calls_ = 0;
};

TEST_F(McpTest, Lifecycle) {
  auto server = make_server();
  Session s(*server);
  EXPECT_EQ(request(s, 1, "ping")["result"], json::object());  // ping at any time
  EXPECT_EQ(request(s, 2, "tools/list")["error"]["code"], -32600);
  json r = init(s);
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
  EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
  EXPECT_EQ(r["result"]["serverInfo"]["name"], "akts");
  EXPECT_EQ(init(s)["error"]["code"], -32600);  // once
  // Notifications get nothing back.
  EXPECT_FALSE(s.handle(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"));
  EXPECT_FALSE(s.handle(R"({"jsonrpc":"2.0","method":"notifications/whatever","params":{}})"));
  // A client's response to a request of ours (there are none): nothing either.
  EXPECT_FALSE(s.handle(R"({"jsonrpc":"2.0","id":5,"result":{}})"));

  Session old(*server);
  EXPECT_EQ(init(old, "2025-06-18")["result"]["protocolVersion"], "2025-06-18");
  Session future(*server);
  EXPECT_EQ(init(future, "2099-01-01")["result"]["protocolVersion"], "2025-11-25");
  Session bad(*server);
  EXPECT_EQ(request(bad, 1, "initialize", {{"protocolVersion", 5}})["error"]["code"], -32602);
  EXPECT_FALSE(bad.initialized());
}

TEST_F(McpTest, MalformedMessagesGetErrorsAndChangeNothing) {
  auto server = make_server();
  Session s(*server);
  init(s);
  b_.selects = 0;
  const char* bad[] = {"", "garbage", "[]", R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "42", "null",
                       R"({"jsonrpc":"1.0","id":1,"method":"ping"})", R"({"id":1,"method":"ping"})",
                       R"({"jsonrpc":"2.0","id":null,"method":"ping"})", R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})",
                       R"({"jsonrpc":"2.0","id":{},"method":"ping"})", R"({"jsonrpc":"2.0","id":1,"method":7})",
                       R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]})",
                       R"({"jsonrpc":"2.0","id":1})", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}"};
  for (const char* m : bad) {
    auto a = s.handle(m);
    ASSERT_TRUE(a) << m;
    json j = json::parse(*a);  // valid JSON (and so valid UTF-8) whatever came in
    EXPECT_TRUE(j.contains("error")) << m << " -> " << *a;
  }
  EXPECT_EQ(request(s, 3, "no/such/method")["error"]["code"], -32601);
  EXPECT_EQ(b_.selects, 0);
}

TEST_F(McpTest, ToolsHaveSchemasAndPagesChain) {
  auto server = make_server(/*page_size=*/3, [](const json&, const std::atomic<bool>&) -> Result<json> {
    return json::object();
  });
  Session s(*server);
  init(s);
  std::vector<std::string> names;
  json cursor;
  int pages = 0;
  do {
    json params = cursor.is_null() ? json::object() : json{{"cursor", cursor}};
    json r = request(s, 1, "tools/list", params)["result"];
    ASSERT_LE(r["tools"].size(), 3u);
    for (const auto& t : r["tools"]) {
      names.push_back(t["name"]);
      EXPECT_FALSE(t.value("description", "").empty()) << t["name"];
      EXPECT_EQ(t["inputSchema"]["type"], "object") << t["name"];
      EXPECT_EQ(t["outputSchema"]["type"], "object") << t["name"];
      EXPECT_TRUE(t["annotations"].contains("readOnlyHint")) << t["name"];
    }
    cursor = r.value("nextCursor", json());
    ++pages;
  } while (!cursor.is_null() && pages < 10);
  EXPECT_EQ(pages, 4);
  const std::vector<std::string> want = {"list_policies", "get_status",    "get_telemetry", "switch_policy",
                                         "get_parameters", "set_parameter", "hint",          "get_decision_history",
                                         "set_objective",  "hold",          "release",       "run_workload"};
  EXPECT_EQ(names, want);
  for (const char* c : {"o0", "o99", "o-1", "3", "", "o3x"})
    EXPECT_EQ(request(s, 2, "tools/list", {{"cursor", c}})["error"]["code"], -32602) << c;
  EXPECT_EQ(request(s, 2, "tools/list", {{"cursor", 3}})["error"]["code"], -32602);
}

TEST_F(McpTest, EveryToolAnswersWithinItsOutputSchema) {
  auto server = make_server(50, [](const json&, const std::atomic<bool>&) -> Result<json> {
    return json{{"scenario", "hackbench"}, {"seconds", 1.0}, {"policy", "latency"}, {"metrics", {{"seconds", 0.5}}}};
  });
  Session s(*server);
  init(s);
  // The fake backend's status and stats are not the daemon's: get_status is left to the guest test.
  const std::vector<std::pair<std::string, json>> calls = {
      {"list_policies", json::object()},
      {"list_policies", {{"docs", true}}},
      {"get_telemetry", {{"last", 3}}},
      {"switch_policy", {{"target", "throughput"}}},
      {"switch_policy", {{"target", 0}}},
      {"get_decision_history", {{"limit", 5}}},
      {"set_objective", {{"goal", "keep the LC wait p99 under 20 ms"}}},
      {"hold", {{"target", "latency"}, {"duration", "30s"}}},
      {"release", json::object()},
      {"hint", {{"pid", 42}, {"remaining", "30ms"}}},
      {"hint", {{"pid", 42}, {"clear", true}}},
      {"run_workload", {{"scenario", "hackbench"}}},
  };
  for (const auto& [tool, args] : calls) {
    json full = call(s, tool, args);
    json r = full["result"];
    ASSERT_TRUE(r.is_object()) << tool << ": " << full.dump();
    ASSERT_FALSE(r.value("isError", true)) << tool << ": " << r.dump();
    ASSERT_TRUE(r.contains("structuredContent")) << tool;
    EXPECT_EQ(json::parse(r["content"][0]["text"].get<std::string>()), r["structuredContent"]) << tool;
    std::string why;
    EXPECT_TRUE(conforms(r["structuredContent"], server->find_tool(tool)->output_schema, &why))
        << tool << ": " << why << " in " << r["structuredContent"].dump();
  }
  EXPECT_EQ(b_.selected_, 0u);
  EXPECT_EQ(b_.objective_.limits.front().max_ms, 20.0);
}

// What an agent sends by mistake: an error result, the same refusal as the socket's, nothing changed.
TEST_F(McpTest, BadArgumentsAreToolErrorsAndChangeNothing) {
  auto server = make_server();
  Session s(*server);
  init(s);
  b_.selects = 0;
  const std::vector<std::pair<std::string, json>> bad = {
      {"switch_policy", {{"target", "0.3"}}},
      {"switch_policy", {{"target", "-1"}}},
      {"switch_policy", {{"target", ""}}},
      {"switch_policy", {{"target", "I think latency would be best here"}}},
      {"switch_policy", {{"target", 7}}},
      {"switch_policy", {{"target", 0.3}}},
      {"switch_policy", {{"target", "latency"}, {"extra", 1}}},
      {"switch_policy", json::object()},
      {"switch_policy", json::array({1})},
      {"switch_policy", "latency"},
      {"switch_policy", {{"target", "lat\xc3\xa9ncy \xe2\x9c\x93"}}},
      {"hold", {{"target", "latency"}, {"duration", "forever"}}},
      {"hold", {{"target", "latency"}}},
      {"set_objective", {{"goal", "0.3"}}},
      {"set_objective", {{"goal", ""}}},
      {"set_objective", {{"goal", "make it fast"}}},
      {"get_telemetry", {{"last", 0}}},
      {"get_decision_history", {{"limit", "ten"}}},
      {"hint", {{"pid", 42}, {"remaining", "0.3"}}},
      {"hint", {{"pid", 42}, {"remaining", -1}}},
      {"hint", {{"pid", 42}}},
      {"hint", {{"pid", 42}, {"remaining", "30ms"}, {"clear", true}}},
      {"hint", {{"pid", "42"}, {"remaining", "30ms"}}},
  };
  for (const auto& [tool, args] : bad) {
    json r = call(s, tool, args);
    ASSERT_TRUE(r.contains("result")) << tool << " " << args.dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_TRUE(r["result"]["isError"].get<bool>()) << tool << " " << r.dump();
    EXPECT_FALSE(r["result"].contains("structuredContent"));
    EXPECT_FALSE(r["result"]["content"][0]["text"].get<std::string>().empty());
  }
  // Invalid UTF-8 inside the arguments, as raw bytes: refused, and the answer is valid JSON.
  auto raw = s.handle(
      "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"switch_policy\","
      "\"arguments\":{\"target\":\"lat\xff\"}}}");
  ASSERT_TRUE(raw);
  EXPECT_TRUE(json::parse(*raw).contains("error")) << *raw;
  EXPECT_EQ(b_.selects, 0);
  EXPECT_FALSE(b_.held);
  EXPECT_EQ(b_.objective_sets, 0);
  EXPECT_TRUE(b_.hints.empty());
  // An unknown tool is a protocol error (invalid params), not a tool result.
  EXPECT_EQ(call(s, "rm_rf", json::object())["error"]["code"], -32602);
  EXPECT_EQ(request(s, 1, "tools/call", {{"arguments", json::object()}})["error"]["code"], -32602);
}

TEST_F(McpTest, ResourcesListAndRead) {
  auto server = make_server();
  Session s(*server);
  init(s);
  json list = request(s, 1, "resources/list")["result"]["resources"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["uri"], "akts://policies/latency");
  EXPECT_EQ(list[2]["uri"], "akts://decisions");
  json doc = request(s, 2, "resources/read", {{"uri", "akts://policies/throughput"}})["result"]["contents"][0];
  EXPECT_EQ(doc["mimeType"], "text/markdown");
  EXPECT_NE(doc["text"].get<std::string>().find("# throughput"), std::string::npos);
  json log = request(s, 3, "resources/read", {{"uri", "akts://decisions"}})["result"]["contents"][0];
  EXPECT_TRUE(json::parse(log["text"].get<std::string>()).contains("decisions"));
  EXPECT_EQ(request(s, 4, "resources/read", {{"uri", "akts://policies/nope"}})["error"]["code"], -32002);
  EXPECT_EQ(request(s, 5, "resources/read", {{"uri", 5}})["error"]["code"], -32602);
  EXPECT_EQ(request(s, 6, "resources/templates/list")["result"]["resourceTemplates"][0]["uriTemplate"],
            "akts://policies/{name}");
}

TEST_F(McpTest, DaemonAbsentIsAToolError) {
  Upstream gone = [](const std::string&, const json&) -> Result<json> {
    return make_error(ErrorKind::kUnsupported, "no akts daemon is listening");
  };
  Server server(ServerInfo{}, akts_tools(gone, nullptr), akts_resources(gone));
  Session s(server);
  init(s);
  json r = call(s, "switch_policy", {{"target", "latency"}})["result"];
  EXPECT_TRUE(r["isError"].get<bool>());
  EXPECT_NE(r["content"][0]["text"].get<std::string>().find("no akts daemon"), std::string::npos);
  EXPECT_EQ(request(s, 2, "resources/list")["error"]["code"], -32603);
}

TEST_F(McpTest, CancelledCallGetsNoAnswerAndStops) {
  std::atomic<bool> saw_cancel{false}, started{false};
  auto server = make_server(50, [&](const json&, const std::atomic<bool>& cancelled) -> Result<json> {
    started = true;
    for (int i = 0; i < 5000 && !cancelled.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    saw_cancel = cancelled.load();
    return make_error(ErrorKind::kInvalidArgument, "cancelled");
  });
  Session s(*server);
  init(s);
  std::optional<std::string> answer = "unset";
  std::thread t([&] {
    answer = s.handle(R"({"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"run_workload","arguments":{"scenario":"hackbench"}}})");
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // A ping is answered while the call runs; a cancel of another id changes nothing.
  EXPECT_EQ(request(s, 7, "ping")["result"], json::object());
  EXPECT_FALSE(s.handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"other"}})"));
  EXPECT_FALSE(s.handle(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1","reason":"user"}})"));
  t.join();
  EXPECT_TRUE(saw_cancel);
  EXPECT_FALSE(answer) << *answer;
}

// serve_stdio on a thread between two pipes: the test writes lines, ends the input, reads every answer.
class StdioHarness {
 public:
  StdioHarness(const Server& server, size_t max_line = size_t{4} << 20) {
    EXPECT_EQ(pipe(in_), 0);
    EXPECT_EQ(pipe(out_), 0);
    srv_ = std::thread([this, &server, max_line] {
      StdioOptions o;
      o.in_fd = in_[0];
      o.out_fd = out_[1];
      o.max_line = max_line;
      serve_stdio(server, o);
      close(out_[1]);
    });
  }
  void write_all(const std::string& text) {
    ASSERT_EQ(write(in_[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  // Ends the input, waits for the server to finish, returns everything it wrote.
  std::string finish() {
    close(in_[1]);
    std::string got;
    char buf[4096];
    ssize_t n;
    while ((n = read(out_[0], buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
    srv_.join();
    close(in_[0]);
    close(out_[0]);
    return got;
  }

 private:
  int in_[2], out_[2];
  std::thread srv_;
};

TEST(McpStdio, LinesInAnswersOutOversizeSkipped) {
  Server server(ServerInfo{}, {}, Resources{});
  StdioHarness h(server, 1024);
  std::string msgs =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})"
      "\n" +
      std::string(5000, 'x') + "\n" + R"({"jsonrpc":"2.0","method":"notifications/initialized"})" + "\r\n" +
      R"({"jsonrpc":"2.0","id":2,"method":"ping"})" + "\n" + R"({"jsonrpc":"2.0","id":3,"method":"ping"})";  // no newline
  h.write_all(msgs);
  std::string got = h.finish();  // end of input
  std::vector<json> lines;
  size_t start = 0;
  for (size_t nl; (nl = got.find('\n', start)) != std::string::npos; start = nl + 1)
    lines.push_back(json::parse(got.substr(start, nl - start)));
  ASSERT_EQ(lines.size(), 4u) << got;
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[1]["error"]["code"], -32700);  // the oversize line
  EXPECT_EQ(lines[2]["id"], 2);
  EXPECT_EQ(lines[3]["id"], 3);
}

// A cancellation on the line right after its call, in the same read: found even before the call's thread starts.
TEST(McpStdio, ACancelRightAfterTheCallIsNotLost) {
  std::atomic<bool> saw_cancel{false}, ran_long{false}, started{false};
  Tool slow;
  slow.name = "slow";
  slow.description = "waits";
  slow.input_schema = {{"type", "object"}};
  slow.run = [&](const json&, const std::atomic<bool>& cancelled) -> Result<json> {
    started = true;
    for (int i = 0; i < 3000 && !cancelled.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    saw_cancel = cancelled.load();
    ran_long = !cancelled.load();
    return json::object();
  };
  Server server(ServerInfo{}, {slow}, Resources{});
  // Without the reservation the worker could begin after the cancel was read, and run its 3 s.
  StdioHarness h(server);
  std::string msgs = std::string(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})") +
                     "\n" + R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow"}})" + "\n" +
                     R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}})" + "\n";
  h.write_all(msgs);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  // Before the end of input (which would cancel it anyway): the call never ran, or saw its cancellation at once.
  EXPECT_FALSE(ran_long);
  EXPECT_TRUE(!started || saw_cancel);
  std::string got = h.finish();
  EXPECT_EQ(got.find("\"c\""), std::string::npos) << got;  // no answer to the cancelled call
}

class McpHttpTest : public McpTest {
 protected:
  void SetUp() override {
    McpTest::SetUp();
    server_ = make_server();
    HttpOptions o;
    o.port = 0;
    o.token = std::string(64, 'a');
    auto h = HttpServer::start(*server_, o);
    ASSERT_TRUE(h) << h.error().to_string();
    http_ = std::move(*h);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", http_->port());
  }
  httplib::Headers headers(const std::string& session = "", bool auth = true) {
    httplib::Headers h = {{"Accept", "application/json, text/event-stream"}};
    if (auth) h.emplace("Authorization", "Bearer " + std::string(64, 'a'));
    if (!session.empty()) h.emplace("MCP-Session-Id", session);
    return h;
  }
  httplib::Result post(const json& body, const httplib::Headers& h) {
    return client_->Post("/mcp", h, body.dump(), "application/json");
  }
  std::string open_session() {
    auto r = post({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-11-25"}}}},
                  headers());
    EXPECT_EQ(r->status, 200);
    return r->get_header_value("MCP-Session-Id");
  }
  std::unique_ptr<Server> server_;
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(McpHttpTest, SessionsAndStatusCodes) {
  std::string sid = open_session();
  ASSERT_EQ(sid.size(), 32u);
  json ping = {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}};
  auto r = post(ping, headers(sid));
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(r->body)["result"], json::object());
  EXPECT_EQ(post({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, headers(sid))->status, 202);
  EXPECT_EQ(post(ping, headers())->status, 400);                       // no session
  EXPECT_EQ(post(ping, headers(std::string(32, '0')))->status, 404);   // unknown session
  auto h = headers(sid);
  h.emplace("MCP-Protocol-Version", "2025-03-26");
  EXPECT_EQ(post(ping, h)->status, 200);  // an older revision the client negotiated
  h = headers(sid);
  h.emplace("MCP-Protocol-Version", "1999-01-01");
  EXPECT_EQ(post(ping, h)->status, 400);
  EXPECT_EQ(client_->Get("/mcp", headers(sid))->status, 405);
  EXPECT_EQ(client_->Post("/mcp", headers(sid), ping.dump(), "text/plain")->status, 415);
  // A tool call through HTTP reaches the daemon's checks like any other.
  r = post({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/call"},
            {"params", {{"name", "switch_policy"}, {"arguments", {{"target", "0.3"}}}}}},
           headers(sid));
  EXPECT_TRUE(json::parse(r->body)["result"]["isError"].get<bool>());
  EXPECT_EQ(client_->Delete("/mcp", headers(sid))->status, 204);
  EXPECT_EQ(post(ping, headers(sid))->status, 404);  // ended
}

TEST_F(McpHttpTest, WhoMayReachIt) {
  json init = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-11-25"}}}};
  EXPECT_EQ(post(init, headers("", /*auth=*/false))->status, 401);
  auto wrong = headers("", false);
  wrong.emplace("Authorization", "Bearer " + std::string(64, 'b'));
  EXPECT_EQ(post(init, wrong)->status, 401);
  auto evil_origin = headers();
  evil_origin.emplace("Origin", "http://evil.example.com");
  EXPECT_EQ(post(init, evil_origin)->status, 403);
  auto lookalike = headers();
  lookalike.emplace("Origin", "http://localhost.evil.example.com");
  EXPECT_EQ(post(init, lookalike)->status, 403);
  auto evil_host = headers();
  evil_host.emplace("Host", "evil.example.com");
  EXPECT_EQ(post(init, evil_host)->status, 403);
  auto local_origin = headers();
  local_origin.emplace("Origin", "http://localhost:3000");
  EXPECT_EQ(post(init, local_origin)->status, 200);
  // Binding anything but loopback is refused.
  HttpOptions o;
  o.host = "0.0.0.0";
  o.port = 0;
  o.token = std::string(64, 'a');
  EXPECT_FALSE(HttpServer::start(*server_, o));
}

TEST(McpHttpHeaders, Loopback) {
  for (const char* ok : {"localhost", "localhost:8765", "127.0.0.1", "127.0.0.1:1", "[::1]", "[::1]:8765"})
    EXPECT_TRUE(loopback_host_header(ok)) << ok;
  for (const char* bad : {"evil.example.com", "localhost.evil", "127.0.0.2", "[::2]", "localhost:80x", "", "[::1"})
    EXPECT_FALSE(loopback_host_header(bad)) << bad;
  EXPECT_TRUE(loopback_origin("http://127.0.0.1:3000"));
  EXPECT_FALSE(loopback_origin("null"));
  EXPECT_FALSE(loopback_origin("file://localhost"));
}

TEST(McpToken, CreatedPrivateAndCheckedWhenReused) {
  auto dir = std::filesystem::temp_directory_path() / ("akts-mcp-token-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::string path = (dir / "mcp.token").string();
  auto t = load_or_create_token(path);
  ASSERT_TRUE(t) << t.error().to_string();
  EXPECT_EQ(t->size(), 64u);
  struct stat st{};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto again = load_or_create_token(path);
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *t);
  chmod(path.c_str(), 0644);  // readable by everyone: refused
  EXPECT_FALSE(load_or_create_token(path));
  chmod(path.c_str(), 0640);  // readable by its group: only when that group was given
  EXPECT_FALSE(load_or_create_token(path));
  EXPECT_FALSE(load_or_create_token(path, st.st_gid + 1));
  EXPECT_TRUE(load_or_create_token(path, st.st_gid));
  chmod(path.c_str(), 0660);  // writable by its group: refused
  EXPECT_FALSE(load_or_create_token(path, st.st_gid));
  chmod(path.c_str(), 0600);
  std::ofstream(path) << "short\n";
  EXPECT_FALSE(load_or_create_token(path));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace akts::mcp
