#include "exec/policy_library.h"

#include <cerrno>

#include "exec/skeletons.h"

namespace akts {

const std::vector<PolicySpec>& builtin_policies() {
  static const std::vector<PolicySpec> kPolicies = {
      {"latency",
       "idle-CPU pick, 1 ms slices, LC queue drained before BE, weighted vtime within each class",
       "request bursts: protects latency-critical tail latency (e.g. time-to-first-token)",
       AKTS_OPEN_SKELETON(akts_latency_bpf)},
      {"throughput",
       "one FIFO for all classes, 20 ms slices, previous-CPU affinity for warm caches",
       "between bursts: maximises batch progress when nothing latency-critical waits",
       AKTS_OPEN_SKELETON(akts_throughput_bpf)},
  };
  return kPolicies;
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
