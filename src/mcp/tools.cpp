// The tools and resources `akts mcp` offers, each over the daemon's control API.
#include "mcp/tools.h"

#include <fmt/format.h>

namespace akts::mcp {
namespace {

json object_schema(json properties, json required = json::array()) {
  json s = {{"type", "object"}, {"properties", std::move(properties)}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = std::move(required);
  return s;
}

// Output schemas name what is always there; the daemon may add fields.
json open_object(json properties, json required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

const json kTarget = {{"type", {"integer", "string"}},
                      {"description", "a filled slot's number (0, 1, ...) or a policy's name (\"latency\")"}};
const json kSlot = {{"type", "integer"}, {"minimum", 0}};

json annotations(bool read_only, bool destructive, bool idempotent) {
  return {{"readOnlyHint", read_only}, {"destructiveHint", destructive}, {"idempotentHint", idempotent},
          {"openWorldHint", false}};
}

// A tool that is one control API call with the arguments as they came.
Tool passthrough(Upstream up, std::string name, std::string title, std::string description, std::string method,
                 json input, json output, json notes, std::function<json(const json&)> shape = nullptr) {
  Tool t;
  t.name = std::move(name);
  t.title = std::move(title);
  t.description = std::move(description);
  t.input_schema = std::move(input);
  t.output_schema = std::move(output);
  t.annotations = std::move(notes);
  t.run = [up = std::move(up), method = std::move(method), shape = std::move(shape)](
              const json& args, const std::atomic<bool>&) -> Result<json> {
    auto r = up(method, args);
    if (!r) return r.error();
    return shape ? shape(*r) : *r;
  };
  return t;
}

}  // namespace

std::string akts_instructions() {
  return "akts switches the Linux CPU scheduling policy (sched_ext) of this node at run time. "
         "Latency-critical (LC) work, such as an LLM server, and best-effort (BE) batch work share the CPUs; "
         "each policy in the library trades one against the other. Read list_policies (what each policy does and "
         "when to pick it) and get_telemetry (the latest 100 ms windows: LC wait p99, batch CPU share, the "
         "objective and whether it is met), then switch_policy. set_objective states the operator's goal; hold "
         "pins a policy for a while; get_decision_history shows what was decided and what followed. A wrong "
         "choice is safe: the in-kernel guard bounds every task's wait and the circuit breaker reverts a policy "
         "that starves LC work.";
}

std::vector<Tool> akts_tools(Upstream up, WorkloadRunner workloads, AdmitRunner admit) {
  std::vector<Tool> tools;
  json policy_item = open_object({{"slot", kSlot},
                                  {"name", {{"type", "string"}}},
                                  {"summary", {{"type", "string"}}},
                                  {"pick_when", {{"type", "string"}}},
                                  {"doc", {{"type", "string"}}},
                                  {"parameters", {{"type", "array"}, {"items", {{"type", "object"}}}}},
                                  {"results", {{"type", "array"}, {"items", {{"type", "object"}}}}}},
                                 {"slot", "name", "summary", "pick_when"});
  tools.push_back(passthrough(
      up, "list_policies", "List the scheduling policies",
      "The policies loaded in the running scheduler: slot, name, what each does (summary), when to pick it "
      "(pick_when), and which slot is selected and which runs (effective; the built-in default while the circuit "
      "breaker holds). docs: true adds each policy's full documentation, its parameters (type, default, range) "
      "and its last results per workload from the policy repository (run_workload adds to them).",
      "v1.policies",
      object_schema({{"docs", {{"type", "boolean"}, {"description", "include each policy's documentation"}}}}),
      open_object({{"slots", {{"type", "integer"}}},
                   {"selected", kSlot},
                   {"effective", kSlot},
                   {"policies", {{"type", "array"}, {"items", policy_item}}}},
                  {"slots", "selected", "effective", "policies"}),
      annotations(true, false, true)));

  tools.push_back(passthrough(
      up, "get_status", "Scheduler status",
      "The scheduler's state (attached, the kernel's sched_ext state), the selected and the effective policy, "
      "the in-kernel override and circuit breaker, the bounded-wait guard, the reasoning plane (controller, "
      "objective, hold) and the processes akts manages with their class.",
      "v1.status", object_schema(json::object()),
      open_object({{"scheduler", {{"type", "object"}}},
                   {"selected", {{"type", "object"}}},
                   {"effective", {{"type", "object"}}},
                   {"breaker", {{"type", "object"}}},
                   {"reasoning", {{"type", "object"}}},
                   {"managed_processes", {{"type", "array"}}}},
                  {"scheduler", "selected", "effective", "reasoning", "managed_processes"}),
      annotations(true, false, true)));

  tools.push_back(passthrough(
      up, "get_telemetry", "Telemetry windows",
      "The last `last` telemetry windows (100 ms each by default), oldest first: per class the wait p99 and the "
      "oldest waiter, CPU busy and pressure, runnable tasks, batch CPU share, the application's latency if it "
      "pushes it, the effective slot; with the objective and the telemetry's health.",
      "v1.telemetry",
      object_schema({{"last",
                      {{"type", "integer"}, {"minimum", 1}, {"maximum", 600}, {"description", "windows, 1 to 600 (default 1)"}}}}),
      open_object({{"period_s", {{"type", "number"}}},
                   {"objective", {{"type", "object"}}},
                   {"health", {{"type", "object"}}},
                   {"windows", {{"type", "array"}, {"items", {{"type", "object"}}}}}},
                  {"period_s", "objective", "health", "windows"}),
      annotations(true, false, true)));

  tools.push_back(passthrough(
      up, "switch_policy", "Switch the scheduling policy",
      "Selects a policy: target is a filled slot's number or a policy's name, checked exactly as the control "
      "socket's v1.switch (\"0.3\", \"-1\", an empty slot or an unknown name are refused and change nothing). "
      "The switch takes effect at the next scheduling event; refused while an operator's hold lasts. force: true "
      "selects even an empty slot (the built-in default then runs).",
      "v1.switch",
      object_schema({{"target", kTarget}, {"force", {{"type", "boolean"}, {"description", "allow an empty slot"}}}},
                    {"target"}),
      open_object({{"previous", kSlot},
                   {"selected", kSlot},
                   {"policy", {{"type", {"string", "null"}}}},
                   {"effective", kSlot}},
                  {"previous", "selected", "policy", "effective"}),
      annotations(false, false, true)));

  tools.push_back(passthrough(
      up, "get_parameters", "Live parameters",
      "Each loaded policy's live parameters (or one policy's: target is its slot or name): name, type "
      "(u64, bool, duration in ns, percent), range, default, description, and the value in force.",
      "v1.params", object_schema({{"target", kTarget}}),
      open_object({{"policies", {{"type", "array"}, {"items", {{"type", "object"}}}}}}, {"policies"}),
      annotations(true, false, true)));
  tools.push_back(passthrough(
      up, "set_parameter", "Set a live parameter",
      "Changes one live parameter of a loaded policy while it runs: target \"POLICY.PARAM\" (e.g. "
      "\"throughput.slice\"), value as its type takes it (a number; a duration also as \"5ms\", \"250us\"; a "
      "percent as \"40%\"; true/false). Out of range or malformed: an error, nothing changed. Logged.",
      "v1.set",
      object_schema({{"target", {{"type", "string"}, {"maxLength", 64}}},
                     {"value", {{"type", {"integer", "number", "string", "boolean"}}}}},
                    {"target", "value"}),
      open_object({{"slot", kSlot}, {"policy", {{"type", "string"}}}, {"param", {{"type", "string"}}},
                   {"value", {{"type", {"integer", "boolean"}}}}, {"text", {{"type", "string"}}}},
                  {"slot", "policy", "param", "value", "text"}),
      annotations(false, false, true)));

  tools.push_back(passthrough(
      up, "hint", "Hint a request's size",
      "Tells the scheduler how much CPU time a thread's current work (a request) still needs: pid is the thread "
      "(its tid), remaining a duration (\"30ms\", \"250us\"; 1us to 3600s) or whole nanoseconds; clear: true "
      "removes its hint. The srpt policy runs the least remaining first; others ignore hints. The thread must "
      "be scheduled by akts (classified, or any thread with --switch-all). Audited.",
      "v1.hint",
      object_schema({{"pid", {{"type", "integer"}, {"minimum", 1}}},
                     {"remaining", {{"type", {"integer", "string"}}}},
                     {"clear", {{"type", "boolean"}}}},
                    {"pid"}),
      open_object({{"pid", {{"type", "integer"}}}, {"remaining_ns", {{"type", "integer"}}},
                   {"exec_at_ns", {{"type", "integer"}}}, {"cleared", {{"type", "boolean"}}}},
                  {"pid"}),
      annotations(false, false, false)));  // a repeat restarts the estimate from the thread's CPU time then

  tools.push_back(passthrough(
      up, "get_decision_history", "Decision history",
      "The last `limit` decisions (1 to 500, default 50), oldest first: who decided (controller, operator, "
      "breaker), what was proposed and why, whether it was applied, and the outcome 1 and 5 windows later "
      "(objective met, reward, batch share).",
      "v1.log",
      object_schema({{"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", 500}}}}),
      open_object({{"decisions", {{"type", "array"}, {"items", {{"type", "object"}}}}}}, {"decisions"}),
      annotations(true, false, true)));

