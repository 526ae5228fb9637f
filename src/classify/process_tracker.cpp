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

// Whether a thread has run, from /proc/TID/schedstat (its run time and its count of runs; both 0 until it first
// runs); true when that cannot be told (gone, or schedstats off: every task reads 0 then, this daemon too).
bool has_run(pid_t tid) {
  static const bool schedstats_on = [] {
    std::istringstream in(read_file("/proc/self/schedstat"));
    uint64_t run_ns = 0, wait_ns = 0, runs = 0;
    return static_cast<bool>(in >> run_ns >> wait_ns >> runs) && (run_ns > 0 || runs > 0);
  }();
  if (!schedstats_on) return true;
  std::istringstream in(read_file(fmt::format("/proc/{}/schedstat", tid)));
  uint64_t run_ns = 0, wait_ns = 0, runs = 0;
  if (!(in >> run_ns >> wait_ns >> runs)) return true;
  return run_ns > 0 || runs > 0;
}

class SystemOps : public SchedPolicyOps {
 public:
  int get(pid_t tid) override {
    int r = sched_getscheduler(tid);
    return r < 0 ? -errno : (r & ~SCHED_RESET_ON_FORK);
  }
  // A thread that has never run may still be inside copy_process: listed under /proc/PID/task and found by
  // sched_setscheduler before the kernel's sched_post_fork has made it ready for sched_ext (the kernel, from
  // 7.1, warns "Invalid task state transition 0x200 -> 0x400" for a move into SCHED_EXT then, and a move out
  // trips scx_disable_task's check). Such a thread is waited for up to 5 ms; one that has still not run is
  // left for the next pass (-EAGAIN).
  int set(pid_t tid, int policy) override {
    for (int i = 0; !has_run(tid); ++i) {
      if (i == 20) return -EAGAIN;
      usleep(250);
    }
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
    } else if (r == -EAGAIN) {
      // Still being created (SystemOps::set): the next pass, or an event naming the process, moves it.
    } else if (r != -ESRCH && st.ok()) {
      st = sys_error(fmt::format("cannot move thread {} of pid {} into SCHED_EXT", tid, tgid), -r);
    }
  }
  m.moved = std::move(still);
  return st;
}

// Gives every thread of the process still in SCHED_EXT its own policy back (SCHED_OTHER if it has none on record).
static void restore_threads(const std::string& proc_root, SchedPolicyOps& ops, uint32_t tgid,
                            const std::unordered_map<uint32_t, int>& moved) {
  // Only threads listed under this process now: a recorded id may belong to someone else by now.
  // One born since the last scan (from a moved thread: SCHED_EXT) gets SCHED_OTHER, as the tracker's rule says.
  for (uint32_t tid : list_threads(proc_root, tgid)) {
    auto it = moved.find(tid);
    if (ops.get(static_cast<pid_t>(tid)) != kSchedExt) continue;
    int r = ops.set(static_cast<pid_t>(tid), it != moved.end() ? it->second : SCHED_OTHER);
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
    if (move_to_ext_) {
      auto before = m.moved;
      (void)adopt_threads(p.tgid, m);
      if (m.moved != before) ++version_;
    }
    if (m.cls != d.cls || m.reason != d.reason) {
      if (auto st = hooks_.set_class(p.tgid, d.cls); !st) return st;
      m.cls = d.cls;
      m.reason = d.reason;
      ++version_;
    }
    return {};
  }
  if (auto st = hooks_.set_class(p.tgid, d.cls); !st) return st;
  Managed m{p.start_time, d.cls, d.reason, p.comm, {}};
  // A previous daemon moved its threads: their own policies are in its record.
  if (auto pr = pending_.find(p.tgid); pr != pending_.end()) {
    if (pr->second.start_time == p.start_time) m.moved = std::move(pr->second.moved);
    pending_.erase(pr);
  }
  if (move_to_ext_) {
    if (auto st = adopt_threads(p.tgid, m); !st) {
      restore_threads(proc_root_, ops_, p.tgid, m.moved);
      (void)hooks_.clear_class(p.tgid);
      return st;
    }
  }
  managed_[p.tgid] = std::move(m);
  ++version_;
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
  ++version_;
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
    if (!p || p->kernel_thread() || ended(*p)) continue;  // gone, a kernel thread, or a zombie
    alive.emplace(tgid, std::move(*p));
  }
  closedir(d);
  return alive;
}

