// Rendering the daemon's v1.stats answer as Prometheus / OpenMetrics text.
#include "metrics/exposition.h"

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "akts.h"
#include "common/text.h"
#include "telemetry/stats.h"

namespace akts::metrics {
namespace {

using json = nlohmann::json;
using Labels = std::vector<std::pair<std::string, std::string>>;

// A field of the stats answer that is there but not what it should be.
struct Malformed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string path_text(std::initializer_list<std::string_view> path) {
  std::string s;
  for (auto p : path) s += fmt::format("/{}", p);
  return s;
}

// The value at `path` (object keys), or nullptr when a key is missing or the value is null.
const json* find(const json& j, std::initializer_list<std::string_view> path) {
  const json* cur = &j;
  for (auto key : path) {
    if (!cur->is_object()) throw Malformed(fmt::format("{} is not an object", path_text(path)));
    auto it = cur->find(key);
    if (it == cur->end() || it->is_null()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::optional<double> num(const json& j, std::initializer_list<std::string_view> path) {
  const json* v = find(j, path);
  if (!v) return std::nullopt;
  if (v->is_boolean()) return v->get<bool>() ? 1.0 : 0.0;
  if (!v->is_number()) throw Malformed(fmt::format("{} is not a number", path_text(path)));
  return v->get<double>();
}

std::vector<double> numbers(const json& j, std::initializer_list<std::string_view> path) {
  const json* v = find(j, path);
  if (!v) return {};
  if (!v->is_array()) throw Malformed(fmt::format("{} is not a list", path_text(path)));
  std::vector<double> out;
  for (const auto& e : *v) {
    if (!e.is_number()) throw Malformed(fmt::format("{} holds a non-number", path_text(path)));
    out.push_back(e.get<double>());
  }
  return out;
}

std::string escape_label(std::string_view v) {
  std::string out;
  for (char c : valid_utf8(v)) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

// The text format escapes \\ and newlines in HELP; OpenMetrics double quotes too.
std::string escape_help(std::string_view v, Format f) {
  std::string out;
  for (char c : valid_utf8(v)) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && f == Format::kOpenMetrics) out += "\\\"";
    else out += c;
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // Counts (up to 2^53) print as integers, everything else as the shortest text that reads back the same.
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

// Families, each its HELP and TYPE lines and then its samples, in either format.
class Writer {
 public:
  explicit Writer(Format f) : f_(f) {}

  // `name` is the sample name: a counter's ends in _total, an info's in _info.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    std::string fam(name), t(type);
    if (f_ == Format::kOpenMetrics) {
      if (t == "counter" && fam.ends_with("_total")) fam.resize(fam.size() - 6);
      if (t == "info" && fam.ends_with("_info")) fam.resize(fam.size() - 5);
    } else if (t == "info") {
      t = "gauge";  // the text format has no info type: a gauge of 1, as Prometheus's own *_build_info
    }
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", fam, escape_help(help, f_), fam, t);
  }

  void sample(std::string_view name, const Labels& labels, double v) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (size_t i = 0; i < labels.size(); ++i)
        out_ += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, escape_label(labels[i].second));
      out_ += '}';
    }
    out_ += ' ';
    out_ += number(v);
    out_ += '\n';
  }

  // A histogram's samples from log2 buckets in ns (bucket b: [2^b, 2^(b+1)) ns, the last one everything above;
  // bpf/akts.h). Prometheus buckets are cumulative and closed above (le): a wait of exactly 2^(b+1) ns is
  // counted one bucket high (the kernel put it in bucket b+1), a difference of one nanosecond.
  void log2_histogram(std::string_view name, const Labels& labels, const std::vector<double>& buckets, double sum_ns) {
    double cum = 0;
    for (size_t b = 0; b < buckets.size(); ++b) {
      cum += buckets[b];
      if (b + 1 == buckets.size()) break;  // the last bucket has no upper edge: only +Inf holds it
      Labels l = labels;
      l.emplace_back("le", number(std::ldexp(1.0, static_cast<int>(b) + 1) / 1e9));
      sample(fmt::format("{}_bucket", name), l, cum);
    }
    Labels inf = labels;
    inf.emplace_back("le", "+Inf");
    sample(fmt::format("{}_bucket", name), inf, cum);
    sample(fmt::format("{}_sum", name), labels, sum_ns / 1e9);
    sample(fmt::format("{}_count", name), labels, cum);
  }

  std::string finish() {
    if (f_ == Format::kOpenMetrics) out_ += "# EOF\n";
    return std::move(out_);
  }

 private:
  Format f_;
  std::string out_;
};

// The classes and callbacks as the stats answer names them (telemetry/stats.h), LC first.
std::vector<std::string> class_names() { return {std::string(class_name(AKTS_CLASS_LC)), std::string(class_name(AKTS_CLASS_BE))}; }
std::vector<std::string> callback_names() {
  std::vector<std::string> out;
  for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) out.emplace_back(callback_name(cb));
  return out;
}

// The slot as a number, the built-in default (or none) as -1.
double slot_value(double s) { return s >= AKTS_MAX_SLOTS ? -1 : s; }

std::string render_unchecked(const json& s, const BuildInfo& build, Format f) {
  const auto classes = class_names();
  const auto callbacks = callback_names();
  Writer w(f);
  w.family("akts_build_info", "info", "The akts build that serves these metrics.");
  w.sample("akts_build_info", {{"version", build.version}, {"commit", build.commit}}, 1);

  if (auto attached = num(s, {"scheduler", "attached"})) {
    w.family("akts_scheduler_attached", "gauge", "1 while akts's sched_ext scheduler is attached.");
    w.sample("akts_scheduler_attached", {}, *attached);
  }
  if (auto loads = num(s, {"scheduler", "loads"})) {
    w.family("akts_scheduler_loads_total", "counter",
             "Times the daemon loaded its scheduler (at start, and again after a kernel restart or ejection): "
             "the counters kept in BPF start from zero at each load.");
    w.sample("akts_scheduler_loads_total", {}, *loads);
  }
  if (auto sel = num(s, {"selected"})) {
    w.family("akts_selected_slot", "gauge", "The slot operators and controllers selected (-1: the built-in default).");
    w.sample("akts_selected_slot", {}, slot_value(*sel));
  }
  if (auto eff = num(s, {"effective"})) {
    w.family("akts_effective_slot", "gauge",
             "The slot that runs now: the selection, or the breaker's override (-1: the built-in default).");
    w.sample("akts_effective_slot", {}, slot_value(*eff));
  }
  if (const json* names = find(s, {"policy_names"})) {
    if (!names->is_object()) throw Malformed("/policy_names is not an object");
    w.family("akts_policy_info", "info", "The policy loaded in each slot.");
    for (const auto& [slot, name] : names->items()) {
      if (!name.is_string()) throw Malformed("/policy_names holds a non-string");
      w.sample("akts_policy_info", {{"slot", slot}, {"policy", name.get<std::string>()}}, 1);
    }
  }
  // The running policy as a series per policy (1 for the one that runs), so a dashboard draws it over time by
  // name; akts's built-in default (no slot selected, or an empty slot: the dispatcher falls through to it) as
  // slot "-1", policy "default".
  if (const json* names = find(s, {"policy_names"}); names && names->is_object()) {
    if (auto eff = num(s, {"effective"})) {
      const bool in_range = *eff >= 0 && *eff < AKTS_MAX_SLOTS;
      const std::string running = in_range ? std::to_string(static_cast<uint32_t>(*eff)) : std::string();
      const bool loaded = in_range && names->contains(running);
      w.family("akts_policy_running", "gauge",
               "1 for the policy that runs now (the effective slot), 0 for the other loaded ones; slot -1 is akts's "
               "built-in default (no slot selected, or an empty one).");
      for (const auto& [slot, name] : names->items())
        w.sample("akts_policy_running", {{"slot", slot}, {"policy", name.get<std::string>()}},
                 loaded && slot == running ? 1 : 0);
      w.sample("akts_policy_running", {{"slot", "-1"}, {"policy", "default"}}, loaded ? 0 : 1);
    }
  }
  if (const json* r = find(s, {"reasoning"})) {
    if (const json* c = find(*r, {"controller"}); c && c->is_string()) {
      w.family("akts_controller_info", "info", "The controller that proposes switches (none: operators only).");
      w.sample("akts_controller_info", {{"controller", c->get<std::string>()}}, 1);
    }
  }

  // Switches by cause.
  auto op = num(s, {"reasoning", "arbiter", "switches", "operator"});
  auto ctl = num(s, {"reasoning", "arbiter", "switches", "controller"});
  auto trips = num(s, {"breaker", "trips"});
  if (op || ctl || trips) {
    w.family("akts_switches_total", "counter",
             "Selection changes by cause (operator: a switch, hold or canary revert that changed the selection; "
             "controller: an applied proposal) and circuit-breaker trips (breaker), each of which overrides the "
             "selection with the safe slot.");
    if (op) w.sample("akts_switches_total", {{"cause", "operator"}}, *op);
    if (ctl) w.sample("akts_switches_total", {{"cause", "controller"}}, *ctl);
    if (trips) w.sample("akts_switches_total", {{"cause", "breaker"}}, *trips);
  }
  if (const json* by = find(s, {"breaker", "trips_by_reason"})) {
    if (!by->is_object()) throw Malformed("/breaker/trips_by_reason is not an object");
    w.family("akts_breaker_trips_total", "counter", "Circuit-breaker trips by the input that tripped it.");
    for (const auto& [reason, n] : by->items()) {
      if (!n.is_number()) throw Malformed("/breaker/trips_by_reason holds a non-number");
      w.sample("akts_breaker_trips_total", {{"reason", reason}}, n.get<double>());
    }
  }
  if (auto tripped = num(s, {"breaker", "tripped"})) {
    w.family("akts_breaker_tripped", "gauge", "1 while the circuit breaker's override holds the safe slot.");
    w.sample("akts_breaker_tripped", {}, *tripped);
  }
  if (auto armed = num(s, {"breaker", "params", "armed"})) {
    w.family("akts_breaker_armed", "gauge", "1 while the circuit breaker is armed.");
    w.sample("akts_breaker_armed", {}, *armed);
  }
  if (const json* v = find(s, {"reasoning", "verdicts"})) {
    if (!v->is_object()) throw Malformed("/reasoning/verdicts is not an object");
    w.family("akts_controller_decisions_total", "counter",
             "Controller proposals by the arbiter's verdict: applied, or refused (invalid_output, locked by the "
             "breaker, a hold or an operator's grace, unchanged, min_dwell, rate_limit, dry_run).");
    for (const auto& [verdict, n] : v->items()) {
      if (!n.is_number()) throw Malformed("/reasoning/verdicts holds a non-number");
      w.sample("akts_controller_decisions_total", {{"verdict", verdict}}, n.get<double>());
    }
  }

  // The objective, each limit in the latest telemetry window (one window's verdict, not a rate: a scrape samples
  // it), and the health of the telemetry it is read from.
  if (const json* lims = find(s, {"reasoning", "objective_now"})) {
    if (!lims->is_array()) throw Malformed("/reasoning/objective_now is not a list");
    struct Row {
      std::string signal;
      double max_ms;
      std::optional<double> observed_ms;
      std::optional<double> met;
    };
    std::vector<Row> rows;
    for (const auto& l : *lims) {
      if (!l.is_object()) throw Malformed("/reasoning/objective_now holds a non-object");
      auto sig = find(l, {"signal"});
      if (!sig) continue;
      if (!sig->is_string()) throw Malformed("/reasoning/objective_now holds a limit whose signal is not a string");
      auto max = num(l, {"max_ms"});
      if (!max) continue;  // a missing field leaves its metric out
      rows.push_back({sig->get<std::string>(), *max, num(l, {"observed_ms"}), num(l, {"met"})});
    }
    if (!rows.empty()) {
      w.family("akts_objective_limit_seconds", "gauge", "Each limit of the objective: its signal's maximum.");
      for (const auto& r : rows) w.sample("akts_objective_limit_seconds", {{"signal", r.signal}}, r.max_ms / 1e3);
      w.family("akts_objective_observed_seconds", "gauge",
               "Each limit's signal in the latest telemetry window (absent while the window has no reading of it).");
      for (const auto& r : rows)
        if (r.observed_ms) w.sample("akts_objective_observed_seconds", {{"signal", r.signal}}, *r.observed_ms / 1e3);
      w.family("akts_objective_met", "gauge",
               "1 when the latest telemetry window met the limit (its reading within the maximum, or no reading, and "
               "no request or task still waiting past it), else 0; the objective is met when every limit is.");
      for (const auto& r : rows)
        if (r.met) w.sample("akts_objective_met", {{"signal", r.signal}}, *r.met != 0 ? 1 : 0);
    }
  }
  if (find(s, {"window"})) {
    if (auto seq = num(s, {"window", "seq"})) {
      w.family("akts_telemetry_windows_total", "counter", "Telemetry windows made since the daemon started.");
      w.sample("akts_telemetry_windows_total", {}, *seq);
    }
    if (auto at = num(s, {"window", "unix_s"}); at && *at > 0) {
      w.family("akts_telemetry_last_window_timestamp_seconds", "gauge",
               "When the latest telemetry window ended, in seconds since the epoch on the daemon's clock.");
      w.sample("akts_telemetry_last_window_timestamp_seconds", {}, *at);
    }
    auto running = num(s, {"window", "app", "requests_processing"});
    auto waiting = num(s, {"window", "app", "requests_waiting"});
    if (running || waiting) {
      w.family("akts_app_requests", "gauge",
               "The application's requests in the latest telemetry window, from its /metrics: running (being "
               "served) and waiting (queued).");
      if (running) w.sample("akts_app_requests", {{"state", "running"}}, *running);
      if (waiting) w.sample("akts_app_requests", {{"state", "waiting"}}, *waiting);
    }
  }
  if (find(s, {"telemetry_health"})) {
    auto ok = num(s, {"telemetry_health", "metrics_scrapes", "ok"});
    auto failed = num(s, {"telemetry_health", "metrics_scrapes", "failed"});
    if (ok || failed) {
      w.family("akts_app_scrapes_total", "counter", "Scrapes of the application's /metrics, by outcome.");
      w.sample("akts_app_scrapes_total", {{"outcome", "ok"}}, ok.value_or(0));
      w.sample("akts_app_scrapes_total", {{"outcome", "failed"}}, failed.value_or(0));
    }
    if (auto e = num(s, {"telemetry_health", "kernel_read_errors"})) {
      w.family("akts_telemetry_read_errors_total", "counter",
               "Telemetry windows that could not be made (the kernel's counters unreadable, or an error in the "
               "reasoning thread).");
      w.sample("akts_telemetry_read_errors_total", {}, *e);
    }
  }

  if (find(s, {"reload"})) {
    auto reloads = num(s, {"reload", "reloads"});
    auto refused = num(s, {"reload", "refused"});
    auto failed = num(s, {"reload", "failed"}).value_or(0);
    if (reloads && refused) {
      if (*refused + failed > *reloads) throw Malformed("/reload counts more refused and failed reloads than reloads");
      w.family("akts_config_reloads_total", "counter",
               "Reloads of the daemon's config (SIGHUP, akts reload), by outcome: applied, refused whole (nothing "
               "changed), or failed part way (an exception while applying).");
      w.sample("akts_config_reloads_total", {{"outcome", "applied"}}, *reloads - *refused - failed);
      w.sample("akts_config_reloads_total", {{"outcome", "refused"}}, *refused);
      w.sample("akts_config_reloads_total", {{"outcome", "failed"}}, failed);
      // 1 until a reload is refused, and again after one that applies (as Prometheus's own).
      const bool ok = num(s, {"reload", "last", "ok"}).value_or(1) != 0;
      w.family("akts_config_last_reload_successful", "gauge",
               "0 when the last reload of the config was refused (the daemon runs on the config before it) or "
               "failed part way, else 1.");
      w.sample("akts_config_last_reload_successful", {}, ok ? 1 : 0);
    }
  }

  // Waits and CPU time per class.
  bool any_wait = false;
  for (const auto& cls : classes) any_wait = any_wait || find(s, {"wait", cls, "log2_histogram"});
  if (any_wait) {
    w.family("akts_wait_seconds", "histogram",
             "How long tasks waited runnable before they ran (enqueue to running), per class; log2 buckets.");
    for (const auto& cls : classes)
      if (find(s, {"wait", cls, "log2_histogram"}))
        w.log2_histogram("akts_wait_seconds", {{"class", cls}}, numbers(s, {"wait", cls, "log2_histogram"}),
                         num(s, {"wait_ns", cls}).value_or(0));
  }
  if (find(s, {"run_ns"})) {
    w.family("akts_run_seconds_total", "counter", "CPU time the managed tasks of each class ran.");
    for (const auto& cls : classes)
      if (auto v = num(s, {"run_ns", cls})) w.sample("akts_run_seconds_total", {{"class", cls}}, *v / 1e9);
  }
  if (find(s, {"guard", "classes"})) {
    w.family("akts_oldest_waiter_age_seconds", "gauge",
             "Age of the oldest runnable task of each class that has not run, at the guard's last check.");
    for (const auto& cls : classes)
      if (auto v = num(s, {"guard", "classes", cls, "oldest_waiting_ms"}))
        w.sample("akts_oldest_waiter_age_seconds", {{"class", cls}}, *v / 1e3);
    w.family("akts_longest_wait_seconds", "gauge",
             "The longest single wait of each class since the scheduler loaded or the last reset.");
    for (const auto& cls : classes)
      if (auto v = num(s, {"guard", "classes", cls, "longest_wait_ms"}))
        w.sample("akts_longest_wait_seconds", {{"class", cls}}, *v / 1e3);
    w.family("akts_guard_rescues_total", "counter",
             "Tasks the bounded-wait guard moved ahead because they waited past max_wait, per class.");
    for (const auto& cls : classes)
      if (auto v = num(s, {"guard", "classes", cls, "rescues"}))
        w.sample("akts_guard_rescues_total", {{"class", cls}}, *v);
  }
  if (auto v = num(s, {"guard", "rescue_failed"})) {
    w.family("akts_guard_rescue_failures_total", "counter", "Rescues the guard could not make.");
    w.sample("akts_guard_rescue_failures_total", {}, *v);
  }

  // The dispatcher.
  if (find(s, {"callbacks"})) {
    w.family("akts_callback_entries_total", "counter", "Entries into the dispatcher, per sched_ext callback.");
    for (const auto& cb : callbacks)
      if (auto v = num(s, {"callbacks", cb, "entries"})) w.sample("akts_callback_entries_total", {{"callback", cb}}, *v);
    w.family("akts_callback_fallthrough_total", "counter",
             "Entries that found no policy in the effective slot and ran the built-in default, per callback.");
    for (const auto& cb : callbacks)
      if (auto v = num(s, {"callbacks", cb, "fallthrough"}))
        w.sample("akts_callback_fallthrough_total", {{"callback", cb}}, *v);
    std::vector<double> per_slot(AKTS_MAX_SLOTS, 0);
    for (const auto& cb : callbacks) {
      auto calls = numbers(s, {"callbacks", cb, "calls_by_slot"});
      for (size_t k = 0; k < calls.size() && k < per_slot.size(); ++k) per_slot[k] += calls[k];
    }
    const json* names = find(s, {"policy_names"});
    w.family("akts_policy_calls_total", "counter",
             "Callbacks each slot's policy handled (all callbacks), labelled with the policy in the slot now.");
    for (size_t k = 0; k < per_slot.size(); ++k) {
      std::string key = std::to_string(k);
      bool named = names && names->is_object() && names->contains(key) && (*names)[key].is_string();
      if (!named && per_slot[k] == 0) continue;
      w.sample("akts_policy_calls_total", {{"slot", key}, {"policy", named ? (*names)[key].get<std::string>() : ""}},
               per_slot[k]);
    }
  }

  // Quanta.
  if (find(s, {"quantum"})) {
    w.family("akts_quantum_expired_total", "counter", "Slices that ran out.");
    w.sample("akts_quantum_expired_total", {}, num(s, {"quantum", "ends"}).value_or(0));
    w.family("akts_quantum_cut_short_total", "counter", "Slices that ended before their quantum had passed.");
    w.sample("akts_quantum_cut_short_total", {}, num(s, {"quantum", "cut_short"}).value_or(0));
    w.family("akts_quantum_timer_kicks_total", "counter", "Preemptions by the quantum timer.");
    w.sample("akts_quantum_timer_kicks_total", {}, num(s, {"quantum", "kicks"}).value_or(0));
    if (find(s, {"quantum", "log2_histogram"})) {
      w.family("akts_quantum_overrun_seconds", "histogram", "How far each run went past its slice; log2 buckets.");
      w.log2_histogram("akts_quantum_overrun_seconds", {}, numbers(s, {"quantum", "log2_histogram"}),
                       num(s, {"quantum", "overrun_ns"}).value_or(0));
    }
  }

  // Classification.
  if (find(s, {"managed"})) {
    w.family("akts_managed_processes", "gauge", "Processes the daemon has classified, per class.");
    for (const auto& cls : classes)
      if (auto v = num(s, {"managed", cls})) w.sample("akts_managed_processes", {{"class", cls}}, *v);
  }

  if (find(s, {"tracker"})) {
    w.family("akts_tracker_scans_total", "counter", "Complete passes over /proc.");
    w.sample("akts_tracker_scans_total", {}, num(s, {"tracker", "scans"}).value_or(0));
    w.family("akts_tracker_last_scan_seconds", "gauge", "How long the last pass over /proc took.");
    w.sample("akts_tracker_last_scan_seconds", {}, num(s, {"tracker", "last_scan_ms"}).value_or(0) / 1e3);
    w.family("akts_process_events_total", "counter",
             "Process events (fork, exec, rename, exit, of threads too) read from the kernel.");
    w.sample("akts_process_events_total", {}, num(s, {"tracker", "events"}).value_or(0));
    w.family("akts_process_events_lost_total", "counter",
             "Times the kernel dropped process events (a full scan followed each).");
    w.sample("akts_process_events_lost_total", {}, num(s, {"tracker", "events_lost"}).value_or(0));
    if (find(s, {"tracker", "event_lag_log2_histogram"})) {
      w.family("akts_process_event_lag_seconds", "histogram",
               "From the kernel's event (a fork, exec, rename, exit) to its process classified or released.");
      w.log2_histogram("akts_process_event_lag_seconds", {}, numbers(s, {"tracker", "event_lag_log2_histogram"}),
                       num(s, {"tracker", "event_lag_ns"}).value_or(0));
    }
  }

  // The daemon process itself, under the names every Prometheus client library uses.
  if (auto v = num(s, {"process", "cpu_seconds"})) {
    w.family("process_cpu_seconds_total", "counter", "User and system CPU time the daemon spent.");
    w.sample("process_cpu_seconds_total", {}, *v);
  }
  if (auto v = num(s, {"process", "resident_bytes"})) {
    w.family("process_resident_memory_bytes", "gauge", "The daemon's resident memory.");
    w.sample("process_resident_memory_bytes", {}, *v);
  }
  if (auto v = num(s, {"process", "start_time_seconds"})) {
    w.family("process_start_time_seconds", "gauge", "When the daemon started, in seconds since the epoch.");
    w.sample("process_start_time_seconds", {}, *v);
  }
  if (auto v = num(s, {"process", "open_fds"})) {
    w.family("process_open_fds", "gauge", "The daemon's open file descriptors.");
    w.sample("process_open_fds", {}, *v);
  }
  return w.finish();
}

// The q-value of a media range's parameters (";q=0.5"), 1 when absent, 0 when malformed.
double q_value(std::string_view params) {
  for (const auto& p : split(params, ';')) {
    std::string_view t = p;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    if (!t.starts_with("q=")) continue;
    std::string v(t.substr(2));
    char* end = nullptr;
    double q = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size() || !(q >= 0 && q <= 1)) return 0;
    return q;
  }
  return 1;
}

}  // namespace

