// Policy records on disk: the schema, its checks, locked atomic rewrites.
#include "repository/policy_repository.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/atomic_file.h"
#include "common/text.h"
#include "reasoning/decision_log.h"

namespace akts {
namespace {

using json = nlohmann::json;

Status check_keys(const json& j, std::string_view what, std::initializer_list<std::string_view> allowed) {
  if (!j.is_object()) return errorf(ErrorKind::kInvalidArgument, "{} must be an object", what);
  for (const auto& [k, v] : j.items())
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
      return errorf(ErrorKind::kInvalidArgument, "{}: unknown key \"{}\"", what, excerpt(k));
  return {};
}

Result<std::string> str(const json& j, const char* key, std::string_view what, bool required, size_t max = 4096) {
  if (!j.contains(key)) {
    if (required) return errorf(ErrorKind::kInvalidArgument, "{}: missing \"{}\"", what, key);
    return std::string();
  }
  if (!j[key].is_string()) return errorf(ErrorKind::kInvalidArgument, "{}.{} must be a string", what, key);
  const auto& s = j[key].get_ref<const std::string&>();
  if (s.size() > max) return errorf(ErrorKind::kInvalidArgument, "{}.{} is longer than {} bytes", what, key, max);
  if (!is_valid_utf8(s)) return errorf(ErrorKind::kInvalidArgument, "{}.{} is not valid UTF-8", what, key);
  return s;
}

bool fits(const json& v, const std::string& type) {
  if (type == "bool") return v.is_boolean();
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) return false;
  if (type == "percent") return v.get<uint64_t>() <= 100;
  return type != "u32" || v.get<uint64_t>() <= UINT32_MAX;
}

Result<ParamRecord> param_from_json(const json& j, size_t i) {
  std::string what = fmt::format("parameters[{}]", i);
  if (auto st = check_keys(j, what, {"name", "type", "default", "min", "max", "unit", "description", "applies"}); !st)
    return st.error();
  ParamRecord p;
  auto name = str(j, "name", what, true, 64);
  if (!name) return name.error();
  if (!valid_policy_name(*name)) return errorf(ErrorKind::kInvalidArgument, "{}.name '{}' is not [a-z][a-z0-9_]*", what, excerpt(*name));
  p.name = *name;
  auto type = str(j, "type", what, true, 8);
  if (!type) return type.error();
  if (*type != "u64" && *type != "u32" && *type != "bool" && *type != "duration" && *type != "percent")
    return errorf(ErrorKind::kInvalidArgument, "{}.type must be u64, u32, bool, duration (ns) or percent, not '{}'",
                  what, excerpt(*type));
  p.type = *type;
  for (const char* k : {"default", "min", "max"}) {
    if (!j.contains(k)) return errorf(ErrorKind::kInvalidArgument, "{}: missing \"{}\"", what, k);
    if (!fits(j[k], p.type))
      return errorf(ErrorKind::kInvalidArgument, "{}.{} is not a {} value", what, k, p.type);
  }
  p.default_value = j["default"];
  p.min = j["min"];
  p.max = j["max"];
  if (p.type != "bool" && (p.min.get<uint64_t>() > p.default_value.get<uint64_t>() ||
                           p.default_value.get<uint64_t>() > p.max.get<uint64_t>()))
    return errorf(ErrorKind::kInvalidArgument, "{}: the default is outside [min, max]", what);
  auto unit = str(j, "unit", what, false, 32);
  auto desc = str(j, "description", what, false);
  auto applies = str(j, "applies", what, false, 8);
  if (!unit) return unit.error();
  if (!desc) return desc.error();
  if (!applies) return applies.error();
  p.unit = *unit;
  p.description = *desc;
  if (!applies->empty()) {
    if (*applies != "load" && *applies != "live")
      return errorf(ErrorKind::kInvalidArgument, "{}.applies must be \"load\" or \"live\"", what);
    p.applies = *applies;
  }
  return p;
}

json param_to_json(const ParamRecord& p) {
  return {{"name", p.name},   {"type", p.type}, {"default", p.default_value},      {"min", p.min},
          {"max", p.max},     {"unit", p.unit}, {"description", p.description}, {"applies", p.applies}};
}

}  // namespace