bool ProcessTracker::ended(const ProcInfo& p) const {
  // The kernel reports an exit before the parent reaps: a zombie whose leader is all that is left has ended; a
  // leader that exited alone, its other threads running, has not.
  return (p.state == 'Z' || p.state == 'X') && list_threads(proc_root_, p.tgid).size() <= 1;
}

void ProcessTracker::handle(const ProcInfo& p) {
  std::optional<Decision> parent;
  if (auto pm = managed_.find(p.ppid); pm != managed_.end()) parent = Decision{pm->second.cls, pm->second.reason};
  auto decision = classifier_.classify(p, parent);
  if (decision) {
    if (auto st = manage(p, *decision); !st && !warned_[p.tgid]) {
      spdlog::warn("cannot manage pid {} ({}): {}", p.tgid, p.comm, st.error().to_string());
      warned_[p.tgid] = true;
    }
  } else if (managed_.count(p.tgid)) {
    unmanage(p.tgid, true);  // no rule names it any more (it exec'd something else)
  }
}

void ProcessTracker::set_rules(std::vector<Matcher> rules) {
  classifier_.set_matchers(std::move(rules));
  rules_gen_.fetch_add(1, std::memory_order_release);
}

void ProcessTracker::refresh(uint32_t tgid) {
  if (tgid == self_ || tgid <= 2) return;
  touched_[tgid] = ++event_seq_;
  auto p = read_proc(tgid);
  if (p && ended(*p)) p = make_error(ErrorKind::kSystem, "process ended");
  auto m = managed_.find(tgid);
  if (m != managed_.end() && (!p || m->second.start_time != p->start_time)) {
    // Gone, or its pid already another process's: an explicit class was for that process only.
    classifier_.clear_explicit(tgid);
    unmanage(tgid, false);
  }
  if (!p || p->kernel_thread()) {
    warned_.erase(tgid);
    return;
  }
  handle(*p);
}

void ProcessTracker::exited(uint32_t tgid) {
  touched_[tgid] = ++event_seq_;
  auto m = managed_.find(tgid);
  if (m == managed_.end()) return;
  auto p = read_proc(tgid);
  if (p && p->start_time == m->second.start_time && !ended(*p)) return;
  classifier_.clear_explicit(tgid);
  unmanage(tgid, false);
}

void ProcessTracker::scan(const std::atomic<bool>* cancel, const std::function<void()>& pause) {
  uint64_t since = event_seq();
  auto alive = list_processes(cancel);
  if (alive) apply(*alive, since, cancel, pause);
}

void ProcessTracker::apply(const Listing& alive, uint64_t since, const std::atomic<bool>* cancel,
                           const std::function<void()>& pause) {
  // New rules while the pass let others in (set_rules): the rest of this listing was read for the old ones.
  const uint64_t rules = rules_generation();
  auto cancelled = [&] { return (cancel && cancel->load(std::memory_order_relaxed)) || rules_generation() != rules; };
  // A process an event handled after the listing was read is judged afresh, not by the listing's older view.
  auto newer = [&](uint32_t tgid) {
    auto t = touched_.find(tgid);
    return t != touched_.end() && t->second > since;
  };
  for (auto it = managed_.begin(); it != managed_.end();) {
    uint32_t tgid = it->first;
    uint64_t started = it->second.start_time;
    ++it;
    auto a = alive.find(tgid);
    if (a == alive.end() || a->second.start_time != started) {
      // The listing may predate an explicit classification made since: ask /proc once more.
      auto now = read_proc(tgid);
      if (now && now->start_time == started && !ended(*now)) continue;
      // Gone (or its pid already reused): an explicit class was for that process only.
      classifier_.clear_explicit(tgid);
      unmanage(tgid, false);
    }
  }
  std::erase_if(warned_, [&](const auto& w) { return !alive.count(w.first); });
  for (const auto& [tgid, p] : alive) {
    if (pause) pause();
    if (cancelled()) return;
    if (newer(tgid))
      refresh(tgid);
    else
      handle(p);
  }
  // Processes events named during this pass that the listing did not hold were handled by those events.
  std::erase_if(touched_, [&](const auto& t) { return t.second <= since; });
  // A complete pass: what a previous daemon moved and no rule manages now goes back.
  for (auto& [tgid, pr] : pending_) {
    auto a = alive.find(tgid);
    if (a != alive.end() && a->second.start_time == pr.start_time) restore_threads(proc_root_, ops_, tgid, pr.moved);
  }
  if (!pending_.empty()) ++version_;
  pending_.clear();
}

