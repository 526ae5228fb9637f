// The policies akts ships: one BPF object each (bpf/policies/<name>.bpf.c),
// opened through its skeleton. A policy can be loaded into several slots; each
// copy is its own object with its own slot number and knobs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

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
// A policy whose dispatch program the kernel refuses in the dispatch array
// after two other arrays took theirs: the admission must undo those two.
const PolicySpec& misfit_fixture();

}  // namespace akts
