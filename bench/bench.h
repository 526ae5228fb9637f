// `akts bench`: what a policy switch costs next to every other way to change a
// scheduler, what the dispatcher costs per scheduling event, how promptly the
// daemon answers a switch under load, and a bimodal request server's tail.
#pragma once

#include <string>

namespace akts::bench {

struct ActuationOptions {
  size_t n = 20000;        // samples per fast arm
  size_t reload_n = 8;     // samples of the full-reload and process-switch arms
  size_t batch = 1000;     // stores per sample of the mmap store arm
  bool json = false;
  std::string out;         // also write the JSON report here
  std::string bpf_compile; // the command that compiles the library's BPF sources ("" = skip)
};

struct DispatchOptions {
  size_t effect_n = 40;  // switches per switch-to-effect mode
  int reps = 3;          // interleaved repetitions per per-event-cost configuration
  bool json = false;
  std::string out;
};

struct ControlOptions {
  std::string socket = "/run/akts/akts.sock";
  int idle_clients = 64;  // connections held open and silent throughout
  size_t requests = 500;  // v1.switch round trips, alternating slots 0 and 1
  std::string note;       // what else was going on, for the report
  bool json = false;
  std::string out;
};

struct TailcallOptions {
  uint32_t repeat = 10'000'000;  // runs per sample (the kernel reports the mean)
  int rounds = 7;
  bool json = false;
  std::string out;
};

// `akts bench bimodal`: the options as typed; checked and converted by run_bimodal_bench.
struct BimodalFlags {
  std::string loads = "0.2,0.4,0.6,0.8";
  double seconds = 5;
  std::string short_time = "1ms", long_time = "100ms";
  double long_fraction = 0.01;
  unsigned workers = 256;
  bool no_rt_generator = false;
  unsigned cpus = 0;
  double slo = 50;
  uint64_t seed = 1;
  std::string hint_socket;  // give srpt each request's size (v1.hint) through this daemon socket
  bool json = false;
  std::string out;
};

int run_actuation(const ActuationOptions& o);
int run_tailcall(const TailcallOptions& o);
int run_control(const ControlOptions& o);
int run_dispatch(const DispatchOptions& o);
int run_bimodal_bench(const BimodalFlags& f);

}  // namespace akts::bench
