#include "daemon/daemon.h"

#include <grp.h>
#include <signal.h>
#include <sched.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <charconv>
#include <deque>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "admission/record.h"
#include "admission/static_check.h"
#include "classify/process_tracker.h"
#include "daemon/reaper.h"
#include "daemon/reasoning_worker.h"
#include "daemon/state_file.h"
#include "daemon/tracker_worker.h"
#include "common/build_info.h"
#include "common/http_url.h"
#include "common/parse.h"
#include "common/text.h"
#include "control/api.h"
#include "control/audit.h"
#include "control/unix_server.h"
#include "exec/btf_rodata.h"
#include "exec/execution_plane.h"
#include "exec/policy_library.h"
#include "exec/sched_ext_sysfs.h"
#include "metrics/exposition.h"
#include "metrics/http_endpoint.h"
#include "metrics/process_self.h"

namespace akts {
namespace {

using control::json;

// The control API's view of the running daemon.
class DaemonBackend : public control::ControlBackend {
 public:
  DaemonBackend(ExecutionPlane& plane, TrackerWorker& tracker, ReasoningPlane& reasoning, PushedSamples& pushed,
                std::function<json()> health, const DaemonConfig& cfg, std::function<void()> persist)
      : plane_(plane),
        tracker_(tracker),
        reasoning_(reasoning),
        pushed_(pushed),
        health_(std::move(health)),
        cfg_(cfg),
        persist_(std::move(persist)),
        started_(std::chrono::steady_clock::now()) {
    if (!cfg_.repository.empty()) repository_.emplace(cfg_.repository);
  }

