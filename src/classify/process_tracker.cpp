// The process tracker: /proc scans, class writes, per-thread policy moves and their undoing.
#include "classify/process_tracker.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "akts.h"

namespace akts {
namespace {

constexpr int kSchedExt = 7;

bool parse_pid(const char* name, uint32_t* out) {
  std::string_view s(name);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool normal_policy(int pol) { return pol == SCHED_OTHER || pol == SCHED_BATCH || pol == SCHED_IDLE; }

class SystemOps : public SchedPolicyOps {
 public:
  int get(pid_t tid) override {
    int r = sched_getscheduler(tid);
    return r < 0 ? -errno : (r & ~SCHED_RESET_ON_FORK);
  }
  int set(pid_t tid, int policy) override {
    sched_param param{};
    return sched_setscheduler(tid, policy, &param) == 0 ? 0 : -errno;
  }
};

// Thread ids listed under /proc/<tgid>/task.
std::set<uint32_t> list_threads(const std::string& proc_root, uint32_t tgid) {
  std::set<uint32_t> tids;
  DIR* d = opendir(fmt::format("{}/{}/task", proc_root, tgid).c_str());
  if (!d) return tids;
  while (dirent* e = readdir(d)) {
    uint32_t tid = 0;
    if (parse_pid(e->d_name, &tid)) tids.insert(tid);
  }
  closedir(d);
  return tids;
}

// The Tgid: line of /proc/<pid>/status; 0 when unreadable.
uint32_t read_tgid(const std::string& proc_root, uint32_t pid) {
  std::string status = read_file(fmt::format("{}/{}/status", proc_root, pid));
  auto at = status.find("\nTgid:");
  if (at == std::string::npos) return 0;
  std::string_view v(status.data() + at + 6, status.size() - at - 6);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  uint32_t tgid = 0;
  std::from_chars(v.data(), v.data() + v.size(), tgid);
  return tgid;
}

}  // namespace

SchedPolicyOps& system_sched_policy_ops() {
  static SystemOps ops;
  return ops;
}

ProcessTracker::ProcessTracker(Classifier& classifier, Hooks hooks, bool move_to_ext, std::string proc_root,
                               SchedPolicyOps& ops, uint32_t self)
    : classifier_(classifier),
      hooks_(std::move(hooks)),
      move_to_ext_(move_to_ext),
      proc_root_(std::move(proc_root)),
      ops_(ops),
      self_(self ? self : static_cast<uint32_t>(getpid())) {}

Result<ProcInfo> ProcessTracker::read_proc(uint32_t tgid) const {
  std::string base = fmt::format("{}/{}", proc_root_, tgid);
  std::string stat = read_file(base + "/stat");
  if (stat.empty()) return make_error(ErrorKind::kSystem, "process gone");
  auto p = parse_proc_stat(stat);
  if (!p) return p.error();
  // Only read when a rule can use it: this runs for every process on every scan.
  if (classifier_.uses_cgroups()) p->cgroup = parse_cgroup_v2(read_file(base + "/cgroup"));
  return p;
}

Status ProcessTracker::adopt_threads(uint32_t tgid, Managed& m) const {
  auto tids = list_threads(proc_root_, tgid);
  if (tids.empty()) return errorf(ErrorKind::kSystem, "pid {}: cannot list its threads", tgid);
  Status st;
  std::unordered_map<uint32_t, int> still;  // forget threads that are gone: their ids may be reused
  for (uint32_t tid : tids) {
    int pol = ops_.get(static_cast<pid_t>(tid));
    if (pol < 0) continue;  // exited meanwhile
    auto known = m.moved.find(tid);
    if (pol == kSchedExt) {
      // Moved earlier, or born in SCHED_EXT from a moved parent: SCHED_OTHER on release.
      still[tid] = known != m.moved.end() ? known->second : SCHED_OTHER;
      continue;
    }
    if (!normal_policy(pol)) continue;  // real-time: not ours to move
    int r = ops_.set(static_cast<pid_t>(tid), kSchedExt);
    if (r == 0) {
      still[tid] = pol;  // the policy it has now is its own choice, even if it left SCHED_EXT by itself
    } else if (r != -ESRCH && st.ok()) {
      st = sys_error(fmt::format("cannot move thread {} of pid {} into SCHED_EXT", tid, tgid), -r);
    }
  }
  m.moved = std::move(still);
  return st;
}

// Gives every thread still in SCHED_EXT that the tracker moved its own policy back.
static void restore_threads(const std::string& proc_root, SchedPolicyOps& ops, uint32_t tgid,
                            const std::unordered_map<uint32_t, int>& moved) {
  // Only threads listed under this process now: a recorded id may belong to someone else by now.
  for (uint32_t tid : list_threads(proc_root, tgid)) {
    auto it = moved.find(tid);
    if (it == moved.end() || ops.get(static_cast<pid_t>(tid)) != kSchedExt) continue;
    int r = ops.set(static_cast<pid_t>(tid), it->second);
    if (r != 0 && r != -ESRCH) spdlog::warn("could not move thread {} of pid {} back: {}", tid, tgid, strerror(-r));
  }
}

Status ProcessTracker::manage(const ProcInfo& p, const Decision& d) {
  auto it = managed_.find(p.tgid);
  if (it != managed_.end() && it->second.start_time != p.start_time) {
    // The pid was reused: what we managed under it is gone.
    unmanage(p.tgid, false);
    it = managed_.end();
  }
  if (it != managed_.end()) {
    Managed& m = it->second;
    m.comm = p.comm;  // it may have exec'd (akts run does)
    if (move_to_ext_) (void)adopt_threads(p.tgid, m);
    if (m.cls != d.cls || m.reason != d.reason) {
      if (auto st = hooks_.set_class(p.tgid, d.cls); !st) return st;
      m.cls = d.cls;
      m.reason = d.reason;
    }
    return {};
  }
  if (auto st = hooks_.set_class(p.tgid, d.cls); !st) return st;
  Managed m{p.start_time, d.cls, d.reason, p.comm, {}};
  if (move_to_ext_) {
    if (auto st = adopt_threads(p.tgid, m); !st) {
      restore_threads(proc_root_, ops_, p.tgid, m.moved);
      (void)hooks_.clear_class(p.tgid);
      return st;
    }
  }
  managed_[p.tgid] = std::move(m);
  spdlog::info("managing pid {} ({}) as {} ({})", p.tgid, p.comm, d.cls == AKTS_CLASS_LC ? "lc" : "be", d.reason);
  return {};
}

void ProcessTracker::unmanage(uint32_t tgid, bool alive) {
  auto it = managed_.find(tgid);
  if (it == managed_.end()) return;
  (void)hooks_.clear_class(tgid);
  if (alive && move_to_ext_) restore_threads(proc_root_, ops_, tgid, it->second.moved);
  spdlog::info("released pid {} ({})", tgid, it->second.comm);
  managed_.erase(it);
}

std::optional<ProcessTracker::Listing> ProcessTracker::list_processes(const std::atomic<bool>* cancel) const {
  DIR* d = opendir(proc_root_.c_str());
  if (!d) return std::nullopt;
  Listing alive;  // ordered by pid: parents usually come first
  while (dirent* e = readdir(d)) {
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      closedir(d);
      return std::nullopt;  // an incomplete listing must not release anything
    }
    uint32_t tgid = 0;
    if (!parse_pid(e->d_name, &tgid) || tgid == self_ || tgid <= 2) continue;
    auto p = read_proc(tgid);
    if (!p || p->kernel_thread()) continue;  // gone, or a kernel thread
    alive.emplace(tgid, std::move(*p));
  }
  closedir(d);
  return alive;
}

void ProcessTracker::scan(const std::atomic<bool>* cancel, const std::function<void()>& pause) {
  auto alive = list_processes(cancel);
  if (alive) apply(*alive, cancel, pause);
}

void ProcessTracker::apply(const Listing& alive, const std::atomic<bool>* cancel, const std::function<void()>& pause) {
  auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
  for (auto it = managed_.begin(); it != managed_.end();) {
    uint32_t tgid = it->first;
    uint64_t started = it->second.start_time;
    ++it;
    auto a = alive.find(tgid);
    if (a == alive.end() || a->second.start_time != started) {
      // The listing may predate an explicit classification made since: ask /proc once more.
      auto now = read_proc(tgid);
      if (now && now->start_time == started) continue;
      // Gone (or its pid already reused): an explicit class was for that process only.
      classifier_.clear_explicit(tgid);
      unmanage(tgid, false);
    }
  }
  std::erase_if(warned_, [&](const auto& w) { return !alive.count(w.first); });
  for (const auto& [tgid, p] : alive) {
    if (cancelled()) return;
    if (pause) pause();
    std::optional<Decision> parent;
    if (auto pm = managed_.find(p.ppid); pm != managed_.end()) parent = Decision{pm->second.cls, pm->second.reason};
    auto decision = classifier_.classify(p, parent);
    if (decision) {
      if (auto st = manage(p, *decision); !st && !warned_[tgid]) {
        spdlog::warn("cannot manage pid {} ({}): {}", tgid, p.comm, st.error().to_string());
        warned_[tgid] = true;
      }
    } else if (managed_.count(tgid)) {
      unmanage(tgid, true);  // no rule names it any more (it exec'd something else)
    }
  }
}

Status ProcessTracker::classify_explicit(uint32_t tgid, uint32_t cls) {
  if (tgid == 1) return make_error(ErrorKind::kInvalidArgument, "pid 1 (init) is not scheduled by akts");
  if (tgid == self_) return make_error(ErrorKind::kInvalidArgument, "the daemon does not schedule itself");
  auto p = read_proc(tgid);
  if (!p) return errorf(ErrorKind::kInvalidArgument, "no process {}", tgid);
  uint32_t real_tgid = read_tgid(proc_root_, tgid);
  if (real_tgid == 0) return errorf(ErrorKind::kInvalidArgument, "no process {}", tgid);
  if (real_tgid != tgid)
    return errorf(ErrorKind::kInvalidArgument, "{} is a thread of process {}; classify the process (its threads follow)",
                  tgid, real_tgid);
  if (p->kernel_thread())
    return errorf(ErrorKind::kInvalidArgument, "{} ({}) is a kernel thread; akts schedules user processes only", tgid,
                  p->comm);
  classifier_.set_explicit(tgid, cls);
  auto st = manage(*p, Decision{cls, "explicit"});
  if (!st) classifier_.clear_explicit(tgid);
  return st;
}

Status ProcessTracker::unclassify(uint32_t tgid) {
  if (!classifier_.has_explicit(tgid) && !managed_.count(tgid))
    return errorf(ErrorKind::kInvalidArgument, "pid {} is not managed", tgid);
  classifier_.clear_explicit(tgid);
  auto it = managed_.find(tgid);
  auto p = read_proc(tgid);
  // Act on the threads only if this pid is still the process we managed.
  unmanage(tgid, it != managed_.end() && p && p->start_time == it->second.start_time);
  return {};
}

void ProcessTracker::restore_all() {
  while (!managed_.empty()) {
    uint32_t tgid = managed_.begin()->first;
    auto p = read_proc(tgid);
    // Only the process we managed, not one that took over its pid.
    unmanage(tgid, p && p->start_time == managed_.begin()->second.start_time);
  }
}

nlohmann::json ProcessTracker::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  std::map<uint32_t, const Managed*> sorted;
  for (const auto& [tgid, m] : managed_) sorted.emplace(tgid, &m);
  for (const auto& [tgid, m] : sorted)
    j.push_back({{"pid", tgid},
                 {"comm", m->comm},
                 {"class", m->cls == AKTS_CLASS_LC ? "lc" : "be"},
                 {"reason", m->reason},
                 {"threads_moved", m->moved.size()}});
  return j;
}

}  // namespace akts
