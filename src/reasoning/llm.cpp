// The llm controller: its answer parser, prompt, config, worker thread and
// HTTP question (cpp-httplib, no TLS).
#include "reasoning/llm.h"


#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "common/interrupt.h"
#include "common/parse.h"
#include "common/text.h"
#include "reasoning/features.h"

namespace akts {
namespace {

using Clock = std::chrono::steady_clock;

bool ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::string_view trim_ascii(std::string_view s) {
  while (!s.empty() && ascii_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && ascii_space(s.back())) s.remove_suffix(1);
  return s;
}


// Policy text from the config, on one line of the prompt.
std::string one_line(std::string_view s) {
  std::string out = valid_utf8(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

const SlotInfo* find_slot(const std::vector<SlotInfo>& slots, uint32_t slot) {
  for (const auto& s : slots)
    if (s.slot == slot) return &s;
  return nullptr;
}

std::string filled_list(const std::vector<SlotInfo>& slots) {
  if (slots.empty()) return "no slot is filled";
  std::string out = "filled slots:";
  for (size_t i = 0; i < slots.size(); ++i)
    out += fmt::format("{} {} ({})", i ? "," : "", slots[i].slot, excerpt(slots[i].name, 24));
  return out;
}

std::string describe_slot(const std::vector<SlotInfo>& slots, uint32_t slot) {
  if (slot == AKTS_SLOT_NONE) return "none (the built-in default)";
  const SlotInfo* s = find_slot(slots, slot);
  return s ? fmt::format("slot {} ({})", slot, excerpt(s->name, 24)) : fmt::format("slot {} (empty)", slot);
}

// parse_llm_answer, telling an empty slot's number apart from other faults.
Result<uint32_t> judge_answer(std::string_view text, const std::vector<SlotInfo>& slots, bool* empty_slot) {
  *empty_slot = false;
  std::string_view t = trim_ascii(text);
  if (t.empty())
    return errorf(ErrorKind::kInvalidArgument, "answer {} is empty; expected a slot number ({})", quote_escaped(text),
                  filled_list(slots));
  if (t.find_first_not_of("0123456789") == std::string_view::npos) {
    auto n = parse_u32(t, "answer");  // refuses a leading zero and anything past 32 bits
    if (!n) return n.error();
    if (!find_slot(slots, *n)) {
      *empty_slot = true;
      return errorf(ErrorKind::kInvalidArgument, "answer {} names slot {}, which is empty ({})", quote_escaped(text), *n,
                    filled_list(slots));
    }
    return *n;
  }
  for (const auto& s : slots)
    if (!s.name.empty() && t == s.name) return s.slot;
  return errorf(ErrorKind::kInvalidArgument,
                "answer {} is neither a slot number (plain decimal, e.g. 1) nor a policy's exact name ({})",
                quote_escaped(text), filled_list(slots));
}

}  // namespace

Result<uint32_t> parse_llm_answer(std::string_view text, const std::vector<SlotInfo>& slots) {
  bool empty_slot = false;
  return judge_answer(text, slots, &empty_slot);
}

std::string build_llm_prompt(const Window& w, const ControllerContext& ctx) {
  std::string p = "You choose the CPU scheduling policy of a Linux machine.\n";
  p += fmt::format("Objective: {}.\n", ctx.objective.describe());
  const auto& p99 = w.wait_p99_ms[AKTS_CLASS_LC];
  std::string now =
      p99 ? fmt::format("LC wait p99 {:.1f} ms", *p99) : std::string("LC wait p99 none (no LC wait ended)");
  now += fmt::format(", oldest LC wait {:.1f} ms", w.oldest_wait_ms[AKTS_CLASS_LC]);
  if (w.app_latency_p99_ms) now += fmt::format(", request latency p99 {:.1f} ms", *w.app_latency_p99_ms);
  if (w.app_waiting_oldest_ms)
    now += fmt::format(", oldest request waiting {:.1f} ms for its first token", *w.app_waiting_oldest_ms);
  now += fmt::format(", CPU pressure {:.0f}%", 100 * w.cpu_pressure);
  p += "Now: " + now + ".\n";
  // What the learner decides on (features.h): the load, and each of the objective's limits with its margin.
  p += "Load: " + Features::of(w, ctx.objective).describe() + ".\n";
  if (const SlotInfo* s = find_slot(ctx.slots, ctx.running))
    p += fmt::format("Running: slot {} ({}).\n", s->slot, one_line(s->name));
  else if (ctx.running == AKTS_SLOT_NONE)
    p += "Running: the built-in default (no slot selected).\n";
  else
    p += fmt::format("Running: the built-in default (slot {} is empty).\n", ctx.running);
  p += "Slots:\n";
  for (const auto& s : ctx.slots) {
    p += fmt::format("{}: {}", s.slot, one_line(s.name));
    if (!s.summary.empty()) p += " - " + one_line(s.summary);
    if (!s.pick_when.empty()) p += " (pick when " + one_line(s.pick_when) + ")";
    p += '\n';
  }
  p += "Answer with the slot number only.\nSlot:";
  return p;
}

Result<LlmEndpoint> parse_llm_endpoint(std::string_view text) { return parse_http_url(text, "llm.endpoint"); }

Result<LlmOptions> LlmOptions::from_json(const nlohmann::json& j) {
  if (!j.is_object())
    return make_error(ErrorKind::kInvalidArgument,
                      "llm must be an object such as {\"endpoint\": \"http://127.0.0.1:8081\", \"timeout\": \"10s\"}");
  LlmOptions o;
  auto unsigned_in = [](const nlohmann::json& v, std::string_view key, uint32_t lo, uint32_t hi) -> Result<uint32_t> {
    bool ok = v.is_number_unsigned() ? v.get<uint64_t>() >= lo && v.get<uint64_t>() <= hi
                                     : v.is_number_integer() && v.get<int64_t>() >= lo && v.get<int64_t>() <= hi;
    if (!ok) return errorf(ErrorKind::kInvalidArgument, "llm.{} must be an integer from {} to {}", key, lo, hi);
    return static_cast<uint32_t>(v.get<uint64_t>());
  };
  for (const auto& [key, v] : j.items()) {
    if (key == "endpoint") {
      if (!v.is_string()) return make_error(ErrorKind::kInvalidArgument, "llm.endpoint must be a string");
      auto e = parse_llm_endpoint(v.get_ref<const std::string&>());
      if (!e) return e.error();
      o.endpoint = v.get<std::string>();
    } else if (key == "model") {
      if (!v.is_string() || !is_valid_utf8(v.get_ref<const std::string&>()))
        return make_error(ErrorKind::kInvalidArgument, "llm.model must be a string (the server's model name)");
      o.model = v.get<std::string>();
    } else if (key == "timeout") {
      if (!v.is_string())
        return make_error(ErrorKind::kInvalidArgument, "llm.timeout must be a duration such as \"10s\"");
      auto d = parse_duration(v.get_ref<const std::string&>(), "llm.timeout");
      if (!d) return d.error();
      if (*d < std::chrono::milliseconds(1) || *d > std::chrono::minutes(10))
        return make_error(ErrorKind::kInvalidArgument, "llm.timeout must be from 1ms to 10m");
      o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
    } else if (key == "max_tokens") {
      auto n = unsigned_in(v, key, 1, 256);
      if (!n) return n.error();
      o.max_tokens = *n;
    } else if (key == "temperature") {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 || v.get<double>() > 2)
        return make_error(ErrorKind::kInvalidArgument, "llm.temperature must be a number from 0 to 2");
      o.temperature = v.get<double>();
    } else if (key == "decide_every") {
      auto n = unsigned_in(v, key, 1, 1000000);
      if (!n) return n.error();
      o.decide_every = *n;
    } else {
      return errorf(
          ErrorKind::kInvalidArgument,
          "llm: unknown key \"{}\" (expected endpoint, model, timeout, max_tokens, temperature, decide_every)",
          excerpt(key));
    }
  }
  return o;
}

LlmController::LlmController(LlmOptions o) : o_(std::move(o)) {
  if (o_.timeout < std::chrono::milliseconds(1)) o_.timeout = std::chrono::milliseconds(1);
  if (o_.decide_every == 0) o_.decide_every = 1;
  auto e = parse_llm_endpoint(o_.endpoint);
  if (e) {
    endpoint_ = *e;
    client_ = std::make_unique<httplib::Client>(connect_host(*e), e->port);
    client_->set_keep_alive(false);
    client_->set_connection_timeout(o_.timeout);
    client_->set_read_timeout(o_.timeout);
    client_->set_write_timeout(o_.timeout);
  } else {
    endpoint_error_ = e.error().message;  // every question is refused with it
  }
  worker_ = std::thread([this] { run(); });
}

LlmController::~LlmController() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  // A request in progress: shut its socket down until it ends. Between the
  // worker's taking the question and the socket's opening, stop() finds
  // nothing to shut, hence the retry; a connect in progress holds the client's
  // lock until it ends (bounded by the connection timeout).
  std::unique_lock lk(mu_);
  interrupt_until_idle(lk, done_cv_, in_request_, [this] {
    if (client_) client_->stop();
  });
  lk.unlock();
  worker_.join();
}

void LlmController::run() {
  // A write to a socket the server (or stop()) shut down raises SIGPIPE in the
  // writing thread: blocked here, the write fails with EPIPE instead.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  try {
    std::unique_lock lk(mu_);
    while (true) {
      cv_.wait(lk, [this] { return stop_ || question_.has_value(); });
      if (stop_) return;
      std::string prompt = std::move(*question_);
      question_.reset();
      in_request_ = true;
      lk.unlock();
      Reply r = ask(prompt);
      lk.lock();
      in_request_ = false;
      reply_ = std::move(r);
      done_cv_.notify_all();
    }
  } catch (...) {  // only allocation can fail here: stop asking, never take the daemon down
    std::lock_guard lk(mu_);
    in_request_ = false;
    done_cv_.notify_all();
    spdlog::error("llm: the worker thread stopped on an internal error; no more questions");
  }
}

