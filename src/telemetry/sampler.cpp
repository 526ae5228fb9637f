// The sampler's window arithmetic, the host files and the pushed samples.
#include "telemetry/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/text.h"

namespace akts {
namespace {

// An application's figure, if it is one: a finite, non-negative number (a
// metrics endpoint may serve +Inf, NaN or garbage that parses as a number).
std::optional<double> sane(std::optional<double> v) {
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 1e12) return std::nullopt;
  return v;
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

HostReading read_host_files(const std::string& proc_root) {
  HostReading h;
  if (auto t = slurp(proc_root + "/pressure/cpu"))
    if (auto p = parse_cpu_pressure(*t)) h.pressure = *p;
  if (auto t = slurp(proc_root + "/stat"))
    if (auto c = parse_proc_stat_cpu(*t)) h.cpu = *c;
  return h;
}

namespace {

// The first value of `v` that is not a time in [0, 1 h] ms, as the refusal's text; "" when all are.
std::string bad_time(const std::vector<double>& v, const char* name, const char* what) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i]) || v[i] < 0 || v[i] > 3600e3)
      return fmt::format("{}[{}] = {} is not {} in [0, 3600000] ms", name, i, v[i], what);
  return "";
}

// Appends what room is left of kMaxPerWindow; returns how many were taken.
size_t take_capped(std::vector<double>& into, const std::vector<double>& from, size_t cap) {
  size_t take = std::min(cap - std::min(cap, into.size()), from.size());
  into.insert(into.end(), from.begin(), from.begin() + static_cast<std::ptrdiff_t>(take));
  return take;
}

}  // namespace

Result<size_t> PushedSamples::push(const std::vector<double>& latency_ms) {
  if (auto bad = bad_time(latency_ms, "latency_ms", "a latency"); !bad.empty())
    return make_error(ErrorKind::kInvalidArgument, bad);
  std::lock_guard lock(mu_);
  size_t take = take_capped(pending_, latency_ms, kMaxPerWindow);
  dropped_ += latency_ms.size() - take;
  // The wait reported before may be of a request these latencies answered: it is not aged on past them.
  if (waiting_ && waiting_->first > 0) waiting_.reset();
  return take;
}

Result<size_t> PushedSamples::push_tpot(const std::vector<double>& tpot_ms, const std::vector<double>& decode_ms) {
  if (decode_ms.size() != tpot_ms.size())
    return errorf(ErrorKind::kInvalidArgument, "{} times per output token but {} decode times: one each per request",
                  tpot_ms.size(), decode_ms.size());
  for (auto [v, name] : {std::pair{&tpot_ms, "tpot_ms"}, std::pair{&decode_ms, "decode_ms"}})
    if (auto bad = bad_time(*v, name, "a time"); !bad.empty()) return make_error(ErrorKind::kInvalidArgument, bad);
  std::lock_guard lock(mu_);
  size_t take = take_capped(pending_tpot_, tpot_ms, kMaxPerWindow);
  for (size_t i = 0; i < take; ++i) pending_decode_max_ = std::max(pending_decode_max_, decode_ms[i]);
  dropped_ += tpot_ms.size() - take;
  return take;
}

std::pair<std::vector<double>, double> PushedSamples::drain_tpot() {
  std::lock_guard lock(mu_);
  std::pair<std::vector<double>, double> out{{}, pending_decode_max_};
  out.first.swap(pending_tpot_);
  pending_decode_max_ = 0;
  return out;
}

std::vector<double> PushedSamples::drain() {
  std::lock_guard lock(mu_);
  std::vector<double> out;
  out.swap(pending_);
  return out;
}

Status PushedSamples::report_waiting(double waiting_ms, Clock::time_point at) {
  if (!std::isfinite(waiting_ms) || waiting_ms < 0 || waiting_ms > 3600e3)
    return errorf(ErrorKind::kInvalidArgument, "waiting_ms = {} is not a wait in [0, 3600000] ms", waiting_ms);
  std::lock_guard lock(mu_);
  if (!waiting_ || at >= waiting_->second) waiting_ = std::make_pair(waiting_ms, at);
  return {};
}

