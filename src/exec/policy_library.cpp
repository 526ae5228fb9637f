#include "exec/policy_library.h"

#include <cerrno>

#include "exec/btf_rodata.h"
#include "exec/skeletons.h"

namespace akts {

const std::vector<PolicySpec>& builtin_policies() {
  static const std::vector<PolicySpec> kPolicies = {
      {"latency",
       "idle-CPU pick, 1 ms slices, LC queue drained before BE, weighted vtime within each class",
       "request bursts: protects latency-critical tail latency (e.g. time-to-first-token)",
       AKTS_OPEN_SKELETON(akts_latency_bpf)},
      {"preempt",
       "latency's order, and a waking LC task with no idle CPU preempts a BE task at once (handed to its CPU with "
       "SCX_ENQ_PREEMPT); "
       "20 ms BE slices while no LC waits",
       "LC work beside batch work whose wake-ups must not wait for a tick (an LLM server's per-token CPU work)",
       AKTS_OPEN_SKELETON(akts_preempt_bpf)},
      {"throughput",
       "one FIFO for all classes, 20 ms slices, previous-CPU affinity for warm caches",
       "between bursts: maximises batch progress when nothing latency-critical waits",
       AKTS_OPEN_SKELETON(akts_throughput_bpf)},
      {"fifo",
       "one private FIFO for all classes, 50 ms slices: first come, first served, nearly run to completion",
       "uniform short requests; a baseline. Not when long and short work share CPUs (head-of-line blocking)",
       AKTS_OPEN_SKELETON(akts_fifo_bpf)},
      {"rr",
       "round-robin over one private FIFO, a 2 ms quantum for every run",
       "heavy-tailed or unknown request sizes with LC and BE of equal weight",
       AKTS_OPEN_SKELETON(akts_rr_bpf)},
      {"wrr",
       "per-class private FIFOs, lc_weight LC dispatches per BE dispatch, 2 ms quantum",
       "LC first without starving batch work under a steady LC load",
       AKTS_OPEN_SKELETON(akts_wrr_bpf)},
      {"ljf",
       "longest job first: a private queue ordered by CPU time used, most first, 20 ms slices",
       "batch-only periods where makespan matters; never while LC work runs (it starves short work)",
       AKTS_OPEN_SKELETON(akts_ljf_bpf)},
      {"wfair",
       "weighted fair, EEVDF-like: one private queue by virtual deadline, bounded lag, nice weights, 3 ms requests",
       "tasks of equal importance that must share CPUs by nice weight (CFS/EEVDF behaviour)",
       AKTS_OPEN_SKELETON(akts_wfair_bpf)},
      {"share",
       "per-class private FIFOs, the LC class held to a CPU-share target (lc_share) under contention",
       "colocation: batch work keeps a stated part of the CPUs however busy the LC service is",
       AKTS_OPEN_SKELETON(akts_share_bpf)},
      {"srpt",
       "shortest remaining time first from the application's hints (akts hint), weighted round-robin without one",
       "request serving where the application knows request sizes and the mix is heavy-tailed",
       AKTS_OPEN_SKELETON(akts_srpt_bpf)},
      {"central",
       "one CPU (central_cpu) decides for all: a private FIFO per class, handed to CPUs that ask, 20 ms slices",
       "many CPUs and short tasks in global arrival order, with a CPU to spare for deciding; not on two CPUs",
       AKTS_OPEN_SKELETON(akts_central_bpf)},
  };
  return kPolicies;
}

Result<std::vector<ParamDesc>> read_param_descs(bpf_object* obj) {
  auto descs = get_rodata(obj, "akts_param_descs");
  if (!descs) return descs.error();
  if (!*descs) return std::vector<ParamDesc>();
  return parse_param_descs((*descs)->data(), (*descs)->size());
}

Result<std::vector<PolicyRecord>> builtin_records() {
  std::vector<PolicyRecord> out;
  for (const auto& spec : builtin_policies()) {
    PolicyRecord r;
    r.name = std::string(spec.name);
    r.description = std::string(spec.summary);
    r.pick_when = std::string(spec.pick_when);
    r.origin = "builtin";
    // The parameters as the object declares them: one source, the policy's own. A record without them would
    // tell an agent the policy has none, so an object that cannot be read fails the whole seeding.
    auto opened = spec.open();
    if (!opened) return errorf(ErrorKind::kLoad, "built-in policy {}: {}", spec.name, opened.error().message);
    auto descs = read_param_descs((*opened)->obj());
    if (!descs) return errorf(ErrorKind::kLoad, "built-in policy {}: {}", spec.name, descs.error().message);
    for (const auto& d : *descs) {
      ParamRecord p;
      p.name = d.name;
      p.type = d.type_name();
      nlohmann::json j = d.to_json();
      p.default_value = j["default"];
      p.min = j["min"];
      p.max = j["max"];
      p.unit = d.unit;
      p.description = d.description;
      p.applies = "live";
      r.parameters.push_back(std::move(p));
    }
    out.push_back(std::move(r));
  }
  return out;
}

const PolicySpec& unverifiable_fixture() {
  static const PolicySpec kSpec = {"unverifiable", "indexes a map value with an unbounded pid",
                                   "never: it exists to be rejected", AKTS_OPEN_SKELETON(akts_unverifiable_bpf)};
  return kSpec;
}

const PolicySpec& greedy_fixture() {
  static const PolicySpec kSpec = {"greedy", "infinite slices, never yields, never drains what others left",
                                   "never: it exists to be contained by the guard", AKTS_OPEN_SKELETON(akts_greedy_bpf)};
  return kSpec;
}

const PolicySpec& hoarder_fixture() {
  static const PolicySpec kSpec = {"hoarder", "every task in its CPU's local DSQ, infinite slices, never yields",
                                   "never: it exists to be contained by the guard", AKTS_OPEN_SKELETON(akts_hoarder_bpf)};
  return kSpec;
}

const PolicySpec& lc_starver_fixture() {
  static const PolicySpec kSpec = {"lc_starver", "never drains the LC FIFO: latency-critical tasks wait forever",
                                   "never: it exists to trip the circuit breaker", AKTS_OPEN_SKELETON(akts_lc_starver_bpf)};
  return kSpec;
}

const PolicySpec& stray_fixture() {
  static const PolicySpec kSpec = {"stray", "every task in the next CPU's local DSQ, behind a run that never ends",
                                   "never: it exists to trip the circuit breaker", AKTS_OPEN_SKELETON(akts_stray_bpf)};
  return kSpec;
}

const PolicySpec& misfit_fixture() {
  static const PolicySpec kSpec = {"misfit", "its dispatch program is bound to the runnable member",
                                   "never: it exists to be refused halfway", AKTS_OPEN_SKELETON(akts_misfit_bpf)};
  return kSpec;
}

const PolicySpec* find_policy(std::string_view name) {
  for (const auto& p : builtin_policies())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace akts
