// `akts bench`: what a policy switch costs next to every other way to change a
// scheduler, and what the dispatcher costs per scheduling event.
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

int run_actuation(const ActuationOptions& o);
int run_dispatch(const DispatchOptions& o);

}  // namespace akts::bench
