// The policy repository: one JSON record per policy in a directory
// (<dir>/<name>.json), schema-checked on every read and write:
//
//   {"schema": 1, "name": "latency", "description": "...", "pick_when": "...",
//    "origin": "builtin" | "admitted", "object_sha256": "" | "<64 hex>",
//    "parameters": [{"name", "type": "u64"|"u32"|"bool"|"duration"|"percent", "default", "min", "max", "unit", "description",
//                    "applies": "load" (set when the policy loads) | "live" (changed while it runs)}],
//    "results": [{"workload", "time" (UTC RFC 3339), "source", "kernel", "emulated": bool,
//                 "metrics": {name: number}}]}
//
// Built-in policies are seeded from the binary at daemon start (their results
// kept); the benchmarks, the serving experiment and run_workload append
// results (the last kMaxResults kept). Writers hold an flock on <dir>/.lock
// and replace a record atomically (temporary file, fsync, rename, directory
// fsync): a crash leaves the old record or the new one, never a torn one.
// Nothing here needs a kernel.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/fd.h"
#include "common/result.h"

namespace akts {

struct ParamRecord {
  std::string name;
  std::string type;  // "u64", "u32", "bool", "duration" (ns), "percent"
  nlohmann::json default_value, min, max;
  std::string unit;
  std::string description;
  std::string applies = "load";  // "load" or "live"
};

struct ResultRecord {
  std::string workload;
  std::string time;  // filled in when empty
  std::string source;
  std::string kernel;
  bool emulated = false;
  nlohmann::json metrics = nlohmann::json::object();  // name -> finite number
};

struct PolicyRecord {
  std::string name;
  std::string description;
  std::string pick_when;
  std::string origin = "builtin";
  std::string object_sha256;
  std::vector<ParamRecord> parameters;
  std::vector<ResultRecord> results;

  nlohmann::json to_json() const;
  // Strict: unknown keys, wrong types, a bad name or hash, a default outside
  // its range, a non-finite metric are errors naming the field.
  static Result<PolicyRecord> from_json(const nlohmann::json& j);
};

Result<ResultRecord> result_from_json(const nlohmann::json& j);
nlohmann::json result_to_json(const ResultRecord& r);

// [a-z][a-z0-9_]{0,31}: a policy's name, also its file's name.
bool valid_policy_name(std::string_view name);

class PolicyRepository {
 public:
  static constexpr size_t kMaxResults = 200;
  explicit PolicyRepository(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // Every record, by name. A malformed file is an error that names it.
  Result<std::vector<PolicyRecord>> list() const;
  Result<std::optional<PolicyRecord>> get(std::string_view name) const;
  Status put(const PolicyRecord& r);
  // Appends to a record's results (the oldest dropped past kMaxResults).
  Status append_result(std::string_view policy, ResultRecord r);
  // Writes built-in records: new ones whole; existing ones get the binary's
  // description, pick_when and parameters, and keep their results. A broken
  // record is left as it is and named in the error; the others are written.
  Status seed(const std::vector<PolicyRecord>& builtins);

 private:
  std::string path_of(std::string_view name) const;
  Result<Fd> lock() const;  // the flock'd descriptor: the lock goes when it closes
  Result<std::optional<PolicyRecord>> read(std::string_view name) const;
  Status write(const PolicyRecord& r) const;  // under the lock
  std::string dir_;
};

}  // namespace akts
