// The learner controller (learner.h): credit, estimates, choice, exploration, its state file.
#include "reasoning/learner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <stdio.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/atomic_file.h"
#include "common/text.h"
#include "reasoning/features.h"

namespace akts {
namespace {

constexpr int kStateVersion = 4;  // 1: counts without their ages; 2: octave bins; 3: no failed_until (read as 0)
// Miss rates this close are a tie (to the running policy): the same outcomes, aged apart, read apart.
constexpr double kMissTie = 0.05;

// A cell's fields as the state file names them (failed_until from version 4 on).
constexpr std::array<std::pair<const char*, double Learner::Cell::*>, 8> kCellFields = {{
    {"met", &Learner::Cell::met},
    {"missed", &Learner::Cell::missed},
    {"share_sum", &Learner::Cell::share_sum},
    {"share_n", &Learner::Cell::share_n},
    {"at", &Learner::Cell::at},
    {"tries", &Learner::Cell::tries},
    {"retry_at", &Learner::Cell::retry_at},
    {"failed_until", &Learner::Cell::failed_until},
}};

nlohmann::json cells_json(const Learner::Cells& c) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, field] : kCellFields) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& cell : c) a.push_back(cell.*field);
    j[key] = a;
  }
  return j;
}

// A policy's entry, checked whole: eight arrays (seven in a version 3 file) of kBins finite, non-negative numbers,
// sums within their counts.
std::optional<Learner::Cells> cells_from(const nlohmann::json& j, int64_t version) {
  if (!j.is_object()) return std::nullopt;
  Learner::Cells c{};
  for (const auto& [key, field] : kCellFields) {
    if (version < 4 && std::string_view(key) == "failed_until") continue;  // none then: no failure carried upward
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != Learner::kBins) return std::nullopt;
    for (size_t b = 0; b < Learner::kBins; ++b) {
      const auto& v = j[key][b];
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 1e12)
        return std::nullopt;
      c[b].*field = v.get<double>();
    }
  }
  for (const auto& cell : c)
    if (cell.share_sum > cell.share_n + 1e-9) return std::nullopt;  // a share is at most 1
  return c;
}

// Scales a cell's evidence down so it holds at most `cap` windows: newer windows keep weight.
void cap_evidence(Learner::Cell& c, double cap) {
  double n = c.met + c.missed;
  if (n > cap) {
    double k = cap / n;
    c.met *= k;
    c.missed *= k;
  }
  if (c.share_n > cap) {
    double k = cap / c.share_n;
    c.share_sum *= k;
    c.share_n *= k;
  }
}

// The weight left to counts last aged at `at`, at `now`: half per half-life (none lost to a clock that went back).
double age_factor(const Learner::Cell& c, double now, double half_life) {
  if (!(now > c.at) || !(half_life > 0)) return 1;
  return std::exp2(-(now - c.at) / half_life);
}

}  // namespace

Learner::Learner(LearnerOptions o) : o_(std::move(o)) {}

Learner::~Learner() {
  try {
    if (dirty_) save();
  } catch (const std::exception& e) {  // a thread that cannot start, memory: what was not written is lost, said once
    spdlog::warn("learner: the last state was not written: {}", e.what());
  }
  {
    std::lock_guard lk(wmu_);
    stop_ = true;
  }
  wcv_.notify_all();
  if (writer_.joinable()) writer_.join();  // it writes what is pending first
  if (!last_write_) spdlog::warn("learner: {}", last_write_.error().message);
}

const std::map<std::string, Learner::Cells>& Learner::cells() const {
  static const std::map<std::string, Cells> none;
  auto it = all_.find(objective_key_);
  return it == all_.end() ? none : it->second;
}

void Learner::warn_once(const std::string& what) {
  if (what == last_warning_) return;
  last_warning_ = what;
  spdlog::warn("learner: {}", what);
}

double Learner::load(const Window& w) { return Features::of(w, Objective{}).load; }

double Learner::peak_load(size_t windows) const {
  double peak = 0;
  size_t n = static_cast<size_t>(std::min<uint64_t>({loads_n_, windows, kLoadMemory}));
  for (size_t i = 0; i < n; ++i) peak = std::max(peak, loads_[(loads_n_ - 1 - i) % kLoadMemory]);
  return peak;
}

