// The load generator's workers, watchdog, stream reading and per-phase figures.
#include "serving/loadgen.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <random>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include "common/http_url.h"
#include "common/text.h"
#include "serving/sse.h"

namespace akts {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

constexpr uint32_t kMaxConcurrency = 1024;
constexpr double kMaxRate = 10000;      // arrivals per second
constexpr double kMaxArrivals = 1e6;    // in one schedule
constexpr uint64_t kMaxWorkers = 4096;  // connections (threads) of one run
constexpr size_t kMaxErrorBody = 2048;  // bytes of a non-200 answer kept for its message
constexpr size_t kMaxDistinctErrors = 8;
constexpr auto kTick = std::chrono::milliseconds(20);  // the watchdog's and the cancel check's period
constexpr auto kMaxConnect = std::chrono::milliseconds(5000);

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}


std::optional<uint32_t> count_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return std::nullopt;
  if (it->is_number_unsigned()) return static_cast<uint32_t>(std::min<uint64_t>(it->get<uint64_t>(), UINT32_MAX));
  if (it->is_number_integer() && it->get<int64_t>() >= 0)
    return static_cast<uint32_t>(std::min<int64_t>(it->get<int64_t>(), UINT32_MAX));
  return std::nullopt;
}

std::string error_message(const json& e) {
  if (e.is_string()) return excerpt(e.get<std::string>(), 200);
  if (e.is_object()) {
    auto m = e.find("message");
    std::string msg = m != e.end() && m->is_string() ? excerpt(m->get<std::string>(), 200) : "";
    auto c = e.find("code");
    if (c != e.end() && c->is_number_integer())
      return msg.empty() ? fmt::format("code {}", c->get<int64_t>())
                         : fmt::format("{} (code {})", msg, c->get<int64_t>());
    if (!msg.empty()) return msg;
  }
  return excerpt(e.dump(-1, ' ', false, json::error_handler_t::replace), 200);
}

bool is_openai_path(std::string_view path) { return path.ends_with("/v1/completions"); }

}  // namespace

// ---------------------------------------------------------------------------
// Events of a completion stream

CompletionEvent parse_completion_event(std::string_view data) {
  CompletionEvent e;
  std::string_view t = data;
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
  if (t == "[DONE]") {
    e.final = e.done_marker = true;
    return e;
  }
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    e.error = fmt::format("an event is not a JSON object: {}", quote_escaped(data, 80));
    return e;
  }
  if (auto err = j.find("error"); err != j.end() && !err->is_null()) {
    e.error = "the server reported an error: " + error_message(*err);
    return e;
  }
  if (auto c = j.find("content"); c != j.end() && c->is_string()) {  // llama-server's own form
    e.generation = true;
    e.text = c->get<std::string>();
    auto stop = j.find("stop");
    e.final = stop != j.end() && stop->is_boolean() && stop->get<bool>();
    if (e.final) {
      e.output_tokens = count_field(j, "tokens_predicted");
      if (!e.output_tokens) {
        if (auto tm = j.find("timings"); tm != j.end() && tm->is_object())
          e.output_tokens = count_field(*tm, "predicted_n");
      }
      e.prompt_tokens = count_field(j, "tokens_evaluated");
    }
    return e;
  }
  if (auto ch = j.find("choices"); ch != j.end() && ch->is_array()) {  // the OpenAI form
    if (!ch->empty() && (*ch)[0].is_object()) {
      const json& c0 = (*ch)[0];
      e.generation = true;
      if (auto tx = c0.find("text"); tx != c0.end() && tx->is_string()) {
        e.text = tx->get<std::string>();
      } else if (auto d = c0.find("delta"); d != c0.end() && d->is_object()) {
        if (auto dc = d->find("content"); dc != d->end() && dc->is_string()) e.text = dc->get<std::string>();
      }
      auto fr = c0.find("finish_reason");
      e.final = fr != c0.end() && fr->is_string();
    }
    if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
      e.output_tokens = count_field(*u, "completion_tokens");
      e.prompt_tokens = count_field(*u, "prompt_tokens");
    }
  }
  return e;  // anything else (a progress event of another shape): ignored
}

// ---------------------------------------------------------------------------
// Figures

double percentile_linear(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  p = std::clamp(std::isfinite(p) ? p : 0.0, 0.0, 100.0);
  double rank = p / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

MetricSummary summarize_metric(std::vector<double> v) {
  MetricSummary s;
  s.n = v.size();
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / static_cast<double>(v.size()));
  std::sort(v.begin(), v.end());
  s.median = percentile_linear(v, 50);
  s.p99 = percentile_linear(std::move(v), 99);
  return s;
}

std::optional<bool> request_good(const RequestRecord& r, std::optional<double> slo_ttft_ms,
                                 std::optional<double> slo_tpot_ms) {
  if (!slo_ttft_ms && !slo_tpot_ms) return std::nullopt;
  if (!r.ok) return false;
  if (slo_ttft_ms && r.ttft_ms > *slo_ttft_ms) return false;
  if (slo_tpot_ms && r.tpot_ms && *r.tpot_ms > *slo_tpot_ms) return false;
  return true;
}