  std::vector<control::PolicyView> policies() const override {
    std::vector<control::PolicyView> out;
    for (const auto& p : plane_.policies()) {
      const PolicySpec* spec = find_policy(p.name);
      out.push_back({p.slot, p.name, std::string(spec ? spec->summary : ""),
                     std::string(spec ? spec->pick_when : ""), std::string(policy_doc(p.name)), p.params});
    }
    return out;
  }
  Result<std::array<uint64_t, AKTS_MAX_PARAMS>> param_values(uint32_t slot) const override {
    return plane_.param_values(slot);
  }
  Status set_param(uint32_t slot, const ParamDesc& d, uint64_t value) override {
    auto before = plane_.param_values(slot);
    if (!before) return before.error();
    if (auto st = plane_.set_param(slot, d.index, value); !st) return st;
    std::string name = policy_name(slot);
    std::string why = fmt::format("{}.{}: {} -> {}", name, d.name, d.format((*before)[d.index]), d.format(value));
    spdlog::info("parameter {}", why);
    reasoning_.note("operator", "set", why,
                    {{"slot", slot}, {"policy", name}, {"param", d.name}, {"previous", (*before)[d.index]}, {"value", value}});
    return {};
  }
  uint32_t slot_count() const override { return AKTS_MAX_SLOTS; }
  uint32_t selected() const override { return plane_.selected(); }
  uint32_t effective() const override { return plane_.effective_slot(); }
  // An operator's switch: through the arbiter, so a hold refuses it and controllers give way.
  Status select(uint32_t slot) override {
    uint32_t prev = plane_.selected();
    if (auto st = reasoning_.operator_switch(slot, policy_name(slot)); !st) return st;
    spdlog::info("switched slot {} -> {}", prev, slot);
    persist_();  // before the answer: a daemon killed right after comes back with this selection
    return {};
  }
  Status hold(uint32_t slot, std::chrono::milliseconds d) override {
    if (auto st = reasoning_.hold(slot, policy_name(slot), d); !st) return st;
    persist_();  // a hold selects its slot: kept like a switch
    spdlog::info("holding slot {} ({}) for {:.1f} s", slot, policy_name(slot), std::chrono::duration<double>(d).count());
    return {};
  }
  bool release() override {
    bool was = reasoning_.release();
    if (was) spdlog::info("hold released");
    return was;
  }
  Result<json> controller(const std::optional<std::string>& name, std::optional<bool> dry_run) override {
    if (auto st = reasoning_.configure(name, dry_run); !st) return st.error();
    if (name) spdlog::info("controller: {}{}", *name, reasoning_.state()["arbiter"]["dry_run"].get<bool>() ? " (dry run)" : "");
    return reasoning_.state();
  }
  json telemetry(size_t last) const override {
    return {{"period_s", std::chrono::duration<double>(cfg_.reasoning.telemetry.period).count()},
            {"objective", reasoning_.objective().to_json()},
            {"health", health_()},
            {"windows", reasoning_.windows(last)}};
  }
  json objective() const override { return reasoning_.objective().to_json(); }
  json policy_record(const std::string& name) const override {
    if (!repository_) return nullptr;
    auto r = repository_->get(name);
    if (!r) {
      spdlog::warn("policy repository: {}", r.error().message);
      return nullptr;
    }
    return *r ? (*r)->to_json() : json(nullptr);
  }
  // Admission's gates 2 to 4 (src/admission/): each verdict goes back with its evidence.
  Result<json> admit(const AdmitRequest& r) override {
    auto t0 = std::chrono::steady_clock::now();
    json gates = json::array();
    json out = {{"admitted", false}, {"slot", nullptr}, {"name", nullptr}, {"sha256", nullptr}, {"refused_at", nullptr}};
    auto finish = [&](const char* refused_at) {
      out["gates"] = gates;
      out["refused_at"] = refused_at ? json(refused_at) : json(nullptr);
      out["took_ms"] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (refused_at) spdlog::warn("admission of {} refused at the {} gate", r.object, refused_at);
      return out;
    };
    if (canary_ && canary_->state == "running")
      return errorf(ErrorKind::kBusy, "the canary of {} runs for {:.0f} s more; one canary at a time",
                    canary_->name,
                    std::chrono::duration<double>(canary_->end - std::chrono::steady_clock::now()).count());
    // Read once: every gate judges these bytes and the kernel loads them, whatever happens to the file meanwhile.
    auto bytes = admission::read_regular_file(r.object, admission::kMaxObjectBytes);
    if (!bytes) return bytes.error();
    auto report = admission::check_bytes(*bytes, r.object);
    if (!report) return report.error();  // not a BPF object at all: bad input
    gates.push_back(report->to_json());
    if (!report->passed) return finish("static");
    std::string name = r.name.empty() ? report->policy : r.name;
    if (!valid_policy_name(name))  // the static gate refuses such prefixes; a guard all the same
      return errorf(ErrorKind::kInvalidArgument, "'{}' is not a policy name", excerpt(valid_utf8(name)));
    out["name"] = name;
    auto sha = std::make_optional(admission::sha256_hex(*bytes));
    out["sha256"] = *sha;
    json dyn = admission::judge_dynamic(r.object, *sha, r.record, r.force_untested);
    gates.push_back(dyn);
    if (!dyn["passed"].get<bool>()) return finish("dynamic");
    uint32_t slot = 0;
    // The breaker's safe slot is kept for the policy the configuration puts there, armed or not (a canary
    // arms it, and a trip must never force an untested policy, nor be unable to trip on one in that slot).
    const uint32_t safe = cfg_.breaker.safe_slot;
    if (r.slot) {
      slot = *r.slot;
      if (slot == safe)
        return errorf(ErrorKind::kInvalidArgument, "slot {} is the circuit breaker's safe slot: choose another", slot);
    } else {
      auto loaded = plane_.policies();
      while (slot < AKTS_MAX_SLOTS &&
             (slot == safe ||
              std::any_of(loaded.begin(), loaded.end(), [&](const LoadedPolicy& p) { return p.slot == slot; })))
        ++slot;
    }
    if (r.canary.count() > 0)
      if (auto b = plane_.read_breaker(); b && b->tripped())
        return errorf(ErrorKind::kBusy, "the circuit breaker holds its safe slot (a trip's cool-down): a canary "
                                        "cannot start now; nothing was loaded");
    auto v0 = std::chrono::steady_clock::now();
    std::string replaced = r.replace ? policy_name(slot) : "";
    // A replacement checks that its slot is not selected and overwrites it with no switch in between.
    Status loaded = slot >= AKTS_MAX_SLOTS ? Status(make_error(ErrorKind::kInvalidArgument, "every slot is filled"))
                    : r.replace            ? reasoning_.exclusive([&] {
                                    return plane_.admit_object(std::move(*bytes), r.object, name, slot, true);
                                  })
                                           : plane_.admit_object(std::move(*bytes), r.object, name, slot, false);
    json ver = {{"gate", "verifier"},
                {"passed", static_cast<bool>(loaded)},
                {"slot", slot},
                {"took_ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - v0).count()}};
    if (!loaded) {
      ver["detail"] = loaded.error().message;
      ver["log"] = loaded.error().details;
      gates.push_back(ver);
      return finish("verifier");
    }
    ver["detail"] = fmt::format("verified and in slot {} of every dispatched callback's array{}", slot,
                                r.replace ? ", in place of " + replaced : "");
    gates.push_back(ver);
    out["slot"] = slot;
    PolicyRecord rec;
    rec.name = name;
    rec.description = r.description.empty() ? "admitted from " + r.object : r.description;
    rec.pick_when = r.pick_when;
    rec.origin = "admitted";
    rec.object_sha256 = *sha;
    if (r.canary.count() > 0) {
      // Gate 5: held selected for the canary's length; poll_canary() judges each window and reverts.
      Canary c;
      c.slot = slot;
      c.previous = plane_.selected();
      c.name = name;
      c.record = rec;
      c.start = std::chrono::steady_clock::now();
      c.end = c.start + r.canary;
      c.baseline_met = baseline_met();
      // A canary that cannot start takes the new policy out again (under the arbiter's lock: nothing selects it).
      auto refuse = [&](const std::string& why) {
        auto ev = reasoning_.exclusive([&] { return plane_.evict(slot); });
        gates.push_back({{"gate", "canary"}, {"passed", false},
                         {"detail", why + (ev ? "; the policy was evicted" : "; it stays loaded: " + ev.error().message)}});
        return finish("canary");
      };
      auto b0 = plane_.read_breaker();
      if (!b0) return refuse("cannot read the circuit breaker: " + b0.error().message);
      if (b0->tripped()) return refuse("the circuit breaker holds its safe slot (a trip's cool-down): try again after it");
      c.trips0 = b0->state.trips;
      c.breaker_before = b0->params;
      // Armed throughout, whatever the configuration says: a canary without the breaker is not one.
      if (!b0->params.armed) {
        BreakerParams armed = b0->params;
        armed.armed = true;
        if (auto st = plane_.set_breaker(armed); !st) return refuse("cannot arm the circuit breaker: " + st.error().message);
        c.disarm_after = true;
      }
      if (auto st = reasoning_.hold(slot, name, r.canary); !st) {
        if (c.disarm_after) (void)plane_.set_breaker(b0->params);
        return refuse("cannot select it: " + st.error().message);
      }
      // The window in flight began under the previous slot: judging starts with the one after it.
      auto latest = reasoning_.latest();
      c.last_seq = (latest ? latest->seq : 0) + 1;
      persist_();
      spdlog::info("admitted {} ({}) into slot {}: its canary runs for {:.0f} s", name, r.object, slot,
                   std::chrono::duration<double>(r.canary).count());
      reasoning_.note("operator", "admit", fmt::format("admitted {} into slot {}; canary for {:.0f} s", name, slot,
                                                       std::chrono::duration<double>(r.canary).count()),
                      {{"object", r.object}, {"sha256", *sha}, {"slot", slot}});
      canary_ = std::move(c);
      out["admitted"] = true;
      last_admission_ = finish(nullptr);
      last_admission_["canary"] = canary_json();
      return last_admission_;
    }
    out["admitted"] = true;
    spdlog::info("admitted {} ({}) into slot {}", name, r.object, slot);
    reasoning_.note("operator", "admit", fmt::format("admitted {} into slot {}", name, slot),
                    {{"object", r.object}, {"sha256", *sha}, {"slot", slot}});
    put_record(rec);
    last_admission_ = finish(nullptr);
    return last_admission_;
  }
  json admission() const override {
    if (last_admission_.is_null()) return nullptr;
    json a = last_admission_;
    if (canary_) a["canary"] = canary_json();
    return a;
  }
  // Gate 5, on the daemon's loop at every tick: each new telemetry window of a running canary is judged.
  // Reverted (the previous slot selected again, the new policy evicted) when the breaker trips or overrides
  // it, when the guard has to rescue LC work or an LC task waits past half the guard's bound, or when the
  // objective fails three windows in a row although it held in 80% of the windows before the canary.
  void poll_canary() {
    if (!canary_ || canary_->state != "running") return;
    Canary& c = *canary_;
    auto now = std::chrono::steady_clock::now();
    std::string why;
    // An operator who released the canary's hold and switched: theirs stands, whatever else happened since;
    // the unproven policy goes if it can.
    const bool revert = plane_.selected() == c.slot;
    if (!revert)
      why = fmt::format("an operator selected slot {} during the canary", plane_.selected());
    else if (auto b = plane_.read_breaker(); !b || b->state.trips > c.trips0 || b->tripped())
      why = b ? "the circuit breaker tripped" : "the circuit breaker cannot be read: " + b.error().message;
    for (const auto& wj : reasoning_.windows(50)) {
      auto w = Window::from_json(wj);
      if (!w || w->seq <= c.last_seq || !why.empty()) continue;
      c.last_seq = w->seq;
      ++c.windows;
      double bound_ms = std::chrono::duration<double, std::milli>(cfg_.guard.max_wait).count();
      if (w->effective_slot != c.slot)
        why = fmt::format("slot {} ran instead (the override)", w->effective_slot);
      else if (w->rescues[AKTS_CLASS_LC] > 0)
        why = fmt::format("the guard had to rescue LC work ({} rescues in a window)", w->rescues[AKTS_CLASS_LC]);
      else if (w->oldest_wait_ms[AKTS_CLASS_LC] > bound_ms / 2)
        why = fmt::format("an LC task waited {:.0f} ms (half the guard's bound is {:.0f} ms)",
                          w->oldest_wait_ms[AKTS_CLASS_LC], bound_ms / 2);
      else if (!reasoning_.objective().met(*w) && c.baseline_met >= 0.8 && ++c.unmet_streak >= 3)
        why = fmt::format("the objective ({}) failed 3 windows in a row; it held in {:.0f}% before",
                          reasoning_.objective().describe(), 100 * c.baseline_met);
      else if (reasoning_.objective().met(*w))
        c.unmet_streak = 0;
    }
    if (why.empty() && now < c.end) return;
    end_canary(why, revert, now);
  }
  // The plane was loaded again (the kernel asked for a restart, or ejected it): admitted policies went with the
  // old programs, so a running canary ends as failed and the slot it replaced is selected again.
  // How many times the scheduler was loaded (1 + restarts and re-attaches): BPF's counters start afresh at each.
  uint64_t loads_ = 1;
  void plane_reloaded() {
    ++loads_;
    if (canary_ && canary_->state == "running")
      end_canary("the scheduler was loaded again (a kernel restart or an ejection): the admitted policy is gone",
                 true, std::chrono::steady_clock::now());
  }
  void end_canary(const std::string& why, bool revert, std::chrono::steady_clock::time_point now) {
    Canary& c = *canary_;
    reasoning_.release_hold_on(c.slot);  // the canary's own hold only: an operator's hold or grace stays
    if (c.disarm_after) {
      // As configured again; a trip in progress runs to its end (disarming never ends one).
      if (auto st = plane_.set_breaker(c.breaker_before); !st)
        spdlog::warn("the circuit breaker stays armed after the canary: {}", st.error().to_string());
      c.disarm_after = false;
    }
    if (why.empty()) {
      c.state = "passed";
      c.reason = fmt::format("{} windows without degradation", c.windows);
      spdlog::info("canary of {} passed: {}", c.name, c.reason);
      reasoning_.note("operator", "canary", fmt::format("the canary of {} passed: {}", c.name, c.reason), {{"slot", c.slot}});
      put_record(c.record);
    } else {
      c.state = "failed";
      c.reason = why;
      if (revert) (void)reasoning_.operator_switch(c.previous, policy_name(c.previous));
      auto ev = reasoning_.exclusive([&] { return plane_.evict(c.slot); });
      spdlog::warn("canary of {} failed ({}): {}, {}", c.name, why,
                   revert ? fmt::format("slot {} selected again", c.previous) : std::string("the operator's selection stands"),
                   ev ? "the policy evicted" : "not evicted: " + ev.error().message);
      reasoning_.note("operator", "canary",
                      fmt::format("the canary of {} failed: {}; {}", c.name, why,
                                  revert ? fmt::format("reverted to slot {}", c.previous) : std::string("not reverted")),
                      {{"slot", c.slot}, {"previous", c.previous}, {"evicted", static_cast<bool>(ev)}});
    }
    c.ended = now;
    persist_();
  }
  Result<json> evict(uint32_t slot) override {
    std::string name = policy_name(slot);
    if (auto st = reasoning_.exclusive([&] { return plane_.evict(slot); }); !st) return st.error();
    reasoning_.note("operator", "evict", fmt::format("evicted {} from slot {}", name, slot), {{"slot", slot}});
    return json{{"slot", slot}, {"name", name}};
  }
  Result<size_t> record_result(const std::string& policy, const ResultRecord& r) override {
    if (!repository_)
      return make_error(ErrorKind::kInvalidArgument, "the policy repository is off (config key \"repository\")");
    if (auto st = repository_->append_result(policy, r); !st) return st.error();
    auto rec = repository_->get(policy);
    if (!rec || !*rec) return size_t{0};
    spdlog::info("policy repository: a {} result for {} ({})", r.workload, policy, r.source);
    return (*rec)->results.size();
  }
  Status set_objective(const Objective& objective) override {
    reasoning_.set_objective(objective);
    spdlog::info("objective: {}", objective.describe());
    return {};
  }
  json decisions(size_t limit) const override { return reasoning_.log(limit); }
  Result<size_t> push_latencies(const std::vector<double>& ms) override { return pushed_.push(ms); }
  json status() const override {
    auto st = read_sched_ext_state();
    auto ei = plane_.exit_info();
    json policies = json::array();
    std::string selected_name, effective_name;
    for (const auto& p : plane_.policies()) {
      policies.push_back({{"slot", p.slot}, {"name", p.name}});
      if (p.slot == plane_.selected()) selected_name = p.name;
      if (p.slot == plane_.effective_slot()) effective_name = p.name;
    }
    uint32_t ovr = plane_.override_word();
    return {{"scheduler", {{"state", st.state}, {"ops", st.ops}, {"attached", plane_.attached()}}},
            {"selected", {{"slot", plane_.selected()}, {"policy", name_or_null(selected_name)}}},
            {"override",
             {{"active", (ovr & AKTS_OVERRIDE_ACTIVE) != 0},
              {"slot", (ovr & AKTS_OVERRIDE_ACTIVE) ? json(ovr & AKTS_OVERRIDE_SLOT_MASK) : json(nullptr)}}},
            {"effective", {{"slot", plane_.effective_slot()}, {"policy", name_or_null(effective_name)}}},
            {"policies", policies},
            {"mode", cfg_.switch_all ? "all tasks" : "partial (SCHED_EXT tasks only)"},
            {"guard", guard_json()},
            {"breaker", breaker_json()},
            {"reasoning", reasoning_.state()},
            {"managed_processes", tracker_.snapshot()},
            {"uptime_seconds",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()},
            {"exit", ei.kind ? json{{"kind", ei.kind_name}, {"reason", ei.reason}, {"message", ei.message}}
                             : json(nullptr)}};
  }
  Result<json> stats(bool reset_longest) override {
    auto s = plane_.read_stats();
    if (!s) return s.error();
    auto g = plane_.read_guard();
    if (!g) return g.error();
    if (reset_longest)
      if (auto st = plane_.reset_longest_waits(); !st) return st.error();
    json j = s->to_json();
    j["guard"] = g->to_json();
    j["breaker"] = breaker_json();
    auto w = reasoning_.latest();
    j["window"] = w ? w->to_json() : json(nullptr);
    j["reasoning"] = reasoning_.state();
    j["telemetry_health"] = health_();
    j["selected"] = plane_.selected();
    j["effective"] = plane_.effective_slot();
    j["timestamp_ns"] = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    json names = json::object();
    for (const auto& p : plane_.policies()) names[std::to_string(p.slot)] = p.name;
    j["policy_names"] = names;
    auto counts = tracker_.class_counts();
    j["managed"] = {{"lc", counts[AKTS_CLASS_LC]}, {"be", counts[AKTS_CLASS_BE]}};
    j["tracker"] = tracker_.stats();
    j["scheduler"] = {{"state", read_sched_ext_state().state}, {"attached", plane_.attached()}, {"loads", loads_}};
    auto self = metrics::read_process();
    j["process"] = self ? *self : json(nullptr);
    return j;
  }
  Status classify(uint32_t pid, uint32_t cls) override {
    auto st = tracker_.with_tracker([&](ProcessTracker& t) { return t.classify_explicit(pid, cls); });
    if (st) {
      tracker_.publish_now();
      persist_();  // before the answer, like a switch
    }
    return st;
  }
  Result<json> class_of(uint32_t pid) override {
    auto k = plane_.get_class(pid);
    if (!k) return k.error();
    json managed = nullptr;
    if (json m = tracker_.find(pid); m.is_object()) managed = {{"class", m["class"]}, {"reason", m["reason"]}};
    return json{{"pid", pid},
                {"kernel_class", std::string(class_name(k->value_or(AKTS_CLASS_BE)))},
                {"kernel_entry", k->has_value()},
                {"managed", managed}};
  }
  Result<json> hint(uint32_t tid, std::optional<std::chrono::nanoseconds> remaining) override {
    if (!remaining) {
      auto had = plane_.clear_hint(tid);
      if (!had) return had.error();
      return json{{"pid", tid}, {"cleared", *had}};
    }
    // Only a thread akts schedules: the frame drops its entry when it leaves sched_ext, so none lingers to be
    // inherited by a later thread with the same id. In --switch-all mode every thread is akts's.
    auto scheduled = [&]() -> Result<bool> {
      errno = 0;
      int pol = sched_getscheduler(static_cast<pid_t>(tid));
      if (pol < 0)
        return errno == ESRCH ? errorf(ErrorKind::kInvalidArgument, "no thread {}", tid)
                              : sys_error(fmt::format("cannot read the policy of thread {}", tid), errno);
      pol &= ~SCHED_RESET_ON_FORK;
      if (pol == kSchedExt) return true;
      return cfg_.switch_all && (pol == SCHED_OTHER || pol == SCHED_BATCH || pol == SCHED_IDLE);
    };
    auto in_ext = scheduled();
    if (!in_ext) return in_ext.error();
    if (!*in_ext)
      return errorf(ErrorKind::kInvalidArgument,
                    "thread {} is not scheduled by akts (not in SCHED_EXT): classify its process first (akts classify)",
                    tid);
    // The estimate counts from the CPU time the thread has had so far (schedstat's first field, ns).
    uint64_t exec_at = 0;
    {
      std::ifstream f(fmt::format("/proc/{}/schedstat", tid));
      if (!(f >> exec_at)) return errorf(ErrorKind::kInvalidArgument, "no thread {} (its schedstat cannot be read)", tid);
    }
    auto ns = static_cast<uint64_t>(remaining->count());
    if (auto st = plane_.set_hint(tid, ns, exec_at); !st) return st.error();
    // The thread may have left (or exited) between the check and the write, after the frame dropped its entry:
    // look again, and take the entry back if so (a departure after this look finds the entry and drops it).
    auto still = scheduled();
    if (!still || !*still) {
      (void)plane_.clear_hint(tid);
      return errorf(ErrorKind::kInvalidArgument, "thread {} left akts while it was being hinted: nothing kept", tid);
    }
    return json{{"pid", tid}, {"remaining_ns", ns}, {"exec_at_ns", exec_at}};
  }
  Status unclassify(uint32_t pid) override {
    auto st = tracker_.with_tracker([&](ProcessTracker& t) { return t.unclassify(pid); });
    if (st) {
      tracker_.publish_now();
      persist_();
    }
    return st;
  }

 private:
  static json name_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
  std::string policy_name(uint32_t slot) const {
    for (const auto& p : plane_.policies())
      if (p.slot == slot) return p.name;
    return "";
  }
  json breaker_json() const {
    auto b = plane_.read_breaker();
    return b ? b->to_json() : json{{"error", b.error().to_string()}};
  }
  json guard_json() const {
    auto g = plane_.read_guard();
    return g ? g->params.to_json() : json{{"error", g.error().to_string()}};
  }
  ExecutionPlane& plane_;
  TrackerWorker& tracker_;
  ReasoningPlane& reasoning_;
  PushedSamples& pushed_;
  std::function<json()> health_;
  const DaemonConfig& cfg_;
  std::function<void()> persist_;
  std::chrono::steady_clock::time_point started_;
  std::optional<PolicyRepository> repository_;
  struct Canary {
    uint32_t slot = 0, previous = 0;
    std::string name;
    PolicyRecord record;
    std::chrono::steady_clock::time_point start, end, ended;
    double baseline_met = 1;  // the objective's share of met windows before the canary
    uint64_t last_seq = 0;    // windows up to this one are not the canary's
    uint64_t trips0 = 0;      // the breaker's trips when it began
    BreakerParams breaker_before;  // its settings then, put back after when the canary armed it
    bool disarm_after = false;  // the configuration had the breaker disarmed: the canary armed it
    size_t windows = 0, unmet_streak = 0;
    std::string state = "running", reason;
  };
  std::optional<Canary> canary_;
  json last_admission_;

  double baseline_met() const {
    size_t n = 0, met = 0;
    for (const auto& wj : reasoning_.windows(30))
      if (auto w = Window::from_json(wj)) {
        ++n;
        met += reasoning_.objective().met(*w) ? 1 : 0;
      }
    return n ? static_cast<double>(met) / static_cast<double>(n) : 1.0;
  }
  json canary_json() const {
    const Canary& c = *canary_;
    auto now = std::chrono::steady_clock::now();
    return {{"state", c.state},
            {"reason", c.reason},
            {"slot", c.slot},
            {"previous", c.previous},
            {"windows", c.windows},
            {"baseline_met", c.baseline_met},
            {"elapsed_s", std::chrono::duration<double>((c.state == "running" ? now : c.ended) - c.start).count()},
            {"length_s", std::chrono::duration<double>(c.end - c.start).count()}};
  }
  void put_record(const PolicyRecord& rec) {
    if (!repository_) return;
    PolicyRecord r = rec;
    if (auto old = repository_->get(r.name); old && *old) r.results = (*old)->results;
    if (auto st = repository_->put(r); !st) spdlog::warn("policy repository: {}", st.error().message);
  }
};

// Writes the state file (src/daemon/state_file.h) when the tracker's record
// changed (by generation: serialised once), and the small selection file
// beside it when the selection changed: a switch costs one pwrite, not the
// record of a thousand processes.
class StateWriter {
 public:
  explicit StateWriter(std::string path) : path_(std::move(path)), selection_(path_) {}
  bool enabled() const { return !path_.empty(); }
  void save(const ExecutionPlane& plane, const TrackerWorker::Record& rec, bool clean) {
    if (path_.empty()) return;
    const uint32_t slot = plane.selected();
    std::string policy;
    for (const auto& p : plane.policies())
      if (p.slot == slot) policy = p.name;
    json selected = {{"slot", slot}, {"policy", policy.empty() ? json(nullptr) : json(policy)}};
    if (!written_ || slot != slot_) {
      json sel = selected;
      sel["daemon_pid"] = static_cast<uint64_t>(::getpid());
      if (auto st = selection_.write(sel); !st) {
        if (!warned_) spdlog::warn("{}: a restart would forget the selection", st.error().to_string());
        warned_ = true;
        return;
      }
      slot_ = slot;
    }
    if (written_ && rec.gen == gen_ && clean == clean_) return;
    json head = {{"version", kStateVersion},
                 {"daemon_pid", static_cast<uint64_t>(::getpid())},
                 {"clean", clean},
                 {"reaped", false},
                 {"selected", selected}};
    // The record goes in as it was serialised.
    std::string text = head.dump();
    text.pop_back();
    text += ",\"tracker\":" + *rec.json + "}";
    if (!write(path_, text)) return;
    written_ = true;
    gen_ = rec.gen;
    clean_ = clean;
  }

 private:
  bool write(const std::string& path, const std::string& text) {
    if (auto st = save_state_text(path, text); !st) {
      if (!warned_) spdlog::warn("{}: a restart would forget classes, own policies or the selection", st.error().to_string());
      warned_ = true;
      return false;
    }
    warned_ = false;
    return true;
  }
  std::string path_;
  SelectionFile selection_;
  bool written_ = false, warned_ = false, clean_ = false;
  uint64_t gen_ = 0;
  uint32_t slot_ = 0;
};

// The last daemon's selection: its selection file when that is the same
// daemon's (written at every switch), else what its state file says.
json last_selection(const json& prev, const std::string& state_path) {
  json sel = prev.contains("selected") ? prev["selected"] : json(nullptr);
  auto text = load_selection(state_path);
  if (text && text->is_object() && text->contains("daemon_pid") && (*text)["daemon_pid"] == prev["daemon_pid"] &&
      text->contains("slot"))
    sel = {{"slot", (*text)["slot"]}, {"policy", text->contains("policy") ? (*text)["policy"] : json(nullptr)}};
  return sel;
}

// The slot a restarted daemon selects: the dead one's, if it did not stop
// cleanly and its policy is still configured (by name: slots may move).
std::optional<uint32_t> restored_selection(const json& prev, const json& sel, const std::vector<std::string>& policies) {
  if (prev.value("clean", false) || !sel.is_object()) return std::nullopt;
  if (!sel.contains("slot") || !sel["slot"].is_number_unsigned()) return std::nullopt;
  uint64_t slot = sel["slot"].get<uint64_t>();
  if (!sel.contains("policy") || !sel["policy"].is_string())
    return slot >= policies.size() && slot <= AKTS_SLOT_NONE ? std::optional<uint32_t>(static_cast<uint32_t>(slot))
                                                            : std::nullopt;  // it ran the built-in default
  const std::string& name = sel["policy"].get_ref<const std::string&>();
  if (slot < policies.size() && policies[slot] == name) return static_cast<uint32_t>(slot);
  for (size_t i = 0; i < policies.size(); ++i)
    if (policies[i] == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

// A group by number or name, or why not.
Result<gid_t> group_id(const std::string& name) {
  uint32_t n = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec == std::errc() && end == name.data() + name.size()) {
    if (n == UINT32_MAX) return errorf(ErrorKind::kInvalidArgument, "socket_group {} is not a group", name);
    return static_cast<gid_t>(n);
  }
  std::vector<char> buf(16384);
  for (int tries = 0; tries < 8; ++tries, buf.resize(buf.size() * 4)) {
    group g{};
    group* out = nullptr;
    int rc = getgrnam_r(name.c_str(), &g, buf.data(), buf.size(), &out);
    if (rc == ERANGE) continue;
    if (rc != 0) return sys_error("socket_group " + name, rc);
    if (!out) return errorf(ErrorKind::kInvalidArgument, "socket_group {}: no such group on this system", name);
    return out->gr_gid;
  }
  return errorf(ErrorKind::kSystem, "socket_group {}: its entry is too large to read", name);
}

Result<uint32_t> initial_slot(const DaemonConfig& cfg) {
  for (size_t i = 0; i < cfg.policies.size(); ++i)
    if (cfg.policies[i] == cfg.initial) return static_cast<uint32_t>(i);
  auto n = parse_u32(cfg.initial, "initial");
  if (!n || *n >= cfg.policies.size())
    return errorf(ErrorKind::kInvalidArgument, "initial: '{}' is not a configured policy or slot", cfg.initial);
  return *n;
}

// Notices the breaker's trips and releases (BPF acts alone) and tells the log and the decision log.
class BreakerWatch {
 public:
  void poll(const ExecutionPlane& plane, ReasoningPlane& reasoning) {
    auto b = plane.read_breaker();
    if (!b) return;
    const auto& s = b->state;
    if (s.trips != trips_) {
      json last = b->to_json()["last_trip"];
      auto slot_name = [](uint32_t k) {
        return k < AKTS_MAX_SLOTS ? fmt::format("slot {}", k) : std::string("the built-in default");
      };
      std::string why = fmt::format(
          "the circuit breaker tripped ({}{}) on {}: {} runs for at least {:g} s", last["reason"].get<std::string>(),
          trips_ + 1 < s.trips ? fmt::format(", {} trips since the last poll", s.trips - trips_) : "",
          slot_name(s.last_slot), slot_name(s.word & AKTS_OVERRIDE_SLOT_MASK),
          std::chrono::duration<double>(b->params.cooldown).count());
      spdlog::warn("{}", why);
      reasoning.note("breaker", "trip", why, {{"trip", last}, {"trips", s.trips}});
      trips_ = s.trips;
    }
    // By its time stamp: a trip and its end between two polls still show.
    if (s.last_release_ns != released_ns_) {
      std::string why = "the circuit breaker let go: the selection rules again";
      spdlog::info("{}", why);
      reasoning.note("breaker", "release", why, {{"held_s", static_cast<double>(s.last_release_ns - s.last_trip_ns) / 1e9}});
      released_ns_ = s.last_release_ns;
    }
  }

 private:
  uint64_t trips_ = 0;
  uint64_t released_ns_ = 0;
};

// At most `max` restarts within `window`: the next one is refused.
class RestartGate {
 public:
  explicit RestartGate(const RestartPolicy& p) : p_(p) {}
  bool allow(std::chrono::steady_clock::time_point now) {
    while (!times_.empty() && now - times_.front() > p_.window) times_.pop_front();
    if (times_.size() >= p_.max) return false;
    times_.push_back(now);
    return true;
  }
  size_t recent() const { return times_.size(); }

 private:
  RestartPolicy p_;
  std::deque<std::chrono::steady_clock::time_point> times_;
};

void report_exit(const ExitInfo& ei) {
  spdlog::error("the kernel ejected the scheduler: {} ({}){}", ei.kind_name, ei.reason,
                ei.message.empty() ? "" : ": " + ei.message);
  if (!ei.dump.empty()) spdlog::error("debug dump:\n{}", ei.dump);
}

}  // namespace

int run_daemon(const DaemonConfig& cfg) {
  auto state = read_sched_ext_state();
  if (!state.supported) {
    spdlog::error("this kernel has no sched_ext (/sys/kernel/sched_ext is missing)");
    return 1;
  }
  if (state.state != "disabled") {
    spdlog::error("another sched_ext scheduler is active: '{}' ({}); stop it first", state.ops, state.state);
    return 1;
  }
  auto slot = initial_slot(cfg);
  if (!slot) {
    spdlog::error("{}", slot.error().to_string());
    return 2;
  }
  // The socket's group and the audit log, before anything is loaded: a mistake here changes nothing.
  gid_t socket_gid = static_cast<gid_t>(-1);
  if (!cfg.socket_group.empty()) {
    auto g = group_id(cfg.socket_group);
    if (!g) {
      spdlog::error("{}", g.error().to_string());
      return 2;
    }
    socket_gid = *g;
  }
  std::unique_ptr<control::AuditLog> audit;
  if (!cfg.audit_log.empty()) {
    auto a = control::AuditLog::open(cfg.audit_log);
    if (!a) {
      spdlog::error("{} (set \"audit_log\": \"\" to run without one)", a.error().to_string());
      return 2;
    }
    audit = std::move(*a);
  }

  // The state a previous daemon left, and this one's reaper (forked now: no thread, nothing loaded yet).
  // Destroyed in reverse: the lock goes before the reaper is waited for.
  std::optional<Reaper> reaper;
  std::optional<StateLock> state_lock;
  std::optional<json> prev_state;
  if (!cfg.state_file.empty()) {
    auto l = StateLock::acquire(cfg.state_file, std::chrono::seconds(5));
    if (!l) {
      spdlog::error("{}", l.error().to_string());
      return 1;
    }
    state_lock.emplace(std::move(*l));
    auto prev = load_state(cfg.state_file);
    if (!prev) {
      std::string aside = cfg.state_file + ".bad";
      spdlog::warn("{}; set aside as {}, starting without it", prev.error().to_string(), aside);
      (void)::rename(cfg.state_file.c_str(), aside.c_str());
    } else if (*prev) {
      prev_state = std::move(**prev);
      (*prev_state)["selected"] = last_selection(*prev_state, cfg.state_file);
    }
    auto r = Reaper::start(cfg.state_file, state_lock->fd());
    if (!r) {
      spdlog::error("{}", r.error().to_string());
      return 1;
    }
    reaper.emplace(std::move(*r));
    // This daemon's state from now on, naming what the last one left: should this one die before its first
    // tick (a verifier error, another SIGKILL), its reaper gives those threads back.
    json first = {{"version", kStateVersion},
                  {"daemon_pid", static_cast<uint64_t>(::getpid())},
                  {"clean", false},
                  {"reaped", false},
                  {"selected", prev_state && prev_state->contains("selected") ? (*prev_state)["selected"] : json(nullptr)},
                  {"tracker", prev_state ? (*prev_state)["tracker"] : json{{"processes", json::array()}}}};
    json sel_first = first["selected"].is_object() ? first["selected"] : json::object();
    sel_first["daemon_pid"] = static_cast<uint64_t>(::getpid());
    if (auto st = save_state(cfg.state_file, first); !st || !(st = SelectionFile(cfg.state_file).write(sel_first))) {
      spdlog::error("{} (set \"state_file\": \"\" to run without restart state and without a reaper)",
                    st.error().to_string());
      return 1;
    }
  }

  // Signals arrive through a descriptor so shutdown runs in the loop, not in a handler.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);  // a closing terminal: a clean stop, not a death the reaper has to clean up after
  sigset_t old_mask;
  sigprocmask(SIG_BLOCK, &mask, &old_mask);
  int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);  // never leave SIGTERM blocked
    spdlog::error("{}", sys_error("signalfd", e).to_string());
    return 1;
  }
  // The loop's clock: ejection checks and idle-client sweeps (scans run on their own thread).
  int timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (timer_fd < 0) {
    int e = errno;
    ::close(sig_fd);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    spdlog::error("{}", sys_error("timerfd_create", e).to_string());
    return 1;
  }
  struct Cleanup {
    int sig_fd, timer_fd;
    sigset_t mask;
    ~Cleanup() {
      ::close(timer_fd);
      ::close(sig_fd);
      sigprocmask(SIG_SETMASK, &mask, nullptr);
    }
  } cleanup{sig_fd, timer_fd, old_mask};

