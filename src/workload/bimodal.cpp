// The bimodal request server: arrivals, the worker pool, and each load's figures.
#include "workload/bimodal.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>
#include <thread>

#include <fmt/format.h>

namespace akts::workload {

using json = nlohmann::json;

namespace {

int64_t mono_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

int64_t thread_cpu_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

void sleep_until_mono(int64_t ns) {
  timespec t{static_cast<time_t>(ns / 1'000'000'000LL), static_cast<long>(ns % 1'000'000'000LL)};
  while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) == EINTR) {
  }
}

// Nearest rank of sorted values; 0 for none.
double rank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t r = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(r, 1, sorted.size()) - 1];
}

json percentiles(std::vector<double> v, double scale) {
  if (v.empty()) return {{"n", 0}, {"p50", nullptr}, {"p99", nullptr}, {"p999", nullptr}, {"max", nullptr}};
  std::sort(v.begin(), v.end());
  return {{"n", v.size()},
          {"p50", rank(v, 0.5) * scale},
          {"p99", rank(v, 0.99) * scale},
          {"p999", rank(v, 0.999) * scale},
          {"max", v.back() * scale}};
}

unsigned allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
}

double mean_service_s(const BimodalOptions& o) {
  return (1 - o.long_fraction) * std::chrono::duration<double>(o.short_ns).count() +
         o.long_fraction * std::chrono::duration<double>(o.long_ns).count();
}

struct Job {
  size_t idx;
  int64_t arrival_ns;
  int64_t service_ns;
  bool is_long;
};

// The pool: a queue the load generator fills and idle workers take from, one job each at a time. Its lock
// has no priority inheritance: a worker the policy under test preempts while holding it holds back the
// generator too (the report's arrivals_late_max_ms shows how much).
class Pool {
 public:
  // Throws std::system_error when a thread cannot be started (those started are joined first).
  Pool(unsigned n, HintFn hint) : hint_(std::move(hint)) {
    try {
      for (unsigned i = 0; i < n; ++i)
        threads_.emplace_back([this, i] {
          ::pthread_setname_np(::pthread_self(), fmt::format("bimodal-w{}", i).substr(0, 15).c_str());
          work();
        });
    } catch (...) {
      stop();
      throw;
    }
  }
  ~Pool() { stop(); }

  // Tells every thread to stop, without waiting for them.
  void let_go() {
    {
      std::lock_guard lk(m_);
      quit_ = true;
    }
    abandon_ = true;
    cv_.notify_all();
  }

  // A new load: `n` requests, none outstanding.
  void begin(size_t n) {
    std::lock_guard lk(m_);
    served_.assign(n, Served{0, 0, false, false});
    done_ = 0;
    app_queued_ = 0;
    hint_errors_ = 0;
    first_hint_error_.clear();
    abandon_ = false;
  }

  void submit(const Job& j) {
    {
      std::lock_guard lk(m_);
      if (q_.size() >= idle_) ++app_queued_;
      q_.push_back(j);
    }
    cv_.notify_one();
  }

  // Until every request of the load was served, or `deadline_ns`: then the unfinished ones are abandoned
  // (queued ones recorded at once, running ones as soon as their thread sees it). False if even they did
  // not come back within `grace_ns`.
  bool drain(size_t n, int64_t deadline_ns, int64_t grace_ns) {
    std::unique_lock lk(m_);
    auto until = [&](int64_t ns) {
      while (done_ < n) {
        int64_t left = ns - mono_ns();
        if (left <= 0) return false;
        done_cv_.wait_for(lk, std::chrono::nanoseconds(std::min<int64_t>(left, 50'000'000)));
      }
      return true;
    };
    if (until(deadline_ns)) return true;
    abandon_ = true;
    int64_t now = mono_ns();
    for (const auto& j : q_) {
      served_[j.idx] = {static_cast<double>(now - j.arrival_ns), static_cast<double>(j.service_ns), j.is_long, false};
      ++done_;
    }
    q_.clear();
    return until(now + grace_ns);
  }

  std::vector<Served> served() {
    std::lock_guard lk(m_);
    return served_;
  }
  size_t app_queued() {
    std::lock_guard lk(m_);
    return app_queued_;
  }
  size_t hint_errors() {
    std::lock_guard lk(m_);
    return hint_errors_;
  }
  std::string first_hint_error() {
    std::lock_guard lk(m_);
    return first_hint_error_;
  }