namespace {

// One process of a record, checked: pid, start time, class, explicit, threads with their own policies.
struct RecordedProcess {
  uint32_t pid = 0;
  uint64_t start_time = 0;
  uint32_t cls = AKTS_CLASS_BE;
  bool is_explicit = false;
  std::unordered_map<uint32_t, int> moved;
};

Result<std::vector<RecordedProcess>> parse_record(const nlohmann::json& rec) {
  auto bad = [](const std::string& why) { return make_error(ErrorKind::kInvalidArgument, "tracker record: " + why); };
  if (!rec.is_object() || !rec.contains("processes") || !rec["processes"].is_array())
    return bad("needs a \"processes\" list");
  std::vector<RecordedProcess> out;
  for (const auto& p : rec["processes"]) {
    RecordedProcess r;
    if (!p.is_object() || !p.contains("pid") || !p["pid"].is_number_unsigned() || !p.contains("start_time") ||
        !p["start_time"].is_number_unsigned() || !p.contains("class") || !p["class"].is_string())
      return bad("each process needs pid, start_time and class");
    r.pid = p["pid"].get<uint32_t>();
    r.start_time = p["start_time"].get<uint64_t>();
    if (r.pid <= 2 || r.pid > 4194304) return bad(fmt::format("pid {} is not a user process id", r.pid));
    if (p["class"] == "lc")
      r.cls = AKTS_CLASS_LC;
    else if (p["class"] != "be")
      return bad("class must be lc or be");
    if (p.contains("explicit") && !p["explicit"].is_boolean()) return bad("explicit must be true or false");
    r.is_explicit = p.contains("explicit") && p["explicit"].get<bool>();
    if (p.contains("threads")) {
      if (!p["threads"].is_array()) return bad("threads must be a list of [tid, policy]");
      for (const auto& t : p["threads"]) {
        if (!t.is_array() || t.size() != 2 || !t[0].is_number_unsigned() || !t[1].is_number_integer() ||
            t[0].get<uint64_t>() == 0 || t[0].get<uint64_t>() > 4194304)
          return bad("threads must be a list of [tid, policy] with thread ids up to 4194304");
        int pol = t[1].get<int>();
        // Only a normal policy can have been a thread's own: anything else comes back as SCHED_OTHER.
        r.moved[t[0].get<uint32_t>()] = normal_policy(pol) ? pol : SCHED_OTHER;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

uint64_t start_time_of(const std::string& proc_root, uint32_t pid) {
  auto p = parse_proc_stat(read_file(fmt::format("{}/{}/stat", proc_root, pid)));
  return p ? p->start_time : 0;
}

}  // namespace

// One process of a record (the format parse_record reads), threads in id order.
static nlohmann::json recorded_process(uint32_t pid, uint64_t start_time, uint32_t cls, bool is_explicit,
                                       const std::unordered_map<uint32_t, int>& moved) {
  nlohmann::json threads = nlohmann::json::array();
  for (const auto& [tid, pol] : std::map<uint32_t, int>(moved.begin(), moved.end())) threads.push_back({tid, pol});
  return {{"pid", pid},
          {"start_time", start_time},
          {"class", cls == AKTS_CLASS_LC ? "lc" : "be"},
          {"explicit", is_explicit},
          {"threads", threads}};
}

ProcessTracker::State ProcessTracker::state() const {
  State st;
  st.version = version_;
  std::map<uint32_t, const Managed*> sorted;
  for (const auto& [tgid, m] : managed_) sorted.emplace(tgid, &m);
  st.entries.reserve(sorted.size() + pending_.size());
  for (const auto& [tgid, m] : sorted)
    st.entries.push_back({tgid, m->start_time, m->cls, classifier_.has_explicit(tgid), false, m->comm, m->reason, m->moved});
  // Taken up from a previous daemon, not handled yet: kept, so a second death loses nothing either.
  std::map<uint32_t, const Pending*> waiting;
  for (const auto& [tgid, pr] : pending_)
    if (!managed_.count(tgid)) waiting.emplace(tgid, &pr);
  for (const auto& [tgid, pr] : waiting)
    st.entries.push_back({tgid, pr->start_time, pr->cls, pr->is_explicit, true, "", "", pr->moved});
  return st;
}

nlohmann::json ProcessTracker::to_json(const State& s) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : s.entries)
    if (!e.pending)
      j.push_back({{"pid", e.pid},
                   {"comm", e.comm},
                   {"class", e.cls == AKTS_CLASS_LC ? "lc" : "be"},
                   {"reason", e.reason},
                   {"threads_moved", e.moved.size()}});
  return j;
}

nlohmann::json ProcessTracker::record(const State& s) {
  nlohmann::json procs = nlohmann::json::array();
  for (const auto& e : s.entries) procs.push_back(recorded_process(e.pid, e.start_time, e.cls, e.is_explicit, e.moved));
  return {{"processes", procs}};
}

Status ProcessTracker::adopt_record(const nlohmann::json& rec) {
  auto procs = parse_record(rec);
  if (!procs) return procs.error();
  for (auto& r : *procs) {
    if (start_time_of(proc_root_, r.pid) != r.start_time) continue;  // gone, or its pid reused
    if (r.pid == self_) continue;
    if (r.is_explicit) classifier_.set_explicit(r.pid, r.cls);
    if (r.is_explicit || !r.moved.empty())
      pending_[r.pid] = Pending{r.start_time, r.cls, r.is_explicit, std::move(r.moved)};
  }
  ++version_;
  return {};
}

Result<size_t> ProcessTracker::release_record(const nlohmann::json& rec, const std::string& proc_root,
                                              SchedPolicyOps& ops) {
  auto procs = parse_record(rec);
  if (!procs) return procs.error();
  size_t moved = 0;
  auto give_back = [&](uint32_t tid, int pol) {
    if (ops.get(static_cast<pid_t>(tid)) == kSchedExt && ops.set(static_cast<pid_t>(tid), pol) == 0) ++moved;
  };
  // The processes whose threads the daemon moved (none in --switch-all mode), still alive.
  std::set<uint32_t> roots;
  for (const auto& r : *procs) {
    if (r.moved.empty() || start_time_of(proc_root, r.pid) != r.start_time) continue;
    roots.insert(r.pid);
    // A thread the record lists gets its own policy; one born since the last record was written, SCHED_OTHER.
    for (uint32_t tid : list_threads(proc_root, r.pid)) {
      auto it = r.moved.find(tid);
      give_back(tid, it != r.moved.end() ? it->second : SCHED_OTHER);
    }
  }
  if (roots.empty()) return moved;
  // Processes they started since (fork inherits SCHED_EXT), down any depth: SCHED_OTHER, the tracker's own rule.
  std::map<uint32_t, uint32_t> parent;
  if (DIR* d = opendir(proc_root.c_str())) {
    while (dirent* e = readdir(d)) {
      uint32_t pid = 0;
      if (!parse_pid(e->d_name, &pid)) continue;
      auto p = parse_proc_stat(read_file(fmt::format("{}/{}/stat", proc_root, pid)));
      if (p) parent[pid] = p->ppid;
    }
    closedir(d);
  }
  for (const auto& [pid, ppid] : parent) {
    if (roots.count(pid)) continue;
    bool below = false;
    uint32_t up = ppid;
    for (int depth = 0; depth < 64 && up > 1 && !below; ++depth) {
      below = roots.count(up) != 0;
      auto it = parent.find(up);
      up = it == parent.end() ? 0 : it->second;
    }
    if (!below) continue;
    for (uint32_t tid : list_threads(proc_root, pid)) give_back(tid, SCHED_OTHER);
  }
  return moved;
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
  // Taken up from a previous daemon and not handled by a complete pass yet: given back too.
  for (auto& [tgid, pr] : pending_) {
    auto p = read_proc(tgid);
    if (p && p->start_time == pr.start_time && !pr.moved.empty()) restore_threads(proc_root_, ops_, tgid, pr.moved);
  }
  pending_.clear();
  ++version_;
}

void ProcessTracker::reapply_classes() {
  for (const auto& [tgid, m] : managed_)
    if (auto st = hooks_.set_class(tgid, m.cls); !st)
      spdlog::warn("cannot write the class of pid {} again: {}", tgid, st.error().to_string());
}


}  // namespace akts