  PlaneOptions po;
  po.policies = cfg.policies;
  po.switch_all = cfg.switch_all;
  po.initial_slot = *slot;
  if (prev_state)
    if (auto r = restored_selection(*prev_state, (*prev_state)["selected"], cfg.policies)) {
      po.initial_slot = *r;
      spdlog::info("the previous daemon (pid {}) did not stop cleanly: its selection, slot {}, is kept",
                   (*prev_state)["daemon_pid"].get<uint64_t>(), *r);
    }
  po.guard = cfg.guard;
  po.breaker = cfg.breaker;
  (void)remove_stale_pins();  // a crashed selftest's, named in the log
  if (!cfg.repository.empty()) {
    // The built-in policies' records (their results kept). A broken record is named and left for a person.
    auto records = builtin_records();
    if (!records)
      spdlog::warn("policy repository {}: not seeded: {}", cfg.repository, records.error().message);
    else if (auto st = PolicyRepository(cfg.repository).seed(*records); !st)
      spdlog::warn("policy repository {}: {}", cfg.repository, st.error().message);
  }
  auto t0 = std::chrono::steady_clock::now();
  auto plane = ExecutionPlane::load(po);
  if (!plane) {
    spdlog::error("{}", plane.error().to_string());
    return 1;
  }
  spdlog::info("verified the dispatcher and {} policies in {:.0f} ms", (*plane)->policies().size(),
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());