bool valid_policy_name(std::string_view name) {
  if (name.empty() || name.size() > 32 || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'; });
}

Result<ResultRecord> result_from_json(const json& j) {
  if (auto st = check_keys(j, "result", {"workload", "time", "source", "kernel", "emulated", "metrics"}); !st)
    return st.error();
  ResultRecord r;
  auto workload = str(j, "workload", "result", true, 64);
  if (!workload) return workload.error();
  if (workload->empty()) return make_error(ErrorKind::kInvalidArgument, "result.workload is empty");
  r.workload = *workload;
  for (auto [key, field] : {std::pair{"time", &r.time}, std::pair{"source", &r.source}, std::pair{"kernel", &r.kernel}}) {
    auto v = str(j, key, "result", false, 128);
    if (!v) return v.error();
    *field = *v;
  }
  if (j.contains("emulated")) {
    if (!j["emulated"].is_boolean()) return make_error(ErrorKind::kInvalidArgument, "result.emulated must be true or false");
    r.emulated = j["emulated"].get<bool>();
  }
  if (!j.contains("metrics") || !j["metrics"].is_object() || j["metrics"].empty() || j["metrics"].size() > 64)
    return make_error(ErrorKind::kInvalidArgument, "result.metrics must be an object of 1 to 64 named numbers");
  for (const auto& [k, v] : j["metrics"].items()) {
    if (k.empty() || k.size() > 64 || !is_valid_utf8(k))
      return make_error(ErrorKind::kInvalidArgument, "result.metrics: a metric's name must be 1 to 64 bytes of UTF-8");
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      return errorf(ErrorKind::kInvalidArgument, "result.metrics.{} must be a finite number", excerpt(k));
  }
  r.metrics = j["metrics"];
  return r;
}

json result_to_json(const ResultRecord& r) {
  return {{"workload", r.workload}, {"time", r.time},         {"source", r.source},
          {"kernel", r.kernel},     {"emulated", r.emulated}, {"metrics", r.metrics}};
}

json PolicyRecord::to_json() const {
  json params = json::array(), res = json::array();
  for (const auto& p : parameters) params.push_back(param_to_json(p));
  for (const auto& r : results) res.push_back(result_to_json(r));
  return {{"schema", 1},          {"name", name},     {"description", description},   {"pick_when", pick_when},
          {"origin", origin},     {"object_sha256", object_sha256}, {"parameters", params}, {"results", res}};
}

Result<PolicyRecord> PolicyRecord::from_json(const json& j) {
  if (auto st = check_keys(j, "policy record", {"schema", "name", "description", "pick_when", "origin",
                                                 "object_sha256", "parameters", "results"});
      !st)
    return st.error();
  if (!j.contains("schema") || j["schema"] != 1)
    return make_error(ErrorKind::kInvalidArgument, "policy record: \"schema\" must be 1");
  PolicyRecord r;
  auto name = str(j, "name", "policy record", true, 32);
  if (!name) return name.error();
  if (!valid_policy_name(*name))
    return errorf(ErrorKind::kInvalidArgument, "policy record: name '{}' is not [a-z][a-z0-9_]{{0,31}}", excerpt(*name));
  r.name = *name;
  auto desc = str(j, "description", "policy record", true);
  auto pick = str(j, "pick_when", "policy record", true);
  auto origin = str(j, "origin", "policy record", true, 16);
  auto sha = str(j, "object_sha256", "policy record", false, 64);
  for (const auto* x : {&desc, &pick, &origin, &sha})
    if (!*x) return x->error();
  if (*origin != "builtin" && *origin != "admitted")
    return make_error(ErrorKind::kInvalidArgument, "policy record: origin must be \"builtin\" or \"admitted\"");
  if (!sha->empty() && (sha->size() != 64 || !std::all_of(sha->begin(), sha->end(), [](char c) {
                          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                        })))
    return make_error(ErrorKind::kInvalidArgument, "policy record: object_sha256 must be 64 lowercase hex digits");
  r.description = *desc;
  r.pick_when = *pick;
  r.origin = *origin;
  r.object_sha256 = *sha;
  for (const char* k : {"parameters", "results"})
    if (j.contains(k) && !j[k].is_array())
      return errorf(ErrorKind::kInvalidArgument, "policy record: \"{}\" must be a list", k);
  if (j.contains("parameters")) {
    for (size_t i = 0; i < j["parameters"].size(); ++i) {
      auto p = param_from_json(j["parameters"][i], i);
      if (!p) return p.error();
      for (const auto& q : r.parameters)
        if (q.name == p->name) return errorf(ErrorKind::kInvalidArgument, "parameters: '{}' twice", p->name);
      r.parameters.push_back(std::move(*p));
    }
  }
  if (j.contains("results")) {
    if (j["results"].size() > PolicyRepository::kMaxResults)
      return errorf(ErrorKind::kInvalidArgument, "policy record: more than {} results", PolicyRepository::kMaxResults);
    for (const auto& x : j["results"]) {
      auto res = result_from_json(x);
      if (!res) return res.error();
      r.results.push_back(std::move(*res));
    }
  }
  return r;
}

std::string PolicyRepository::path_of(std::string_view name) const { return fmt::format("{}/{}.json", dir_, name); }

Result<Fd> PolicyRepository::lock() const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return errorf(ErrorKind::kSystem, "cannot create the policy repository {}: {}", dir_, ec.message());
  std::string p = dir_ + "/.lock";
  Fd fd(::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return sys_error("cannot open " + p, errno);
  while (::flock(fd.get(), LOCK_EX) != 0)
    if (errno != EINTR) return sys_error("cannot lock " + p, errno);
  return fd;
}

Result<std::optional<PolicyRecord>> PolicyRepository::read(std::string_view name) const {
  if (!valid_policy_name(name))
    return errorf(ErrorKind::kInvalidArgument, "'{}' is not a policy name ([a-z][a-z0-9_]*)", excerpt(name));
  std::ifstream in(path_of(name));
  if (!in) return std::optional<PolicyRecord>();
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return errorf(ErrorKind::kInvalidArgument, "{}: not JSON", path_of(name));
  auto r = PolicyRecord::from_json(j);
  if (!r) return errorf(ErrorKind::kInvalidArgument, "{}: {}", path_of(name), r.error().message);
  if (r->name != name)
    return errorf(ErrorKind::kInvalidArgument, "{}: the record names '{}'", path_of(name), r->name);
  return std::optional<PolicyRecord>(std::move(*r));
}

Status PolicyRepository::write(const PolicyRecord& r) const {
  auto checked = PolicyRecord::from_json(r.to_json());  // what is written reads back
  if (!checked) return checked.error();
  return write_file_atomically(path_of(r.name), r.to_json().dump(2) + "\n", {.make_dir = true});
}

Result<std::vector<PolicyRecord>> PolicyRepository::list() const {
  std::vector<PolicyRecord> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir_, ec)) return out;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    std::string f = e.path().filename().string();
    if (f.size() > 5 && f.ends_with(".json")) names.push_back(f.substr(0, f.size() - 5));
  }
  std::sort(names.begin(), names.end());
  for (const auto& n : names) {
    auto r = read(n);
    if (!r) return r.error();
    if (*r) out.push_back(std::move(**r));
  }
  return out;
}