size_t Learner::bin_of(double load) {
  if (!(load >= 0.5)) return 0;  // NaN too
  double b = std::floor(2 * std::log2(load / 0.5)) + 1;  // [0.5, 0.71) -> 1, [0.71, 1) -> 2, [1, 1.41) -> 3, ...
  return static_cast<size_t>(std::clamp(b, 1.0, static_cast<double>(kBins - 1)));
}

Learner::Estimate Learner::estimate(const std::string& policy, size_t bin) const {
  Estimate e;
  const auto& all = cells();
  auto it = all.find(policy);
  if (it == all.end() || bin >= kBins) return e;
  const Cells& c = it->second;
  auto k = [&](size_t b) { return age_factor(c[b], now_s_, o_.half_life_s); };
  double met = 0, missed = 0;
  for (size_t b = bin; b < kBins; ++b) met += c[b].met * k(b);     // it met the objective at this load or above
  for (size_t b = 0; b <= bin; ++b) missed += c[b].missed * k(b);  // it missed at this load or below
  e.windows = met + missed;
  // The back-off here; and a failure at a lighter load holds here too, as its misses count here: a policy that
  // failed a lighter load is not explored at a heavier one before that back-off ends.
  if (c[bin].retry_at > now_s_) e.retry_here_s = c[bin].retry_at - now_s_;
  e.retry_in_s = e.retry_here_s;
  for (size_t b = 0; b < bin; ++b)
    if (c[b].failed_until > now_s_) e.retry_in_s = std::max(e.retry_in_s, c[b].failed_until - now_s_);
  e.known = e.windows >= o_.min_evidence;
  e.miss_rate = (missed + 1) / (e.windows + 2);
  e.good = e.known && (missed + 0.5) / (e.windows + 1) <= o_.miss_rate;
  // The batch share at this load, else at the nearest load it ran at.
  for (size_t d = 0; d < kBins; ++d) {
    for (size_t b : {bin - std::min(bin, d), bin + d}) {
      if (b < kBins && c[b].share_n * k(b) > 1e-9) {
        e.share = c[b].share_sum / c[b].share_n;  // a ratio: ageing scales both alike
        return e;
      }
    }
  }
  return e;
}

Learner::Cell& Learner::aged(const std::string& policy, size_t bin) {
  Cell& c = cells()[policy][std::min(bin, kBins - 1)];
  double k = age_factor(c, now_s_, o_.half_life_s);
  c.met *= k;
  c.missed *= k;
  c.share_sum *= k;
  c.share_n *= k;
  c.at = std::max(c.at, now_s_);
  return c;
}

void Learner::judge(const std::string& policy, size_t bin, Verdict v) {
  Cell& c = aged(policy, bin);
  c.tries += 1;
  c.retry_at = now_s_ + std::min(o_.retry_max_s, o_.retry_after_s * std::exp2(std::min(c.tries - 1, 60.0)));
  if (v == Verdict::kFailed) c.failed_until = c.retry_at;
  dirty_ = true;
}

void Learner::forget(const std::string& policy, size_t bin) {
  // What it knew at `bin` itself, forgotten: the retry is judged on its own windows (kept, a miss rate past
  // miss_rate would outvote any number of them that one exploration gathers). Other loads' evidence stays, and
  // with it their verdicts: misses at a lighter load still count here (a policy that misses there misses here),
  // so a retry here cannot lift a ban there. The verdicts here stay too, for the next back-off.
  Cell& c = aged(policy, bin);
  c.met = c.missed = 0;
  c.retry_at = 0;
  c.failed_until = 0;
  dirty_ = true;
}

void Learner::end_exploration(const std::string& policy, const char* how) {
  exploring_ = AKTS_SLOT_NONE;
  if (!first_exploration_end_) first_exploration_end_ = windows_;
  last_exploration_ = fmt::format("{} at bin {}: {}", policy, explore_bin_, how);
}

std::string Learner::name_of(const ControllerContext& ctx, uint32_t slot) const {
  for (const auto& s : ctx.slots)
    if (s.slot == slot) return s.name;
  return {};
}

