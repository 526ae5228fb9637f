// Admission gate 2: static checks on a compiled policy object (BPF ELF), the
// ones the kernel's verifier does not make. Read from the ELF file itself
// (libelf): nothing is loaded, no privilege is needed. Each rule gives a
// finding with its evidence; the object passes when every rule does.
//
//   programs  every code section is a struct_ops program named
//             <policy>_<callback> for one of the seven dispatched callbacks
//             (select_cpu, enqueue, dispatch, runnable, running, stopping,
//             quiescent), each callback at most once, one policy prefix; or
//             the scx library's probe (fentry/bpf_scx_reg) every object built
//             with scx/common.bpf.h carries; or .text (subprograms). A holder
//             map (.struct_ops.link) names them. Anything else (a tracepoint,
//             an init or tick callback, a syscall program) is refused.
//   budget    at most max_insns_per_program instructions in each program
//             section and max_insns_total in the object (subprograms counted).
//   kfuncs    every kernel function the object calls or names is on the
//             contract's list (kAllowedKfuncs: insert into and move from
//             queues, kick and pick CPUs, read the clock, queue lengths and
//             peeks, cpumask reads, task fields). Named refusals: creating or
//             destroying a DSQ (queues belong to the frame), ending the
//             scheduler (scx_bpf_error/exit), vtime moves between queues or
//             re-enqueueing (the frame's hand-off owns that), taking task
//             references; scx_bpf_dsq_move (to a local DSQ, central's hand
//             to another CPU) is allowed, its target unchecked. libbpf's
//             "___flavor" suffixes are ignored.
//   helpers   every BPF helper called is on kAllowedHelpers (map access, the
//             clock, random numbers, the CPU id, task storage, printk, kernel
//             reads). Refused e.g.: signals, user-memory writes, tail calls,
//             timers (a policy's timer would keep firing while another policy
//             runs), override_return.
//   queues    no DSQ is created or destroyed (above). Not proven here: the
//             DSQ ids and CPU numbers passed to allowed kernel functions (the
//             scx compat headers pass them through memory). A wrong one makes
//             the kernel end the scheduler; the frame cannot intercept a
//             policy's own calls. Gate 3 runs them; force_untested skips that.
//   calls     a kernel function called by BTF id (an unrelocated kfunc call)
//             is refused: every call must name what it calls. Only the
//             relocation sections libbpf applies (.rel<section>) count.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::admission {

struct StaticLimits {
  size_t max_insns_per_program = 4096;
  size_t max_insns_total = 16384;
};

struct Finding {
  std::string rule;  // programs, budget, kfuncs, helpers, queues
  bool ok = true;
  std::string detail;
};

struct StaticReport {
  bool passed = false;
  std::string policy;  // the programs' common prefix
  std::vector<Finding> findings;
  nlohmann::json evidence;  // programs (name, callback, insns), kfuncs, helpers
  nlohmann::json to_json() const;
};

// An error only when the bytes are not a BPF ELF object at all. `what` names them in errors.
Result<StaticReport> check_bytes(std::string_view bytes, const std::string& what, const StaticLimits& limits = {});
// The same for a file (read once with read_regular_file).
Result<StaticReport> check_object(const std::string& path, const StaticLimits& limits = {});

}  // namespace akts::admission
