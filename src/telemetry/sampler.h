// The telemetry sampler: turns periodic readings (the kernel's counters and
// the guard's view, the host's /proc files, the application's metrics
// endpoint, latencies the application pushes) into one Window per period.
// The sources sit behind an interface, so tests drive the sampler with fakes
// and no kernel; the daemon reads the real ones (src/daemon/reasoning_worker).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "telemetry/app_metrics.h"
#include "telemetry/host.h"
#include "telemetry/prometheus.h"
#include "telemetry/stats.h"
#include "telemetry/window.h"

namespace akts {

struct KernelReading {
  Stats stats;                        // cumulative counters
  std::array<uint64_t, AKTS_NR_CLASSES> oldest_wait_ns{};  // the guard's last scan
  std::array<uint64_t, AKTS_NR_CLASSES> rescues{};         // cumulative
  std::array<uint64_t, AKTS_NR_CLASSES> waiting_sum{};     // cumulative: tasks seen waiting, summed over firings
  uint64_t guard_runs = 0;                                  // cumulative: the guard's firings
  std::optional<uint64_t> queued;     // tasks in the registered queues now
  uint32_t selected = AKTS_SLOT_NONE, effective = AKTS_SLOT_NONE;
  uint32_t cpus = 1;
};

struct HostReading {
  std::optional<Pressure> pressure;
  std::optional<CpuTimes> cpu;
};

// The application's latest scrape: when it was taken and which one it is.
struct AppScrape {
  PromScrape metrics;
  double age_s = 0;  // how long ago it was taken
  uint64_t seq = 0;  // 1, 2, ...: the same seq twice is the same scrape
  // What the server said it is, asked while its scrape was empty (the
  // "router" of its GET /info: TGI prints no metric before its first
  // request); "" if never asked or never said.
  std::string server;
};

class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;
  virtual Result<KernelReading> read_kernel() = 0;
  virtual HostReading read_host() = 0;
  // The application's latest scrape; nullopt when none is configured or none succeeded yet.
  virtual std::optional<AppScrape> scrape_app() = 0;
};

// Reads /proc/pressure/cpu and /proc/stat (a fake root for tests).
HostReading read_host_files(const std::string& proc_root = "/proc");

// Latencies an application (or a proxy in front of it) pushes between two
// windows, and its latest report of how long its oldest unanswered request has
// waited for a first token. Thread-safe: the socket pushes, the sampler drains.
class PushedSamples {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kMaxPerWindow = 100000;  // beyond this, samples are counted as dropped
  // Refuses (changing nothing) anything that is not a finite value in [0, 1 h]
  // in ms; otherwise returns how many were kept (the rest were dropped: the
  // window already holds kMaxPerWindow). A wait reported before (a positive
  // one) is forgotten: it may be of a request these latencies answered, and
  // the proxy's next report says what still waits.
  Result<size_t> push(const std::vector<double>& latency_ms);
  std::vector<double> drain();
  // Times per output token (ms), one per request as it ends, each with how long that request decoded (ms:
  // a request's TPOT is its mean over its whole decode, which may have begun under another policy) (v1.push
  // "tpot_ms" and "decode_ms"), as push() takes latencies: the same checks (both lists the same length), the
  // same cap per window (the dropped count is the latencies'). They say nothing of a first token still
  // awaited, so the wait reported stays.
  Result<size_t> push_tpot(const std::vector<double>& tpot_ms, const std::vector<double>& decode_ms);
  // The times, and the longest decode among them (0: none).
  std::pair<std::vector<double>, double> drain_tpot();
  // A report that the oldest request not yet given its first token has waited
  // waiting_ms (0: none waits), as of `at`. Refuses (changing nothing) what is
  // not in [0, 1 h]. The latest report wins (an earlier one may name a request
  // answered since): one proxy reports, as a second one's 0 would hide the
  // first one's wait.
  Status report_waiting(double waiting_ms, Clock::time_point at = Clock::now());
  // The latest report aged to `now` (a request still waiting has waited that
  // much longer; 0 stays 0), while it is at most kWaitingValidFor old and, if
  // positive, no latency was pushed after it: a
  // window between two reports of a slow proxy (or a starved machine) still
  // sees the wait, and a proxy that stops reporting reports nothing after it.
  // A request answered since the report is overestimated by at most that.
  // nullopt: no report that recent.
  static constexpr std::chrono::milliseconds kWaitingValidFor{1000};
  std::optional<double> drain_waiting(Clock::time_point now = Clock::now());
  // The load's phase: the name of the phase the application (a load generator) said last that it began
  // (v1.push "phase"), as of `at`, so an oracle can follow the load's own clock. The latest report wins and
  // holds until the next one (a phase lasts until another begins). Refuses (changing nothing) a name that is
  // empty, past kMaxPhaseName bytes, not UTF-8 or holding a control character.
  static constexpr size_t kMaxPhaseName = 64;
  static Status check_phase(std::string_view name);  // the refusal report_phase gives, or none
  Status report_phase(std::string_view name, Clock::time_point at = Clock::now());
  // The load is over: no phase holds until the next is reported.
  void clear_phase();
  // v1.push "phase": a name begins a phase (report_phase), "" says the load is over (clear_phase).
  Status say_phase(const std::string& name);
  // The latest phase and how long before `now` it began (ms); nullopt: none reported, or cleared since.
  std::optional<std::pair<std::string, double>> phase(Clock::time_point now = Clock::now()) const;
  uint64_t dropped() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> pending_;
  std::vector<double> pending_tpot_;
  double pending_decode_max_ = 0;
  std::optional<std::pair<double, Clock::time_point>> waiting_;
  std::optional<std::pair<std::string, Clock::time_point>> phase_;
  uint64_t dropped_ = 0;
};