  Classifier classifier(cfg.matchers);
  ProcessTracker tracker(
      classifier,
      {[&](uint32_t tgid, uint32_t cls) { return (*plane)->set_class(tgid, cls); },
       [&](uint32_t tgid) { return (*plane)->clear_class(tgid); }},
      /*move_to_ext=*/!cfg.switch_all);
  if (prev_state && prev_state->contains("tracker")) {
    const json& prev = *prev_state;
    if (auto st = tracker.adopt_record(prev["tracker"]); !st)
      spdlog::warn("{}; the previous daemon's classes are forgotten", st.error().to_string());
    else
      spdlog::info("picked up the previous daemon's state (pid {}, {}): its explicit classes and its threads' own "
                   "policies",
                   prev["daemon_pid"].get<uint64_t>(),
                   prev.value("clean", false)    ? "stopped cleanly"
                   : prev.value("reaped", false) ? "ended uncleanly, its reaper gave its threads back"
                                                 : "ended uncleanly");
  }
  // Forks, execs and exits as they happen, with a slow scan as a safety net; scans alone if the connector
  // does not open (no CONFIG_PROC_EVENTS, no CAP_NET_ADMIN) or the config turns it off.
  std::unique_ptr<ProcConnector> proc_events;
  if (cfg.process_events) {
    auto pc = ProcConnector::open();
    if (pc)
      proc_events = std::move(*pc);
    else
      spdlog::warn("{}: scanning /proc every {} ms instead", pc.error().to_string(), cfg.scan_interval_ms);
  }
  // A move to another cgroup raises no process event: with cgroup rules the scan keeps its own period.
  const uint32_t rescan_ms = classifier.uses_cgroups() ? cfg.scan_interval_ms : cfg.effective_rescan_ms();
  if (proc_events)
    spdlog::info("following processes by the kernel's events, with a scan every {} ms{}",
                 std::max(cfg.scan_interval_ms, rescan_ms),
                 classifier.uses_cgroups() ? " (cgroup rules: moves between cgroups raise no event)" : " as a safety net");
  TrackerWorker worker(tracker, std::chrono::milliseconds(cfg.scan_interval_ms), std::move(proc_events),
                       std::chrono::milliseconds(rescan_ms));
  worker.publish_now();  // the record taken up counts from here, before the first scan
  StateWriter state_writer(cfg.state_file);
  auto persist = [&] { state_writer.save(**plane, worker.record_snapshot(), /*clean=*/false); };

