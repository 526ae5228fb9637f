// One telemetry window: what the reasoning plane sees each period (kernel
// waits, run time and the guard's view, the host's CPU contention, the
// application's metrics where present). The daemon's sampler builds one per
// period from counter deltas; controllers read it; nothing in it needs a kernel.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "akts.h"

namespace akts {

struct Window {
  uint64_t seq = 0;     // 1 for the first window since the daemon started
  double t_s = 0;       // end of the window, seconds since the daemon started
  double unix_s = 0;    // and by the wall clock (0: not known, as in older traces)
  double period_s = 0;  // its length
  uint32_t cpus = 1;    // online CPUs (batch share is of period_s * cpus)

  // The kernel (BPF counters and the guard), per class (AKTS_CLASS_*).
  std::array<uint64_t, AKTS_NR_CLASSES> waits{};               // waits that ended in the window
  std::array<std::optional<double>, AKTS_NR_CLASSES> wait_p50_ms, wait_p99_ms;  // nullopt: no waits ended
  std::array<double, AKTS_NR_CLASSES> oldest_wait_ms{};        // waiting right now (the guard's last scan)
  std::array<double, AKTS_NR_CLASSES> run_ms{};                // CPU time its tasks ran (at most a tick behind)
  std::array<double, AKTS_NR_CLASSES> wait_ms{};               // time its tasks waited (waits that ended in it)
  std::array<uint64_t, AKTS_NR_CLASSES> rescues{};             // bounded-wait rescues in the window
  // Tasks waiting in the registered queues, on average at the guard's firings in the window (tasks, not
  // time: threads waiting together count once each). nullopt: no firing in the window (or an older trace).
  std::array<std::optional<double>, AKTS_NR_CLASSES> tasks_waiting;
  uint64_t queued = 0;                                         // tasks in the registered queues now
  uint64_t dispatches = 0;                                     // dispatcher entries in the window
  uint64_t fallthrough = 0;                                    // of which ran the built-in default
  std::array<uint64_t, AKTS_MAX_SLOTS> calls{};                // of which reached the policy in each slot
  uint32_t selected_slot = AKTS_SLOT_NONE;
  uint32_t effective_slot = AKTS_SLOT_NONE;

  // The host.
  double cpu_pressure = 0;  // share of wall time some task stalled for a CPU (0..1)
  double cpu_util = 0;      // share of CPU time busy (0..1)
  uint32_t runnable = 0;    // tasks running or runnable now (/proc/stat procs_running)

  // The application: scraped from its metrics endpoint, or pushed (v1.push).
  std::optional<double> app_requests_processing;  // running (llama-server: busy slots)
  std::optional<double> app_requests_waiting;     // queued for a slot
  std::optional<double> app_prompt_tokens_per_s;
  std::optional<double> app_decode_tokens_per_s;
  // Request latencies in the window: pushed ones, or else the application's
  // latency histogram's deltas between two scrapes (vLLM's and SGLang's TTFT).
  uint64_t app_latency_samples = 0;
  std::optional<double> app_latency_p50_ms, app_latency_p99_ms;
  std::string app_latency_from;  // "pushed", "histogram", or "" with no samples
  // How far before the window's end those latencies may have ended: the window for pushed ones (pushed as
  // they are measured), the time since the scrape before for a histogram's. 0 with no samples.
  double app_latency_span_ms = 0;
  // Time per output token of the requests that ended in the window, as the
  // same three: pushed ones (v1.push "tpot_ms", one per request as it ends),
  // or else the application's inter-token histogram's deltas (vLLM's,
  // SGLang's). A request reports it only as it ends. The span of pushed ones
  // is the window plus the longest decode among them (v1.push "decode_ms"):
  // a request's TPOT is its mean over its whole decode.
  uint64_t app_tpot_samples = 0;
  std::optional<double> app_tpot_p50_ms, app_tpot_p99_ms;
  std::string app_tpot_from;
  double app_tpot_span_ms = 0;
  // The time requests waited in the engine's queue before their first forward
  // pass, from its queue-time histogram's deltas (AppMetricNames::
  // queue_histogram: vLLM's and TGI's observed when a request ends, SGLang's
  // as it enters a batch), and how far before the window's end they may have
  // ended (the time since the scrape before; 0 with no samples).
  uint64_t app_queue_samples = 0;
  std::optional<double> app_queue_p99_ms;
  double app_queue_span_ms = 0;
  // The longest a request still unanswered at the window's end had waited for
  // its first token (ms): the proxy's latest report (v1.push "waiting_ms"),
  // aged to the window's end, if it is at most a second old (PushedSamples::
  // drain_waiting); a positive report is forgotten when a latency is pushed
  // after it (it may be of the request answered), until the next report. A
  // starved server sends no first token, so without it a window of stalled
  // requests has no sample. nullopt: no report that recent, or forgotten;
  // 0: the report said none was waiting.
  std::optional<double> app_waiting_oldest_ms;
  // The load's phase: the one the application last said began (v1.push "phase"; PushedSamples::report_phase),
  // and how long before the window's end it began. "" and nullopt: none said.
  std::string app_phase;
  std::optional<double> app_phase_age_ms;

  // The share of the window's CPU time best-effort tasks ran (0..1).
  double batch_share() const;

  nlohmann::json to_json() const;
  static std::optional<Window> from_json(const nlohmann::json& j);  // a recorded trace's line
};

}  // namespace akts
