// The operator's objective, in terms the daemon observes: keep one or several
// latency signals at or under their limits, all of them required, then
// maximise the CPU time batch work gets. Controllers and the bandit's reward
// read it; the decision log measures every decision against it.
//
//   config: "objective": {"signal": "lc_wait_p99", "max": "20ms"}          (one limit)
//           "objective": {"ttft_p99": "2s", "tpot_p99": "200ms"}           (several: signal -> limit)
//   words:  "keep the LC wait p99 under 20 ms", "request latency p99 below 0.5 s"
//           (from_words: what an operator or an agent says, one limit, checked strictly)
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "telemetry/window.h"

namespace akts {

// One limit: a signal's p99 at or under max_ms.
struct Limit {
  enum class Signal {
    kLcWaitP99,          // "lc_wait_p99": the LC class's scheduling waits
    kRequestLatencyP99,  // "request_latency_p99" (or "ttft_p99"): the application's time to first token
    kTpotP99,            // "tpot_p99": the application's time per output token (pushed, or its histogram's)
  };
  Signal signal = Signal::kLcWaitP99;
  double max_ms = 20;

  // The signal in a window: the larger of the window's p99 and the oldest
  // still waiting (a starved task ends no wait; a starved server sends no
  // first token). LC wait: the LC class's waits and its oldest waiting task.
  // Request latency: the application's latencies (pushed, or its histogram's)
  // and the oldest unanswered request a proxy reported (Window::
  // app_waiting_oldest_ms). TPOT: the requests' time per output token, which
  // a request reports as it ends; nothing reports a decode still running, so
  // its waiting part is 0. nullopt: no sample (nothing ended and nothing is
  // reported waiting).
  std::optional<double> observed_ms(const Window& w) const;
  // Its two parts: the p99 of what ended in the window (nullopt: nothing
  // ended), and the oldest still waiting (0: none): for requests, the
  // proxy's report aged to the window's end; for LC tasks, the oldest waiter
  // at the guard's last scan.
  std::optional<double> ended_ms(const Window& w) const;
  double waiting_ms(const Window& w) const;
  // How long before the window's end what ended may have ended (ms): the
  // application's samples reach back to the scrape before (Window::
  // app_latency_span_ms), the kernel's a window.
  double span_ms(const Window& w) const;
  // No sample counts as met: nothing latency-critical waited.
  bool met(const Window& w) const;
  // max_ms minus what was observed (negative: missed by that much); nullopt: no sample.
  std::optional<double> margin_ms(const Window& w) const;

  std::string name() const;   // "lc_wait_p99", "request_latency_p99", "tpot_p99"
  std::string label() const;  // "LC wait p99", "request latency p99" (TTFT), "TPOT p99"
  // {"signal", "max_ms", "observed_ms", "ended_ms", "waiting_ms", "margin_ms", "met"} in a window.
  nlohmann::json in(const Window& w) const;

  bool operator==(const Limit&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

struct Objective {
  // Every one is required; one per signal, at least one. The first is what a
  // single-limit reader (the bandit's simulator) uses.
  std::vector<Limit> limits{Limit{}};

  static Objective single(Limit::Signal signal, double max_ms);

  bool met(const Window& w) const;  // every limit met
  // The worst limit's observed / max (above 1: missed); nullopt: no limit has a sample.
  std::optional<double> pressure(const Window& w) const;
  // The limit with the highest pressure in the window; nullptr: no limit has a sample.
  const Limit* binding(const Window& w) const;
  // In [0, 1]: half for the latency signals (the worst limit's min(1, max/observed)), half for
  // the batch CPU share, which counts only while every limit is met.
  double reward(const Window& w) const;
  // Each limit in the window (Limit::in), in order.
  nlohmann::json limits_in(const Window& w) const;
  // "request latency p99 612.0 ms of 2000 (margin 1388.0 ms), TPOT p99 ...; met", each limit with no sample said so,
  // and a limit with something still waiting with its two parts (ended p99, oldest still waiting).
  std::string margins(const Window& w) const;

  std::string describe() const;  // "LC wait p99 <= 20 ms, then maximise batch CPU"
  // {"limits": [{"signal", "max_ms"}...], "describe"}, and with one limit its "signal" and "max_ms" too.
  nlohmann::json to_json() const;
  // What the learner files its evidence under: one limit's as before there could be several (the text of
  // {"describe", "max_ms", "signal"}), several limits' as {"describe", "limits"}.
  std::string key() const;
  // {"signal": ..., "max": "20ms" | 20 (ms)} for one limit, or {SIGNAL: "20ms" | 20, ...} for several
  // (signals: lc_wait_p99, request_latency_p99 or its alias ttft_p99, tpot_p99; each at most once); unknown
  // keys and bad values are errors.
  static Result<Objective> from_json(const nlohmann::json& j);
  // The operator's goal in words, at most 500 bytes of UTF-8: one limit. It
  // must name one signal (the scheduling wait: "wait", "queue", "scheduling
  // delay"; the application's latency: "request", "response", "ttft", "first
  // token"; or its time per output token: "tpot", "per output token",
  // "inter-token") and exactly one duration ("20 ms", "0.5s", "300
  // milliseconds"), as a ceiling. Refused, with what to say instead: no
  // signal or several, no duration or several, a floor ("above", "at least",
  // "more than"), a percentile other than the p99, a negative number. The
  // duration's range is from_json's. Several limits: give the JSON form.
  static Result<Objective> from_words(std::string_view text);

  bool operator==(const Objective&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

}  // namespace akts
