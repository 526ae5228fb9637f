// The operator's objective, in terms the daemon observes: keep a latency
// signal at or under a target, then maximise the CPU time batch work gets.
// Controllers and the bandit's reward read it; the decision log measures
// every decision against it.
//
//   config: "objective": {"signal": "lc_wait_p99", "max": "20ms"}
//           "objective": {"signal": "request_latency_p99", "max": "500ms"}   (pushed by the application)
//   words:  "keep the LC wait p99 under 20 ms", "request latency p99 below 0.5 s"
//           (from_words: what an operator or an agent says, checked strictly)
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "telemetry/window.h"

namespace akts {

struct Objective {
  enum class Signal { kLcWaitP99, kRequestLatencyP99 };
  Signal signal = Signal::kLcWaitP99;
  double max_ms = 20;

  // The signal in a window: the larger of the window's p99 and the oldest
  // still waiting (a starved task ends no wait; a starved server sends no
  // first token). LC wait: the LC class's waits and its oldest waiting task.
  // Request latency: the application's latencies (pushed, or its histogram's)
  // and the oldest unanswered request a proxy reported (Window::
  // app_waiting_oldest_ms). nullopt: no sample (nothing ended and nothing
  // is reported waiting).
  std::optional<double> observed_ms(const Window& w) const;
  // Its two parts: the p99 of what ended in the window (nullopt: nothing
  // ended), and the oldest still waiting (0: none): for requests, the
  // proxy's report aged to the window's end; for LC tasks, the oldest waiter
  // at the guard's last scan.
  std::optional<double> ended_ms(const Window& w) const;
  double waiting_ms(const Window& w) const;
  // No sample counts as met: nothing latency-critical waited.
  bool met(const Window& w) const;
  // In [0, 1]: half for the latency signal (min(1, max/observed)), half for
  // the batch CPU share, which counts only while the objective is met.
  double reward(const Window& w) const;

  std::string describe() const;  // "LC wait p99 <= 20 ms, then maximise batch CPU"
  nlohmann::json to_json() const;
  // {"signal": ..., "max": "20ms" | 20 (ms)}; unknown keys and bad values are errors.
  static Result<Objective> from_json(const nlohmann::json& j);
  // The operator's goal in words, at most 500 bytes of UTF-8. It must name one
  // signal (the scheduling wait: "wait", "queue", "scheduling delay"; or the
  // application's latency: "request", "response", "ttft", "first token") and
  // exactly one duration ("20 ms", "0.5s", "300 milliseconds"), as a ceiling.
  // Refused, with what to say instead: no signal or both, no duration or
  // several, a floor ("above", "at least", "more than"), a percentile other
  // than the p99, a negative number. The duration's range is from_json's.
  static Result<Objective> from_words(std::string_view text);
};

}  // namespace akts