  // The reasoning plane: controllers propose, the arbiter decides, the log remembers.
  ReasoningOptions ro;
  ro.objective = cfg.reasoning.objective;
  ro.arbiter = cfg.reasoning.arbiter;
  ro.log = cfg.reasoning.log;
  ExecutionPlane& ep = **plane;
  auto slot_infos = [&ep] {
    std::vector<SlotInfo> out;
    for (const auto& p : ep.policies()) {
      const PolicySpec* spec = find_policy(p.name);
      out.push_back({p.slot, p.name, std::string(spec ? spec->summary : ""), std::string(spec ? spec->pick_when : "")});
    }
    return out;
  };
  ReasoningPlane reasoning(ro,
                           {[&ep] { return ep.selected(); }, [&ep](uint32_t s) { ep.select(s); },
                            [&ep] { return (ep.override_word() & AKTS_OVERRIDE_ACTIVE) != 0; }},
                           slot_infos, make_controller_factory(cfg.reasoning.controller));
  if (auto st = reasoning.open_log(); !st) spdlog::warn("{}; decisions are kept in memory only", st.error().to_string());
  if (cfg.reasoning.controller.name != "none")
    if (auto st = reasoning.set_controller(cfg.reasoning.controller.name, "config"); !st) {
      spdlog::error("controller {}: {}", cfg.reasoning.controller.name, st.error().to_string());
      return 2;
    }
  PushedSamples pushed;
  std::unique_ptr<MetricsScraper> scraper;
  if (!cfg.reasoning.telemetry.metrics_url.empty()) {
    auto s = MetricsScraper::start(cfg.reasoning.telemetry.metrics_url, cfg.reasoning.telemetry.period,
                                   cfg.reasoning.telemetry.metrics_timeout);
    if (!s) {
      spdlog::error("{}", s.error().to_string());
      return 2;
    }
    scraper = std::move(*s);
  }
  PlaneSource source(ep, std::move(scraper));
  ReasoningWorker reasoner(reasoning, source, pushed, cfg.reasoning.telemetry.period);
  // A scrape counts while younger than its budget (by default four periods) plus a period.
  {
    const auto& tc = cfg.reasoning.telemetry;
    reasoner.set_app_max_age((tc.metrics_timeout.count() > 0 ? tc.metrics_timeout : 4 * tc.period) + tc.period);
  }
  auto health = [&] {
    json h = source.health();
    h["kernel_read_errors"] = reasoner.read_errors();
    h["pushed_dropped"] = pushed.dropped();
    h["audit"] = audit ? audit->state() : json(nullptr);
    return h;
  };
  DaemonBackend backend(**plane, worker, reasoning, pushed, health, cfg, persist);
  control::Dispatcher dispatcher;
  control::register_v1(dispatcher, backend);
  // Every accepted control action, with the connecting process's credentials, before the socket opens.
  if (audit) {
    dispatcher.set_audit(control::audited_methods(), [&audit](const control::Caller& who, std::string_view method,
                                                              const json& params, const json& result) {
      if ((method == "v1.controller" || method == "v1.objective") && params.empty()) return;  // a reading
      if (method == "v1.stats") {
        // A reading, unless it resets the longest waits: then the reset is the change, not the figures.
        if (!params.is_object() || !params.value("reset_longest", false)) return;
        audit->record(who, method, params, json{{"reset_longest", true}});
        return;
      }
      audit->record(who, method, params, result);
    });
  }

