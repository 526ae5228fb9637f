// The serving experiment's load generator: closed-loop phases of streamed completions, measured as vLLM does.
//
// It drives llama-server's POST /completion (or an OpenAI-compatible
// /v1/completions) and reports TTFT, TPOT, ITL and E2EL as `vllm bench serve`
// defines them, so the figures are comparable.
//
// Closed loop: in each phase, `concurrency` workers each send a request, wait
// for its last event, pause for the phase's think time (0 by default), and
// send the next, until the phase ends. A request
// belongs to the phase it was sent in, even when it ends after it. The switch
// waits for nothing: at the boundary the workers the new phase adds start at
// once, and the workers it drops stop after their current request. The run
// ends when the last phase has, plus the requests still in flight (each
// bounded by request_timeout).
//
// What is measured, per request, on the client (steady clock). Each request
// opens its own connection (no keep-alive: a pooled connection the server
// closed meanwhile would fail a request) and its send time is taken just
// before, so TTFT includes the TCP connect, as it does in vLLM whenever its
// pool opens a connection:
//   - a token event: an event carrying non-empty generated text (llama-server:
//     "content"; OpenAI: choices[0].text, or choices[0].delta.content). Empty
//     events (progress, a stop-word hold, the final summary) are not tokens.
//   - TTFT: send -> arrival of the first token event.
//   - ITL: the gaps between consecutive token events (events that arrive in
//     one read from the socket share its arrival time).
//   - E2EL: send -> arrival of the last generation event (the last token
//     event, or the final event: llama-server's "stop": true, an OpenAI chunk
//     with choices); "[DONE]" and a usage-only chunk do not move it.
//   - output tokens: the count the server reports (llama-server's final
//     "tokens_predicted", OpenAI's usage.completion_tokens), else the number
//     of token events; as vLLM takes usage when it has it.
//   - TPOT = (E2EL - TTFT) / (output tokens - 1), only when output tokens > 1.
//   - success: HTTP 200, at least one token event, and the stream's final
//     event (llama-server "stop": true; OpenAI a finish_reason or "[DONE]")
//     before the body ends; anything else is a failure with a message saying
//     what happened (cannot connect, HTTP status and body, timeout, an error
//     event, a stream cut short, no token).
//
// Per phase, as vLLM reports a run: completed, failed, request throughput
// (completed / the phase's configured seconds), output token throughput
// (output tokens of completed requests / the same seconds), and the mean,
// median, std and p99 of TTFT, TPOT, ITL and E2EL over completed requests
// (numpy's percentile: linear interpolation between closest ranks), in ms.
//
// Bounds: each request is cut at request_timeout wherever it is (connecting,
// waiting for headers, or a server trickling events): a watchdog shuts the
// socket of a request past it, so a stalled or absent server gives failed
// requests, never a hang. After a failed request a worker pauses
// (failure_pause) before the next, so a server that is down is not hammered
// in a tight loop. Nothing throws out of a worker thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts {

struct Phase {
  std::string name;
  double seconds = 0;
  uint32_t concurrency = 0;  // 0: an idle phase (no requests)
  // A worker's pause after each of its requests ends, before it sends the next
  // (a user reading the answer): with it a phase leaves the server idle part of
  // the time, as interactive traffic between bursts does. The pause ends early
  // when the phase does, so the next phase's load starts on time.
  std::chrono::milliseconds think{0};
  // The think time is drawn from an exponential distribution of that mean,
  // per request: an idle user's next request comes as a Poisson process does.
  bool think_random = false;
};

struct RequestRecord;

struct LoadOptions {
  std::string url = "http://127.0.0.1:8080";  // http://host:port[/prefix]
  std::string path = "/completion";           // "/v1/completions" speaks the OpenAI form
  // Scaled for a 2-vCPU TCG guest, where one 16-token request takes about 0.3-1 s
  // (the paper: 8 s phases at concurrency 2 and 32).
  std::vector<Phase> phases = {{"steady", 6, 1}, {"burst", 6, 8}, {"steady", 6, 1}};
  uint32_t n_predict = 16;
  std::string prompt =
      "The scheduler decides which task runs next on each CPU. Explain in one paragraph why a latency-critical "
      "request should not wait behind batch work.";
  std::string model;  // sent as "model" in the OpenAI form when set
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds failure_pause{100};  // a worker's pause after a failed request
  uint64_t seed = 1;  // random think times: worker i draws from a generator seeded with seed + i

