// The serving experiment's load generator: closed-loop users or open-loop arrivals, measured as vLLM does.
//
// It drives llama-server's POST /completion (or an OpenAI-compatible
// /v1/completions) and reports TTFT, TPOT, ITL and E2EL as `vllm bench serve`
// defines them, so the figures are comparable.
//
// Closed loop: users belong to the phase's name. A phase of name N and
// concurrency c runs users 0..c-1 of N's own group; each sends a request,
// waits for its last event, pauses for the phase's think time (0 by default),
// and sends the next, until the phase ends. Phases of one name share their
// users (the steady user of the first steady phase is the one of the last);
// a user of one name never sends in a phase of another (a steady user takes
// no part in a burst, and a burst user's late answer never holds back the
// steady phase after it). The switch waits for nothing: at the boundary the
// new phase's users start at once, and the old phase's stop after their
// current request.
//
// Open loop: a phase may give an arrival rate instead (RATE/s). Its requests
// arrive on a schedule drawn before the run from the seed: gaps between
// arrivals are gamma-distributed with shape `burstiness` and mean 1/RATE, as
// `vllm bench serve --burstiness` draws them (1: a Poisson process; below 1
// burstier, above 1 more even). The same options give the same schedule with
// the same build (the draws are the standard library's gamma distribution,
// which another library may draw differently), so every arm of an experiment
// replays one schedule (LoadReport::schedule names it by its seed and a hash
// of its arrivals: a mismatch shows). Each arrival is sent at its time
// by a free connection of a pool of max_in_flight, whatever the answers to
// the ones before; when every connection is busy it waits in the client, and
// that wait counts in its TTFT and E2EL (measured from the arrival, so a slow
// server cannot slow the load it is judged by).
//
// A request belongs to the phase it was sent (or arrived) in, even when it
// ends after it. The run ends when the last phase has, plus the requests
// still in flight, until the drain deadline (the last phase's end + drain):
// a request still unanswered then is cut and counted as failed ("unanswered
// by the drain deadline"), and an arrival never sent counts as failed too. No
// request is ever absent from the report.
//
// Goodput (DistServe's measure, `vllm bench serve --goodput`): with limits
// set (slo_ttft_ms, slo_tpot_ms, either or both), a request is good when it
// succeeded, its TTFT is at most the TTFT limit and its TPOT (when it has one:
// more than one output token) at most the TPOT limit. A failed request is
// never good. Goodput is good requests per second of the phase (or of the
// whole load), not of the drain.
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
// requests, never a hang. After a failed request a closed-loop user pauses
// (failure_pause) before the next, so a server that is down is not hammered
// in a tight loop; an open loop sends on its schedule, which bounds it. When
// canceled, the report holds the requests sent and the arrivals that came
// before the cancel (failed, "canceled"), not those after it. Nothing throws
// out of a worker thread.
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
  uint32_t concurrency = 0;  // closed loop: users of this name; 0 with no rate: an idle phase
  double rate = 0;           // open loop: arrivals per second (then concurrency and think are 0)
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
  std::chrono::milliseconds failure_pause{100};  // a closed-loop user's pause after a failed request
  // Seeds the random think times (user i of a group draws from a generator seeded with the seed, i and the
  // group's name) and the arrival schedule.
  uint64_t seed = 1;
  double burstiness = 1;  // open loop: the gamma shape of the gaps between arrivals (1: Poisson)
  uint32_t max_in_flight = 64;  // open loop: connections sending arrivals at once
  // After the last phase, how long requests still in flight may take before
  // they are cut and counted as failed (unanswered). nullopt: request_timeout.
  std::optional<std::chrono::milliseconds> drain;
  // Goodput's limits (nullopt: that limit is not set; none set: no goodput).
  std::optional<double> slo_ttft_ms, slo_tpot_ms;

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
  // Called on the run's own thread as each phase begins, with its index and
  // name, after its users have been released (e.g. to tell the daemon, whose
  // oracle follows the load's own clock). It delays the watchdog by as long
  // as it takes; an exception from it is swallowed.
  std::function<void(size_t phase, const std::string& name)> on_phase;
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
// past an hour, a rate that is not finite, negative, past 10000/s or given with
// a concurrency or a think time, rates that ask for more than 500000 arrivals
// (half the schedule's cap of a million), more than 4096 connections at once
// (every phase name's closed-loop users and the open loop's pool), a
// burstiness not in [0.01, 100], max_in_flight not in [1, 1024], n_predict 0, a
// request_timeout below 1 ms, a negative failure_pause or drain, a limit that
// is not finite and positive, an on_waiting with a waiting_every below 1 ms.
Status validate_load_options(const LoadOptions& o);