LlmController::Reply LlmController::ask(const std::string& prompt) noexcept {
  Reply r;
  const auto t0 = Clock::now();
  const auto deadline = t0 + o_.timeout;
  const long long timeout_ms = o_.timeout.count();
  auto elapsed_ms = [t0] { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); };
  auto fail = [&](Outcome outcome, std::string why) {
    r.outcome = outcome;
    r.error = std::move(why);
    r.latency_ms = elapsed_ms();
    return r;
  };
  auto timed_out = [&] { return fail(Outcome::kTimeout, fmt::format("timeout after {} ms", timeout_ms)); };
  try {
    if (!client_) return fail(Outcome::kHttpError, "bad endpoint: " + endpoint_error_);
    nlohmann::json body = {
        {"prompt", prompt}, {"max_tokens", o_.max_tokens}, {"temperature", o_.temperature}, {"stream", false}};
    if (!o_.model.empty()) body["model"] = o_.model;
    httplib::Request req;
    req.method = "POST";
    req.path = endpoint_->prefix + "/v1/completions";
    req.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    req.set_header("Content-Type", "application/json");
    // Each socket wait is bounded by the client's timeouts; this bounds the
    // whole body, and lets the destructor cut a trickling answer short.
    // And caps it: an endpoint cannot make this controller hold more than kMaxAnswerBytes.
    bool too_big = false;
    req.progress = [this, deadline, &too_big](uint64_t len, uint64_t) {
      too_big = too_big || len > kMaxAnswerBytes;
      return !stop_ && !too_big && Clock::now() < deadline;
    };
    auto res = client_->send(req);
    if (too_big) return fail(Outcome::kHttpError, fmt::format("the answer is larger than {} bytes", kMaxAnswerBytes));
    const std::string where = fmt::format("{}:{}", endpoint_->host, endpoint_->port);
    if (!res) {
      switch (res.error()) {
        case httplib::Error::Connection:
          return elapsed_ms() >= 0.95 * timeout_ms
                     ? timed_out()
                     : fail(Outcome::kHttpError,
                            fmt::format("connection refused or host unreachable: cannot connect to {}", where));
        case httplib::Error::ConnectionTimeout:
          return timed_out();
        case httplib::Error::Canceled:
          if (stop_) return fail(Outcome::kHttpError, "stopped: the controller is shutting down");
          return timed_out();
        case httplib::Error::Read:
        case httplib::Error::Write:
          if (stop_) return fail(Outcome::kHttpError, "stopped: the controller is shutting down");
          if (elapsed_ms() >= 0.95 * timeout_ms) return timed_out();
          return fail(Outcome::kHttpError,
                      fmt::format("HTTP error: the connection to {} broke while {}", where,
                                  res.error() == httplib::Error::Read ? "reading the answer" : "sending the question"));
        default:
          return fail(Outcome::kHttpError,
                      fmt::format("HTTP error: {} talking to {}", httplib::to_string(res.error()), where));
      }
    }
    if (Clock::now() > deadline) return timed_out();  // an answer that came too late
    if (res->status != 200)
      return fail(Outcome::kHttpError, fmt::format("HTTP {}: {}", res->status, quote_escaped(res->body, 120)));
    auto j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return fail(Outcome::kHttpError, fmt::format("the server's answer is not JSON: {}", quote_escaped(res->body, 80)));
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty() ||
        !j["choices"][0].is_object() || !j["choices"][0].contains("text") || !j["choices"][0]["text"].is_string())
      return fail(Outcome::kHttpError,
                  fmt::format("the server's answer has no string choices[0].text: {}", quote_escaped(res->body, 80)));
    r.outcome = Outcome::kAnswer;
    r.text = j["choices"][0]["text"].get<std::string>();
    r.latency_ms = elapsed_ms();
    return r;
  } catch (const std::exception& e) {
    return fail(Outcome::kHttpError, fmt::format("HTTP error: {}", e.what()));
  } catch (...) {
    return fail(Outcome::kHttpError, "HTTP error: unknown exception");
  }
}