  // Called on the worker thread as each request ends (one call at a time),
  // e.g. to print its TTFT or push it to the daemon.
  // It delays that worker's next request; an exception from it is swallowed.
  std::function<void(const RequestRecord&)> on_request;
  // Called on the worker thread as a request's first token arrives, with its
  // TTFT in ms (e.g. to push it to the daemon as it is measured, not a decode
  // later). It delays the reading of that stream; an exception from it is
  // swallowed.
  std::function<void(double ttft_ms)> on_first_token;
  // Called on a thread of its own while the run lasts, waiting_every after its
  // last call returned, with how long the oldest request sent and not yet
  // given a first token has waited (ms), while one waits, and once with 0
  // when none is left or the run ends with one reported (e.g. to push it to
  // the daemon: a starved server sends no first token, and this is how the
  // objective sees it). Not called while nothing waits after that. One call at
  // a time; a slow call delays the next, and run_load's return by as much as
  // the last call takes. An exception from it is swallowed.
  std::function<void(double oldest_waiting_ms)> on_waiting;
  std::chrono::milliseconds waiting_every{50};
  // When set and it becomes true: no new request starts, the ones in flight are
  // cut (failed, "canceled"), and run_load returns what it has, within ~50 ms
  // (a request still connecting to a host that does not answer holds it until
  // its connect gives up: at most 5 s; an on_waiting call under way, and the
  // final one, as long as they take).
  const std::atomic<bool>* cancel = nullptr;
};

// Refuses options that cannot run: a URL that is not http://host:port[/prefix],
// a path not starting with '/', no phases, a phase whose seconds are not in
// (0, 86400], whose concurrency is past 1024 or whose think time is negative or
// past an hour, n_predict 0, a request_timeout
// below 1 ms, a negative failure_pause, an on_waiting with a waiting_every below 1 ms.
Status validate_load_options(const LoadOptions& o);

struct RequestRecord {
  uint64_t index = 0;  // order of sending in the run
  size_t phase = 0;    // index into LoadOptions::phases
  std::string phase_name;
  uint32_t worker = 0;
  double start_s = 0;  // send time, seconds since the run began
  bool ok = false;
  std::string error;              // why it failed ("" when ok)
  int http_status = 0;            // 0: no HTTP answer
  double ttft_ms = 0;             // 0 when no token arrived
  double e2el_ms = 0;             // when it failed: the time until it did
  std::optional<double> tpot_ms;  // output_tokens > 1 only
  uint32_t token_events = 0;
  uint32_t output_tokens = 0;  // the server's count when reported, else token_events
  std::optional<uint32_t> server_output_tokens, prompt_tokens;
  std::vector<double> itl_ms;

  nlohmann::json to_json() const;
};

// mean, median, std (population, as numpy) and p99 of one metric, in ms; all 0 when n = 0 (as vLLM reports).
struct MetricSummary {
  size_t n = 0;
  double mean = 0, median = 0, std = 0, p99 = 0;
};
MetricSummary summarize_metric(std::vector<double> samples);
// numpy.percentile's default: linear interpolation between the closest ranks; p in [0, 100]; 0 when empty.
double percentile_linear(std::vector<double> samples, double p);

struct PhaseReport {
  std::string name;
  double seconds = 0;
  uint32_t concurrency = 0;
  std::chrono::milliseconds think{0};
  bool think_random = false;
  size_t completed = 0, failed = 0;
  uint64_t total_output_tokens = 0;            // completed requests only
  std::optional<uint64_t> total_input_tokens;  // when the server reported every completed request's
  double request_throughput = 0;               // completed / seconds
  double output_throughput = 0;                // total_output_tokens / seconds
  uint32_t peak_in_flight = 0;  // the most requests in flight (any phase's) as one of this phase's was sent
  MetricSummary ttft, tpot, itl, e2el;
  std::map<std::string, size_t> errors;  // message -> count (at most 8 distinct; the rest as "other")

  // vLLM's keys: completed, failed, request_throughput, output_throughput,
  // total_output_tokens, mean_ttft_ms, median_ttft_ms, std_ttft_ms, p99_ttft_ms, ... for tpot, itl, e2el.
  nlohmann::json to_json() const;
};

// The per-phase figures from the records (records of other phases are ignored).
// peak_in_flight is left 0: only a run knows it.
std::vector<PhaseReport> summarize_phases(const std::vector<Phase>& phases, const std::vector<RequestRecord>& records);

struct LoadReport {
  std::string url, path;
  uint32_t n_predict = 0;
  double elapsed_s = 0;  // the whole run, tail requests included
  double started_unix = 0;  // when the run began (the zero of start_s), seconds since the Unix epoch
  bool canceled = false;
  std::vector<PhaseReport> phases;
  std::vector<RequestRecord> requests;  // in the order they were sent

  // {"url", "path", "n_predict", "started_unix", "elapsed_s", "canceled", "phases", "requests"}
  nlohmann::json to_json() const;
  std::string to_text() const;     // one line per phase, for people
};

// Runs the phases and returns the report. An error only for options that cannot
// run (validate_load_options), a host name that does not resolve to IPv4 (it is
// resolved once, before the run), or worker threads that cannot be started;
// failed requests are in the report, not errors.
Result<LoadReport> run_load(const LoadOptions& o);

// What one event of a completion stream says (exposed for tests).
struct CompletionEvent {
  std::string text;          // generated text ("" when none)
  bool generation = false;   // a llama-server event with "content", or an OpenAI chunk with choices
  bool final = false;        // "stop": true, a finish_reason, or "[DONE]"
  bool done_marker = false;  // "[DONE]"
  std::optional<uint32_t> output_tokens, prompt_tokens;
  std::string error;  // an error event's message; or why the event is not understood
};
CompletionEvent parse_completion_event(std::string_view data);

}  // namespace akts
