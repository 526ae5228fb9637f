// A telemetry window's derived figures and its JSON form (the live view in
// v1.stats, the decision log's summaries, recorded traces replayed in tests).
#include "telemetry/window.h"

#include <algorithm>
#include <cmath>

namespace akts {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Reads an optional finite number; false if present but not one.
bool read_opt(const json& j, const char* key, std::optional<double>& out) {
  if (!j.contains(key) || j[key].is_null()) return true;
  if (!j[key].is_number()) return false;
  double v = j[key].get<double>();
  if (!std::isfinite(v)) return false;
  out = v;
  return true;
}

template <typename T>
bool read_num(const json& j, const char* key, T& out) {
  if (!j.contains(key)) return true;
  if (!j[key].is_number()) return false;
  if constexpr (std::is_floating_point_v<T>) {
    out = j[key].get<T>();
    return std::isfinite(static_cast<double>(out));
  } else {
    if (j[key].is_number_float() || (j[key].is_number_integer() && j[key].get<int64_t>() < 0)) return false;
    out = j[key].get<T>();
    return true;
  }
}

const char* const kClassKeys[AKTS_NR_CLASSES] = {"be", "lc"};

}  // namespace

double Window::batch_share() const {
  double cap = period_s * 1000.0 * std::max<uint32_t>(cpus, 1);
  if (cap <= 0) return 0;
  return std::clamp(run_ms[AKTS_CLASS_BE] / cap, 0.0, 1.0);
}

json Window::to_json() const {
  json classes = json::object();
  for (uint32_t c = 0; c < AKTS_NR_CLASSES; ++c)
    classes[kClassKeys[c]] = {{"waits", waits[c]},         {"wait_p50_ms", opt(wait_p50_ms[c])},
                              {"wait_p99_ms", opt(wait_p99_ms[c])}, {"oldest_wait_ms", oldest_wait_ms[c]},
                              {"run_ms", run_ms[c]},       {"wait_ms", wait_ms[c]},
                              {"tasks_waiting", opt(tasks_waiting[c])}, {"rescues", rescues[c]}};
  auto slot = [](uint32_t s) { return s == AKTS_SLOT_NONE ? json(nullptr) : json(s); };
  return {{"seq", seq},
          {"t_s", t_s},
          {"unix_s", unix_s},
          {"period_s", period_s},
          {"cpus", cpus},
          {"classes", classes},
          {"queued", queued},
          {"dispatches", dispatches},
          {"fallthrough", fallthrough},
          {"calls_by_slot", calls},
          {"selected", slot(selected_slot)},
          {"effective", slot(effective_slot)},
          {"cpu_pressure", cpu_pressure},
          {"cpu_util", cpu_util},
          {"runnable", runnable},
          {"batch_share", batch_share()},
          {"app",
           {{"requests_processing", opt(app_requests_processing)},
            {"requests_waiting", opt(app_requests_waiting)},
            {"prompt_tokens_per_s", opt(app_prompt_tokens_per_s)},
            {"decode_tokens_per_s", opt(app_decode_tokens_per_s)},
            {"latency_samples", app_latency_samples},
            {"latency_p50_ms", opt(app_latency_p50_ms)},
            {"latency_p99_ms", opt(app_latency_p99_ms)},
            {"latency_from", app_latency_from.empty() ? json(nullptr) : json(app_latency_from)},
            {"latency_span_ms", app_latency_span_ms},
            {"tpot_samples", app_tpot_samples},
            {"tpot_p50_ms", opt(app_tpot_p50_ms)},
            {"tpot_p99_ms", opt(app_tpot_p99_ms)},
            {"tpot_from", app_tpot_from.empty() ? json(nullptr) : json(app_tpot_from)},
            {"tpot_span_ms", app_tpot_span_ms},
            {"queue_samples", app_queue_samples},
            {"queue_p99_ms", opt(app_queue_p99_ms)},
            {"queue_span_ms", app_queue_span_ms},
            {"waiting_oldest_ms", opt(app_waiting_oldest_ms)},
            {"phase", app_phase.empty() ? json(nullptr) : json(app_phase)},
            {"phase_age_ms", opt(app_phase_age_ms)}}}};
}