// One arrival of an open-loop phase: when (seconds since the run began) and in which phase.
struct Arrival {
  double at_s = 0;
  size_t phase = 0;
};
// The open-loop phases' arrivals, in time order, drawn from the options'
// seed, burstiness and phases alone (the same options, the same schedule).
std::vector<Arrival> arrival_schedule(const LoadOptions& o);
// A schedule's identity: FNV-1a (64 bits, hex) over each arrival's phase and
// time in whole microseconds.
std::string schedule_hash(const std::vector<Arrival>& arrivals);

struct RequestRecord {
  uint64_t index = 0;  // order of sending in the run
  size_t phase = 0;    // index into LoadOptions::phases
  std::string phase_name;
  std::string user;     // the closed-loop user's group (its phase's name), or "arrival" (open loop)
  uint32_t worker = 0;  // the user's number in its group, or the arrival's in the schedule
  double start_s = 0;   // send time (open loop: the arrival's time), seconds since the run began
  double queued_ms = 0;  // open loop: from the arrival to its send (every connection was busy)
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
  std::optional<bool> good;  // under the options' limits (nullopt: none set)

  nlohmann::json to_json() const;
};

// Whether a request meets the limits (the goodput rule above); nullopt when neither is set.
std::optional<bool> request_good(const RequestRecord& r, std::optional<double> slo_ttft_ms,
                                 std::optional<double> slo_tpot_ms);

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
  double rate = 0;
  std::chrono::milliseconds think{0};
  bool think_random = false;
  double started_s = 0;  // when it began, seconds since the run began (0 for figures from records alone)
  size_t completed = 0, failed = 0;
  std::optional<size_t> good;       // requests that met the limits (nullopt: none set)
  std::optional<double> goodput;    // good / seconds
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

// The per-phase figures from the records (records of other phases are ignored);
// good and goodput from the records' verdicts when a limit is set.
// peak_in_flight and started_s are left 0: only a run knows them.
std::vector<PhaseReport> summarize_phases(const std::vector<Phase>& phases, const std::vector<RequestRecord>& records,
                                          bool with_goodput = false);

struct LoadReport {
  std::string url, path;
  uint32_t n_predict = 0;
  double elapsed_s = 0;  // the whole run, tail requests included
  double started_unix = 0;  // when the run began (the zero of start_s), seconds since the Unix epoch
  bool canceled = false;
  double drain_s = 0;    // how long requests in flight had after the last phase
  uint64_t seed = 0;
  double burstiness = 1;
  size_t arrivals = 0;      // open-loop arrivals in the schedule (0: a closed-loop load)
  std::string schedule_hash;  // of those arrivals ("" when none)
  std::optional<double> slo_ttft_ms, slo_tpot_ms;
  std::optional<size_t> good;     // over the whole load
  std::optional<double> goodput;  // good / the phases' seconds
  std::vector<PhaseReport> phases;
  std::vector<RequestRecord> requests;  // in the order they were sent

  // {"url", "path", "n_predict", "started_unix", "elapsed_s", "canceled", "drain_s", "schedule": {"seed",
  // "burstiness", "arrivals", "hash"}, "slo": {"ttft_ms", "tpot_ms"}, "good", "request_goodput", "phases", "requests"}
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
