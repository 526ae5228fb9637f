// The policies akts ships: one BPF object each (bpf/policies/<name>.bpf.c),
// opened through its skeleton. A policy can be loaded into several slots; each
// copy is its own object with its own slot number and knobs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "params/params.h"
#include "repository/policy_repository.h"

struct bpf_object;

namespace akts {

// An opened (not yet loaded) policy object; destroys its skeleton on exit.
class PolicyObject {
 public:
  using LoadFn = int (*)(void*);
  using DestroyFn = void (*)(void*);
  PolicyObject(void* skel, bpf_object* obj, LoadFn load, DestroyFn destroy)
      : skel_(skel), obj_(obj), load_(load), destroy_(destroy) {}
  ~PolicyObject() { destroy_(skel_); }
  PolicyObject(const PolicyObject&) = delete;
  PolicyObject& operator=(const PolicyObject&) = delete;

  bpf_object* obj() const { return obj_; }
  int load() { return load_(skel_); }

 private:
  void* skel_;
  bpf_object* obj_;
  LoadFn load_;
  DestroyFn destroy_;
};

// Opens skeleton <skel_name> (from exec/skeletons.h) behind the type-erased
// PolicyObject: an expression of type Result<std::unique_ptr<PolicyObject>>.
#define AKTS_OPEN_SKELETON(skel_name)                                                                 \
  ([]() -> ::akts::Result<std::unique_ptr<::akts::PolicyObject>> {                                    \
    skel_name* s = skel_name##__open();                                                               \
    if (!s) return ::akts::sys_error("cannot open BPF object " #skel_name, errno);                   \
    return std::make_unique<::akts::PolicyObject>(                                                    \
        s, s->obj, [](void* p) { return skel_name##__load(static_cast<skel_name*>(p)); },             \
        [](void* p) { skel_name##__destroy(static_cast<skel_name*>(p)); });                           \
  })

struct PolicySpec {
  std::string_view name;
  std::string_view summary;    // what it does, one line
  std::string_view pick_when;  // when a controller should select it
  Result<std::unique_ptr<PolicyObject>> (*open)();
};

// A library policy's documentation: the opening comment of its source
// (bpf/policies/<name>.bpf.c; generated at build time). Empty for others.
std::string_view policy_doc(std::string_view name);

// A policy object's live parameters (bpf/akts.h, Parameters), read from its
// .rodata before load: none when it declares none; an error when malformed.
Result<std::vector<ParamDesc>> read_param_descs(bpf_object* obj);

// The policy repository's records of the built-in policies (no results):
// name, description (the summary), when to pick it, parameters. An error
// when a built-in object cannot be opened or its parameters read.
Result<std::vector<PolicyRecord>> builtin_records();

// Every policy compiled into this binary, in a stable order.
const std::vector<PolicySpec>& builtin_policies();
const PolicySpec* find_policy(std::string_view name);

// A policy the verifier rejects (bpf/selftest/), for testing that admitting a
// bad policy fails cleanly. Not in the library.
const PolicySpec& unverifiable_fixture();
// A policy that starves every task the contract lets it (infinite slices, no
// hand-off), for testing that the frame's guard alone bounds waits.
const PolicySpec& greedy_fixture();
// A policy that keeps its tasks in local DSQs with infinite slices: only the
// guard's per-CPU check of local DSQs keeps them running.
const PolicySpec& hoarder_fixture();
// Starves the LC class (never drains the LC FIFO), for the self-test of the circuit breaker.
const PolicySpec& lc_starver_fixture();
// Queues every task in another CPU's local DSQ behind a run that never ends, likewise.
const PolicySpec& stray_fixture();
// A policy whose dispatch program the kernel refuses in the dispatch array
// after two other arrays took theirs: the admission must undo those two.
const PolicySpec& misfit_fixture();

}  // namespace akts