void Learner::credit(const Window& w, const ControllerContext& ctx) {
  last_credit_missed_ = false;
  // A window counts as the effective slot's only when that slot ran all of it.
  if (!seen_a_window_) {
    seen_a_window_ = true;
    ran_slot_ = w.effective_slot;
    ran_ms_ = HUGE_VAL;  // it ran before the learner began: no switch of the learner's time to discount
  } else if (w.effective_slot != ran_slot_) {
    ran_slot_ = w.effective_slot;
    ran_ms_ = 0;
    return;
  }
  ran_ms_ += w.period_s * 1e3;
  // Once the application's load was seen, a window without it is on another scale: credited to nothing.
  if (app_seen_ && !w.app_requests_processing) return;
  std::string policy = name_of(ctx, w.effective_slot);
  if (policy.empty()) return;  // the built-in default: no policy of the library
  // What ended in the window (its p99), and the oldest still waiting at its end (a starved server's requests,
  // an LC task not run: they end nothing, so only their wait shows them).
  const Objective& obj = ctx.objective;
  const double period_ms = w.period_s > 0 ? w.period_s * 1e3 : 100;
  // Each limit's outcome, if it has one that is this policy's own:
  //   - a wait past the ceiling is a miss, once it is: its own when it began under this policy (waiting <=
  //     ran_ms), or when nothing ended in the window (no progress) and it has waited past the ceiling while
  //     this policy ran (ran_ms - a period > the ceiling); a backlog the last policy left, being answered, is
  //     not blamed on the one answering it;
  //   - else (no wait past the ceiling, or one that is not this policy's) the ended samples' p99, its own
  //     when they began under this policy (p99 + span <= ran_ms);
  //   - a wait still under the ceiling is no outcome (censored: it may yet end either side of it), and a window
  //     with nothing ended and nothing waiting is met at no load only.
  // Every limit is required: the window is a miss when one limit's own outcome is one (reaching back as far as
  // the furthest such miss); else met when one has an own outcome and no other limit is past its max with no
  // outcome of its own (one past it by no doing of this policy leaves the window with no outcome: it is not met),
  // reaching back as far as the furthest; else it has none. With one limit this is the rule above.
  std::optional<bool> met;
  double outcome_ms = 0;  // how far back the outcome reaches: the load it belongs to is the peak over it
  bool any_ended = false, any_waiting = false, any_past = false;
  for (const Limit& l : obj.limits) {
    auto ended = l.ended_ms(w);
    const double waiting = l.waiting_ms(w);
    const double span = l.span_ms(w);  // how long before the window's end the ended samples may have ended
    any_ended = any_ended || ended.has_value();
    any_waiting = any_waiting || waiting > 0;
    std::optional<bool> lm;
    double lo = 0;
    if (waiting > l.max_ms && (waiting <= ran_ms_ || (!ended && ran_ms_ - period_ms > l.max_ms))) {
      lm = false;
      lo = std::min(waiting, ran_ms_);
    } else if (ended && *ended + span <= ran_ms_) {
      lm = *ended <= l.max_ms;
      lo = *ended + span;
    }
    if (!lm) {
      any_past = any_past || !l.met(w);
      continue;
    }
    if (!*lm) {
      outcome_ms = met == std::optional<bool>(false) ? std::max(outcome_ms, lo) : lo;
      met = false;
    } else if (met != std::optional<bool>(false)) {
      outcome_ms = std::max(outcome_ms, lo);
      met = true;
    }
  }
  if (met == std::optional<bool>(true) && any_past) {
    met.reset();  // another limit is past its max, not by this policy's doing: no outcome either way
    outcome_ms = 0;
  }
  size_t k = static_cast<size_t>(std::ceil(outcome_ms / period_ms));
  const size_t bin = bin_of(peak_load(std::max<size_t>(k, 1)));
  Cell& c = aged(policy, bin);
  c.share_sum += std::clamp(w.batch_share(), 0.0, 1.0);
  c.share_n += 1;
  if (met) {
    (*met ? c.met : c.missed) += 1;
    last_credit_missed_ = !*met;
    last_credit_bin_ = bin;
    ++credited_;
  } else if (!any_ended && !any_waiting && bin == 0) {
    c.met += 1;  // nothing latency-critical to serve, and none waited
  }
  cap_evidence(c, o_.max_evidence);
  dirty_ = true;
}

