// The reasoning plane's period: windows, outcomes, the controller's decision
// through the arbiter, and the decision log's records.
#include "reasoning/reasoning_plane.h"

#include <fmt/format.h>

#include "common/text.h"

namespace akts {
namespace {

using nlohmann::json;

// A model's raw answer as the log keeps it: at most 256 bytes, valid UTF-8,
// control bytes as '?' (escaped, each would take six bytes in every reader).
std::string printable(const std::string& raw) {
  std::string s = excerpt(raw, 256);
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json slot_json(std::optional<uint32_t> s) {
  return s && *s != AKTS_SLOT_NONE ? json(*s) : json(nullptr);
}
// A refusal's kind: its text up to the first figure ("held at slot ", "minimum dwell: the selection changed "),
// so repeats of one refusal are counted, not logged each period.
std::string kind_of(const std::string& reason) { return reason.substr(0, reason.find_first_of("0123456789")); }

}  // namespace

ReasoningPlane::ReasoningPlane(ReasoningOptions o, Arbiter::Plane plane,
                               std::function<std::vector<SlotInfo>()> slots, ControllerFactory factory)
    : o_(std::move(o)),
      arbiter_(std::move(plane), o_.arbiter),
      slots_(std::move(slots)),
      factory_(std::move(factory)),
      log_(o_.log) {}

ReasoningPlane::~ReasoningPlane() = default;

json ReasoningPlane::summary(const Window& w) const {
  // observed_ms: the binding limit's (the one nearest or furthest past its max); each limit's margin in "limits".
  const Limit* binding = o_.objective.binding(w);
  return {{"seq", w.seq},
          {"t_s", w.t_s},
          {"lc_wait_p99_ms", opt(w.wait_p99_ms[AKTS_CLASS_LC])},
          {"lc_oldest_wait_ms", w.oldest_wait_ms[AKTS_CLASS_LC]},
          {"observed_ms", binding ? opt(binding->observed_ms(w)) : json(nullptr)},
          {"binding", binding ? json(binding->name()) : json(nullptr)},
          {"limits", o_.objective.limits_in(w)},
          {"met", o_.objective.met(w)},
          {"reward", o_.objective.reward(w)},
          {"batch_share", w.batch_share()},
          {"cpu_pressure", w.cpu_pressure},
          {"cpu_util", w.cpu_util},
          {"runnable", w.runnable},
          {"app_requests_processing", opt(w.app_requests_processing)},
          {"app_requests_waiting", opt(w.app_requests_waiting)},
          {"app_latency_p99_ms", opt(w.app_latency_p99_ms)},
          {"app_tpot_p99_ms", opt(w.app_tpot_p99_ms)},
          {"effective", slot_json(w.effective_slot)}};
}

void ReasoningPlane::record(json rec, const std::optional<Window>& at) {
  ++decisions_;
  if (at) rec["window"] = summary(*at);
  rec["selected_after"] = slot_json(arbiter_.selected());
  uint64_t id = log_.decision(std::move(rec));
  if (at) pending_.push_back({id, at->seq});
}

void ReasoningPlane::on_window(const Window& w, Clock::time_point now) {
  std::vector<std::unique_ptr<Controller>> retired;
  {
    std::lock_guard lock(mu_);
    retired.swap(retired_);
  }
  retired.clear();  // an llm controller joins its worker here, off the socket thread

  std::lock_guard lock(mu_);
  windows_.push_back(w);
  while (windows_.size() > o_.windows_kept) windows_.pop_front();
  for (auto it = pending_.begin(); it != pending_.end();) {
    uint64_t k = w.seq > it->seq ? w.seq - it->seq : 0;
    if (k == 1 || k == 5) {
      const Limit* binding = o_.objective.binding(w);
      log_.outcome(it->id, {{"after_periods", k},
                            {"observed_ms", binding ? opt(binding->observed_ms(w)) : json(nullptr)},
                            {"binding", binding ? json(binding->name()) : json(nullptr)},
                            {"limits", o_.objective.limits_in(w)},
                            {"met", o_.objective.met(w)},
                            {"reward", o_.objective.reward(w)},
                            {"batch_share", w.batch_share()},
                            {"effective", slot_json(w.effective_slot)}});
    }
    it = k >= 5 ? pending_.erase(it) : it + 1;
  }
  // A controller put in place since this window began waits for the next, after the one it replaced is gone (a
  // learner reads the state file its predecessor writes as it goes).
  if (!controller_ || !retired_.empty()) return;

  ControllerContext ctx;
  ctx.slots = slots_();
  ctx.running = w.effective_slot;
  std::string lock_why;
  ctx.locked = arbiter_.locked(now, &lock_why);
  ctx.objective = o_.objective;
  ControllerDecision dec = controller_->decide(w, ctx);
  if (!dec.slot && !dec.refused) {
    // A streak ends with a window that proposes nothing, except that a slow
    // controller's quiet windows between two answers do not end a streak of
    // refused answers (a dead endpoint must not log every question); an
    // answer it accepts, agrees with or discards does.
    if (last_ && (!last_->refused_output || dec.answer)) last_.reset();
    return;
  }

  json rec = {{"source", controller_->name()},
              {"raw", dec.raw ? json(printable(*dec.raw)) : json(nullptr)},
              {"proposed", slot_json(dec.slot)},
              {"why", dec.why},
              {"dry_run", arbiter_.dry_run()}};
  Arbiter::Verdict v;
  if (dec.refused) {
    ++refused_outputs_;
    v = {false, "refused: the controller's output is not a filled slot; the selection stays", "invalid_output"};
  } else if (!ctx.filled(*dec.slot)) {
    ++refused_outputs_;
    v = {false, fmt::format("refused: slot {} is not a filled slot; the selection stays", *dec.slot),
         "invalid_output"};
  } else {
    v = arbiter_.controller_proposes(*dec.slot, now);
  }
  if (v.applied) ++applied_;
  ++verdicts_[v.kind];  // repeats too: the log counts them once, the counters each time
  // A proposal (or a refused answer: a dead endpoint, a model that keeps
  // saying "0.3") refused for the same reason window after window is logged
  // once, then counted.
  Last cur{controller_->name(), dec.slot,
           v.applied ? std::string("applied") : dec.refused ? "refused: " + dec.refusal : kind_of(v.reason),
           dec.refused};
  bool repeat = !v.applied && last_ && last_->source == cur.source && last_->proposed == cur.proposed &&
                last_->verdict_kind == cur.verdict_kind;
  last_ = cur;
  if (repeat) {
    ++suppressed_;
    return;
  }
  rec["applied"] = v.applied;
  rec["verdict"] = v.reason;
  record(std::move(rec), w);
}

std::optional<Window> ReasoningPlane::last_window() const {
  return windows_.empty() ? std::nullopt : std::optional<Window>(windows_.back());
}

Status ReasoningPlane::set_controller(const std::string& name, const std::string& source) {
  return configure(name, std::nullopt, source);
}

Status ReasoningPlane::configure(const std::optional<std::string>& name, std::optional<bool> dry_run,
                                 const std::string& source) {
  std::unique_ptr<Controller> next;
  if (name && *name != "none") {
    auto c = factory_(*name, slots_());  // outside the lock: an llm controller starts a thread
    if (!c) return c.error();
    next = std::move(*c);
  }
  std::lock_guard lock(mu_);
  if (dry_run) set_dry_run_locked(*dry_run, source);
  if (name) replace_controller_locked(std::move(next), *name, source, "");
  return {};
}

void ReasoningPlane::install_controller(ControllerFactory factory, std::unique_ptr<Controller> next,
                                        const std::string& source) {
  std::lock_guard lock(mu_);
  factory_ = std::move(factory);
  std::string name = next ? next->name() : "none";
  replace_controller_locked(std::move(next), name, source, " (its settings from the config)");
}

void ReasoningPlane::replace_controller_locked(std::unique_ptr<Controller> next, const std::string& name,
                                               const std::string& source, const std::string& note) {
  std::string prev = controller_ ? controller_->name() : "none";
  if (controller_) retired_.push_back(std::move(controller_));
  controller_ = std::move(next);
  last_.reset();
  record({{"source", source},
          {"action", "controller"},
          {"why", fmt::format("controller {} -> {}{}", prev, name, note)},
          {"applied", true},
          {"verdict", "applied"},
          {"dry_run", arbiter_.dry_run()}},
         last_window());
}

void ReasoningPlane::set_arbiter_options(const ArbiterOptions& o, const std::string& source) {
  std::lock_guard lock(mu_);
  set_dry_run_locked(o.dry_run, source);
  arbiter_.set_options(o);
}

std::string ReasoningPlane::controller_name() const {
  std::lock_guard lock(mu_);
  return controller_ ? controller_->name() : "none";
}

Objective ReasoningPlane::objective() const {
  std::lock_guard lock(mu_);
  return o_.objective;
}

void ReasoningPlane::set_objective(const Objective& objective, const std::string& source) {
  std::lock_guard lock(mu_);
  json before = o_.objective.to_json();
  o_.objective = objective;
  record({{"source", source},
          {"action", "objective"},
          {"why", "objective: " + objective.describe()},
          {"objective_before", before},
          {"objective", objective.to_json()},
          {"applied", true},
          {"verdict", "applied"}},
         last_window());
}

void ReasoningPlane::set_dry_run(bool on) {
  std::lock_guard lock(mu_);
  set_dry_run_locked(on);
}

void ReasoningPlane::set_dry_run_locked(bool on, const std::string& source) {
  if (arbiter_.dry_run() == on) return;
  arbiter_.set_dry_run(on);
  last_.reset();
  record({{"source", source},
          {"action", "dry_run"},
          {"why", on ? "dry run on: controllers' decisions are logged, not applied" : "dry run off"},
          {"applied", true},
          {"verdict", "applied"},
          {"dry_run", on}},
         last_window());
}

Result<uint32_t> ReasoningPlane::operator_switch(uint32_t slot, const std::string& policy, Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto prev = arbiter_.operator_switch(slot, now);
  std::string verdict = prev ? fmt::format("applied; controllers wait {:g} s",
                                           std::chrono::duration<double>(arbiter_.options().operator_grace).count())
                             : prev.error().message;
  if (prev && arbiter_.override_active()) verdict += "; the breaker's override still decides what runs";
  // Refused: nothing changed, and the slot selected now is the one before and after.
  const uint32_t before = prev ? *prev : arbiter_.selected();
  record({{"source", "operator"},
          {"action", "switch"},
          {"proposed", slot_json(slot)},
          {"previous", before},
          {"why", fmt::format("switch {} -> {} ({})", before, slot, policy.empty() ? "no policy" : policy)},
          {"applied", static_cast<bool>(prev)},
          {"verdict", verdict},
          {"dry_run", false}},
         last_window());
  return prev;
}

void ReasoningPlane::note(const std::string& source, const std::string& action, const std::string& why,
                          const json& extra) {
  std::lock_guard lock(mu_);
  json rec = {{"source", source}, {"action", action}, {"why", why}, {"applied", true}, {"dry_run", false}};
  for (const auto& [k, v] : extra.items()) rec[k] = v;
  record(std::move(rec), last_window());
}

Status ReasoningPlane::hold(uint32_t slot, const std::string& policy, std::chrono::milliseconds d,
                            Clock::time_point now) {
  std::lock_guard lock(mu_);
  auto st = arbiter_.hold(slot, d, now);
  record({{"source", "operator"},
          {"action", "hold"},
          {"proposed", slot_json(slot)},
          {"why", fmt::format("hold slot {} ({}) for {:g} s", slot, policy,
                              std::chrono::duration<double>(d).count())},
          {"applied", st.ok()},
          {"verdict", st.ok() ? std::string("applied") : st.error().message},
          {"dry_run", false}},
         last_window());
  return st;
}

bool ReasoningPlane::release_hold_on(uint32_t slot, Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (!arbiter_.release_hold_on(slot, now)) return false;
  record({{"source", "operator"},
          {"action", "release"},
          {"why", fmt::format("the hold on slot {} ended early", slot)},
          {"applied", true},
          {"verdict", "applied"},
          {"dry_run", false}},
         last_window());
  return true;
}

bool ReasoningPlane::release(Clock::time_point now) {
  std::lock_guard lock(mu_);
  bool was = arbiter_.release(now);
  if (!was) return false;  // nothing to release: not a decision (a polling script must not flood the log)
  record({{"source", "operator"},
          {"action", "release"},
          {"why", "hold (or operator's grace) released"},
          {"applied", true},
          {"verdict", "applied"},
          {"dry_run", false}},
         last_window());
  return was;
}

std::optional<Window> ReasoningPlane::latest() const {
  std::lock_guard lock(mu_);
  if (windows_.empty()) return std::nullopt;
  return windows_.back();
}

json ReasoningPlane::windows(size_t limit) const {
  std::lock_guard lock(mu_);
  json out = json::array();
  size_t start = windows_.size() > limit ? windows_.size() - limit : 0;
  for (size_t i = start; i < windows_.size(); ++i) out.push_back(windows_[i].to_json());
  return out;
}

json ReasoningPlane::verdicts_json() const {
  json j = json::object();
  for (const char* k : kVerdictKinds) {
    auto it = verdicts_.find(k);
    j[k] = it == verdicts_.end() ? 0 : it->second;
  }
  return j;
}

json ReasoningPlane::state(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  return {{"controller", controller_ ? controller_->name() : "none"},
          {"controller_state", controller_ ? controller_->state() : json(nullptr)},
          {"objective", o_.objective.to_json()},
          // Each limit in the latest window, with its margin (null before the first window).
          {"objective_now", windows_.empty() ? json(nullptr) : o_.objective.limits_in(windows_.back())},
          {"arbiter", arbiter_.state(now)},
          {"decisions", decisions_},
          {"applied", applied_},
          {"refused_outputs", refused_outputs_},
          {"verdicts", verdicts_json()},
          {"repeats_not_logged", suppressed_},
          {"log", log_.state()}};
}

}  // namespace akts