std::optional<double> PushedSamples::drain_waiting(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (!waiting_) return std::nullopt;
  const auto age = now - waiting_->second;
  if (age > kWaitingValidFor) {
    waiting_.reset();
    return std::nullopt;
  }
  if (waiting_->first <= 0) return 0.0;
  return waiting_->first + std::max(0.0, std::chrono::duration<double, std::milli>(age).count());
}

Status PushedSamples::check_phase(std::string_view name) {
  const bool control =
      std::any_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  if (name.empty() || name.size() > kMaxPhaseName || !is_valid_utf8(name) || control)
    return errorf(ErrorKind::kInvalidArgument,
                  "phase {} is not a phase name (1 to {} bytes of UTF-8 text, no control characters)",
                  quote_escaped(name, 40), kMaxPhaseName);
  return {};
}

Status PushedSamples::report_phase(std::string_view name, Clock::time_point at) {
  if (auto st = check_phase(name); !st) return st;
  std::lock_guard lock(mu_);
  if (!phase_ || at >= phase_->second) phase_ = std::make_pair(std::string(name), at);
  return {};
}

void PushedSamples::clear_phase() {
  std::lock_guard lock(mu_);
  phase_.reset();
}

Status PushedSamples::say_phase(const std::string& name) {
  if (name.empty()) {
    clear_phase();
    return {};
  }
  return report_phase(name);
}

std::optional<std::pair<std::string, double>> PushedSamples::phase(Clock::time_point now) const {
  std::lock_guard lock(mu_);
  if (!phase_) return std::nullopt;
  return std::make_pair(phase_->first,
                        std::max(0.0, std::chrono::duration<double, std::milli>(now - phase_->second).count()));
}

uint64_t PushedSamples::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

std::optional<double> quantile(std::vector<double> samples, double q) {
  if (samples.empty()) return std::nullopt;
  size_t rank = static_cast<size_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(samples.size())));
  size_t idx = rank == 0 ? 0 : rank - 1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(idx), samples.end());
  return samples[idx];
}

Sampler::Sampler(AppMetricsChoice metrics) { set_app_metrics(std::move(metrics)); }

std::optional<double> Sampler::counter_rate_over(size_t which, const std::string& name, const PromScrape& m,
                                                 double taken) {
  const auto& h = counter_history_[which];
  if (h.empty() || !names_) return std::nullopt;
  PromSelector sel = series_of(name, names_->labels);
  const PromSeries now = counter_series(m, sel.name, sel.labels, names_->repeated_across);
  // A counter printed with d significant digits is a multiple of 10^(e - d + 1) past 10^d (e: its exponent):
  // its step. The rate is taken from the latest reading at least 10 steps (of every series) below, else from the
  // oldest kept that has these series.
  double step = 0;
  if (const int d = names_->counter_digits; d > 0)
    for (const auto& [labels, v] : now)
      if (std::isfinite(v) && v >= std::pow(10.0, d)) step += std::pow(10.0, std::floor(std::log10(v)) - d + 1);
  std::optional<double> rate;  // over the longest span read so far
  for (auto it = h.rbegin(); it != h.rend(); ++it) {
    if (!(taken > it->first)) continue;
    auto inc = counter_increase(it->second, now);
    if (!inc) break;  // an older reading without these series: the span read so far
    rate = *inc / (taken - it->first);
    if (*inc >= 10 * step) break;
  }
  return rate;
}

void Sampler::set_app_metrics(AppMetricsChoice metrics) {
  choice_ = std::move(metrics);
  names_.reset();
  for (auto& h : counter_history_) h.clear();
  if (!choice_.recognise) names_ = choice_.names;
}

