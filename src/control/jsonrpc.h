// JSON-RPC 2.0, transport-free: one request text in, one response text out.
// Everything malformed gets the specification's error codes and changes nothing.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::control {

using json = nlohmann::json;

inline constexpr size_t kMaxRequestBytes = size_t{64} * 1024;

enum RpcCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kServerError = -32000,  // the request was valid but the operation failed
  kBusy = -32001,         // another scheduler owns sched_ext, or similar
  kUnavailable = -32002,  // the kernel side is not there (scheduler ejected, ...)
};

// Maps a library error onto a JSON-RPC error code.
int rpc_code_for(const Error& e);

// Who sent a request: the peer's credentials from the socket (SO_PEERCRED); -1 when unknown.
struct Caller {
  int64_t uid = -1, gid = -1, pid = -1;
};

class Dispatcher {
 public:
  // A handler gets the request's params (an object; {} when absent) and returns
  // the result or an Error; kInvalidArgument errors become "invalid params".
  using Handler = std::function<Result<json>(const json& params)>;
  // Called after a request to an audited method succeeded (never for a refused
  // one), with who sent it, what it asked and what it changed. It must not throw.
  using AuditHook = std::function<void(const Caller&, std::string_view method, const json& params, const json& result)>;

  void add(std::string method, Handler handler);
  // The methods whose accepted requests go to the hook.
  void set_audit(std::set<std::string, std::less<>> methods, AuditHook hook);
  // The response to one request (or batch); "" when nothing is to be sent back
  // (notifications). Never throws; the answer is always valid UTF-8 JSON.
  std::string handle(std::string_view request, const Caller& caller = {}) const;
  std::vector<std::string> methods() const;

 private:
  json handle_one(const json& req, const Caller& caller) const;
  std::string handle_unguarded(std::string_view request, const Caller& caller) const;
  std::map<std::string, Handler, std::less<>> handlers_;
  std::set<std::string, std::less<>> audited_;
  AuditHook audit_;
};

json make_error_response(const json& id, int code, std::string_view message, const json& data = nullptr);

// Strict readers for params; each names the parameter in its error.
Result<std::string> param_string(const json& params, std::string_view name);
Result<uint32_t> param_u32(const json& params, std::string_view name);
// An optional count: dflt when absent, else an integer in [lo, hi].
Result<uint32_t> param_u32_in(const json& params, std::string_view name, uint32_t lo, uint32_t hi, uint32_t dflt);
Result<bool> param_bool(const json& params, std::string_view name, bool dflt);
// Refuses parameters outside `allowed`.
Status check_param_names(const json& params, std::span<const std::string_view> allowed);
inline Status check_param_names(const json& params, std::initializer_list<std::string_view> allowed) {
  return check_param_names(params, std::span<const std::string_view>(allowed.begin(), allowed.size()));
}

}  // namespace akts::control