std::vector<PhaseReport> summarize_phases(const std::vector<Phase>& phases, const std::vector<RequestRecord>& records,
                                          bool with_goodput) {
  std::vector<PhaseReport> out;
  for (size_t k = 0; k < phases.size(); ++k) {
    PhaseReport r;
    r.name = valid_utf8(phases[k].name);
    r.seconds = phases[k].seconds;
    r.concurrency = phases[k].concurrency;
    r.rate = phases[k].rate;
    r.think = phases[k].think;
    r.think_random = phases[k].think_random;
    std::vector<double> ttft, tpot, itl, e2el;
    uint64_t input = 0;
    bool input_known = true;
    size_t good = 0;
    for (const auto& rec : records) {
      if (rec.phase != k) continue;
      if (rec.good.value_or(false)) ++good;
      if (!rec.ok) {
        ++r.failed;
        if (r.errors.size() < kMaxDistinctErrors || r.errors.count(rec.error))
          ++r.errors[rec.error];
        else
          ++r.errors["other"];
        continue;
      }
      ++r.completed;
      r.total_output_tokens += rec.output_tokens;
      if (rec.prompt_tokens)
        input += *rec.prompt_tokens;
      else
        input_known = false;
      ttft.push_back(rec.ttft_ms);
      if (rec.tpot_ms) tpot.push_back(*rec.tpot_ms);
      itl.insert(itl.end(), rec.itl_ms.begin(), rec.itl_ms.end());
      e2el.push_back(rec.e2el_ms);
    }
    if (input_known && r.completed > 0) r.total_input_tokens = input;
    if (r.seconds > 0) {
      r.request_throughput = static_cast<double>(r.completed) / r.seconds;
      r.output_throughput = static_cast<double>(r.total_output_tokens) / r.seconds;
    }
    if (with_goodput) {
      r.good = good;
      r.goodput = r.seconds > 0 ? static_cast<double>(good) / r.seconds : 0.0;
    }
    r.ttft = summarize_metric(std::move(ttft));
    r.tpot = summarize_metric(std::move(tpot));
    r.itl = summarize_metric(std::move(itl));
    r.e2el = summarize_metric(std::move(e2el));
    out.push_back(std::move(r));
  }
  return out;
}

json RequestRecord::to_json() const {
  auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  json j = {{"index", index},
            {"phase", phase},
            {"phase_name", valid_utf8(phase_name)},
            {"user", valid_utf8(user)},
            {"worker", worker},
            {"start_s", start_s},
            {"queued_ms", queued_ms},
            {"ok", ok},
            {"http_status", http_status},
            {"ttft_ms", ttft_ms},
            {"e2el_ms", e2el_ms},
            {"tpot_ms", opt(tpot_ms)},
            {"token_events", token_events},
            {"output_tokens", output_tokens},
            {"server_output_tokens", opt(server_output_tokens)},
            {"prompt_tokens", opt(prompt_tokens)},
            {"itl_ms", itl_ms},
            {"good", opt(good)}};
  if (!ok) j["error"] = valid_utf8(error);
  return j;
}

json PhaseReport::to_json() const {
  json j = {{"name", valid_utf8(name)},
            {"duration", seconds},
            {"max_concurrency", concurrency},
            {"request_rate", rate},
            {"started_s", started_s},
            {"think_ms", think.count()},
            {"think", think_random ? "exponential" : "fixed"},
            {"completed", completed},
            {"failed", failed},
            {"total_output_tokens", total_output_tokens},
            {"request_throughput", request_throughput},
            {"output_throughput", output_throughput},
            {"peak_in_flight", peak_in_flight},
            {"good", good ? json(*good) : json(nullptr)},
            {"request_goodput", goodput ? json(*goodput) : json(nullptr)}};
  if (total_input_tokens) {
    j["total_input_tokens"] = *total_input_tokens;
    j["total_token_throughput"] =
        seconds > 0 ? static_cast<double>(*total_input_tokens + total_output_tokens) / seconds : 0.0;
  }
  auto put = [&j](const char* metric, const MetricSummary& s) {
    j[fmt::format("mean_{}_ms", metric)] = s.mean;
    j[fmt::format("median_{}_ms", metric)] = s.median;
    j[fmt::format("std_{}_ms", metric)] = s.std;
    j[fmt::format("p99_{}_ms", metric)] = s.p99;
    j[fmt::format("n_{}", metric)] = s.n;
  };
  put("ttft", ttft);
  put("tpot", tpot);
  put("itl", itl);
  put("e2el", e2el);
  json errs = json::object();
  for (const auto& [msg, n] : errors) errs[valid_utf8(msg)] = n;
  j["errors"] = std::move(errs);
  return j;
}

json LoadReport::to_json() const {
  json ph = json::array(), rq = json::array();
  for (const auto& p : phases) ph.push_back(p.to_json());
  for (const auto& r : requests) rq.push_back(r.to_json());
  auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  return {{"url", valid_utf8(url)},
          {"path", valid_utf8(path)},
          {"n_predict", n_predict},
          {"started_unix", started_unix},
          {"elapsed_s", elapsed_s},
          {"canceled", canceled},
          {"drain_s", drain_s},
          {"schedule", {{"seed", seed}, {"burstiness", burstiness}, {"arrivals", arrivals}, {"hash", schedule_hash}}},
          {"slo", {{"ttft_ms", opt(slo_ttft_ms)}, {"tpot_ms", opt(slo_tpot_ms)}}},
          {"good", opt(good)},
          {"request_goodput", opt(goodput)},
          {"phases", std::move(ph)},
          {"requests", std::move(rq)}};
}

