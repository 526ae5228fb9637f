// The bimodal request server (`akts bench bimodal`): open-loop Poisson arrivals of short and long CPU-bound
// requests (Skyloft's RocksDB GET/SCAN mix) served by a pool of threads, so that waiting requests queue in
// the kernel, where the scheduler decides who runs; per offered load, the latency, the slowdown (latency over
// the request's service time) and the goodput (requests served within the slowdown objective per second).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::workload {

struct BimodalOptions {
  std::vector<double> loads = {0.2, 0.4, 0.6, 0.8};  // offered load: a fraction of the CPUs' capacity
  double seconds = 5;                                // of arrivals per load
  std::chrono::nanoseconds short_ns{1'000'000};      // a short request's CPU time (a GET)
  std::chrono::nanoseconds long_ns{100'000'000};     // a long one's (a SCAN)
  double long_fraction = 0.01;                       // of the requests
  unsigned workers = 256;  // threads: more than can be busy at once, so requests wait in the kernel's queues
                           // (a request that finds none idle waits in the application: counted, app_queued)
  bool rt_generator = true;  // the arrivals' thread at SCHED_FIFO, above the policy under test (as a NIC's
                             // interrupts would be), so that the policy does not hold arrivals back
  unsigned cpus = 0;       // the capacity's basis; 0: the CPUs this process may run on
  double slo_slowdown = 50;
  uint64_t seed = 1;
};

// The options' ranges, and at most 5 million arrivals in all; the first one out of range as an error (the
// caller's input: kInvalidArgument).
Status check(const BimodalOptions& o);

struct Arrival {
  double at_s;  // since the load's start
  bool is_long;
};
// Poisson arrivals at `rate` per second for `seconds`, each long with probability long_fraction; the same
// seed gives the same sequence.
std::vector<Arrival> make_arrivals(double rate, double seconds, double long_fraction, uint64_t seed);

struct Served {
  double latency_ns;  // arrival to completion; for an unfinished request, arrival to when it was abandoned
  double service_ns;  // the CPU time asked for
  bool is_long;
  bool finished;
  double hint_ns = -1;  // how long giving the hint took (-1: none given); its time counts in the latency
};
// One load's figures from its requests (unfinished ones count with their lower-bound latency); the
// percentiles of no requests are null.
nlohmann::json summarize_load(const std::vector<Served>& served, double seconds, double slo_slowdown);
// The highest load of a sweep (in ascending order) at and below which every load met the objective: p99.9
// slowdown <= slo, every request finished, and at least one request; 0 if the first did not.
double max_load_at_slo(const nlohmann::json& loads, double slo_slowdown);

// Asks the scheduler to run this thread's request, which needs `remaining` CPU time (srpt's hint).
using HintFn = std::function<Status(pid_t tid, std::chrono::nanoseconds remaining)>;
using ProgressFn = std::function<void(const std::string&)>;

// Runs every load in turn, lowest first, in this process. The report: {workload, options..., loads: [...],
// max_load_at_slo}. A request still running 30 s after its load's drain deadline (max(10 s, 2 x seconds) +
// 4 long requests after the last arrival) is an error; its threads are then left to end when they next run
// (the pool is not freed), so the caller gets the error at once.
Result<nlohmann::json> run_bimodal(const BimodalOptions& o, const HintFn& hint, const ProgressFn& progress);

}  // namespace akts::workload
