// What `akts top` shows: the daemon's answers (v1.stats, v1.log) read into a View, and a View laid
// out as the lines of a terminal of a given size. No terminal here (top_screen.h draws the lines), so the host's
// unit tests read and lay out recorded answers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace akts::top {

struct LimitRow {
  std::string signal;
  double max_ms = 0;
  std::optional<double> observed_ms, margin_ms;
  bool met = true;
};

struct ClassRow {
  std::optional<double> wait_p50_ms, wait_p99_ms;
  double oldest_ms = 0;
  double cpu_share = 0;  // of all CPUs, over the latest window
  double rescues = 0;  // the guard's, since the scheduler was loaded
};

struct View {
  bool connected = false;
  std::string error;  // why not connected
  // The policy that runs (the effective slot), what was selected, and for how long the selection has held.
  std::string running, selected;
  std::optional<uint32_t> selected_slot;  // when a loaded policy is selected (not the built-in default)
  bool overridden = false;            // the breaker's override holds another slot
  std::optional<double> running_for_s;  // since the selection last changed; nullopt: not since the daemon started
  std::optional<double> uptime_s;
  std::vector<std::string> policies;  // by slot
  // The controller, its mode, and its last logged decision.
  std::string controller;
  bool dry_run = false;
  std::string last_decision_time, last_decision_verdict, last_decision_why;
  std::optional<double> hold_remaining_s;  // the selection held (the controller paused)
  double grace_remaining_s = 0;            // an operator's grace
  std::string objective;                   // in words
  std::vector<LimitRow> limits;
  ClassRow lc, be;
  double switches_last_minute = 0, switches_operator = 0, switches_controller = 0;
  bool breaker_armed = false, breaker_tripped = false;
  double breaker_trips = 0;
  std::optional<double> app_running, app_waiting;
  double period_s = 0.1;  // the telemetry period: the refresh
};

// The View of v1.stats's and v1.log's answers at `now_unix` (seconds since the epoch); a field missing or of
// another type leaves its default (an older daemon answers fewer).
View read_view(const nlohmann::json& stats, const nlohmann::json& log, double now_unix);

// A View as at most `height` lines of at most `width` columns (the last lines: the keys), or, when the terminal
// is smaller than kMinWidth x kMinHeight, one line saying so.
std::vector<std::string> layout(const View& v, int width, int height);
inline constexpr int kMinWidth = 40, kMinHeight = 12;

// "1.2 s", "350 ms", "2m05s", "-" for none.
std::string duration_text(std::optional<double> seconds);
// `s` cut to `width` columns (counting code points), control characters as spaces, invalid bytes as U+FFFD.
std::string fit(const std::string& s, int width);

}  // namespace akts::top