std::string LoadReport::to_text() const {
  const bool with_good = good.has_value();
  std::string out = fmt::format("{:<3} {:<10} {:>6} {:>6} {:>5} {:>5} {:>7} {:>8}  {:>22}  {:>22}  {:>22}{}\n", "#",
                                "phase", "load", "secs", "done", "fail", "req/s", "tok/s", "TTFT ms mean/p50/p99",
                                "TPOT ms mean/p50/p99", "E2EL ms mean/p50/p99", with_good ? "  good  goodput/s" : "");
  auto three = [](const MetricSummary& s) {
    return s.n == 0 ? std::string("-") : fmt::format("{:.0f} / {:.0f} / {:.0f}", s.mean, s.median, s.p99);
  };
  for (size_t k = 0; k < phases.size(); ++k) {
    const auto& p = phases[k];
    const std::string load = p.rate > 0 ? fmt::format("{:g}/s", p.rate) : std::to_string(p.concurrency);
    out += fmt::format("{:<3} {:<10} {:>6} {:>6.1f} {:>5} {:>5} {:>7.2f} {:>8.1f}  {:>22}  {:>22}  {:>22}", k + 1,
                       excerpt(p.name, 10), load, p.seconds, p.completed, p.failed, p.request_throughput,
                       p.output_throughput, three(p.ttft), three(p.tpot), three(p.e2el));
    if (with_good) out += fmt::format("  {:>4}  {:>9.2f}", p.good.value_or(0), p.goodput.value_or(0));
    out += "\n";
    for (const auto& [msg, n] : p.errors) out += fmt::format("    {} x {}\n", n, excerpt(msg, 160));
  }
  if (with_good) {
    std::string limits;
    if (slo_ttft_ms) limits += fmt::format("TTFT <= {:g} ms", *slo_ttft_ms);
    if (slo_tpot_ms) limits += fmt::format("{}TPOT <= {:g} ms", limits.empty() ? "" : ", ", *slo_tpot_ms);
    out += fmt::format("goodput: {} of {} requests met {} ({:.2f}/s over the phases)\n", *good, requests.size(),
                       limits, goodput.value_or(0));
  }
  if (arrivals > 0)
    out += fmt::format("schedule: {} arrivals, seed {}, burstiness {:g}, hash {}\n", arrivals, seed, burstiness,
                       schedule_hash);
  return out;
}

Status validate_load_options(const LoadOptions& o) {
  auto u = parse_http_url(o.url, "loadgen url");
  if (!u) return u.error();
  if (o.path.empty() || o.path.front() != '/')
    return errorf(ErrorKind::kInvalidArgument, "loadgen path {} must start with '/'", quote_escaped(o.path, 60));
  if (o.phases.empty()) return errorf(ErrorKind::kInvalidArgument, "loadgen: no phases");
  double expected_arrivals = 0;
  std::map<std::string, uint32_t> users;  // closed-loop users per phase name
  for (size_t k = 0; k < o.phases.size(); ++k) {
    const auto& p = o.phases[k];
    if (!std::isfinite(p.seconds) || p.seconds <= 0 || p.seconds > 86400)
      return errorf(ErrorKind::kInvalidArgument, "loadgen phase {} ({}): seconds must be in (0, 86400], not {}", k + 1,
                    quote_escaped(p.name, 40), p.seconds);
    if (p.concurrency > kMaxConcurrency)
      return errorf(ErrorKind::kInvalidArgument, "loadgen phase {} ({}): concurrency {} is past {}", k + 1,
                    quote_escaped(p.name, 40), p.concurrency, kMaxConcurrency);
    if (p.think.count() < 0 || p.think > std::chrono::hours(1))
      return errorf(ErrorKind::kInvalidArgument, "loadgen phase {} ({}): think time must be in [0, 1h], not {} ms",
                    k + 1, quote_escaped(p.name, 40), p.think.count());
    if (!std::isfinite(p.rate) || p.rate < 0 || p.rate > kMaxRate)
      return errorf(ErrorKind::kInvalidArgument, "loadgen phase {} ({}): the rate must be in [0, {:g}]/s, not {}",
                    k + 1, quote_escaped(p.name, 40), kMaxRate, p.rate);
    if (p.rate > 0 && p.concurrency > 0)
      return errorf(ErrorKind::kInvalidArgument,
                    "loadgen phase {} ({}): a rate (open loop) and a concurrency (closed loop) together", k + 1,
                    quote_escaped(p.name, 40));
    if (p.rate > 0 && p.think.count() != 0)
      return errorf(ErrorKind::kInvalidArgument,
                    "loadgen phase {} ({}): an open-loop phase (a rate) has no think time: its arrivals come on a "
                    "schedule",
                    k + 1, quote_escaped(p.name, 40));
    expected_arrivals += p.rate * p.seconds;
    if (p.rate == 0 && p.concurrency > 0) users[p.name] = std::max(users[p.name], p.concurrency);
  }
  // Half the schedule's cap: a schedule that would reach it is refused before the run (arrival_schedule's count
  // varies around this expectation; at the cap it would stop drawing and later phases would lose arrivals).
  if (expected_arrivals > kMaxArrivals / 2)
    return errorf(ErrorKind::kInvalidArgument, "loadgen: the rates ask for about {:.0f} arrivals, past {:g}",
                  expected_arrivals, kMaxArrivals / 2);
  uint64_t workers = expected_arrivals > 0 ? o.max_in_flight : 0;
  for (const auto& [name, n] : users) workers += n;
  if (workers > kMaxWorkers)
    return errorf(ErrorKind::kInvalidArgument,
                  "loadgen: {} connections at once (the closed-loop users of every phase name, and the open loop's "
                  "pool), past {}",
                  workers, kMaxWorkers);
  if (!std::isfinite(o.burstiness) || o.burstiness < 0.01 || o.burstiness > 100)
    return errorf(ErrorKind::kInvalidArgument, "loadgen: burstiness must be in [0.01, 100], not {}", o.burstiness);
  if (o.max_in_flight < 1 || o.max_in_flight > kMaxConcurrency)
    return errorf(ErrorKind::kInvalidArgument, "loadgen: max_in_flight must be in [1, {}], not {}", kMaxConcurrency,
                  o.max_in_flight);
  if (o.drain && o.drain->count() < 0) return errorf(ErrorKind::kInvalidArgument, "loadgen: drain must not be negative");
  for (const auto& [what, v] : {std::pair{"TTFT", o.slo_ttft_ms}, std::pair{"TPOT", o.slo_tpot_ms}})
    if (v && (!std::isfinite(*v) || *v <= 0))
      return errorf(ErrorKind::kInvalidArgument, "loadgen: the {} limit must be a positive number of ms, not {}", what,
                    *v);
  if (o.n_predict == 0) return errorf(ErrorKind::kInvalidArgument, "loadgen: n_predict must be at least 1");
  if (o.request_timeout.count() < 1)
    return errorf(ErrorKind::kInvalidArgument, "loadgen: request_timeout must be at least 1 ms");
  if (o.failure_pause.count() < 0)
    return errorf(ErrorKind::kInvalidArgument, "loadgen: failure_pause must not be negative");
  if (o.on_waiting && o.waiting_every.count() < 1)
    return errorf(ErrorKind::kInvalidArgument, "loadgen: waiting_every must be at least 1 ms");
  return {};
}

