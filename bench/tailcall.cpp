// `akts bench tailcall`: the dispatcher's mechanism (selector read plus
// bpf_tail_call) timed natively with BPF_PROG_TEST_RUN on XDP programs, against
// the same selector read without the tail call, and a tail call that falls
// through (empty slot). Runs on any kernel with BPF, no sched_ext needed.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "bench.h"
#include "exec/execution_plane.h"
#include "exec/skeletons.h"
#include "samples.h"

namespace akts::bench {
namespace {

// Mean ns per run over `repeat` runs, as the kernel measures it.
Result<double> time_prog(int prog_fd, uint32_t repeat) {
  char pkt[64] = {};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = static_cast<int>(repeat));
  if (bpf_prog_test_run_opts(prog_fd, &opts) != 0) return sys_error("BPF_PROG_TEST_RUN", errno);
  return static_cast<double>(opts.duration);
}

}  // namespace

int run_tailcall(const TailcallOptions& o) {
  route_libbpf_logging();
  akts_tailcall_bpf* skel = akts_tailcall_bpf__open_and_load();
  if (!skel) {
    std::cerr << fmt::format("akts: bench tailcall: cannot load the XDP programs: {} (needs root and BPF)\n",
                             std::strerror(errno));
    return 1;
  }
  struct Guard {
    akts_tailcall_bpf* s;
    ~Guard() { akts_tailcall_bpf__destroy(s); }
  } guard{skel};
  uint32_t zero = 0, slot = 0;
  int target = bpf_program__fd(skel->progs.bench_policy);
  bpf_map_update_elem(bpf_map__fd(skel->maps.bench_progs), &slot, &target, BPF_ANY);
  auto set_slot = [&](uint32_t k) {
    akts_selector v{k, 0};
    bpf_map_update_elem(bpf_map__fd(skel->maps.bench_selector), &zero, &v, BPF_ANY);
  };
  struct Arm {
    const char* name;
    int fd;
    uint32_t slot;
    std::vector<double> ns;
  };
  std::vector<Arm> arms = {
      {"selector_read_only", bpf_program__fd(skel->progs.bench_without_tail_call), 0, {}},
      {"selector_read_and_tail_call", bpf_program__fd(skel->progs.bench_with_tail_call), 0, {}},
      {"tail_call_falls_through", bpf_program__fd(skel->progs.bench_with_tail_call), 5, {}},
  };
  for (int round = 0; round < o.rounds; ++round) {
    for (auto& a : arms) {  // interleaved, so drift hits every arm alike
      set_slot(a.slot);
      auto ns = time_prog(a.fd, o.repeat);
      if (!ns) {
        std::cerr << "akts: bench tailcall: " << ns.error().to_string() << "\n";
        return 1;
      }
      a.ns.push_back(*ns);
    }
    progress(fmt::format("tailcall: round {}/{}", round + 1, o.rounds));
  }
  progress_done();
  nlohmann::json arms_json = nlohmann::json::object();
  for (auto& a : arms) arms_json[a.name] = summarize(a.ns).to_json();
  double base = summarize(arms[0].ns).p50, tc = summarize(arms[1].ns).p50, ft = summarize(arms[2].ns).p50;
  nlohmann::json report = {{"benchmark", "tailcall"},
                           {"repeat_per_sample", o.repeat},
                           {"rounds", o.rounds},
                           {"ns_per_run", arms_json},
                           {"tail_call_cost_ns", tc - base},
                           {"fall_through_cost_ns", ft - base},
                           {"note", "XDP programs under BPF_PROG_TEST_RUN on this host's kernel (JIT), native"}};
  if (!o.out.empty()) std::ofstream(o.out) << report.dump(2) << "\n";
  if (o.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << fmt::format("per run (p50 of {} rounds of {} runs, native):\n", o.rounds, o.repeat);
    std::cout << fmt::format("  selector read only           {:6.2f} ns\n", base);
    std::cout << fmt::format("  selector read + tail call    {:6.2f} ns   (+{:.2f} ns: the dispatch itself)\n", tc,
                             tc - base);
    std::cout << fmt::format("  tail call into an empty slot {:6.2f} ns   (+{:.2f} ns)\n", ft, ft - base);
  }
  return 0;
}

}  // namespace akts::bench
