#include "classify/process_tracker.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <fstream>
#include <map>
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

}  // namespace

ProcessTracker::ProcessTracker(Classifier& classifier, Hooks hooks, bool move_to_ext, std::string proc_root)
    : classifier_(classifier),
      hooks_(std::move(hooks)),
      move_to_ext_(move_to_ext),
      proc_root_(std::move(proc_root)),
      self_(static_cast<uint32_t>(getpid())) {}

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

Result<int> ProcessTracker::set_policy_all_threads(uint32_t tgid, int policy) const {
  int previous = sched_getscheduler(static_cast<pid_t>(tgid));
  if (previous < 0) return sys_error(fmt::format("pid {}", tgid), errno);
  previous &= ~SCHED_RESET_ON_FORK;
  DIR* d = opendir(fmt::format("{}/{}/task", proc_root_, tgid).c_str());
  if (!d) return sys_error(fmt::format("pid {}: cannot list threads", tgid), errno);
  Status st;
  while (dirent* e = readdir(d)) {
    uint32_t tid = 0;
    if (!parse_pid(e->d_name, &tid)) continue;
    sched_param param{};
    if (sched_setscheduler(static_cast<pid_t>(tid), policy, &param) != 0 && errno != ESRCH && st.ok())
      st = sys_error(fmt::format("cannot set the policy of thread {} of pid {}", tid, tgid), errno);
  }
  closedir(d);
  if (!st) return st.error();
  return previous;
}

void ProcessTracker::adopt_threads(uint32_t tgid) const {
  DIR* d = opendir(fmt::format("{}/{}/task", proc_root_, tgid).c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    uint32_t tid = 0;
    if (!parse_pid(e->d_name, &tid)) continue;
    int pol = sched_getscheduler(static_cast<pid_t>(tid));
    if (pol < 0) continue;
    pol &= ~SCHED_RESET_ON_FORK;
    if (pol == SCHED_OTHER || pol == SCHED_BATCH || pol == SCHED_IDLE) {
      sched_param param{};
      sched_setscheduler(static_cast<pid_t>(tid), kSchedExt, &param);
    }
  }
  closedir(d);
}

Status ProcessTracker::manage(const ProcInfo& p, const Decision& d) {
  auto it = managed_.find(p.tgid);
  if (it != managed_.end()) {
    // Threads that set themselves back to a normal policy (cyclictest does)
    // or were created by one are brought back; real-time ones are left alone.
    if (move_to_ext_) adopt_threads(p.tgid);
    if (it->second.cls != d.cls || it->second.reason != d.reason) {
      if (auto st = hooks_.set_class(p.tgid, d.cls); !st) return st;
      it->second.cls = d.cls;
      it->second.reason = d.reason;
      it->second.comm = p.comm;
    }
    return {};
  }
  int original = SCHED_OTHER;
  if (move_to_ext_) {
    int current = sched_getscheduler(static_cast<pid_t>(p.tgid));
    if (current >= 0 && (current & ~SCHED_RESET_ON_FORK) != SCHED_OTHER &&
        (current & ~SCHED_RESET_ON_FORK) != SCHED_BATCH && (current & ~SCHED_RESET_ON_FORK) != SCHED_IDLE &&
        (current & ~SCHED_RESET_ON_FORK) != kSchedExt) {
      if (!warned_[p.tgid])
        spdlog::warn("pid {} ({}) matches {} but runs a real-time policy; leaving it alone", p.tgid, p.comm,
                     d.reason);
      warned_[p.tgid] = true;
      return {};
    }
  }
  if (auto st = hooks_.set_class(p.tgid, d.cls); !st) return st;
  if (move_to_ext_) {
    auto prev = set_policy_all_threads(p.tgid, kSchedExt);
    if (!prev) {
      (void)hooks_.clear_class(p.tgid);
      return prev.error();
    }
    original = *prev == kSchedExt ? SCHED_OTHER : *prev;
  }
  managed_[p.tgid] = Managed{d.cls, d.reason, p.comm, original};
  spdlog::info("managing pid {} ({}) as {} ({})", p.tgid, p.comm, d.cls == AKTS_CLASS_LC ? "lc" : "be", d.reason);
  return {};
}

void ProcessTracker::unmanage(uint32_t tgid, bool alive) {
  auto it = managed_.find(tgid);
  if (it == managed_.end()) return;
  (void)hooks_.clear_class(tgid);
  if (alive && move_to_ext_) {
    auto r = set_policy_all_threads(tgid, it->second.original_policy);
    if (!r) spdlog::warn("could not move pid {} back: {}", tgid, r.error().to_string());
  }
  spdlog::info("released pid {} ({})", tgid, it->second.comm);
  managed_.erase(it);
}

void ProcessTracker::scan() {
  DIR* d = opendir(proc_root_.c_str());
  if (!d) return;
  std::map<uint32_t, ProcInfo> alive;  // ordered by pid: parents usually come first
  while (dirent* e = readdir(d)) {
    uint32_t tgid = 0;
    if (!parse_pid(e->d_name, &tgid) || tgid == self_ || tgid <= 2) continue;
    auto p = read_proc(tgid);
    if (!p || p->ppid == 2) continue;  // gone, or a kernel thread
    alive.emplace(tgid, std::move(*p));
  }
  closedir(d);
  for (auto it = managed_.begin(); it != managed_.end();) {
    uint32_t tgid = it->first;
    ++it;
    if (!alive.count(tgid)) {
      classifier_.clear_explicit(tgid);
      unmanage(tgid, false);
    }
  }
  std::erase_if(warned_, [&](const auto& w) { return !alive.count(w.first); });
  for (const auto& [tgid, p] : alive) {
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
  auto p = read_proc(tgid);
  if (!p) return errorf(ErrorKind::kInvalidArgument, "no process {}", tgid);
  if (tgid == self_) return make_error(ErrorKind::kInvalidArgument, "the daemon does not schedule itself");
  classifier_.set_explicit(tgid, cls);
  auto st = manage(*p, Decision{cls, "explicit"});
  if (!st) classifier_.clear_explicit(tgid);
  return st;
}

Status ProcessTracker::unclassify(uint32_t tgid) {
  if (!classifier_.has_explicit(tgid) && !managed_.count(tgid))
    return errorf(ErrorKind::kInvalidArgument, "pid {} is not managed", tgid);
  classifier_.clear_explicit(tgid);
  unmanage(tgid, true);
  return {};
}

void ProcessTracker::restore_all() {
  while (!managed_.empty()) unmanage(managed_.begin()->first, true);
}

nlohmann::json ProcessTracker::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  std::map<uint32_t, const Managed*> sorted;
  for (const auto& [tgid, m] : managed_) sorted.emplace(tgid, &m);
  for (const auto& [tgid, m] : sorted)
    j.push_back({{"pid", tgid},
                 {"comm", m->comm},
                 {"class", m->cls == AKTS_CLASS_LC ? "lc" : "be"},
                 {"reason", m->reason}});
  return j;
}

}  // namespace akts
