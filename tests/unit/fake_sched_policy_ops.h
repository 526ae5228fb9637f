// Scheduling-policy calls on a table instead of the kernel, for tests that run
// the tracker or the reaper without root: a thread not in `policy` is gone (ESRCH).
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <map>

#include "classify/process_tracker.h"

namespace akts {

class FakeSchedPolicyOps : public SchedPolicyOps {
 public:
  int get(pid_t tid) override {
    auto it = policy.find(tid);
    return it == policy.end() ? -ESRCH : it->second;
  }
  int set(pid_t tid, int p) override {
    auto it = policy.find(tid);
    if (it == policy.end()) return -ESRCH;
    it->second = p;
    ++sets[tid];
    return 0;
  }
  std::map<pid_t, int> policy;
  std::map<pid_t, int> sets;  // how often each thread was set
};

}  // namespace akts