  // One limit carries its signal and max_ms at the top too; several only in "limits".
  json objective = open_object(
      {{"signal", {{"type", "string"}, {"enum", {"lc_wait_p99", "request_latency_p99", "tpot_p99"}}}},
       {"max_ms", {{"type", "number"}}},
       {"limits", {{"type", "array"}, {"items", {{"type", "object"}}}}},
       {"describe", {{"type", "string"}}}},
      {"limits", "describe"});
  tools.push_back(passthrough(
      up, "set_objective", "Set the objective",
      "States the operator's goal in words; the daemon checks it and answers with the objective it understood, "
      "which controllers, rewards and decision outcomes use from the next window. Say one signal (\"wait\": the "
      "LC tasks' scheduling wait; \"request\"/\"TTFT\": the application's time to first token; \"TPOT\": its "
      "time per output token) and one ceiling, as in \"keep the LC wait p99 under 20 ms\", \"request latency "
      "p99 below 500 ms\" or \"TPOT p99 under 200 ms\". Anything else is refused with what to say instead. "
      "Several limits at once are set in the daemon's config or over its socket (v1.objective).",
      "v1.objective",
      object_schema({{"goal", {{"type", "string"}, {"maxLength", 500}, {"description", "the goal in words"}}}},
                    {"goal"}),
      open_object({{"objective", objective}, {"changed", {{"type", "boolean"}}}}, {"objective", "changed"}),
      annotations(false, false, true)));