std::string_view content_type(Format f) {
  return f == Format::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                   : "text/plain; version=0.0.4; charset=utf-8";
}

Format negotiate(std::string_view accept) {
  double om = 0, text = 0;
  for (const auto& range : split(accept, ',')) {
    std::string_view r = range;
    size_t semi = r.find(';');
    std::string_view type = r.substr(0, semi);
    while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
    while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
    double q = q_value(semi == std::string_view::npos ? std::string_view() : r.substr(semi + 1));
    if (type == "application/openmetrics-text") om = std::max(om, q);
    else if (type == "text/plain" || type == "text/*" || type == "*/*") text = std::max(text, q);
  }
  return om > 0 && om >= text ? Format::kOpenMetrics : Format::kPrometheus;
}

Result<std::string> render(const nlohmann::json& stats, const BuildInfo& build, Format f) {
  try {
    if (!stats.is_object()) throw Malformed("the answer is not an object");
    return render_unchecked(stats, build, f);
  } catch (const Malformed& e) {
    return errorf(ErrorKind::kSystem, "the daemon's stats are malformed: {}", e.what());
  } catch (const nlohmann::json::exception& e) {
    return errorf(ErrorKind::kSystem, "the daemon's stats are malformed: {}", e.what());
  }
}

}  // namespace akts::metrics