// ---------------------------------------------------------------------------
// The open loop's schedule

std::vector<Arrival> arrival_schedule(const LoadOptions& o) {
  std::vector<Arrival> out;
  if (!std::isfinite(o.burstiness) || o.burstiness <= 0) return out;
  double start = 0;
  for (size_t k = 0; k < o.phases.size(); ++k) {
    const Phase& p = o.phases[k];
    const double end = start + p.seconds;
    if (p.rate > 0 && std::isfinite(p.rate)) {
      // A generator of each phase's own (the seed's and the phase's number): a phase's arrivals do not move when
      // another phase's rate does.
      std::seed_seq seq{static_cast<uint32_t>(o.seed), static_cast<uint32_t>(o.seed >> 32), static_cast<uint32_t>(k)};
      std::mt19937_64 rng(seq);
      std::gamma_distribution<double> gap(o.burstiness, 1.0 / (p.rate * o.burstiness));
      for (double t = start + gap(rng); t < end && out.size() < static_cast<size_t>(kMaxArrivals); t += gap(rng))
        out.push_back({t, k});
    }
    start = end;
  }
  return out;
}

std::string schedule_hash(const std::vector<Arrival>& arrivals) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a, 64 bits
  auto mix = [&h](uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (const auto& a : arrivals) {
    mix(a.phase);
    mix(static_cast<uint64_t>(std::llround(a.at_s * 1e6)));
  }
  return fmt::format("{:016x}", h);
}

// ---------------------------------------------------------------------------
// The run

namespace {

class Run {
 public:
  Run(const LoadOptions& o, HttpUrl u, std::string ip) : o_(o), u_(std::move(u)), ip_(std::move(ip)) {}
  Result<LoadReport> go();

 private:
  enum class Cut { kNone, kTimeout, kCancel, kDrain };
  struct Slot {
    httplib::Client* cli = nullptr;  // the worker's, while it lives
    bool busy = false;               // inside a request
    Clock::time_point deadline{};
    Cut cut = Cut::kNone;  // why the watchdog shut the request's socket
    std::optional<Clock::time_point> waiting_since;  // arrived (sent), no first token yet
  };
  // Who a worker is: a closed-loop user (its group, the phases' name, and its
  // number in it) or a connection of the open-loop pool (group empty).
  struct Who {
    std::string group;
    uint32_t number = 0;
  };
  // Clears the worker's slot before its Client is destroyed, however the worker ends.
  struct SlotGuard {
    Run* run;
    uint32_t i;
    ~SlotGuard() {
      std::lock_guard lk(run->mu_);
      run->slots_[i] = Slot{};
    }
  };

  void worker(uint32_t i) noexcept;
  void closed_loop(uint32_t i, httplib::Client& cli, std::unique_lock<std::mutex>& lk, std::mt19937_64& rng);
  void open_loop(uint32_t i, httplib::Client& cli, std::unique_lock<std::mutex>& lk);
  bool my_turn(uint32_t i) const;  // under mu_: the running phase is this closed-loop user's
  RequestRecord request(httplib::Client& cli, uint32_t i, size_t phase, uint64_t index,
                        Clock::time_point arrival) noexcept;
  void keep(RequestRecord rec);  // the on_request callback, then the record (takes mu_)
  void watchdog();  // under mu_
  void report_waiting() noexcept;  // the on_waiting thread
  bool cancel_requested() const { return o_.cancel && o_.cancel->load(); }

  const LoadOptions& o_;
  HttpUrl u_;
  std::string ip_;
  std::string request_path_, request_body_;
  std::vector<Who> who_;  // per worker
  std::vector<Arrival> arrivals_;

  std::mutex mu_;
  std::condition_variable cv_;  // workers wait for their phase, an arrival, or the end
  int phase_ = -1;
  bool started_ = false;      // t0_ is set: the run's clock runs
  uint32_t ready_ = 0;        // workers waiting for their first request (or gone): the clock starts when all are
  bool phases_over_ = false;  // closed-loop users send no more
  bool stop_ = false;         // nobody sends any more (the drain deadline, a cancel, an early exit)
  bool draining_ = false;     // past the drain deadline: requests still in flight are cut as unanswered
  size_t next_arrival_ = 0;   // the first arrival no connection has taken
  uint32_t live_ = 0;
  uint32_t gone_ = 0;  // workers that have ended
  std::vector<Slot> slots_;
  std::vector<RequestRecord> records_;
  uint64_t next_index_ = 0;
  uint32_t in_flight_ = 0;
  std::vector<uint32_t> peak_;
  Clock::time_point t0_{};
  std::atomic<bool> canceling_{false};
  int64_t drain_ms_ = 0;
  bool reporter_stop_ = false;  // under mu_
  std::condition_variable reporter_cv_;