Result<std::optional<PolicyRecord>> PolicyRepository::get(std::string_view name) const { return read(name); }

Status PolicyRepository::put(const PolicyRecord& r) {
  auto fd = lock();
  if (!fd) return fd.error();
  Status st = write(r);
  return st;
}

Status PolicyRepository::append_result(std::string_view policy, ResultRecord res) {
  if (res.time.empty()) res.time = utc_now_rfc3339();
  auto checked = result_from_json(result_to_json(res));
  if (!checked) return checked.error();
  auto fd = lock();
  if (!fd) return fd.error();
  auto rec = read(policy);
  Status st;
  if (!rec) {
    st = rec.error();
  } else if (!*rec) {
    st = errorf(ErrorKind::kInvalidArgument, "no policy '{}' in the repository {}", excerpt(policy), dir_);
  } else {
    PolicyRecord r = std::move(**rec);
    r.results.push_back(std::move(res));
    if (r.results.size() > kMaxResults) r.results.erase(r.results.begin(), r.results.end() - kMaxResults);
    st = write(r);
  }
  return st;
}

Status PolicyRepository::seed(const std::vector<PolicyRecord>& builtins) {
  auto fd = lock();
  if (!fd) return fd.error();
  Status st;
  std::vector<std::string> problems;
  for (const auto& b : builtins) {
    auto rec = read(b.name);
    if (!rec) {  // a broken record is named, not overwritten (someone may want what it holds); the others go on
      problems.push_back(rec.error().message);
      continue;
    }
    PolicyRecord r = b;
    if (*rec) r.results = std::move((*rec)->results);
    if (*rec && (*rec)->to_json() == r.to_json()) continue;
    if (auto w = write(r); !w) problems.push_back(w.error().message);
  }
  if (!problems.empty()) st = errorf(ErrorKind::kInvalidArgument, "{}", fmt::join(problems, "; "));
  return st;
}

}  // namespace akts