std::string Learner::read_state(const Objective& obj) {
  std::error_code ec;
  if (!std::filesystem::exists(o_.state_path, ec) && !ec) return {};  // none yet: learning starts afresh
  if (!std::filesystem::is_regular_file(o_.state_path, ec)) {  // a folder, a FIFO (which would block), a device
    writable_ = false;
    return "not a regular file; left alone, learning in memory, not writing it";
  }
  std::ifstream f(o_.state_path, std::ios::binary);
  if (!f) {
    writable_ = false;
    return "cannot be read; learning in memory, not writing it";
  }
  std::string text;
  text.resize(kMaxFileBytes + 1);
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  if (text.size() > kMaxFileBytes) {
    writable_ = false;
    return fmt::format("larger than {} MiB: not a learner state file; left alone, learning in memory",
                       kMaxFileBytes >> 20);
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("format") || j["format"] != kFormat) {
    writable_ = false;
    return fmt::format("not a learner state file (no \"format\": \"{}\"); left alone, learning in memory",
                       kFormat);
  }
  // Ours: anything wrong from here on sets it aside.
  std::string why;
  std::map<std::string, std::map<std::string, Cells>> all;
  const int64_t version =
      j.contains("version") && j["version"].is_number_integer() ? j["version"].get<int64_t>() : int64_t{-1};
  if (version != kStateVersion && version != 3) {
    why = fmt::format("version {} is not {} (or 3)", j.contains("version") ? excerpt(j["version"].dump()) : "none",
                      kStateVersion);
  } else if (!j.contains("objectives") || !j["objectives"].is_object()) {
    why = "no \"objectives\" object";
  } else {
    for (const auto& [key, entry] : j["objectives"].items()) {
      if (key.size() > 1000 || !entry.is_object() || !entry.contains("policies") || !entry["policies"].is_object()) {
        why = fmt::format("objective {}: no \"policies\" object", excerpt(key));
        break;
      }
      for (const auto& [name, pj] : entry["policies"].items()) {
        auto c = name.size() <= 200 ? cells_from(pj, version) : std::nullopt;
        if (!c) {
          why = fmt::format("objective {}, policy \"{}\": not {} bins of counts", excerpt(key), excerpt(name), kBins);
          break;
        }
        all[key][name] = *c;
      }
      if (!why.empty()) break;
    }
  }
  if (why.empty()) {
    // Dated after this run's start (a clock that was ahead when it was written): as of now, and no back-off
    // longer than retry_max from now.
    for (auto& [key, policies] : all)
      for (auto& [name, cells] : policies)
        for (auto& c : cells) {
          c.at = std::min(c.at, now_s_);
          c.retry_at = std::min(c.retry_at, now_s_ + o_.retry_max_s);
          c.failed_until = std::min(c.failed_until, c.retry_at);
        }
    all_ = std::move(all);
    spdlog::info("learner: {} polic{} learnt for {} read from {}", cells().size(), cells().size() == 1 ? "y" : "ies",
                 obj.describe(), o_.state_path);
    return {};
  }
  // Set aside whole, never over an earlier one.
  std::string aside = o_.state_path + ".unreadable";
  for (int k = 1; std::filesystem::exists(aside, ec) && k <= 9; ++k) aside = fmt::format("{}.unreadable.{}", o_.state_path, k);
  if (std::filesystem::exists(aside, ec) ||
      ::renameat2(AT_FDCWD, o_.state_path.c_str(), AT_FDCWD, aside.c_str(), RENAME_NOREPLACE) != 0) {
    writable_ = false;
    return why + "; could not be set aside: left alone, learning in memory, not writing it";
  }
  return why + "; set aside as " + aside + ", learning afresh";
}

void Learner::load_state(const Objective& obj) {
  objective_key_ = obj.key();
  loaded_ = true;
  if (o_.state_path.empty() || !all_.empty() || !load_error_.empty() || !writable_) {
    cells();  // an objective new to it: its entry, empty
    return;   // read once: a later objective's entry is in all_ (or starts afresh)
  }
  std::string why;
  try {
    why = read_state(obj);
  } catch (const std::exception& e) {  // a type the checks above missed: the file is not usable
    writable_ = false;
    why = std::string("unusable (") + e.what() + "); left alone, learning in memory, not writing it";
  }
  if (!why.empty()) {
    load_error_ = o_.state_path + ": " + why;
    warn_once(load_error_);
  }
  cells();
}