  auto server = control::UnixServer::listen(cfg.socket_path, cfg.socket_mode, dispatcher, {}, socket_gid);
  if (!server) {
    spdlog::error("{}", server.error().to_string());
    return 1;
  }
  // /metrics, answered on this thread like a socket request (metrics/http_endpoint.h); bound before the
  // scheduler attaches, so an address in use changes nothing.
  std::unique_ptr<metrics::MetricsEndpoint> metrics_http;
  metrics::EndpointOptions metrics_at;  // its address, the port as bound (so a restart keeps it)
  metrics::RelistenSchedule relisten;
  constexpr auto kListening = std::chrono::steady_clock::time_point::max();
  auto relisten_at = kListening;  // while the listener is down: when to try again
  const metrics::BuildInfo build{std::string(build_version()), std::string(build_commit())};
  auto render_metrics = [&](metrics::Format f) -> Result<std::string> {
    auto st = backend.stats(false);
    if (!st) return st.error();
    return metrics::render(*st, build, f);
  };
  if (!cfg.metrics_listen.empty()) {
    auto addr = parse_listen_address(cfg.metrics_listen, "metrics_listen", "127.0.0.1");
    if (!addr) {
      spdlog::error("{}", addr.error().to_string());
      return 2;
    }
    metrics_at = {addr->host, addr->port};
    auto m = metrics::MetricsEndpoint::start(metrics_at);
    relisten.started(std::chrono::steady_clock::now());
    if (!m) {
      spdlog::error("metrics: {}", m.error().to_string());
      return 1;
    }
    metrics_http = std::move(*m);
    metrics_at.port = metrics_http->port();
    spdlog::info("metrics at {}{}", metrics_http->url(),
                 addr->host == "127.0.0.1" || addr->host == "::1" || addr->host == "localhost"
                     ? ""
                     : " (not a loopback address: anyone who reaches it can read them)");
  }
  if (auto st = (*plane)->attach(); !st) {
    spdlog::error("{}", st.error().to_string());
    return 1;
  }
  spdlog::info("scheduler attached ({}), slot {} ({}); listening on {}",
               cfg.switch_all ? "all tasks" : "partial mode", po.initial_slot,
               po.initial_slot < cfg.policies.size() ? cfg.policies[po.initial_slot] : "the built-in default",
               cfg.socket_path);