std::optional<Window> Window::from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  Window w;
  if (j.contains("unix_s") && !read_num(j, "unix_s", w.unix_s)) return std::nullopt;
  bool ok = read_num(j, "seq", w.seq) && read_num(j, "t_s", w.t_s) && read_num(j, "period_s", w.period_s) &&
            read_num(j, "cpus", w.cpus) && read_num(j, "queued", w.queued) &&
            read_num(j, "dispatches", w.dispatches) && read_num(j, "fallthrough", w.fallthrough) &&
            read_num(j, "cpu_pressure", w.cpu_pressure) && read_num(j, "cpu_util", w.cpu_util) &&
            read_num(j, "runnable", w.runnable);
  if (!ok) return std::nullopt;
  if (j.contains("calls_by_slot")) {
    const json& c = j["calls_by_slot"];
    if (!c.is_array() || c.size() != AKTS_MAX_SLOTS) return std::nullopt;
    for (uint32_t k = 0; k < AKTS_MAX_SLOTS; ++k) {
      if (!c[k].is_number_unsigned()) return std::nullopt;
      w.calls[k] = c[k].get<uint64_t>();
    }
  }
  for (const char* key : {"selected", "effective"}) {
    uint32_t& dst = key[0] == 's' ? w.selected_slot : w.effective_slot;
    if (j.contains(key) && !j[key].is_null() && !read_num(j, key, dst)) return std::nullopt;
  }
  if (j.contains("classes")) {
    const json& cj = j["classes"];
    if (!cj.is_object()) return std::nullopt;
    for (uint32_t c = 0; c < AKTS_NR_CLASSES; ++c) {
      if (!cj.contains(kClassKeys[c])) continue;
      const json& k = cj[kClassKeys[c]];
      if (!k.is_object() || !read_num(k, "waits", w.waits[c]) || !read_opt(k, "wait_p50_ms", w.wait_p50_ms[c]) ||
          !read_opt(k, "wait_p99_ms", w.wait_p99_ms[c]) || !read_num(k, "oldest_wait_ms", w.oldest_wait_ms[c]) ||
          !read_num(k, "run_ms", w.run_ms[c]) || !read_num(k, "rescues", w.rescues[c]) ||
          (k.contains("wait_ms") && !read_num(k, "wait_ms", w.wait_ms[c])) ||  // absent in older traces
          !read_opt(k, "tasks_waiting", w.tasks_waiting[c]))
        return std::nullopt;
    }
  }
  if (j.contains("app")) {
    const json& a = j["app"];
    if (!a.is_object() || !read_opt(a, "requests_processing", w.app_requests_processing) ||
        !read_opt(a, "requests_waiting", w.app_requests_waiting) ||
        !read_opt(a, "prompt_tokens_per_s", w.app_prompt_tokens_per_s) ||
        !read_opt(a, "decode_tokens_per_s", w.app_decode_tokens_per_s) ||
        !read_num(a, "latency_samples", w.app_latency_samples) ||
        !read_opt(a, "latency_p50_ms", w.app_latency_p50_ms) || !read_opt(a, "latency_p99_ms", w.app_latency_p99_ms) ||
        !read_opt(a, "waiting_oldest_ms", w.app_waiting_oldest_ms) ||
        (w.app_waiting_oldest_ms && *w.app_waiting_oldest_ms < 0))
      return std::nullopt;
    if (a.contains("latency_span_ms") && !read_num(a, "latency_span_ms", w.app_latency_span_ms)) return std::nullopt;
    // Absent in older traces.
    if (!read_num(a, "tpot_samples", w.app_tpot_samples) || !read_opt(a, "tpot_p50_ms", w.app_tpot_p50_ms) ||
        !read_opt(a, "tpot_p99_ms", w.app_tpot_p99_ms) || !read_num(a, "tpot_span_ms", w.app_tpot_span_ms) ||
        (w.app_tpot_p99_ms && *w.app_tpot_p99_ms < 0) || w.app_tpot_span_ms < 0 ||
        !read_num(a, "queue_samples", w.app_queue_samples) || !read_opt(a, "queue_p99_ms", w.app_queue_p99_ms) ||
        (w.app_queue_p99_ms && *w.app_queue_p99_ms < 0) || !read_num(a, "queue_span_ms", w.app_queue_span_ms) ||
        w.app_queue_span_ms < 0)
      return std::nullopt;
    if (a.contains("tpot_from") && (a["tpot_from"] == "pushed" || a["tpot_from"] == "histogram"))
      w.app_tpot_from = a["tpot_from"].get<std::string>();
    if (a.contains("latency_from") && (a["latency_from"] == "pushed" || a["latency_from"] == "histogram"))
      w.app_latency_from = a["latency_from"].get<std::string>();
    if (a.contains("phase") && a["phase"].is_string()) w.app_phase = a["phase"].get<std::string>();
    if (a.contains("phase_age_ms") && !read_opt(a, "phase_age_ms", w.app_phase_age_ms)) return std::nullopt;
  }
  return w;
}

}  // namespace akts