void Learner::save() {
  if (o_.state_path.empty() || !loaded_ || !writable_) return;
  nlohmann::json objectives = nlohmann::json::object();
  for (const auto& [key, policies] : all_) {
    nlohmann::json pj = nlohmann::json::object();
    for (const auto& [name, c] : policies) pj[name] = cells_json(c);
    objectives[key] = {{"policies", pj}};
  }
  nlohmann::json doc = {{"format", kFormat}, {"version", kStateVersion}, {"objectives", objectives}};
  {
    std::lock_guard lk(wmu_);
    pending_ = doc.dump(1) + "\n";
    if (!writer_.joinable()) writer_ = std::thread([this] { writer_loop(); });
  }
  wcv_.notify_all();
  dirty_ = false;
  since_save_ = 0;
}

void Learner::writer_loop() {
  std::unique_lock lk(wmu_);
  while (true) {
    wcv_.wait(lk, [&] { return stop_ || pending_.has_value(); });
    if (!pending_) return;  // stopping, nothing left
    std::string text = std::move(*pending_);
    pending_.reset();
    writing_ = true;
    lk.unlock();
    Status st = write_file_atomically(o_.state_path, text, {.mode = 0600, .make_dir = true});
    lk.lock();
    writing_ = false;
    last_write_ = st;
    wcv_.notify_all();
  }
}

Status Learner::wait_saved() {
  std::unique_lock lk(wmu_);
  wcv_.wait(lk, [&] { return !pending_ && !writing_; });
  return last_write_;
}