  tools.push_back(passthrough(
      up, "hold", "Hold a policy",
      "Selects target (as switch_policy, never forced) and refuses every other switch, controllers' included, "
      "until duration passes (\"30s\", \"5m\", at most 24h) or release.",
      "v1.hold",
      object_schema({{"target", kTarget},
                     {"duration", {{"type", "string"}, {"description", "how long, e.g. \"30s\", \"5m\" (1ms to 24h)"}}}},
                    {"target", "duration"}),
      open_object({{"slot", kSlot}, {"policy", {{"type", "string"}}}, {"duration_s", {{"type", "number"}}}},
                  {"slot", "policy", "duration_s"}),
      annotations(false, false, true)));

  tools.push_back(passthrough(up, "release", "Release a hold",
                              "Ends a hold (and an operator's grace): controllers may switch again.", "v1.release",
                              object_schema(json::object()),
                              open_object({{"released", {{"type", "boolean"}}}}, {"released"}),
                              annotations(false, false, true)));

  if (workloads) {
    Tool t;
    t.name = "run_workload";
    t.title = "Run a benchmark scenario";
    t.description =
        "Runs a named benchmark scenario on this node under the policy selected now, with its processes "
        "classified for akts, and returns its metrics. Scenarios: wakeup_latency (cyclictest as LC beside "
        "stress-ng CPU hogs as BE: wakeup latency min/avg/max in us, hogs' bogo ops/s), hackbench (rt-tests "
        "hackbench as BE: seconds), cpu_throughput (sysbench cpu as BE: events/s). seconds: 1 to 60 (default 5). "
        "Cancelling the call stops the scenario. When one policy ran throughout, the metrics are recorded in "
        "that policy's results (list_policies with docs shows them).";
    t.input_schema =
        object_schema({{"scenario", {{"type", "string"}, {"enum", {"wakeup_latency", "hackbench", "cpu_throughput"}}}},
                       {"seconds", {{"type", "integer"}, {"minimum", 1}, {"maximum", 60}}}},
                      {"scenario"});
    t.output_schema = open_object({{"scenario", {{"type", "string"}}},
                                   {"seconds", {{"type", "number"}}},
                                   {"policy", {{"type", {"string", "null"}}}},
                                   {"metrics", {{"type", "object"}}},
                                   {"recorded", {{"type", "boolean"}}}},
                                  {"scenario", "seconds", "policy", "metrics"});
    t.annotations = annotations(false, false, false);
    t.run = std::move(workloads);
    tools.push_back(std::move(t));
  }
  if (admit) {
    Tool t;
    t.name = "admit_policy";
    t.title = "Admit a new policy";
    t.description =
        "Adds a new scheduling policy to the running scheduler, in a free slot, with no detach, through "
        "admission's gates, each answering with its verdict and evidence: 1 compile (source: BPF C text, "
        "compiled with clang against the running kernel's BTF and akts's headers; include \"akts_policy.bpf.h\", "
        "name the programs <name>_<callback>), 2 static checks (programs, instruction budget, the contract's "
        "kernel functions and helpers), 3 a passing dynamic run of this exact object on record (force_untested "
        "skips it, and says so), 4 the kernel's verifier, 5 with canary, a trial on the live node. Give source or object (an absolute path of a compiled "
        "object). admitted false names the gate that refused (refused_at). Without a canary the new policy is not "
        "selected: switch_policy to it; after a passing canary it stays selected.";
    t.input_schema = object_schema(
        {{"source", {{"type", "string"}, {"maxLength", 262144}, {"description", "BPF C source of the policy"}}},
         {"object", {{"type", "string"}, {"description", "absolute path of a compiled policy object"}}},
         {"name", {{"type", "string"}, {"description", "its name (default: the programs' prefix)"}}},
         {"force_untested", {{"type", "boolean"}}},
         {"canary", {{"type", "string"},
                     {"description", "gate 5: hold it selected this long (\"10s\", 1s to 10m) on the live node; "
                                     "reverted and evicted if waits or the objective degrade"}}},
         {"description", {{"type", "string"}, {"maxLength", 500}}},
         {"pick_when", {{"type", "string"}, {"maxLength", 500}}}});
    t.output_schema = open_object({{"admitted", {{"type", "boolean"}}},
                                   {"refused_at", {{"type", {"string", "null"}}}},
                                   {"name", {{"type", {"string", "null"}}}},
                                   {"slot", {{"type", {"integer", "null"}}}},
                                   {"gates", {{"type", "array"}, {"items", {{"type", "object"}}}}}},
                                  {"admitted", "refused_at", "gates"});
    t.annotations = annotations(false, false, false);
    t.run = std::move(admit);
    tools.push_back(std::move(t));
    tools.push_back(passthrough(
        up, "evict_policy", "Evict a policy",
        "Takes a policy out of its slot while the scheduler runs: target is its slot or name. Refused for the "
        "selected, the running and the circuit breaker's safe slot.",
        "v1.evict", object_schema({{"target", kTarget}}, {"target"}),
        open_object({{"slot", kSlot}, {"name", {{"type", "string"}}}}, {"slot", "name"}),
        annotations(false, true, false)));
  }
  return tools;
}

Resources akts_resources(Upstream up) {
  Resources r;
  r.list = [up]() -> Result<json> {
    auto p = up("v1.policies", json::object());
    if (!p) return p.error();
    json out = json::array();
    for (const auto& pol : (*p)["policies"]) {
      std::string name = pol.value("name", "");
      out.push_back({{"uri", "akts://policies/" + name},
                     {"name", name},
                     {"title", "policy " + name},
                     {"description", pol.value("summary", "")},
                     {"mimeType", "text/markdown"}});
    }
    out.push_back({{"uri", "akts://decisions"},
                   {"name", "decisions"},
                   {"title", "decision log"},
                   {"description", "the last 500 decisions with their outcomes (JSON)"},
                   {"mimeType", "application/json"}});
    return out;
  };
  r.templates = json::array({{{"uriTemplate", "akts://policies/{name}"},
                              {"name", "policy"},
                              {"description", "a policy's documentation: what it does, its limits, when to pick it"},
                              {"mimeType", "text/markdown"}}});
  r.read = [up](const std::string& uri) -> Result<std::optional<ResourceText>> {
    if (uri == "akts://decisions") {
      auto d = up("v1.log", {{"limit", 500}});
      if (!d) return d.error();
      return std::optional<ResourceText>(ResourceText{uri, "application/json", d->dump(2, ' ', false, json::error_handler_t::replace)});
    }
    static constexpr std::string_view kPrefix = "akts://policies/";
    if (uri.rfind(kPrefix, 0) != 0) return std::optional<ResourceText>();
    std::string name = uri.substr(kPrefix.size());
    auto p = up("v1.policies", {{"docs", true}});
    if (!p) return p.error();
    for (const auto& pol : (*p)["policies"]) {
      if (pol.value("name", "") != name) continue;
      std::string text = fmt::format("# {}\n\nSlot {}. {}\n\nPick it when: {}\n", name, pol.value("slot", 0),
                                     pol.value("summary", ""), pol.value("pick_when", ""));
      if (pol.contains("doc") && pol["doc"].is_string()) text += "\n" + pol["doc"].get<std::string>() + "\n";
      return std::optional<ResourceText>(ResourceText{uri, "text/markdown", text});
    }
    return std::optional<ResourceText>();
  };
  return r;
}

}  // namespace akts::mcp
