#include "control/jsonrpc.h"

#include <gtest/gtest.h>

namespace akts::control {
namespace {

json call(const Dispatcher& d, std::string_view text) {
  std::string out = d.handle(text);
  return out.empty() ? json() : json::parse(out);
}

Dispatcher echo_dispatcher(int* calls) {
  Dispatcher d;
  d.add("echo", [calls](const json& p) -> Result<json> {
    ++*calls;
    return p;
  });
  d.add("fails", [](const json&) -> Result<json> { return make_error(ErrorKind::kInvalidArgument, "nope"); });
  d.add("throws", [](const json&) -> Result<json> { throw std::runtime_error("boom"); });
  return d;
}

TEST(JsonRpc, CallsAndEchoesId) {
  int calls = 0;
  auto d = echo_dispatcher(&calls);
  auto r = call(d, R"({"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":1}})");
  EXPECT_EQ(r["id"], 7);
  EXPECT_EQ(r["result"]["a"], 1);
  EXPECT_EQ(calls, 1);
}

TEST(JsonRpc, MalformedRequestsGetSpecCodesAndCallNothing) {
  int calls = 0;
  auto d = echo_dispatcher(&calls);
  struct Case {
    const char* text;
    int code;
  } cases[] = {
      {"", kParseError},
      {"{", kParseError},
      {"not json", kParseError},
      {"[]", kInvalidRequest},
      {"42", kInvalidRequest},
      {R"({"id":1,"method":"echo"})", kInvalidRequest},                       // no jsonrpc
      {R"({"jsonrpc":"1.0","id":1,"method":"echo"})", kInvalidRequest},      // wrong version
      {R"({"jsonrpc":"2.0","id":1,"method":5})", kInvalidRequest},           // method not a string
      {R"({"jsonrpc":"2.0","id":{},"method":"echo"})", kInvalidRequest},     // id of a wrong type
      {R"({"jsonrpc":"2.0","id":1,"method":"echo","x":1})", kInvalidRequest},  // unknown member
      {R"({"jsonrpc":"2.0","id":1,"method":"echo","params":[1]})", kInvalidParams},  // positional params
      {R"({"jsonrpc":"2.0","id":1,"method":"nosuch"})", kMethodNotFound},
      {R"({"jsonrpc":"2.0","id":1,"method":"fails"})", kInvalidParams},
      {R"({"jsonrpc":"2.0","id":1,"method":"throws"})", kServerError},
  };
  for (const auto& c : cases) {
    auto r = call(d, c.text);
    ASSERT_TRUE(r.contains("error")) << c.text;
    EXPECT_EQ(r["error"]["code"], c.code) << c.text;
    EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
  }
  EXPECT_EQ(calls, 0);
}

TEST(JsonRpc, OversizedRequestIsRefusedUnparsed) {
  int calls = 0;
  auto d = echo_dispatcher(&calls);
  std::string big = R"({"jsonrpc":"2.0","id":1,"method":"echo","params":{"pad":")" +
                    std::string(kMaxRequestBytes, 'x') + "\"}}";
  auto r = call(d, big);
  EXPECT_EQ(r["error"]["code"], kInvalidRequest);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("exceeds"), std::string::npos);
  EXPECT_EQ(calls, 0);
}

TEST(JsonRpc, NotificationsGetNoResponseAndBatchesWork) {
  int calls = 0;
  auto d = echo_dispatcher(&calls);
  EXPECT_EQ(d.handle(R"({"jsonrpc":"2.0","method":"echo"})"), "");
  EXPECT_EQ(calls, 1);
  auto r = call(d, R"([{"jsonrpc":"2.0","id":1,"method":"echo"},{"jsonrpc":"2.0","id":2,"method":"nosuch"}])");
  ASSERT_TRUE(r.is_array());
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].contains("result"));
  EXPECT_EQ(r[1]["error"]["code"], kMethodNotFound);
}

TEST(JsonRpc, ParamReaders) {
  json p = {{"n", 5}, {"neg", -1}, {"big", 4294967296ull}, {"f", 0.3}, {"s", "x"}, {"b", true}};
  EXPECT_EQ(*param_u32(p, "n"), 5u);
  EXPECT_FALSE(param_u32(p, "neg").ok());
  EXPECT_FALSE(param_u32(p, "big").ok());
  EXPECT_FALSE(param_u32(p, "f").ok());
  EXPECT_FALSE(param_u32(p, "s").ok());
  EXPECT_FALSE(param_u32(p, "missing").ok());
  EXPECT_EQ(*param_string(p, "s"), "x");
  EXPECT_FALSE(param_string(p, "n").ok());
  EXPECT_TRUE(*param_bool(p, "b", false));
  EXPECT_FALSE(*param_bool(p, "missing", false));
  EXPECT_FALSE(param_bool(p, "n", false).ok());
  EXPECT_FALSE(check_param_names(p, {"n"}).ok());
}

}  // namespace
}  // namespace akts::control