ControllerDecision Learner::decide(const Window& w, const ControllerContext& ctx) {
  ++windows_;
  // The clock evidence ages by: the wall-clock time of its first window (0 without one), then the windows'
  // periods, so a step of the wall clock during a run (NTP) neither freezes nor rushes it.
  if (!clock_started_) {
    clock_started_ = true;
    now_s_ = w.unix_s > 0 ? w.unix_s : 0;
  } else {
    now_s_ += std::isfinite(w.period_s) ? std::clamp(w.period_s, 0.0, 3600.0) : 0;
  }
  if (!loaded_ || ctx.objective.key() != objective_key_) {
    if (loaded_ && dirty_) {
      try {
        save();
      } catch (const std::exception& e) {
        warn_once(std::string("cannot write its state: ") + e.what());
      }
    }
    load_state(ctx.objective);
  }
  // The window's load: the application's, or its last figure while a window lacks it (another scale).
  double raw = load(w);
  if (w.app_requests_processing) {
    app_seen_ = true;
    last_app_load_ = raw;
  } else if (app_seen_) {
    raw = last_app_load_;
  }
  loads_[loads_n_++ % kLoadMemory] = raw;
  credit(w, ctx);
  if (dirty_ && ++since_save_ >= o_.save_every) {
    try {
      save();
    } catch (const std::exception& e) {  // a writer thread that cannot start: tried again at the next save
      warn_once(std::string("cannot write its state: ") + e.what());
      since_save_ = 0;
    }
    std::lock_guard lk(wmu_);
    if (!last_write_) warn_once(last_write_.error().message);
  }
  // The load decided on: the peak of the last load_hold windows.
  last_load_ = peak_load(o_.load_hold);
  const size_t bin = bin_of(last_load_);
  bin_stable_for_ = bin == last_bin_ ? bin_stable_for_ + 1 : 0;
  last_bin_ = bin;
  running_name_ = name_of(ctx, ctx.running);
  if (ctx.slots.empty()) return {std::nullopt, "no filled slot"};

  auto est = [&](uint32_t slot) { return estimate(name_of(ctx, slot), bin); };
  auto label = [&](uint32_t slot) { return fmt::format("slot {} ({})", slot, name_of(ctx, slot)); };
  const std::string where = fmt::format("load {:.2g} (bin {})", last_load_, bin);

  // An exploration runs its course: until the policy is known at the load it began at, for explore_max windows
  // at most; it ends early at its first miss, when the load leaves its bin, or on the early signal of a wait.
  // Each way but "known good" is a verdict (the back-off); only a miss of its own is counted.
  // Back from an exploration that did not show its policy good: proposed until it is done (the arbiter may
  // refuse it for a while: min_dwell, a lock), or something else moves the selection, or the slot is refilled.
  if (returning_) {
    if (ctx.running != exploring_was_ || name_of(ctx, explore_from_) != explore_from_name_ ||
        !ctx.filled(explore_from_)) {
      returning_ = false;
    } else if (!ctx.locked) {
      return {explore_from_, fmt::format("exploration of {} ended ({}): back to {}", label(exploring_was_),
                                         last_exploration_, label(explore_from_))};
    } else {
      return {std::nullopt, fmt::format("locked: the exploration of {} ended ({}), back to {} when unlocked",
                                        label(exploring_was_), last_exploration_, label(explore_from_))};
    }
  }
  if (exploring_ != AKTS_SLOT_NONE) {
    const uint32_t q = exploring_;
    const std::string qn = explore_name_;
    // The early signal: a limit whose oldest still waiting has passed early_wait of its max, in a wait that began
    // under the policy explored (the switch's own window counts: it ran partly under it, and this ends nothing but
    // the exploration). Not the engine's queue-time histogram: a queue wait is observed as it ends (vLLM's and
    // TGI's with the request), so it comes no earlier than the first token it is part of.
    bool early = false;
    const double reach_ms = ran_ms_ + (w.period_s > 0 ? w.period_s * 1e3 : 100);
    for (const Limit& l : ctx.objective.limits)
      if (double lw = l.waiting_ms(w); lw > o_.early_wait * l.max_ms && lw <= reach_ms) early = true;
    if (ctx.running == q && explore_forget_) {
      // A retry: once it runs (the arbiter took the proposal), what it knew at this load is forgotten.
      explore_forget_ = false;
      forget(qn, explore_bin_);
    }
    if (ctx.running != q || !ctx.filled(q) || name_of(ctx, q) != qn) {
      // Not the policy's doing (a person, the breaker, a refused proposal): no count; a verdict only when a lock
      // (the breaker's, an operator's) took it away, which it may have earned.
      if (ctx.locked && ctx.filled(q) && name_of(ctx, q) == qn) judge(qn, explore_bin_);
      end_exploration(qn, "something else moved the selection");
    } else if (last_credit_missed_ && w.effective_slot == q) {
      // The experiment's answer: a miss of its own, at the load it was credited at (credit() counted one).
      Cell& c = aged(qn, last_credit_bin_);
      c.missed += o_.min_evidence > 0 ? o_.min_evidence - 1 : 0;
      cap_evidence(c, o_.max_evidence);
      judge(qn, last_credit_bin_, Verdict::kFailed);
      if (last_credit_bin_ != explore_bin_) judge(qn, explore_bin_, Verdict::kFailed);
      end_exploration(qn, fmt::format("a miss of its own, counted at bin {}", last_credit_bin_).c_str());
    } else if (!ctx.objective.met(w)) {
      judge(qn, explore_bin_);  // not its own (it began before the switch): a verdict without a count
      end_exploration(qn, "a miss that is not its own: backing off, nothing counted");
    } else if (bin > explore_bin_) {
      judge(qn, explore_bin_);  // it rose: the load moved, or the policy moved it (a closed loop)
      end_exploration(qn, "the load rose out of its bin: backing off, nothing counted");
    } else if (bin < explore_bin_) {
      end_exploration(qn, "the load fell out of its bin: nothing counted");  // no verdict: a lighter load
    } else if (w.effective_slot == q && early) {
      judge(qn, explore_bin_, Verdict::kFailed);
      end_exploration(qn, "a wait that began under it passed the early signal: backing off, nothing counted");
    } else if (Estimate e = estimate(qn, explore_bin_); e.known) {
      if (!e.good) judge(qn, explore_bin_, Verdict::kFailed);
      end_exploration(qn, e.good ? "known good" : "known not to serve it");
    } else if (explore_left_ <= 1) {
      judge(qn, explore_bin_);
      end_exploration(qn, "out of windows before it was known: backing off");
    } else {
      --explore_left_;
      return {std::nullopt, fmt::format("exploring {} at {}: {} window(s) left", label(q), where, explore_left_)};
    }
    // Back to the policy it left, unless it was shown good or something else moved the selection: the load it
    // is back to may be one the exploration raised (a closed loop), where the choice below knows nothing yet.
    if (ctx.running == q && explore_from_ != q && ctx.filled(explore_from_) &&
        name_of(ctx, explore_from_) == explore_from_name_ && !estimate(qn, explore_bin_).good) {
      returning_ = true;
      exploring_was_ = q;
      if (!ctx.locked)
        return {explore_from_, fmt::format("exploration of {} ended ({}): back to {}", label(q), last_exploration_,
                                           label(explore_from_))};
    }
    // Else on to the choice below: the best policy known good here, else the least expected to miss.
  }
  // Verdicts reached by running: a policy known here not to serve backs off here (once a verdict); one that
  // serves here has no verdict against it here.
  for (const auto& s : ctx.slots) {
    Estimate e = est(s.slot);
    Cell& c = aged(s.name, bin);
    if (e.known && !e.good && c.retry_at == 0) {
      judge(s.name, bin, Verdict::kFailed);
    } else if (e.good) {
      // It serves here: no verdict against it here, and a failure at a lighter load no longer holds above it.
      if (c.tries > 0 || c.retry_at > 0) {
        c.tries = 0;
        c.retry_at = 0;
        c.failed_until = 0;
        dirty_ = true;
      }
      auto& cs = cells()[s.name];
      for (size_t b = 0; b < bin; ++b)
        if (cs[b].failed_until > 0) {
          cs[b].failed_until = 0;
          dirty_ = true;
        }
    }
  }

  // The choice: the good policy with the most batch work. With none good: the running policy stays until it
  // is known here (min_evidence windows of evidence: it is being gathered, and two unknowns do not trade
  // places), unless it has missed more than met here; then, or once it is known not to be good, a policy not
  // yet known here and not missing more than meeting here is tried (the one with the most batch work), as only
  // trying can show it good; with no such policy, the one least expected to miss, ties to the running policy,
  // then to batch work, and between two policies known here only by a margin of miss_rate.
  std::optional<uint32_t> best_good, least_miss, unknown;
  Estimate bg, lm, un;
  std::vector<Estimate> ests;  // each slot's, once (after the verdicts above, which move retry_in_s)
  ests.reserve(ctx.slots.size());
  for (const auto& s : ctx.slots) ests.push_back(est(s.slot));
  for (size_t i = 0; i < ctx.slots.size(); ++i) {
    const auto& s = ctx.slots[i];
    const Estimate& e = ests[i];
    const bool running = s.slot == ctx.running;
    if (e.good && (!best_good || e.share > bg.share || (e.share == bg.share && running))) {
      best_good = s.slot;
      bg = e;
    }
    // With none good, only a back-off here holds it back: a failure at a lighter load is no reason not to try
    // the one policy not yet known here when all the known ones miss.
    if (!e.known && !running && e.miss_rate <= 0.5 && e.retry_here_s <= 0 && (!unknown || e.share > un.share)) {
      unknown = s.slot;
      un = e;
    }
  }
  // The least expected to miss: of those within kMissTie of the lowest miss rate (evidence of one outcome, aged
  // apart, reads apart), the running policy, else the one with the most batch work.
  double lowest = 1;
  for (const auto& e : ests) lowest = std::min(lowest, e.miss_rate);
  for (size_t i = 0; i < ctx.slots.size(); ++i) {
    const auto& s = ctx.slots[i];
    const Estimate& e = ests[i];
    if (e.miss_rate > lowest + kMissTie) continue;
    const bool running = s.slot == ctx.running;
    if (!least_miss || running || (*least_miss != ctx.running && e.share > lm.share)) {
      least_miss = s.slot;
      lm = e;
    }
  }
  Estimate run = est(ctx.running);
  bool running_filled = ctx.filled(ctx.running);
  uint32_t choice = ctx.running;
  std::string why;
  if (best_good) {
    choice = *best_good;
    why = fmt::format("{} is expected to meet the objective at {} (miss rate {:.2f} over {:.0f} windows) with batch "
                      "share {:.2f}",
                      label(choice), where, bg.miss_rate, bg.windows, bg.share);
  } else if (running_filled && !run.known && run.miss_rate <= 0.5) {
    why = fmt::format("none is known to meet the objective at {}: {} running is not known here yet ({:.0f} of {} "
                      "windows)",
                      where, label(choice), run.windows, o_.min_evidence);
  } else if (unknown) {
    choice = *unknown;
    why = fmt::format("none is known to meet the objective at {}: {} is not known here yet ({:.0f} windows), the "
                      "running policy is known to miss (rate {:.2f})",
                      where, label(choice), un.windows, run.miss_rate);
  } else if (running_filled && *least_miss != ctx.running && run.known && lm.known &&
             lm.miss_rate > run.miss_rate - o_.miss_rate) {
    // Known to miss alike: the evidence each gathers while it runs would trade them back and forth.
    why = fmt::format("none is known to meet the objective at {}: {} running misses ({:.2f}) within {:.2f} of the "
                      "least expected to miss, {} ({:.2f})",
                      where, label(ctx.running), run.miss_rate, o_.miss_rate, label(*least_miss), lm.miss_rate);
  } else {
    choice = *least_miss;
    why = fmt::format("none is known to meet the objective at {}: {} is the least expected to miss ({:.2f} over {:.0f} "
                      "windows)",
                      where, label(choice), lm.miss_rate, lm.windows);
  }
  if (choice != ctx.running && running_filled && run.good && best_good && bg.share <= run.share * (1 + o_.min_gain)) {
    preferred_for_ = 0;
    return {std::nullopt, fmt::format("stay: {} running is good too, and {} gives batch work no more than {:.0f}% more",
                                      label(ctx.running), label(choice), 100 * o_.min_gain)};
  }
  if (choice != ctx.running && running_filled && run.good && best_good) {
    // From a good policy to a better one only when preferred relax_after windows in a row.
    if (preferred_ != choice) preferred_for_ = 0;
    preferred_ = choice;
    if (++preferred_for_ < o_.relax_after) {
      return {std::nullopt, fmt::format("{}; {} running is good too: preferred {} of {} windows", why,
                                        label(ctx.running), preferred_for_, o_.relax_after)};
    }
  }
  if (choice != ctx.running) {
    preferred_for_ = 0;
    if (ctx.locked) return {std::nullopt, "locked: " + why};
    return {choice, why};
  }
  preferred_for_ = 0;
  // Staying: explore a policy with more batch work that is unknown here, when all is well and it is time.
  if (!ctx.locked && ctx.objective.met(w) && windows_ - last_explore_ >= o_.explore_every &&
      bin_stable_for_ >= o_.explore_stable) {
    for (const auto& s : ctx.slots) {
      Estimate e = est(s.slot);
      if (s.slot == ctx.running || e.good || e.retry_in_s > 0 || e.share <= est(ctx.running).share) continue;
      // Unknown here, or judged here and its back-off over: tried again (its evidence here scaled to unknown).
      const bool retry = e.known;
      explore_forget_ = retry;  // at its first window that it runs
      exploring_ = s.slot;
      explore_from_ = ctx.running;
      explore_from_name_ = name_of(ctx, ctx.running);
      returning_ = false;
      explore_name_ = s.name;
      explore_bin_ = bin;
      explore_left_ = o_.explore_max;  // the windows it runs, this decision's next one the first
      last_explore_ = windows_;
      ++explorations_;
      return {s.slot, fmt::format("explore {} at {}: batch share {:.2f} against {:.2f}, {}", label(s.slot), where,
                                  e.share, est(ctx.running).share,
                                  retry ? fmt::format("tried again after {:.0f} verdict(s)", aged(s.name, bin).tries)
                                        : fmt::format("{:.1f} windows known", e.windows))};
    }
  }
  return {std::nullopt, "stay: " + why};
}