ControllerDecision LlmController::decide(const Window& w, const ControllerContext& ctx) {
  std::unique_lock lk(mu_);  // the worker holds it only briefly, never across a request
  ++period_;
  ControllerDecision d;
  bool reported = false;
  if (reply_) {
    Reply r = std::move(*reply_);
    reply_.reset();
    in_flight_ = false;
    reported = true;
    d.answer = true;
    if (r.outcome == Outcome::kAnswer) {
      ++answered_;
      latencies_ms_.push_back(r.latency_ms);
      if (latencies_ms_.size() > kLatencySamples) latencies_ms_.pop_front();
      last_latency_ms_ = r.latency_ms;
      d.raw = r.text;
      bool empty_slot = false;
      auto slot = judge_answer(r.text, ctx.slots, &empty_slot);
      if (!slot) {
        ++(empty_slot ? refused_empty_slot_ : refused_malformed_);
        d.refused = true;
        d.refusal = empty_slot ? "empty_slot" : "malformed";
        d.why = fmt::format("refused after {:.0f} ms: {}", r.latency_ms, slot.error().message);
      } else if (ctx.locked) {
        ++discarded_locked_;
        d.why = fmt::format("model answered {} after {:.0f} ms, but the arbiter is locked: discarded",
                            describe_slot(ctx.slots, *slot), r.latency_ms);
      } else if (*slot == ctx.running) {
        ++agreed_;
        d.why = fmt::format("model agrees with what runs: {} (after {:.0f} ms)", describe_slot(ctx.slots, *slot),
                            r.latency_ms);
      } else {
        ++proposed_;
        d.slot = *slot;
        d.why = fmt::format("model answered {} after {:.0f} ms", describe_slot(ctx.slots, *slot), r.latency_ms);
      }
    } else {
      ++(r.outcome == Outcome::kTimeout ? refused_timeout_ : refused_http_);
      d.refused = true;
      d.refusal = r.outcome == Outcome::kTimeout ? "timeout" : "http_error";
      d.why = r.error;
    }
  }

  bool due = !ever_asked_ || period_ - asked_at_ >= o_.decide_every;
  if (!in_flight_ && !ctx.locked && due && !stop_) {
    question_ = build_llm_prompt(w, ctx);
    in_flight_ = true;
    ever_asked_ = true;
    asked_at_ = period_;
    asked_time_ = Clock::now();
    ++asked_;
    cv_.notify_one();
    if (!reported) d.why = fmt::format("asked the model (question {}); the answer comes in a later window", asked_);
  } else if (!reported) {
    if (in_flight_)
      d.why = fmt::format("waiting for the model ({:.0f} ms so far)",
                          std::chrono::duration<double, std::milli>(Clock::now() - asked_time_).count());
    else if (ctx.locked)
      d.why = "locked: not asking the model";
    else
      d.why = fmt::format("next question in {} periods", o_.decide_every - (period_ - asked_at_));
  }
  lk.unlock();
  // A dead endpoint refuses every question: the journal hears of the first in a row, then every 100th.
  if (d.refused && refusals_in_a_row_++ % 100 == 0)
    spdlog::info("llm: refused, previous policy stays: {} ({} in a row)", d.why, refusals_in_a_row_);
  if (reported && !d.refused) refusals_in_a_row_ = 0;
  return d;
}

nlohmann::json LlmController::state() const {
  std::lock_guard lk(mu_);
  nlohmann::json latency = {{"samples", latencies_ms_.size()}};
  if (!latencies_ms_.empty()) {
    std::vector<double> v(latencies_ms_.begin(), latencies_ms_.end());
    std::sort(v.begin(), v.end());
    latency["min"] = v.front();
    latency["p50"] = v[(v.size() - 1) / 2];
    latency["max"] = v.back();
    latency["last"] = *last_latency_ms_;
  }
  return {{"endpoint", o_.endpoint},
          {"model", o_.model},
          {"timeout_ms", o_.timeout.count()},
          {"decide_every", o_.decide_every},
          {"asked", asked_},
          {"answered", answered_},
          {"proposed", proposed_},
          {"agreed", agreed_},
          {"discarded_locked", discarded_locked_},
          {"refused",
           {{"malformed", refused_malformed_},
            {"empty_slot", refused_empty_slot_},
            {"timeout", refused_timeout_},
            {"http_error", refused_http_},
            {"total", refused_malformed_ + refused_empty_slot_ + refused_timeout_ + refused_http_}}},
          {"in_flight", in_flight_},
          {"latency_ms", latency}};
}

}  // namespace akts
