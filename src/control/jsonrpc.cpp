#include "control/jsonrpc.h"

#include <fmt/format.h>

#include "common/text.h"

namespace akts::control {
namespace {

// Every answer leaves as valid UTF-8 JSON, whatever bytes a handler put in it
// (a process name from /proc, say): invalid sequences become U+FFFD.
std::string serialize(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

int rpc_code_for(const Error& e) {
  switch (e.kind) {
    case ErrorKind::kInvalidArgument: return kInvalidParams;
    case ErrorKind::kBusy: return kBusy;
    case ErrorKind::kUnsupported:
    case ErrorKind::kKernel: return kUnavailable;
    default: return kServerError;
  }
}

json make_error_response(const json& id, int code, std::string_view message, const json& data) {
  json err = {{"code", code}, {"message", message}};
  if (!data.is_null()) err["data"] = data;
  return {{"jsonrpc", "2.0"}, {"id", id}, {"error", err}};
}

void Dispatcher::add(std::string method, Handler handler) { handlers_[std::move(method)] = std::move(handler); }

std::vector<std::string> Dispatcher::methods() const {
  std::vector<std::string> m;
  for (const auto& [name, h] : handlers_) m.push_back(name);
  return m;
}

json Dispatcher::handle_one(const json& req, const Caller& caller) const {
  if (!req.is_object()) return make_error_response(nullptr, kInvalidRequest, "a request must be a JSON object");
  // The id is echoed only when it is of a type the specification allows.
  json id = nullptr;
  bool notification = !req.contains("id");
  if (!notification) {
    const json& rid = req["id"];
    if (!(rid.is_string() || rid.is_number_integer() || rid.is_null()))
      return make_error_response(nullptr, kInvalidRequest, "id must be a string, an integer or null");
    id = rid;
  }
  auto it_ver = req.find("jsonrpc");
  if (it_ver == req.end() || *it_ver != "2.0")
    return make_error_response(id, kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  auto it_m = req.find("method");
  if (it_m == req.end() || !it_m->is_string())
    return make_error_response(id, kInvalidRequest, "\"method\" must be a string");
  for (const auto& [key, v] : req.items())
    if (key != "jsonrpc" && key != "method" && key != "params" && key != "id")
      return make_error_response(id, kInvalidRequest, fmt::format("unknown member \"{}\"", excerpt(key)));
  json params = json::object();
  if (auto it_p = req.find("params"); it_p != req.end()) {
    if (!it_p->is_object())
      return make_error_response(id, kInvalidParams, "params must be an object of named parameters");
    params = *it_p;
  }
  auto h = handlers_.find(it_m->get<std::string>());
  if (h == handlers_.end()) {
    json resp = make_error_response(id, kMethodNotFound,
                                    fmt::format("no method \"{}\"", excerpt(it_m->get<std::string>())),
                                    {{"methods", methods()}});
    return notification ? json() : resp;
  }
  Result<json> r = [&]() -> Result<json> {
    try {
      return h->second(params);
    } catch (const std::exception& e) {
      return make_error(ErrorKind::kSystem, std::string("internal error: ") + e.what());
    }
  }();
  if (r && audit_ && audited_.count(it_m->get<std::string>())) {
    try {
      audit_(caller, it_m->get<std::string>(), params, *r);
    } catch (...) {  // an audit that fails must not turn a done change into an error
    }
  }
  if (notification) return json();
  if (!r) {
    json data = nullptr;
    if (!r.error().details.empty()) data = {{"details", r.error().details}};
    return make_error_response(id, rpc_code_for(r.error()), r.error().to_string(), data);
  }
  return {{"jsonrpc", "2.0"}, {"id", id}, {"result", r.value()}};
}

void Dispatcher::set_audit(std::set<std::string, std::less<>> methods, AuditHook hook) {
  audited_ = std::move(methods);
  audit_ = std::move(hook);
}

std::string Dispatcher::handle(std::string_view request, const Caller& caller) const {
  // No exception leaves a transport: whatever goes wrong below becomes an error answer.
  try {
    return handle_unguarded(request, caller);
  } catch (const std::exception& e) {
    return serialize(make_error_response(nullptr, kInternalError, std::string("internal error: ") + e.what()));
  } catch (...) {
    return serialize(make_error_response(nullptr, kInternalError, "internal error"));
  }
}

std::string Dispatcher::handle_unguarded(std::string_view request, const Caller& caller) const {
  if (request.size() > kMaxRequestBytes)
    return serialize(make_error_response(nullptr, kInvalidRequest,
                                         fmt::format("request of {} bytes exceeds the limit of {}",
                                                     request.size(), kMaxRequestBytes)));
  json req = json::parse(request, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded()) return serialize(make_error_response(nullptr, kParseError, "not valid JSON"));
  if (req.is_array()) {
    if (req.empty()) return serialize(make_error_response(nullptr, kInvalidRequest, "an empty batch"));
    json out = json::array();
    for (const auto& r : req) {
      json resp = handle_one(r, caller);
      if (!resp.is_null()) out.push_back(resp);
    }
    return out.empty() ? "" : serialize(out);
  }
  json resp = handle_one(req, caller);
  return resp.is_null() ? "" : serialize(resp);
}

Result<std::string> param_string(const json& params, std::string_view name) {
  auto it = params.find(name);
  if (it == params.end()) return errorf(ErrorKind::kInvalidArgument, "missing parameter \"{}\"", name);
  if (!it->is_string()) return errorf(ErrorKind::kInvalidArgument, "parameter \"{}\" must be a string", name);
  return it->get<std::string>();
}

Result<uint32_t> param_u32(const json& params, std::string_view name) {
  auto it = params.find(name);
  if (it == params.end()) return errorf(ErrorKind::kInvalidArgument, "missing parameter \"{}\"", name);
  if (it->is_number_unsigned() && it->get<uint64_t>() <= UINT32_MAX) return static_cast<uint32_t>(it->get<uint64_t>());
  if (it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() <= UINT32_MAX)
    return static_cast<uint32_t>(it->get<int64_t>());
  return errorf(ErrorKind::kInvalidArgument, "parameter \"{}\" must be an integer from 0 to {}, not {}", name,
                UINT32_MAX, excerpt(it->dump()));
}

Result<uint32_t> param_u32_in(const json& params, std::string_view name, uint32_t lo, uint32_t hi, uint32_t dflt) {
  if (!params.contains(name)) return dflt;
  auto n = param_u32(params, name);
  if (!n || *n < lo || *n > hi)
    return errorf(ErrorKind::kInvalidArgument, "{} must be a whole number from {} to {}, not {}", name, lo, hi,
                  excerpt(params.at(std::string(name)).dump(-1, ' ', false, json::error_handler_t::replace)));
  return *n;
}

Result<bool> param_bool(const json& params, std::string_view name, bool dflt) {
  auto it = params.find(name);
  if (it == params.end()) return dflt;
  if (!it->is_boolean()) return errorf(ErrorKind::kInvalidArgument, "parameter \"{}\" must be true or false", name);
  return it->get<bool>();
}

Status check_param_names(const json& params, std::span<const std::string_view> allowed) {
  for (const auto& [key, v] : params.items()) {
    bool ok = false;
    for (auto a : allowed) ok = ok || key == a;
    if (!ok) return errorf(ErrorKind::kInvalidArgument, "unknown parameter \"{}\"", excerpt(key));
  }
  return {};
}

}  // namespace akts::control
