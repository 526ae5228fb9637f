// `akts bench`: each benchmark's flags, and the benchmark (bench/) they run.
#include "bench.h"
#include "cli/commands.h"

namespace akts::cli {

void add_bench_commands(Commands& c) {
  auto& app = c.app();
  // Every benchmark reports the same way: a table, or JSON, and optionally a file.
  auto add_report_flags = [](CLI::App* sub, bool& json, std::string& out) {
    sub->add_flag("--json", json, "print the report as JSON");
    sub->add_option("--out", out, "also write the JSON report to this file");
  };
  // benchmarks
  auto* bench = app.add_subcommand("bench", "Benchmarks that report figures (see docs/benchmarks.md).");
  bench->require_subcommand(1);
  auto& ao = c.keep<bench::ActuationOptions>();
  ao.bpf_compile = bench::bpf_compile_command();
  auto* act = bench->add_subcommand(
      "actuation",
      "The cost of applying a switch: the mmap store, bpf_map_update_elem, sysctl and debugfs writes, a full\n"
      "reload and a process switch to scx_simple, interleaved, each as a ratio to the sysctl write.");
  act->add_option("-n", ao.n, "samples per fast arm")->check(CLI::Range(size_t{100}, size_t{10000000}));
  act->add_option("--reload-n", ao.reload_n, "samples of the reload and process-switch arms")
      ->check(CLI::Range(size_t{1}, size_t{1000}));
  act->add_option("--batch", ao.batch, "stores per sample of the store arm")->check(CLI::Range(size_t{1}, size_t{1000000}));
  add_report_flags(act, ao.json, ao.out);
  auto& dopt = c.keep<bench::DispatchOptions>();
  auto* disp = bench->add_subcommand(
      "dispatch",
      "Switch-to-effect (plain store vs kicking switch) and per-event cost of the dispatcher against the\n"
      "stand-alone policy, without counters, and with all 8 slots filled. Needs a sched_ext kernel.");
  disp->add_option("-n", dopt.effect_n, "switches per switch-to-effect mode")->check(CLI::Range(size_t{1}, size_t{10000}));
  disp->add_option("--reps", dopt.reps, "interleaved repetitions per cost configuration")->check(CLI::Range(1, 100));
  add_report_flags(disp, dopt.json, dopt.out);

  auto& topt = c.keep<bench::TailcallOptions>();
  auto* tcall = bench->add_subcommand(
      "tailcall",
      "The dispatcher's mechanism alone, timed natively: a selector read plus bpf_tail_call against the same\n"
      "read without it (XDP programs under BPF_PROG_TEST_RUN; any kernel with BPF, no sched_ext needed).");
  tcall->add_option("--repeat", topt.repeat, "runs per sample")->check(CLI::Range(1000u, 1000000000u));
  tcall->add_option("--rounds", topt.rounds, "interleaved samples per arm")->check(CLI::Range(1, 1000));
  add_report_flags(tcall, topt.json, topt.out);
  auto& copt = c.keep<bench::ControlOptions>();
  auto* ctl = bench->add_subcommand(
      "control",
      "Round trips of v1.switch to a running daemon while --idle-clients connections sit open and silent:\n"
      "how promptly an operator's switch gets through. Needs a running daemon.");
  ctl->add_option("--socket", copt.socket, "the daemon's socket");
  ctl->add_option("--idle-clients", copt.idle_clients, "connections held open without a request")
      ->check(CLI::Range(0, 10000));
  ctl->add_option("-n,--requests", copt.requests, "switch round trips")->check(CLI::Range(size_t{1}, size_t{1000000}));
  ctl->add_option("--note", copt.note, "what else is going on (copied into the report)");
  add_report_flags(ctl, copt.json, copt.out);

  auto& bm = c.keep<bench::BimodalFlags>();
  auto* bimodal = bench->add_subcommand(
      "bimodal",
      "A request server with a bimodal mix (Skyloft's GET/SCAN): open-loop Poisson arrivals of short and long\n"
      "CPU-bound requests, served by a pool of threads so that waiting requests queue in the kernel, where the\n"
      "scheduler picks. Per offered load: p99.9 slowdown (latency / service time), goodput (requests within\n"
      "the slowdown objective per second), short and long latencies. Examples:\n"
      "  akts run --class lc -- akts bench bimodal --loads 0.3,0.6,0.9 --seconds 8\n"
      "  akts bench bimodal --hint-socket /run/akts/akts.sock      (srpt: each request's size as a hint)\n"
      "A request that finds every worker busy waits in the application (app-queued in the report).");
  bimodal->add_option("--loads", bm.loads, "offered loads, fractions of the CPUs' capacity (0 to 2]")
      ->capture_default_str();
  bimodal->add_option("--seconds", bm.seconds, "seconds of arrivals per load")->capture_default_str();
  bimodal->add_option("--short", bm.short_time, "a short request's CPU time")->capture_default_str();
  bimodal->add_option("--long", bm.long_time, "a long request's CPU time")->capture_default_str();
  bimodal->add_option("--long-fraction", bm.long_fraction, "the long requests' fraction (0 to 1)")->capture_default_str();
  bimodal->add_option("--workers", bm.workers, "server threads")->capture_default_str();
  bimodal->add_flag("--no-rt-generator", bm.no_rt_generator,
                    "leave the arrivals' thread under the scheduler being measured (by default it is SCHED_FIFO 1,\n"
                    "above it, as a NIC's interrupts would be, so that it does not hold arrivals back)");
  bimodal->add_option("--cpus", bm.cpus, "CPUs the capacity is counted on (default: those this process may use)");
  bimodal->add_option("--slo", bm.slo, "the slowdown objective goodput counts within")->capture_default_str();
  bimodal->add_option("--seed", bm.seed, "the arrivals' random seed")->capture_default_str();
  bimodal->add_option("--hint-socket", bm.hint_socket,
                      "tell the scheduler each request's CPU time through this daemon socket (v1.hint, for srpt)");
  add_report_flags(bimodal, bm.json, bm.out);
  c.on(act, [&] { return bench::run_actuation(ao); });
  c.on(disp, [&] { return bench::run_dispatch(dopt); });
  c.on(tcall, [&] { return bench::run_tailcall(topt); });
  c.on(ctl, [&] { return bench::run_control(copt); });
  c.on(bimodal, [&] { return bench::run_bimodal_bench(bm); });
}

}  // namespace akts::cli