nlohmann::json Learner::state() const {
  nlohmann::json policies = nlohmann::json::object();
  for (const auto& [name, c] : cells()) {
    Estimate e = estimate(name, last_bin_);
    policies[name] = {{"windows_here", e.windows},
                      {"miss_rate_here", e.miss_rate},
                      {"good_here", e.good},
                      {"batch_share_here", e.share},
                      {"verdicts_here", last_bin_ < kBins ? c[last_bin_].tries : 0},
                      {"retry_in_s", e.retry_in_s},
                      {"retry_here_s", e.retry_here_s}};
  }
  return {{"load", last_load_},
          {"bin", last_bin_},
          {"running_policy", running_name_.empty() ? nlohmann::json(nullptr) : nlohmann::json(running_name_)},
          {"policies", policies},
          {"explorations", explorations_},
          {"exploring", exploring_ == AKTS_SLOT_NONE ? nlohmann::json(nullptr) : nlohmann::json(exploring_)},
          {"first_exploration_ended_at_window",
           first_exploration_end_ ? nlohmann::json(*first_exploration_end_) : nlohmann::json(nullptr)},
          {"last_exploration", last_exploration_.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_exploration_)},
          {"clock_s", now_s_},
          {"credited_windows", credited_},
          {"state_path", o_.state_path.empty() ? nlohmann::json(nullptr) : nlohmann::json(o_.state_path)},
          {"state_error", load_error_.empty() ? nlohmann::json(nullptr) : nlohmann::json(load_error_)}};
}

}  // namespace akts
