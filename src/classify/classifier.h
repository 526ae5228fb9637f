// Which class a process belongs to, and why. Precedence, highest first:
//   explicit (akts run --class, v1.classify) > pid matcher > cgroup matcher >
//   comm matcher > inherited from the parent process.
// A process no rule names is not managed (in partial mode it stays where it is).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "classify/matcher.h"

namespace akts {

struct ProcInfo {
  uint32_t tgid = 0;
  uint32_t ppid = 0;
  std::string comm;          // as valid UTF-8 (the kernel's bytes, invalid ones replaced)
  std::string cgroup;        // cgroup v2 path, e.g. "/serving/worker"
  uint64_t start_time = 0;   // clock ticks after boot: with the pid, names one process for good
  uint32_t flags = 0;        // PF_* (PF_KTHREAD = 0x00200000 marks a kernel thread)
  char state = 'S';          // R, S, D, Z (a zombie: exited, not yet reaped), X, ...
  bool kernel_thread() const { return (flags & 0x00200000u) != 0 || ppid == 2 || tgid == 2; }
};

struct Decision {
  uint32_t cls = 0;
  std::string reason;  // "explicit", "pid 42", "cgroup /serving", "comm foo", "inherited from 17"
};

class Classifier {
 public:
  explicit Classifier(std::vector<Matcher> matchers) { set_matchers(std::move(matchers)); }

  // New rules (a reload); the explicit classes stay. Callers hold what serialises classify() (the tracker's
  // lock); uses_cgroups() may be read without it.
  void set_matchers(std::vector<Matcher> matchers) {
    cgroups_.store(any_cgroup_rule(matchers), std::memory_order_relaxed);
    matchers_ = std::move(matchers);
  }

  void set_explicit(uint32_t tgid, uint32_t cls) { explicit_[tgid] = cls; }
  void clear_explicit(uint32_t tgid) { explicit_.erase(tgid); }
  bool has_explicit(uint32_t tgid) const { return explicit_.count(tgid) != 0; }
  // Whether any rule looks at cgroup paths (so the caller need not read them otherwise).
  bool uses_cgroups() const { return cgroups_.load(std::memory_order_relaxed); }

  // `parent`: the decision already made for the parent process, if it is managed.
  std::optional<Decision> classify(const ProcInfo& p, const std::optional<Decision>& parent) const;

 private:
  std::vector<Matcher> matchers_;
  std::atomic<bool> cgroups_{false};  // a rule of matchers_ is a cgroup's
  std::unordered_map<uint32_t, uint32_t> explicit_;
};

// True when `path` is `prefix` or lies below it ("/a" matches "/a" and "/a/b", not "/ab").
bool cgroup_within(std::string_view path, std::string_view prefix);

// Parsers for /proc/<pid>/stat and /proc/<pid>/cgroup (pure, testable).
Result<ProcInfo> parse_proc_stat(std::string_view stat_line);
std::string parse_cgroup_v2(std::string_view cgroup_file);

}  // namespace akts