Result<std::optional<Window>> Sampler::sample(double t_s, TelemetrySource& src, PushedSamples* pushed) {
  auto k = src.read_kernel();
  if (!k) return k.error();
  std::vector<double> pushed_ms, pushed_tpot_ms;
  double pushed_decode_max_ms = 0;
  std::optional<double> waiting_ms;
  std::optional<std::pair<std::string, double>> phase;
  if (pushed && prev_t_ && prev_k_ && t_s > *prev_t_) {
    pushed_ms = pushed->drain();
    std::tie(pushed_tpot_ms, pushed_decode_max_ms) = pushed->drain_tpot();
    waiting_ms = pushed->drain_waiting();
    phase = pushed->phase();
  }
  HostReading h = src.read_host();
  std::optional<AppScrape> app = src.scrape_app();
  if (!names_ && app)
    if (auto found = recognise_app_metrics(app->metrics, app->server)) {
      names_ = apply_overrides(*found, choice_.overrides);
      spdlog::info("application metrics: {} recognised from {}", found->preset,
                   app->metrics.samples.empty() ? fmt::format("its GET /info (\"{}\")", app->server) : "a scrape");
    }

  std::optional<Window> out;
  if (prev_t_ && prev_k_ && t_s > *prev_t_) {
    Window w;
    w.seq = ++seq_;
    w.t_s = t_s;
    w.unix_s = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    w.period_s = t_s - *prev_t_;
    w.cpus = std::max<uint32_t>(k->cpus, 1);
    Stats d = k->stats - prev_k_->stats;
    for (uint32_t c = 0; c < AKTS_NR_CLASSES; ++c) {
      w.waits[c] = d.waits(c);
      if (auto p = d.wait_percentile_ns(c, 0.50)) w.wait_p50_ms[c] = *p / 1e6;
      if (auto p = d.wait_percentile_ns(c, 0.99)) w.wait_p99_ms[c] = *p / 1e6;
      w.oldest_wait_ms[c] = static_cast<double>(k->oldest_wait_ns[c]) / 1e6;
      w.run_ms[c] = static_cast<double>(d.run_ns[c]) / 1e6;
      w.wait_ms[c] = static_cast<double>(d.wait_ns[c]) / 1e6;
      w.rescues[c] = k->rescues[c] >= prev_k_->rescues[c] ? k->rescues[c] - prev_k_->rescues[c] : 0;
      if (k->guard_runs > prev_k_->guard_runs && k->waiting_sum[c] >= prev_k_->waiting_sum[c])
        w.tasks_waiting[c] = static_cast<double>(k->waiting_sum[c] - prev_k_->waiting_sum[c]) /
                             static_cast<double>(k->guard_runs - prev_k_->guard_runs);
    }
    w.queued = k->queued.value_or(0);
    w.dispatches = d.total_entries();
    w.fallthrough = d.total_fallthrough();
    for (uint32_t slot = 0; slot < AKTS_MAX_SLOTS; ++slot) w.calls[slot] = d.total_calls(slot);
    w.selected_slot = k->selected;
    w.effective_slot = k->effective;
    if (prev_h_.cpu && h.cpu) w.cpu_util = cpu_utilisation(*prev_h_.cpu, *h.cpu).value_or(0.0);
    if (prev_h_.pressure && h.pressure)
      w.cpu_pressure = pressure_share(*prev_h_.pressure, *h.pressure, w.period_s).value_or(0.0);
    if (h.cpu) w.runnable = h.cpu->procs_running;
    std::optional<PromHistogram> observed;       // the latency histogram's deltas since the last scrape
    std::optional<PromHistogram> observed_tpot;  // the inter-token histogram's
    std::optional<PromHistogram> observed_queue;  // the queue-time histogram's
    double observed_span_ms = 0;                 // from the scrape before to the window's end
    if (names_ && app && app->age_s <= (app_max_age_s_ > 0 ? app_max_age_s_ : kAppMaxAgePeriods * w.period_s)) {
      const AppMetricNames& n = *names_;
      const PromScrape& m = app->metrics;
      auto gauge = [&](const std::string& name) {
        PromSelector sel = series_of(name, n.labels);
        auto v = m.sum(sel.name, sel.labels, n.repeated_across);
        // Only an empty scrape (a fresh TGI's) reads 0: labels or a server that never match read nothing.
        return sane(!v && n.absent_gauges_are_zero && m.samples.empty() ? std::optional<double>(0.0) : v);
      };
      auto increase = [&](const std::string& base) {
        PromSelector sel = series_of(base, n.labels);
        return histogram_increase(*prev_app_, m, sel.name, sel.labels, n.repeated_across);
      };
      w.app_requests_processing = gauge(n.running);
      if (!n.waiting.empty()) w.app_requests_waiting = gauge(n.waiting);
      double taken = t_s - app->age_s;
      if (app->seq != prev_app_seq_ && taken > prev_app_t_) {
        if (!n.prompt_tokens.empty()) w.app_prompt_tokens_per_s = sane(counter_rate_over(0, n.prompt_tokens, m, taken));
        if (!n.progress.empty()) w.app_decode_tokens_per_s = sane(counter_rate_over(1, n.progress, m, taken));
      }
      if (prev_app_ && app->seq != prev_app_seq_ && taken > prev_app_t_) {
        if (!n.latency_histogram.empty()) observed = increase(n.latency_histogram);
        if (!n.tpot_histogram.empty()) observed_tpot = increase(n.tpot_histogram);
        if (!n.queue_histogram.empty()) observed_queue = increase(n.queue_histogram);
        observed_span_ms = (t_s - prev_app_t_) * 1e3;
      }
    }
    // What the application pushed comes first; without it, a histogram's scrape-to-scrape deltas (seconds).
    auto take = [&](const std::vector<double>& pushed_samples, const std::optional<PromHistogram>& hist,
                    uint64_t& samples, std::optional<double>& p50, std::optional<double>& p99, std::string& from,
                    double& span) {
      if (!pushed_samples.empty()) {
        samples = pushed_samples.size();
        p50 = quantile(pushed_samples, 0.50);
        p99 = quantile(pushed_samples, 0.99);
        from = "pushed";
        span = w.period_s * 1e3;
      } else if (hist && hist->count >= 1) {
        samples = static_cast<uint64_t>(std::llround(hist->count));
        auto ms = [](std::optional<double> s) { return s ? std::optional<double>(*s * 1e3) : std::nullopt; };
        p50 = sane(ms(histogram_quantile(*hist, 0.50)));
        p99 = sane(ms(histogram_quantile(*hist, 0.99)));
        from = "histogram";
        span = observed_span_ms;
      }
    };
    take(pushed_ms, observed, w.app_latency_samples, w.app_latency_p50_ms, w.app_latency_p99_ms,
         w.app_latency_from, w.app_latency_span_ms);
    take(pushed_tpot_ms, observed_tpot, w.app_tpot_samples, w.app_tpot_p50_ms, w.app_tpot_p99_ms, w.app_tpot_from,
         w.app_tpot_span_ms);
    if (observed_queue && observed_queue->count >= 1) {
      w.app_queue_samples = static_cast<uint64_t>(std::llround(observed_queue->count));
      if (auto s = histogram_quantile(*observed_queue, 0.99)) w.app_queue_p99_ms = sane(std::optional<double>(*s * 1e3));
      w.app_queue_span_ms = observed_span_ms;
    }
    // A pushed TPOT is a request's mean over its whole decode: what it says reaches back that far.
    if (w.app_tpot_from == "pushed") w.app_tpot_span_ms += pushed_decode_max_ms;
    w.app_waiting_oldest_ms = waiting_ms;
    if (phase) {
      w.app_phase = std::move(phase->first);
      w.app_phase_age_ms = phase->second;
    }
    out = w;
  }
  prev_t_ = t_s;
  prev_k_ = *k;
  prev_h_ = h;
  if (app && app->seq != prev_app_seq_) {
    if (names_) {  // the rated counters' readings, for the spans counter_rate_over() takes
      const double taken = t_s - app->age_s;
      const std::string* rated[] = {&names_->prompt_tokens, &names_->progress};
      for (size_t i = 0; i < counter_history_.size(); ++i) {
        auto& hist = counter_history_[i];
        while (!hist.empty() && hist.back().first >= taken) hist.pop_back();  // taken later: not before this one
        while (hist.size() > 1 && hist[1].first <= taken - kCoarseSpanS) hist.pop_front();  // one at the span stays
        PromSelector sel = series_of(*rated[i], names_->labels);
        if (!rated[i]->empty())
          hist.emplace_back(taken, counter_series(app->metrics, sel.name, sel.labels, names_->repeated_across));
      }
    }
    prev_app_t_ = t_s - app->age_s;
    prev_app_seq_ = app->seq;
    prev_app_ = std::move(app->metrics);
  }
  return out;
}

}  // namespace akts