  itimerspec its{};
  its.it_interval.tv_nsec = 100 * 1000000;
  its.it_value.tv_nsec = 1000000;
  if (timerfd_settime(timer_fd, 0, &its, nullptr) != 0) {
    spdlog::error("{}", sys_error("timerfd_settime", errno).to_string());
    return 1;  // the plane's destructor detaches
  }

  int exit_code = 0;
  BreakerWatch breaker_watch;
  RestartGate restarts(cfg.restart);
  // The exit code's "restart" action bit (CPU hotplug sets it); 0 when this kernel does not name it.
  const int64_t restart_flag = [] {
    auto v = kernel_enum_value("SCX_ECODE_ACT_RESTART");
    return v ? *v : int64_t{0};
  }();
  worker.start();
  reasoner.start();
  spdlog::info("reasoning: controller {}{}, objective {}, telemetry every {} ms", reasoning.controller_name(),
               cfg.reasoning.arbiter.dry_run ? " (dry run)" : "", cfg.reasoning.objective.describe(),
               cfg.reasoning.telemetry.period.count());
  while (true) {
    auto fds = (*server)->poll_fds();
    const size_t n_socket = fds.size();  // the control socket's own, first
    fds.push_back({sig_fd, POLLIN, 0});
    fds.push_back({timer_fd, POLLIN, 0});
    if (metrics_http) fds.push_back({metrics_http->fd(), POLLIN, 0});
    // Requests already received but not yet answered (a client's turn ran out): do not block.
    if (::poll(fds.data(), fds.size(), (*server)->backlog() ? 0 : -1) < 0 && errno != EINTR) break;
    if (metrics_http && fds[n_socket + 2].revents) {
      metrics_http->serve(render_metrics);
      if (metrics_http->failed()) {  // its socket failed (an accept error): another, on the same address
        const std::string url = metrics_http->url();
        metrics_http->stop();
        metrics_http.reset();
        relisten_at = relisten.listener_failed(std::chrono::steady_clock::now());
        spdlog::warn("metrics: the listener on {} failed (an accept error); listening again in {} s", url,
                     relisten.delay().count());
      }
    }
    if (const auto now = std::chrono::steady_clock::now(); now >= relisten_at) {  // each tick
      Result<std::unique_ptr<metrics::MetricsEndpoint>> m = errorf(ErrorKind::kSystem, "not started");
      try {
        m = metrics::MetricsEndpoint::start(metrics_at);
      } catch (const std::exception& e) {  // no thread or no memory: a failed start, not the daemon's end
        m = errorf(ErrorKind::kSystem, "{}", e.what());
      }
      if (m) {
        metrics_http = std::move(*m);
        relisten.started(now);
        relisten_at = kListening;
        spdlog::info("metrics: listening again at {}", metrics_http->url());
      } else {
        relisten_at = relisten.start_failed(now);
        spdlog::warn("metrics: cannot listen again yet ({}); trying in {} s", m.error().to_string(),
                     relisten.delay().count());
      }
    }
    if (fds[n_socket].revents) {
      signalfd_siginfo si{};
      (void)!::read(sig_fd, &si, sizeof(si));
      spdlog::info("signal {}: shutting down",
                   si.ssi_signo == SIGINT ? "SIGINT" : si.ssi_signo == SIGHUP ? "SIGHUP" : "SIGTERM");
      break;
    }
    if (fds[n_socket + 1].revents) {
      uint64_t ticks;
      (void)!::read(timer_fd, &ticks, sizeof(ticks));
      auto ei = (*plane)->exit_info();
      if (ei.kind != 0) {
        // The kernel ended the scheduler: it asked for a restart (CPU hotplug), or ejected it.
        const bool requested = restart_flag > 0 && (ei.exit_code & restart_flag) != 0;
        if (requested)
          spdlog::warn("the kernel asked akts to restart: {} ({}){}", ei.kind_name, ei.reason,
                       ei.message.empty() ? "" : ": " + ei.message);
        else
          report_exit(ei);
        const bool wanted = requested ? cfg.restart.on_request : cfg.restart.on_eject;
        const auto now = std::chrono::steady_clock::now();
        if (!wanted) {
          exit_code = 1;
          break;
        }
        if (!restarts.allow(now)) {
          spdlog::error("{} restarts within {} s already (restart.max): giving up", restarts.recent(),
                        cfg.restart.window.count());
          exit_code = 1;
          break;
        }
        // Nothing else touches the plane while it reloads: the workers pause, this thread serves the socket.
        reasoner.stop();
        worker.stop();
        PlaneOptions again = po;
        again.initial_slot = requested ? (*plane)->selected() : cfg.breaker.safe_slot;
        auto st = (*plane)->reload(again);
        if (st) {
          worker.read_tracker([](ProcessTracker& t) {
            t.reapply_classes();
            return 0;
          });
          st = (*plane)->attach();
        }
        if (!st) {
          spdlog::error("could not attach again: {}", st.error().to_string());
          exit_code = 1;
          break;
        }
        breaker_watch = BreakerWatch{};
        backend.plane_reloaded();
        worker.start();
        reasoner.start();
        const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - now).count();
        std::string why = fmt::format("{} ({}): loaded and attached again in {:.0f} ms on {}", ei.kind_name, ei.reason,
                                      took,
                                      again.initial_slot < cfg.policies.size()
                                          ? fmt::format("slot {} ({})", again.initial_slot, cfg.policies[again.initial_slot])
                                          : std::string("the built-in default"));
        spdlog::info("{}", why);
        reasoning.note("kernel", requested ? "restart" : "reattach", why,
                       {{"exit", {{"kind", ei.kind_name}, {"reason", ei.reason}, {"message", ei.message}}},
                        {"took_ms", took}});
        persist();
        continue;
      }
      breaker_watch.poll(**plane, reasoning);
      backend.poll_canary();
      persist();  // a controller's switches and the tracker's scans, at most a tick late
      (*server)->sweep(control::UnixServer::Clock::now());
    }
    fds.resize(n_socket);
    (*server)->on_ready(fds);
  }

  reasoner.stop();
  worker.stop();
  // Every thread gets its own policy back; the state keeps the explicit classes for the next daemon.
  json final_record = tracker.record();
  tracker.restore_all();
  for (auto& p : final_record["processes"]) p["threads"] = json::array();
  state_writer.save(**plane, {UINT64_MAX, std::make_shared<const std::string>(final_record.dump())}, /*clean=*/true);
  server->reset();
  // Scrapes that came during the clean-up waited for no one: they are answered 503 now (stop() waits at most
  // for a kept-alive connection's second of idleness).
  if (metrics_http) metrics_http->stop();
  auto ei_before = (*plane)->exit_info();
  if (auto st = (*plane)->detach(); !st) {
    spdlog::error("detach: {}", st.error().to_string());
    exit_code = 1;
  } else if (!ei_before.kind) {
    auto ei = (*plane)->exit_info();
    spdlog::info("detached: {} ({})", ei.kind_name, ei.reason);
  }
  return exit_code;
}

}  // namespace akts