class Sampler {
 public:
  // Which series mean what (app_metrics.h); under "auto" no application
  // figure is read until a scrape carries a preset's running gauge.
  explicit Sampler(AppMetricsChoice metrics = {});
  // Application figures come from a scrape at most app_max_age_s old (0, the
  // default: kAppMaxAgePeriods periods); rates between two scrapes use the
  // times they were taken.
  static constexpr double kAppMaxAgePeriods = 3;
  // The span of readings kept for a counter printed with few digits
  // (AppMetricNames::counter_digits): its rate is taken over at most this
  // (longer only across a gap in the scrapes, from the one reading before
  // it); exact counters: scrape to scrape.
  static constexpr double kCoarseSpanS = 5;
  void set_app_max_age(double seconds) { app_max_age_s_ = seconds; }
  // Before the first sample: as the constructor's argument.
  void set_app_metrics(AppMetricsChoice metrics);
  // One window ending at t_s (seconds since the daemon started). The first
  // call only primes the counters and returns nullopt; a kernel read that
  // fails returns its error and keeps the previous readings. Pushed samples
  // are taken only into a window (not by a failed read or the priming call).
  Result<std::optional<Window>> sample(double t_s, TelemetrySource& src, PushedSamples* pushed = nullptr);
  // The names in use; nullopt while "auto" has recognised none.
  const std::optional<AppMetricNames>& app_metrics() const { return names_; }
  // The last window's number, and where a sampler that takes over from another (a reload) goes on from.
  uint64_t last_seq() const { return seq_; }
  void continue_after(uint64_t seq) { seq_ = seq; }
  // The kernel's counters started again (a reloaded scheduler): the next call primes them anew.
  void reset_kernel() {
    prev_k_.reset();
    prev_t_.reset();
  }

 private:
  AppMetricsChoice choice_;
  std::optional<AppMetricNames> names_;
  double app_max_age_s_ = 0;
  uint64_t seq_ = 0;
  std::optional<double> prev_t_;
  std::optional<KernelReading> prev_k_;
  HostReading prev_h_;
  std::optional<PromScrape> prev_app_;  // the last scrape a rate was taken from
  double prev_app_t_ = 0;               // when it was taken (t_s - age_s)
  uint64_t prev_app_seq_ = 0;
  // The rated counters' readings (prompt tokens, progress) over the last
  // kCoarseSpanS, oldest first: (when taken, its series).
  std::array<std::deque<std::pair<double, PromSeries>>, 2> counter_history_;
  std::optional<double> counter_rate_over(size_t which, const std::string& name, const PromScrape& m, double taken);
};

// The q-th quantile (0..1) of samples by nearest rank; nullopt when empty.
std::optional<double> quantile(std::vector<double> samples, double q);

}  // namespace akts