  std::mutex callback_mu_;
  bool callback_failed_ = false;  // under callback_mu_
};

Clock::time_point at(Clock::time_point t0, double s) {
  return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

void Run::watchdog() {
  const auto now = Clock::now();
  const bool cancel = canceling_.load();
  for (auto& s : slots_) {
    if (!s.busy || !s.cli) continue;
    if (cancel || draining_ || now >= s.deadline) {
      // Again on every tick while the request lasts: a stop that lands before
      // the request has opened its socket finds nothing to shut.
      if (s.cut == Cut::kNone) s.cut = cancel ? Cut::kCancel : now >= s.deadline ? Cut::kTimeout : Cut::kDrain;
      s.cli->stop();
    }
  }
}

void Run::report_waiting() noexcept {
  bool reported_some = false;
  std::unique_lock lk(mu_);
  while (!reporter_cv_.wait_for(lk, o_.waiting_every, [&] { return reporter_stop_; })) {
    std::optional<Clock::time_point> oldest;
    for (const auto& s : slots_)
      if (s.waiting_since && (!oldest || *s.waiting_since < *oldest)) oldest = s.waiting_since;
    // An arrival that came while every connection was busy waits in the client: it waits all the same.
    const auto now = Clock::now();
    if (started_ && next_arrival_ < arrivals_.size() && !stop_) {
      const auto due = at(t0_, arrivals_[next_arrival_].at_s);
      if (due <= now && (!oldest || due < *oldest)) oldest = due;
    }
    const double ms = oldest ? ms_between(*oldest, now) : 0.0;
    if (!oldest && !reported_some) continue;
    reported_some = oldest.has_value();
    lk.unlock();
    try {
      o_.on_waiting(ms);
    } catch (...) {  // the caller's failure is not the run's
    }
    lk.lock();
  }
  if (!reported_some) return;
  lk.unlock();
  try {
    o_.on_waiting(0);  // the run is over: none of its requests waits any more
  } catch (...) {
  }
}

bool Run::my_turn(uint32_t i) const {
  if (phase_ < 0 || phases_over_) return false;
  const Phase& p = o_.phases[static_cast<size_t>(phase_)];
  return p.rate == 0 && p.name == who_[i].group && who_[i].number < p.concurrency;
}

void Run::keep(RequestRecord rec) {
  if (o_.on_request) {
    std::lock_guard cb(callback_mu_);
    try {
      o_.on_request(rec);
    } catch (const std::exception& e) {
      if (!callback_failed_) spdlog::warn("loadgen: the on_request callback threw: {}", e.what());
      callback_failed_ = true;
    } catch (...) {
      if (!callback_failed_) spdlog::warn("loadgen: the on_request callback threw");
      callback_failed_ = true;
    }
  }
  std::lock_guard lk(mu_);
  records_.push_back(std::move(rec));
}

void Run::closed_loop(uint32_t i, httplib::Client& cli, std::unique_lock<std::mutex>& lk, std::mt19937_64& rng) {
  while (true) {
    cv_.wait(lk, [&] { return stop_ || phases_over_ || my_turn(i); });
    if (stop_ || phases_over_) break;
    const size_t p = static_cast<size_t>(phase_);
    const uint64_t index = next_index_++;
    lk.unlock();
    RequestRecord rec = request(cli, i, p, index, Clock::now());
    const bool failed = !rec.ok;
    keep(std::move(rec));
    lk.lock();
    // A pause before the next request: after a failure, and the phase's think time; the next phase ends it.
    std::chrono::milliseconds think = o_.phases[p].think;
    if (o_.phases[p].think_random && think.count() > 0) {
      double drawn = std::exponential_distribution<double>(1.0 / static_cast<double>(think.count()))(rng);
      think = std::chrono::milliseconds(std::llround(std::min(drawn, 3600e3)));
    }
    const auto pause = std::max(failed ? o_.failure_pause : std::chrono::milliseconds(0), think);
    if (pause.count() > 0)
      cv_.wait_for(lk, pause, [&] { return stop_ || phases_over_ || phase_ != static_cast<int>(p); });
  }
}

void Run::open_loop(uint32_t i, httplib::Client& cli, std::unique_lock<std::mutex>& lk) {
  cv_.wait(lk, [&] { return stop_ || started_; });
  while (true) {
    if (stop_ || next_arrival_ >= arrivals_.size()) break;
    const auto due = at(t0_, arrivals_[next_arrival_].at_s);
    if (Clock::now() < due) {
      cv_.wait_until(lk, due);  // or earlier: a notify re-checks
      continue;
    }
    const size_t a = next_arrival_++;
    const uint64_t index = next_index_++;
    lk.unlock();
    RequestRecord rec = request(cli, i, arrivals_[a].phase, index, due);
    rec.worker = static_cast<uint32_t>(a);
    keep(std::move(rec));
    lk.lock();
  }
}

void Run::worker(uint32_t i) noexcept {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);  // a shut socket fails a write with EPIPE instead
  try {
    httplib::Client cli(ip_, u_.port);
    // The watchdog's stop() waits while a connect is under way (httplib connects
    // under the lock stop() takes): a short connect bound keeps that wait short.
    cli.set_connection_timeout(std::min<std::chrono::milliseconds>(o_.request_timeout, kMaxConnect));
    cli.set_read_timeout(o_.request_timeout);
    cli.set_write_timeout(o_.request_timeout);
    // The name as written, not the address: a virtual host or an ingress routes by it.
    cli.set_default_headers({{"Host", fmt::format("{}:{}", u_.host, u_.port)}});
    SlotGuard guard{this, i};
    // Each group's users draw apart: steady user 0 and burst user 0 do not think alike.
    std::seed_seq seq{static_cast<uint32_t>(o_.seed), static_cast<uint32_t>(o_.seed >> 32), who_[i].number,
                      static_cast<uint32_t>(std::hash<std::string>{}(who_[i].group))};
    std::mt19937_64 rng(seq);
    std::unique_lock lk(mu_);
    slots_[i].cli = &cli;
    ++ready_;
    cv_.notify_all();
    if (who_[i].group.empty())
      open_loop(i, cli, lk);
    else
      closed_loop(i, cli, lk, rng);
  } catch (const std::exception& e) {  // allocation only: this worker stops, the run goes on
    spdlog::error("loadgen: worker {} stopped: {}", i, e.what());
  } catch (...) {
    spdlog::error("loadgen: worker {} stopped on an unknown error", i);
  }
  std::lock_guard lk(mu_);
  --live_;
  ++gone_;
  cv_.notify_all();
}

RequestRecord Run::request(httplib::Client& cli, uint32_t i, size_t phase, uint64_t index,
                           Clock::time_point arrival) noexcept {
  RequestRecord rec;
  rec.index = index;
  rec.phase = phase;
  rec.worker = who_[i].number;
  // Times run from the request's arrival: its send for a closed-loop user, its time in the schedule for an
  // open-loop one (a wait for a free connection counts).
  Clock::time_point t_send, t_send_real;
  {
    std::lock_guard lk(mu_);
    t_send_real = Clock::now();
    t_send = std::min(arrival, t_send_real);
    Slot& s = slots_[i];
    s.busy = true;
    s.deadline = t_send_real + o_.request_timeout;
    s.cut = Cut::kNone;
    s.waiting_since = t_send;
    peak_[phase] = std::max(peak_[phase], ++in_flight_);
  }
  const auto deadline = t_send_real + o_.request_timeout;
  rec.start_s = std::chrono::duration<double>(t_send - t0_).count();
  rec.queued_ms = ms_between(t_send, t_send_real);

  // What the stream has said so far (the receiver runs on this thread).
  SseParser sse;
  std::vector<SseEvent> events;
  int status = 0;
  std::string content_type, error_body, stream_error;
  bool got_final = false, receiver_timed_out = false, receiver_canceled = false;
  std::optional<Clock::time_point> first_token, last_token, last_generation;
  Cut cut = Cut::kNone;
  httplib::Error http_error = httplib::Error::Success;
  try {
    rec.phase_name = o_.phases[phase].name;
    rec.user = who_[i].group.empty() ? "arrival" : who_[i].group;
    httplib::Request req;
    req.method = "POST";
    req.path = request_path_;
    req.body = request_body_;
    req.set_header("Content-Type", "application/json");
    req.set_header("Accept", "text/event-stream");
    req.response_handler = [&](const httplib::Response& res) {
      status = res.status;
      content_type = res.get_header_value("Content-Type");
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      const auto now = Clock::now();
      if (canceling_.load()) {
        receiver_canceled = true;
        return false;
      }
      if (now >= deadline) {
        receiver_timed_out = true;
        return false;
      }
      if (status != 200) {  // keep the start of an error's body for the message
        error_body.append(data, std::min(n, kMaxErrorBody - error_body.size()));
        return error_body.size() < kMaxErrorBody;
      }
      events.clear();
      auto fed = sse.feed(std::string_view(data, n), events);
      for (const auto& ev : events) {
        CompletionEvent ce = parse_completion_event(ev.data);
        if (!ce.error.empty()) {
          stream_error = std::move(ce.error);
          return false;
        }
        if (!ce.text.empty()) {
          if (!first_token) {
            first_token = now;
            {
              std::lock_guard lk(mu_);
              slots_[i].waiting_since.reset();
            }
            if (o_.on_first_token) {
              try {
                o_.on_first_token(ms_between(t_send, now));
              } catch (...) {  // the caller's failure is not the request's
              }
            }
          } else
            rec.itl_ms.push_back(ms_between(*last_token, now));
          last_token = now;
          ++rec.token_events;
        }
        if (ce.generation) last_generation = now;
        if (ce.output_tokens) rec.server_output_tokens = ce.output_tokens;
        if (ce.prompt_tokens) rec.prompt_tokens = ce.prompt_tokens;
        got_final = got_final || ce.final;
      }
      if (!fed) {
        stream_error = fed.error().message;
        return false;
      }
      return true;
    };
    auto res = cli.send(req);
    http_error = res.error();
  } catch (const std::exception& e) {
    stream_error = fmt::format("internal error: {}", e.what());
  } catch (...) {
    stream_error = "internal error";
  }
  const auto t_end = Clock::now();
  {
    std::lock_guard lk(mu_);
    Slot& s = slots_[i];
    cut = s.cut;
    s.busy = false;
    s.cut = Cut::kNone;
    s.waiting_since.reset();
    --in_flight_;
  }

  rec.http_status = status;
  rec.output_tokens = rec.server_output_tokens.value_or(rec.token_events);
  if (first_token) rec.ttft_ms = ms_between(t_send, *first_token);
  auto fail = [&](std::string why) {
    rec.ok = false;
    rec.error = std::move(why);
    rec.e2el_ms = ms_between(t_send, t_end);
    return std::move(rec);
  };
  try {
    const std::string where = fmt::format("{}:{}", u_.host, u_.port);
    if (cut == Cut::kCancel || receiver_canceled) return fail("canceled: the run was stopped");
    if (cut == Cut::kDrain && !(http_error == httplib::Error::Success && got_final && status == 200))
      return fail(fmt::format("unanswered by the drain deadline ({} ms after the last phase)", drain_ms_));
    const bool timed_out = cut == Cut::kTimeout || receiver_timed_out ||
                           http_error == httplib::Error::ConnectionTimeout ||
                           (http_error != httplib::Error::Success && t_end >= deadline);
    if (timed_out && !(http_error == httplib::Error::Success && got_final && status == 200))
      return fail(fmt::format("timeout: no complete answer within {} ms", o_.request_timeout.count()));
    if (http_error == httplib::Error::Connection)
      return fail(fmt::format("cannot connect to {} (connection refused or host unreachable)", where));
    if (status != 0 && status != 200)
      return fail(error_body.empty() ? fmt::format("HTTP {}", status)
                                     : fmt::format("HTTP {}: {}", status, quote_escaped(error_body, 120)));
    if (!stream_error.empty()) return fail(stream_error);
    switch (http_error) {
      case httplib::Error::Success:
        break;
      case httplib::Error::Read:
        return fail(status == 0 ? fmt::format("the connection to {} broke before an answer", where)
                                : fmt::format("the connection to {} broke while reading the stream", where));
      case httplib::Error::Write:
        return fail(fmt::format("the connection to {} broke while sending the request", where));
      default:
        return fail(fmt::format("HTTP error talking to {}: {}", where, httplib::to_string(http_error)));
    }
    if (rec.token_events == 0) {
      if (content_type.find("text/event-stream") == std::string::npos)
        return fail(fmt::format("the answer is not an event stream (Content-Type {})", quote_escaped(content_type, 60)));
      return fail("the stream carried no token");
    }
    if (!got_final) return fail("the stream ended before its final event");
    rec.ok = true;
    rec.e2el_ms = ms_between(t_send, last_generation.value_or(t_end));
    if (rec.output_tokens > 1) rec.tpot_ms = (rec.e2el_ms - rec.ttft_ms) / (rec.output_tokens - 1);
    return rec;
  } catch (...) {  // allocation only
    rec.ok = false;
    rec.error = "internal error";  // short enough to need no allocation
    return rec;
  }
}

Result<LoadReport> Run::go() {
  const bool openai = is_openai_path(o_.path);
  request_path_ = u_.prefix + o_.path;
  json body = {{"prompt", o_.prompt}, {"stream", true}, {"ignore_eos", true}, {"cache_prompt", false}};
  if (openai) {
    body["max_tokens"] = o_.n_predict;
    body["stream_options"] = {{"include_usage", true}};
    if (!o_.model.empty()) body["model"] = o_.model;
  } else {
    body["n_predict"] = o_.n_predict;
  }
  request_body_ = body.dump(-1, ' ', false, json::error_handler_t::replace);

  // The workers: each closed-loop group's users (as many as its busiest phase asks for), then the open loop's pool.
  std::map<std::string, uint32_t> groups;
  for (const auto& p : o_.phases)
    if (p.rate == 0 && p.concurrency > 0) groups[p.name] = std::max(groups[p.name], p.concurrency);
  for (const auto& [name, n] : groups)
    for (uint32_t j = 0; j < n; ++j) who_.push_back({name, j});
  arrivals_ = arrival_schedule(o_);
  const auto pool = static_cast<uint32_t>(std::min<size_t>(o_.max_in_flight, arrivals_.size()));
  for (uint32_t j = 0; j < pool; ++j) who_.push_back({"", j});
  const auto workers = static_cast<uint32_t>(who_.size());
  const auto drain = o_.drain.value_or(o_.request_timeout);
  drain_ms_ = drain.count();

  slots_.assign(workers, Slot{});
  peak_.assign(o_.phases.size(), 0);
  std::vector<std::thread> threads;
  threads.reserve(workers);
  // However go() leaves, no worker outlives it: on an early exit the ones in a
  // request are cut at their next read.
  struct Joiner {
    Run* run;
    std::vector<std::thread>& threads;
    ~Joiner() {
      bool any = std::any_of(threads.begin(), threads.end(), [](const std::thread& t) { return t.joinable(); });
      if (!any) return;
      {
        std::lock_guard lk(run->mu_);
        run->stop_ = true;
        run->canceling_ = true;
      }
      run->cv_.notify_all();
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{this, threads};
  try {
    for (uint32_t i = 0; i < workers; ++i) {
      {
        std::lock_guard lk(mu_);
        ++live_;
      }
      try {
        threads.emplace_back([this, i] { worker(i); });
      } catch (...) {
        std::lock_guard lk(mu_);
        --live_;
        throw;
      }
    }
  } catch (const std::system_error& e) {
    return errorf(ErrorKind::kSystem, "loadgen: cannot start {} worker threads: {}", workers, e.what());
  }
  // The waiting reporter, stopped and joined however go() leaves (before the workers are).
  std::thread reporter;
  struct ReporterStop {
    Run* run;
    std::thread& t;
    ~ReporterStop() {
      if (!t.joinable()) return;
      {
        std::lock_guard lk(run->mu_);
        run->reporter_stop_ = true;
      }
      run->reporter_cv_.notify_all();
      t.join();
    }
  } reporter_stop{this, reporter};
  if (o_.on_waiting) {
    try {
      reporter = std::thread([this] { report_waiting(); });
    } catch (const std::system_error& e) {
      return errorf(ErrorKind::kSystem, "loadgen: cannot start the waiting reporter: {}", e.what());
    }
  }

  LoadReport report;
  report.url = o_.url;
  report.path = o_.path;
  report.n_predict = o_.n_predict;
  report.seed = o_.seed;
  report.burstiness = o_.burstiness;
  report.arrivals = arrivals_.size();
  if (!arrivals_.empty()) report.schedule_hash = schedule_hash(arrivals_);
  report.slo_ttft_ms = o_.slo_ttft_ms;
  report.slo_tpot_ms = o_.slo_tpot_ms;
  std::vector<Phase> ran = o_.phases;  // the seconds each phase really ran (shorter when canceled)
  for (auto& p : ran) p.seconds = 0;
  std::vector<double> started(o_.phases.size(), 0);

  // The clock starts once every worker is waiting for its first request (or has ended): no phase loses the time
  // threads take to start, and no arrival waits for one to come up.
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return ready_ + gone_ >= workers; });
  t0_ = Clock::now();
  started_ = true;
  report.started_unix = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto boundary = t0_;
  for (size_t k = 0; k < o_.phases.size() && !report.canceled; ++k) {
    const auto phase_start = boundary;
    boundary += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.phases[k].seconds));
    phase_ = static_cast<int>(k);
    started[k] = std::chrono::duration<double>(Clock::now() - t0_).count();
    cv_.notify_all();
    if (o_.on_phase) {
      lk.unlock();
      try {
        o_.on_phase(k, o_.phases[k].name);
      } catch (...) {  // the caller's failure is not the run's
      }
      lk.lock();
    }
    while (true) {
      auto now = Clock::now();
      if (cancel_requested()) {
        canceling_ = true;
        report.canceled = true;
        ran[k].seconds = std::chrono::duration<double>(now - phase_start).count();
        break;
      }
      if (now >= boundary) {
        ran[k].seconds = o_.phases[k].seconds;
        break;
      }
      watchdog();
      lk.unlock();
      std::this_thread::sleep_until(std::min(boundary, now + kTick));
      lk.lock();
    }
  }
  phases_over_ = true;
  if (report.canceled) stop_ = true;
  auto cancel_at = Clock::now();
  cv_.notify_all();
  // The tail: requests still in flight end on their own, at their deadline, or at the drain deadline.
  const auto drain_deadline = Clock::now() + drain;
  while (live_ > 0) {
    if (!canceling_ && cancel_requested()) {
      canceling_ = true;
      report.canceled = true;
      stop_ = true;
      cancel_at = Clock::now();
      cv_.notify_all();
    }
    if (!draining_ && Clock::now() >= drain_deadline) {
      draining_ = true;
      stop_ = true;
      cv_.notify_all();
    }
    watchdog();
    lk.unlock();
    std::this_thread::sleep_for(kTick / 2);
    lk.lock();
  }
  report.elapsed_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  report.drain_s = std::chrono::duration<double>(drain).count();
  // Arrivals no connection took (every one was busy until the end): unanswered, never absent. A canceled run
  // records only those that had arrived: the ones after it never came.
  for (size_t a = next_arrival_; a < arrivals_.size(); ++a) {
    if (report.canceled && arrivals_[a].at_s > std::chrono::duration<double>(cancel_at - t0_).count()) break;
    RequestRecord rec;
    rec.index = next_index_++;
    rec.phase = arrivals_[a].phase;
    rec.phase_name = o_.phases[rec.phase].name;
    rec.user = "arrival";
    rec.worker = static_cast<uint32_t>(a);
    rec.start_s = arrivals_[a].at_s;
    rec.error = report.canceled ? "canceled: the run was stopped"
                                : fmt::format("unanswered by the drain deadline ({} ms after the last phase): never "
                                              "sent, every connection was busy",
                                              drain_ms_);
    rec.e2el_ms = std::max(0.0, report.elapsed_s - rec.start_s) * 1e3;
    records_.push_back(std::move(rec));
  }
  lk.unlock();
  for (auto& t : threads) t.join();

  std::sort(records_.begin(), records_.end(),
            [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
  const bool with_goodput = o_.slo_ttft_ms || o_.slo_tpot_ms;
  size_t good = 0;
  for (auto& r : records_) {
    r.good = request_good(r, o_.slo_ttft_ms, o_.slo_tpot_ms);
    good += r.good.value_or(false);
  }
  report.phases = summarize_phases(ran, records_, with_goodput);
  double seconds = 0;
  for (size_t k = 0; k < report.phases.size(); ++k) {
    report.phases[k].peak_in_flight = peak_[k];
    report.phases[k].started_s = started[k];
    seconds += ran[k].seconds;
  }
  if (with_goodput) {
    report.good = good;
    report.goodput = seconds > 0 ? static_cast<double>(good) / seconds : 0.0;
  }
  report.requests = std::move(records_);
  return report;
}

}  // namespace

Result<LoadReport> run_load(const LoadOptions& o) {
  if (auto v = validate_load_options(o); !v) return v.error();
  auto u = parse_http_url(o.url, "loadgen url");
  if (!u) return u.error();
  auto ip = resolve_ipv4(connect_host(*u));
  if (!ip) return ip.error();
  try {
    Run run(o, *u, *ip);
    return run.go();
  } catch (const std::exception& e) {
    return errorf(ErrorKind::kSystem, "loadgen: {}", e.what());
  }
}

}  // namespace akts
