// The llm controller: asks a model behind an OpenAI-compatible endpoint
// (POST /v1/completions; a plain completion, since the random-weight model on
// these machines has no chat template) for a slot number, with a short prompt
// built from the telemetry and the policies' descriptions. It works on its own
// thread, so a decision that takes seconds (a model under TCG) never blocks the
// daemon's loop or its socket; it measures each decision's latency; and any
// answer that is not exactly a filled slot ("0.3", an empty slot, prose, an
// empty answer, a timeout, an HTTP error) is counted, reported as refused and
// never applied: the previous policy stays.
//
// Only a random-weight model exists on these machines: it proves the plumbing,
// the latency and the inertness of bad answers, not the quality of decisions.
//
//   config: "llm": {"endpoint": "http://127.0.0.1:8081", "model": "tiny", "timeout": "10s",
//                   "max_tokens": 4, "temperature": 0, "decide_every": 10}
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "common/http_url.h"
#include "reasoning/controller.h"

namespace httplib {
class Client;
}

namespace akts {

// The model's answer judged against the filled slots. After trimming ASCII
// whitespace (space, \t, \n, \v, \f, \r) and nothing else, the answer must be
// exactly either
//   - a slot number in plain decimal (no sign, no leading zero, no fraction,
//     at most 32 bits) naming a FILLED slot, or
//   - the exact name (case-sensitive) of a filled slot, e.g. "latency".
// Nothing is fuzzy: "slot 1", "1.", "01", "+1", "1 2", "1\n2", a full-width
// digit, an empty slot's number, prose and an empty answer are all errors whose
// message quotes the answer (escaped, cut, valid UTF-8).
Result<uint32_t> parse_llm_answer(std::string_view text, const std::vector<SlotInfo>& slots);

// The prompt: the objective, the window's key figures, what runs now, one line
// per filled slot ("N: name - summary (pick when ...)"), and a last line
// "Slot:" that a completion model continues with a number. A few hundred bytes
// plus a line per policy.
std::string build_llm_prompt(const Window& w, const ControllerContext& ctx);

// The endpoint http://host:port[/prefix]; requests go to prefix + "/v1/completions".
using LlmEndpoint = HttpUrl;
Result<LlmEndpoint> parse_llm_endpoint(std::string_view text);

struct LlmOptions {
  std::string endpoint = "http://127.0.0.1:8081";
  std::string model;                         // sent as "model" when set
  std::chrono::milliseconds timeout{10000};  // bounds connecting, each read and write, and the whole answer
  uint32_t max_tokens = 4;
  double temperature = 0;
  uint32_t decide_every = 10;  // periods between questions

  // {"endpoint", "model", "timeout": "10s", "max_tokens", "temperature", "decide_every"};
  // unknown keys and bad values are errors naming the key.
  static Result<LlmOptions> from_json(const nlohmann::json& j);

  bool operator==(const LlmOptions&) const = default;  // a reload's comparison (src/daemon/reload.h)
};

// Asynchronous: decide() never waits for the model. When no question is in
// flight, the arbiter is not locked and `decide_every` periods have passed since
// the last question began (the first unlocked window asks at once), it hands a
// prompt to the controller's worker thread and returns "no change". The first
// decide() after the answer arrived reports it, judged against the slots of
// THAT call's context: the running slot is "no change" (the model agrees), any
// other filled slot is proposed, and everything else is refused (slot nullopt,
// refused = true, raw = the model's text where there is one). An answer that
// arrives while the arbiter is locked is discarded. One question is in flight at
// a time.
//
// Bounds: every socket wait (connect, each read, each write) is bounded by
// options.timeout, and so is the body (a server that trickles its body is cut
// off at the deadline); a server that trickles its headers, or a host name
// that resolves slowly, can make one question last longer; a body past 1 MiB
// is refused (http_error). None of that
// reaches the reasoning thread or the socket: only this controller's worker
// waits, and no new question starts meanwhile. The destructor stops
// the worker: it shuts the request's socket down, retrying every 10 ms until
// the request has ended, so it returns within about 10 ms once a request is
// on the wire; only a connect still in progress cannot be interrupted, so the
// worst case is about `timeout` (a refused or local connect ends at once).
class LlmController : public Controller {
 public:
  explicit LlmController(LlmOptions o = {});
  ~LlmController() override;
  LlmController(const LlmController&) = delete;
  LlmController& operator=(const LlmController&) = delete;

  std::string name() const override { return "llm"; }
  ControllerDecision decide(const Window& w, const ControllerContext& ctx) override;
  // Counters: asked, answered, proposed, agreed, discarded_locked, refused by
  // kind (malformed, empty_slot, timeout, http_error), in_flight, and the
  // decision latency (min, p50, max, last) of the last 64 answers.
  nlohmann::json state() const override;

  enum class Outcome { kAnswer, kTimeout, kHttpError };
  struct Reply {  // what the worker brings back from one question
    Outcome outcome = Outcome::kHttpError;
    std::string text;   // kAnswer: choices[0].text as returned
    std::string error;  // otherwise: why there is no answer
    double latency_ms = 0;
  };

 private:
  static constexpr size_t kLatencySamples = 64;
  static constexpr uint64_t kMaxAnswerBytes = 1 << 20;
  uint64_t refusals_in_a_row_ = 0;  // decide() only (one thread)

  void run();                                     // the worker thread
  Reply ask(const std::string& prompt) noexcept;  // one HTTP question, on the worker

  LlmOptions o_;
  std::optional<LlmEndpoint> endpoint_;  // nullopt: options.endpoint is invalid (endpoint_error_)
  std::string endpoint_error_;
  std::unique_ptr<httplib::Client> client_;

  // Shared with the worker, under mu_ (held briefly: never across a request).
  mutable std::mutex mu_;
  std::condition_variable cv_;       // the worker waits for a question or stop
  std::condition_variable done_cv_;  // the destructor waits for a request to end
  std::atomic<bool> stop_{false};
  std::optional<std::string> question_;  // a prompt waiting for the worker
  bool in_request_ = false;              // the worker is inside an HTTP request
  std::optional<Reply> reply_;           // an answer waiting for decide()

  // decide()'s own (one thread), and read by state() under mu_.
  bool in_flight_ = false;  // asked, reply not yet reported
  uint64_t period_ = 0, asked_at_ = 0;
  bool ever_asked_ = false;
  std::chrono::steady_clock::time_point asked_time_{};
  uint64_t asked_ = 0, answered_ = 0, proposed_ = 0, agreed_ = 0, discarded_locked_ = 0;
  uint64_t refused_malformed_ = 0, refused_empty_slot_ = 0, refused_timeout_ = 0, refused_http_ = 0;
  std::deque<double> latencies_ms_;
  std::optional<double> last_latency_ms_;

  std::thread worker_;  // last: starts after everything it reads exists
};

}  // namespace akts
