// akts's MCP tools and resources: each tool is one or two calls of the
// daemon's control API (v1, src/control/api.h), whose checks and audit apply;
// the arguments go to the daemon as they came, so MCP, the socket and the CLI
// refuse the same inputs. No tool runs a shell command: run_workload starts a
// named scenario's fixed programs (src/workload/scenarios.h).
//
//   list_policies         v1.policies {docs}: the library, what each does, when to pick it
//   get_status            v1.status: scheduler state, selection, breaker, managed processes
//   get_telemetry {last}  v1.telemetry: the latest windows, the objective, telemetry health
//   switch_policy {target, force}      v1.switch
//   get_decision_history {limit}       v1.log
//   set_objective {goal}  v1.objective: the operator's goal in words -> the checked objective
//   hold {target, duration} / release  v1.hold / v1.release
//   run_workload {scenario, seconds}   a named benchmark scenario under the current policy
//   admit_policy {source | object, ...} admission's gates, then v1.admit (src/admission/)
//   evict_policy {target}              v1.evict
//
// Resources: akts://policies/<name> (each policy's documentation, markdown)
// and akts://decisions (the decision log, JSON).
#pragma once

#include <functional>
#include <string>

#include "common/result.h"
#include "mcp/protocol.h"

namespace akts::mcp {

// One control API call: the daemon's result, or its error.
using Upstream = std::function<Result<json>(const std::string& method, const json& params)>;
// A workload scenario (run_workload's arguments as given); see src/workload/scenarios.h.
using WorkloadRunner = std::function<Result<json>(const json& arguments, const std::atomic<bool>& cancelled)>;
// admit_policy's arguments as given -> {admitted, refused_at, name, slot, gates} (compiling needs the BPF toolchain,
// so the binary that has it provides this).
using AdmitRunner = std::function<Result<json>(const json& arguments, const std::atomic<bool>& cancelled)>;

std::vector<Tool> akts_tools(Upstream upstream, WorkloadRunner workloads, AdmitRunner admit = nullptr);
Resources akts_resources(Upstream upstream);
// The initialize result's instructions: what the tools are for, in a paragraph.
std::string akts_instructions();

}  // namespace akts::mcp
