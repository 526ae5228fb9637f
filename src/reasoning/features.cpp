// The controllers' shared features of a window (features.h).
#include "reasoning/features.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace akts {
namespace {
std::optional<double> finite_nonneg(const std::optional<double>& v) {
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return std::max(0.0, *v);
}
}  // namespace

Features Features::of(const Window& w, const Objective& obj) {
  Features f;
  f.running = finite_nonneg(w.app_requests_processing);
  f.waiting = finite_nonneg(w.app_requests_waiting);
  if (w.period_s > 0) {
    double window_ms = w.period_s * 1e3;
    double waiting = w.tasks_waiting[AKTS_CLASS_LC] ? *w.tasks_waiting[AKTS_CLASS_LC] : w.wait_ms[AKTS_CLASS_LC] / window_ms;
    double busy = w.run_ms[AKTS_CLASS_LC] / window_ms + waiting;
    f.lc_busy_tasks = std::isfinite(busy) ? std::max(0.0, busy) : 0;
  }
  f.load = f.running ? *f.running + f.waiting.value_or(0) : f.lc_busy_tasks;
  f.prompt_tokens_per_s = finite_nonneg(w.app_prompt_tokens_per_s);
  f.margins = obj.margins(w);
  f.met = obj.met(w);
  f.batch_share = w.batch_share();
  return f;
}

std::string Features::describe() const {
  std::string s = fmt::format("load {:.3g}", load);
  if (running)
    s += fmt::format(" (requests running {:g}{})", *running, waiting ? fmt::format(", waiting {:g}", *waiting) : "");
  else
    s += " (LC tasks running or waiting)";
  s += fmt::format(", LC tasks running or waiting {:.2f}", lc_busy_tasks);
  if (prompt_tokens_per_s) s += fmt::format(", prompt tokens {:.0f}/s", *prompt_tokens_per_s);
  s += ", objective: " + margins;
  s += fmt::format(", batch CPU share {:.0f}%", 100 * batch_share);
  return s;
}

}  // namespace akts
