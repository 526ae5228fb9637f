// The daemon's control API backend: switches, holds, classes, hints, admission and the readings.
#include "daemon/backend.h"

#include <sched.h>

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "admission/record.h"
#include "admission/static_check.h"
#include "common/text.h"
#include "exec/policy_library.h"
#include "exec/sched_ext_sysfs.h"
#include "metrics/process_self.h"

namespace akts {

using json = nlohmann::json;

DaemonBackend::DaemonBackend(ExecutionPlane& plane, TrackerWorker& tracker, ReasoningPlane& reasoning,
                             PushedSamples& pushed, std::function<json()> health, const DaemonConfig& cfg,
                             std::function<void()> persist)
    : plane_(plane),
      control_(plane),
      tracker_(tracker),
      reasoning_(reasoning),
      pushed_(pushed),
      health_(std::move(health)),
      cfg_(cfg),
      persist_(std::move(persist)),
      started_(std::chrono::steady_clock::now()),
      canary_({control_, reasoning, cfg.guard.max_wait, [this] { persist_(); },
               [this](const PolicyRecord& r) { put_record(r); }, [this](uint32_t s) { return policy_name(s); }}) {
  if (!cfg_.repository.empty()) repository_.emplace(cfg_.repository);
}

std::vector<control::PolicyView> DaemonBackend::policies() const {
  std::vector<control::PolicyView> out;
  for (const auto& p : plane_.policies()) {
    const PolicySpec* spec = find_policy(p.name);
    out.push_back({p.slot, p.name, std::string(spec ? spec->summary : ""),
                   std::string(spec ? spec->pick_when : ""), std::string(policy_doc(p.name)), p.params});
  }
  return out;
}

Result<std::array<uint64_t, AKTS_MAX_PARAMS>> DaemonBackend::param_values(uint32_t slot) const {
  return plane_.param_values(slot);
}

Status DaemonBackend::set_param(uint32_t slot, const ParamDesc& d, uint64_t value) {
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

Result<uint32_t> DaemonBackend::select(uint32_t slot) {
  auto prev = reasoning_.operator_switch(slot, policy_name(slot));
  if (!prev) return prev.error();
  spdlog::info("switched slot {} -> {}", *prev, slot);
  persist_();  // before the answer: a daemon killed right after comes back with this selection
  return *prev;
}

Status DaemonBackend::hold(uint32_t slot, std::chrono::milliseconds d) {
  if (auto st = reasoning_.hold(slot, policy_name(slot), d); !st) return st;
  persist_();  // a hold selects its slot: kept like a switch
  spdlog::info("holding slot {} ({}) for {:.1f} s", slot, policy_name(slot), std::chrono::duration<double>(d).count());
  return {};
}

bool DaemonBackend::release() {
  bool was = reasoning_.release();
  if (was) spdlog::info("hold released");
  return was;
}

Result<json> DaemonBackend::controller(const std::optional<std::string>& name, std::optional<bool> dry_run) {
  if (auto st = reasoning_.configure(name, dry_run); !st) return st.error();
  if (name) spdlog::info("controller: {}{}", *name, reasoning_.state()["arbiter"]["dry_run"].get<bool>() ? " (dry run)" : "");
  return reasoning_.state();
}

json DaemonBackend::telemetry(size_t last) const {
  return {{"period_s", std::chrono::duration<double>(cfg_.reasoning.telemetry.period).count()},
          {"objective", reasoning_.objective().to_json()},
          {"health", health_()},
          {"windows", reasoning_.windows(last)}};
}

json DaemonBackend::policy_record(const std::string& name) const {
  if (!repository_) return nullptr;
  auto r = repository_->get(name);
  if (!r) {
    spdlog::warn("policy repository: {}", r.error().message);
    return nullptr;
  }
  return *r ? (*r)->to_json() : json(nullptr);
}

Result<json> DaemonBackend::admit(const AdmitRequest& r) {
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
  if (canary_.running())
    return errorf(ErrorKind::kBusy, "the canary of {} runs for {:.0f} s more; one canary at a time", canary_.name(),
                  std::chrono::duration<double>(canary_.remaining(std::chrono::steady_clock::now())).count());
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
    if (auto st = canary_.start(slot, name, rec, r.canary); !st) {
      gates.push_back({{"gate", "canary"}, {"passed", false}, {"detail", st.error().message}});
      return finish("canary");
    }
    spdlog::info("admitted {} ({}) into slot {}: its canary runs for {:.0f} s", name, r.object, slot,
                 std::chrono::duration<double>(r.canary).count());
    reasoning_.note("operator", "admit", fmt::format("admitted {} into slot {}; canary for {:.0f} s", name, slot,
                                                     std::chrono::duration<double>(r.canary).count()),
                    {{"object", r.object}, {"sha256", *sha}, {"slot", slot}});
    out["admitted"] = true;
    last_admission_ = finish(nullptr);
    last_admission_["canary"] = canary_.to_json();
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

json DaemonBackend::admission() const {
  if (last_admission_.is_null()) return nullptr;
  json a = last_admission_;
  if (json c = canary_.to_json(); !c.is_null()) a["canary"] = c;
  return a;
}

Result<json> DaemonBackend::evict(uint32_t slot) {
  std::string name = policy_name(slot);
  if (auto st = reasoning_.exclusive([&] { return plane_.evict(slot); }); !st) return st.error();
  reasoning_.note("operator", "evict", fmt::format("evicted {} from slot {}", name, slot), {{"slot", slot}});
  return json{{"slot", slot}, {"name", name}};
}

Result<size_t> DaemonBackend::record_result(const std::string& policy, const ResultRecord& r) {
  if (!repository_)
    return make_error(ErrorKind::kInvalidArgument, "the policy repository is off (config key \"repository\")");
  if (auto st = repository_->append_result(policy, r); !st) return st.error();
  auto rec = repository_->get(policy);
  if (!rec || !*rec) return size_t{0};
  spdlog::info("policy repository: a {} result for {} ({})", r.workload, policy, r.source);
  return (*rec)->results.size();
}

Status DaemonBackend::set_objective(const Objective& objective) {
  reasoning_.set_objective(objective);
  spdlog::info("objective: {}", objective.describe());
  return {};
}

json DaemonBackend::status() const {
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
                           : json(nullptr)},
          {"reload", reload_.state ? reload_.state() : json(nullptr)}};
}

Result<json> DaemonBackend::reload() {
  if (!reload_.reload) return errorf(ErrorKind::kUnsupported, "this daemon cannot reload");
  return reload_.reload();
}

Result<json> DaemonBackend::stats(bool reset_longest) {
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
  j["reload"] = reload_.state ? reload_.state() : json(nullptr);
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

Status DaemonBackend::classify(uint32_t pid, uint32_t cls) {
  auto st = tracker_.with_tracker([&](ProcessTracker& t) { return t.classify_explicit(pid, cls); });
  if (st) {
    tracker_.publish_now();
    persist_();  // before the answer, like a switch
  }
  return st;
}

Result<json> DaemonBackend::class_of(uint32_t pid) {
  auto k = plane_.get_class(pid);
  if (!k) return k.error();
  json managed = nullptr;
  if (json m = tracker_.find(pid); m.is_object()) managed = {{"class", m["class"]}, {"reason", m["reason"]}};
  return json{{"pid", pid},
              {"kernel_class", std::string(class_name(k->value_or(AKTS_CLASS_BE)))},
              {"kernel_entry", k->has_value()},
              {"managed", managed}};
}

Result<json> DaemonBackend::hint(uint32_t tid, std::optional<std::chrono::nanoseconds> remaining) {
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

Status DaemonBackend::unclassify(uint32_t pid) {
  auto st = tracker_.with_tracker([&](ProcessTracker& t) { return t.unclassify(pid); });
  if (st) {
    tracker_.publish_now();
    persist_();
  }
  return st;
}

std::string DaemonBackend::policy_name(uint32_t slot) const {
  for (const auto& p : plane_.policies())
    if (p.slot == slot) return p.name;
  return "";
}

json DaemonBackend::breaker_json() const {
  auto b = plane_.read_breaker();
  return b ? b->to_json() : json{{"error", b.error().to_string()}};
}

json DaemonBackend::guard_json() const {
  auto g = plane_.read_guard();
  return g ? g->params.to_json() : json{{"error", g.error().to_string()}};
}

void DaemonBackend::put_record(const PolicyRecord& rec) {
  if (!repository_) return;
  PolicyRecord r = rec;
  if (auto old = repository_->get(r.name); old && *old) r.results = (*old)->results;
  if (auto st = repository_->put(r); !st) spdlog::warn("policy repository: {}", st.error().message);
}

}  // namespace akts