 private:
  void stop() {
    {
      std::lock_guard lk(m_);
      quit_ = true;
    }
    abandon_ = true;
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  void work() {
    for (;;) {
      Job j;
      {
        std::unique_lock lk(m_);
        ++idle_;
        cv_.wait(lk, [&] { return quit_ || !q_.empty(); });
        --idle_;
        if (quit_) return;
        j = q_.front();
        q_.pop_front();
      }
      bool hint_failed = false;
      double hint_ns = -1;
      if (hint_) {
        int64_t h0 = mono_ns();
        auto st = hint_(static_cast<pid_t>(::gettid()), std::chrono::nanoseconds(j.service_ns));
        hint_ns = static_cast<double>(mono_ns() - h0);
        if (!st) {
          hint_failed = true;
          std::lock_guard lk(m_);
          if (first_hint_error_.empty()) first_hint_error_ = st.error().message;
        }
      }
      bool finished = spin(j.service_ns);
      int64_t end = mono_ns();
      {
        std::lock_guard lk(m_);
        served_[j.idx] = {static_cast<double>(end - j.arrival_ns), static_cast<double>(j.service_ns), j.is_long,
                          finished, hint_ns};
        hint_errors_ += hint_failed;
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  // Burns `ns` of this thread's CPU time (time it waits does not count); false if abandoned first.
  bool spin(int64_t ns) {
    int64_t start = thread_cpu_ns();
    for (;;) {
      for (int i = 0; i < 2000; ++i) asm volatile("" ::: "memory");
      if (thread_cpu_ns() - start >= ns) return true;
      if (abandon_.load(std::memory_order_relaxed)) return false;
    }
  }

  const HintFn hint_;  // a copy: on a timeout the threads outlive the caller's
  std::mutex m_;
  std::condition_variable cv_, done_cv_;
  std::deque<Job> q_;
  std::vector<Served> served_;
  size_t done_ = 0, app_queued_ = 0, hint_errors_ = 0;
  std::string first_hint_error_;
  unsigned idle_ = 0;
  bool quit_ = false;
  std::atomic<bool> abandon_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

Status check(const BimodalOptions& o) {
  auto bad = [](std::string m) { return make_error(ErrorKind::kInvalidArgument, std::move(m)); };
  if (o.loads.empty()) return bad("give at least one load");
  for (double l : o.loads)
    if (!(l > 0 && l <= 2)) return bad(fmt::format("a load is a fraction of the CPUs' capacity in (0, 2], not {}", l));
  if (!(o.seconds >= 0.5 && o.seconds <= 600)) return bad(fmt::format("seconds per load: 0.5 to 600, not {}", o.seconds));
  if (o.short_ns < std::chrono::microseconds(10) || o.short_ns > std::chrono::seconds(10))
    return bad("a short request's service time: 10us to 10s");
  if (o.long_ns < o.short_ns || o.long_ns > std::chrono::seconds(60))
    return bad("a long request's service time: at least the short one's, at most 60s");
  if (!(o.long_fraction >= 0 && o.long_fraction <= 1))
    return bad(fmt::format("the long requests' fraction: 0 to 1, not {}", o.long_fraction));
  if (o.workers < 1 || o.workers > 4096) return bad(fmt::format("workers: 1 to 4096, not {}", o.workers));
  if (o.cpus > 4096) return bad(fmt::format("cpus: 0 (those this process may use) to 4096, not {}", o.cpus));
  if (!(o.slo_slowdown >= 1 && o.slo_slowdown <= 1e6))
    return bad(fmt::format("the slowdown objective: 1 to 1e6, not {}", o.slo_slowdown));
  double arrivals = 0;
  for (double l : o.loads) arrivals += l * (o.cpus ? o.cpus : allowed_cpus()) / mean_service_s(o) * o.seconds;
  if (arrivals > 5e6)
    return bad(fmt::format("about {:.0f} requests in all: at most 5 million (fewer loads, seconds or CPUs, or longer "
                           "requests)",
                           arrivals));
  return {};
}

std::vector<Arrival> make_arrivals(double rate, double seconds, double long_fraction, uint64_t seed) {
  std::vector<Arrival> out;
  if (!(rate > 0) || !(seconds > 0)) return out;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (double t = gap(rng); t < seconds; t += gap(rng)) out.push_back({t, u(rng) < long_fraction});
  return out;
}

json summarize_load(const std::vector<Served>& served, double seconds, double slo) {
  std::vector<double> slowdown, short_lat, long_lat, hint;
  size_t finished = 0, good = 0;
  for (const auto& s : served) {
    if (s.hint_ns >= 0) hint.push_back(s.hint_ns);
    double sd = s.service_ns > 0 ? s.latency_ns / s.service_ns : 0;
    slowdown.push_back(sd);
    (s.is_long ? long_lat : short_lat).push_back(s.latency_ns);
    finished += s.finished;
    good += s.finished && sd <= slo;
  }
  json out = {{"requests", served.size()},
          {"finished", finished},
          {"unfinished", served.size() - finished},
          {"achieved_rps", static_cast<double>(finished) / seconds},  // finished, over the arrivals' seconds
          {"goodput_rps", static_cast<double>(good) / seconds},
          {"slowdown", percentiles(slowdown, 1.0)},
          {"short_latency_ms", percentiles(short_lat, 1e-6)},
          {"long_latency_ms", percentiles(long_lat, 1e-6)}};
  if (!hint.empty()) out["hint_ms"] = percentiles(hint, 1e-6);
  return out;
}

double max_load_at_slo(const json& loads, double slo) {
  double best = 0;
  for (const auto& l : loads) {
    const json& p = l["slowdown"]["p999"];
    if (!p.is_number() || p.get<double>() > slo || l.value("unfinished", size_t{0}) > 0 ||
        l.value("requests", size_t{0}) == 0)
      break;
    best = l.value("load", 0.0);
  }
  return best;
}

Result<json> run_bimodal(const BimodalOptions& o, const HintFn& hint, const ProgressFn& progress) {
  if (auto st = check(o); !st) return st.error();
  unsigned cpus = o.cpus ? o.cpus : allowed_cpus();
  double mean_s = mean_service_s(o);
  std::vector<double> sweep = o.loads;
  std::sort(sweep.begin(), sweep.end());
  sweep.erase(std::unique(sweep.begin(), sweep.end()), sweep.end());
  json loads = json::array();
  std::unique_ptr<Pool> pool_owner;
  try {
    pool_owner = std::make_unique<Pool>(o.workers, hint);
  } catch (const std::system_error& e) {
    return make_error(ErrorKind::kSystem, fmt::format("cannot start {} worker threads: {}", o.workers, e.what()));
  }
  Pool& pool = *pool_owner;
  // The arrivals' thread (this one) above every policy under test; restored when the run ends. The workers
  // were started before, so they keep the normal policy (a thread inherits its creator's).
  int old_policy = ::sched_getscheduler(0);
  sched_param old_param{};
  ::sched_getparam(0, &old_param);
  bool rt = false;
  std::string rt_error;
  if (o.rt_generator) {
    sched_param sp{};
    sp.sched_priority = 1;
    rt = ::sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
    if (!rt) rt_error = std::strerror(errno);
  }
  struct Restore {
    bool on;
    int policy;
    sched_param param;
    ~Restore() {
      if (on) ::sched_setscheduler(0, policy, &param);
    }
  } restore{rt, old_policy, old_param};
  for (size_t li = 0; li < sweep.size(); ++li) {
    double load = sweep[li];
    double rate = load * cpus / mean_s;
    auto arrivals = make_arrivals(rate, o.seconds, o.long_fraction, o.seed + li);
    if (progress)
      progress(fmt::format("load {:.2f}: {} requests at {:.0f}/s for {:g} s", load, arrivals.size(), rate, o.seconds));
    pool.begin(arrivals.size());
    int64_t t0 = mono_ns() + 20'000'000;
    int64_t late_ns = 0;
    for (size_t i = 0; i < arrivals.size(); ++i) {
      int64_t at = t0 + static_cast<int64_t>(arrivals[i].at_s * 1e9);
      int64_t now = mono_ns();
      if (now < at) sleep_until_mono(at);
      else late_ns = std::max(late_ns, now - at);
      auto svc = arrivals[i].is_long ? o.long_ns : o.short_ns;
      pool.submit({i, at, svc.count(), arrivals[i].is_long});
    }
    int64_t end = t0 + static_cast<int64_t>(o.seconds * 1e9);
    // Stable loads drain in a few long requests' time; a backlog the policy cannot clear is cut off.
    int64_t drain_ns = static_cast<int64_t>(std::max(10.0, 2 * o.seconds) * 1e9) + 4 * o.long_ns.count();
    if (!pool.drain(arrivals.size(), std::max(end, mono_ns()) + drain_ns, 30'000'000'000LL)) {
      // Joining threads the scheduler does not run would hang: told to stop, they end on their own, and the
      // pool they use is never freed.
      pool.let_go();
      (void)pool_owner.release();
      return make_error(ErrorKind::kTimeout,
                        fmt::format("load {:.2f}: requests still running 30 s after they were abandoned", load));
    }
    json s = summarize_load(pool.served(), o.seconds, o.slo_slowdown);
    s["load"] = load;
    s["offered_rps"] = rate;
    s["app_queued"] = pool.app_queued();
    s["arrivals_late_max_ms"] = static_cast<double>(late_ns) / 1e6;
    if (hint) {
      s["hint_errors"] = pool.hint_errors();
      if (pool.hint_errors()) s["first_hint_error"] = pool.first_hint_error();
    }
    if (progress)
      progress(fmt::format("load {:.2f}: p99.9 slowdown {}, goodput {:.0f}/s of {:.0f}/s offered{}", load,
                           s["slowdown"]["p999"].is_number() ? fmt::format("{:.1f}", s["slowdown"]["p999"].get<double>())
                                                             : std::string("- (no requests)"),
                           s["goodput_rps"].get<double>(), rate,
                           s["unfinished"].get<size_t>() ? fmt::format(", {} unfinished", s["unfinished"].get<size_t>())
                                                         : std::string()));
    loads.push_back(std::move(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return json{{"workload", "bimodal"},
              {"cpus", cpus},
              {"short_ns", o.short_ns.count()},
              {"long_ns", o.long_ns.count()},
              {"long_fraction", o.long_fraction},
              {"workers", o.workers},
              {"seconds", o.seconds},
              {"slo_slowdown", o.slo_slowdown},
              {"hints", static_cast<bool>(hint)},
              {"generator", rt ? "SCHED_FIFO 1" : o.rt_generator ? "normal (SCHED_FIFO refused: " + rt_error + ")"
                                                                 : "normal"},
              {"seed", o.seed},
              {"loads", loads},
              {"max_load_at_slo", max_load_at_slo(loads, o.slo_slowdown)}};
}

}  // namespace akts::workload
