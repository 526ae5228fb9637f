// `akts bench dispatch`: what the dispatcher costs.
//
// Switch-to-effect: from the store until every CPU's first callback runs the
// new policy, CPUs busy with CPU hogs on the throughput policy's 20 ms slices;
// with a plain store (noticed when a slice ends) and with the kicking switch
// (the akts_switch syscall program preempts every CPU).
//
// Per-event cost, like for like (kernel.bpf_stats): run time per invocation of
// the dispatcher's programs (which includes the tail-called policy) against the
// same policy built as a stand-alone scheduler with the same counters, on the
// same workload, per callback; the counters' own cost (the stand-alone build
// without them); and the dispatcher with 2 policies against all 8 slots filled.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench.h"
#include "common/fd.h"
#include "exec/execution_plane.h"
#include "exec/sched_ext_sysfs.h"
#include "exec/standalone.h"
#include "samples.h"
#include "selftest/workers.h"

namespace akts::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

uint64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Per-CPU delay until each CPU saw `slot`; empty on timeout.
std::vector<double> wait_effect(ExecutionPlane& plane, uint32_t slot, uint64_t t0, int ncpu) {
  auto deadline = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < deadline) {
    auto cpus = plane.read_cpu_stats();
    if (!cpus) return {};
    std::vector<double> d;
    for (int c = 0; c < ncpu && c < static_cast<int>(cpus->size()); ++c)
      if ((*cpus)[c].last_slot == slot && (*cpus)[c].slot_seen_ns >= t0)
        d.push_back(static_cast<double>((*cpus)[c].slot_seen_ns - t0));
    if (static_cast<int>(d.size()) == ncpu) return d;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {};
}

json switch_to_effect(const DispatchOptions& o) {
  json out;
  auto plane = ExecutionPlane::load(PlaneOptions{});
  if (!plane) return {{"skipped", plane.error().to_string()}};
  if (auto st = (*plane)->attach(); !st) return {{"skipped", st.error().to_string()}};
  const int ncpu = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  WorkerSpec w;
  w.count = 2 * ncpu;
  w.spin = std::chrono::microseconds(50000);
  w.sleep = std::chrono::microseconds(0);
  w.until = Clock::now() + std::chrono::hours(1);  // stopped by the destructor
  auto hogs = WorkerGroup::spawn(w);
  if (!hogs) return {{"skipped", hogs.error().to_string()}};
  std::map<std::string, std::vector<double>> first_cpu, all_cpus;
  size_t timeouts = 0;
  for (size_t i = 0; i < o.effect_n * 2; ++i) {
    bool kick = i % 2 == 1;  // interleaved
    const char* mode = kick ? "kick" : "store";
    // Settle on throughput: every CPU running a hog on a 20 ms slice.
    (*plane)->select(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    uint64_t t0 = mono_ns();
    if (kick)
      (void)(*plane)->switch_via_syscall(0, true);
    else
      (*plane)->select(0);
    auto d = wait_effect(**plane, 0, t0, ncpu);
    if (d.empty()) {
      ++timeouts;
      continue;
    }
    std::sort(d.begin(), d.end());
    first_cpu[mode].push_back(d.front());
    all_cpus[mode].push_back(d.back());
    progress(fmt::format("[bench] switch-to-effect {}/{}", i + 1, o.effect_n * 2));
  }
  progress_done();
  hogs->wait(std::chrono::milliseconds(1));  // kills them
  (void)(*plane)->detach();
  for (const char* mode : {"store", "kick"})
    out[mode] = {{"until_first_cpu", summarize(first_cpu[mode]).to_json()},
                 {"until_every_cpu", summarize(all_cpus[mode]).to_json()}};
  out["timeouts"] = timeouts;
  out["how"] = fmt::format("{} CPU hogs on {} CPUs under throughput (20 ms slices), then slot 0; delay from the "
                           "store (or the kicking syscall) to each CPU's first callback that read the new slot",
                           w.count, ncpu);
  return out;
}

struct ProgCost {
  uint64_t run_ns = 0, runs = 0;
};

ProgCost prog_cost(int fd) {
  bpf_prog_info info{};
  uint32_t len = sizeof(info);
  if (bpf_prog_get_info_by_fd(fd, &info, &len) != 0) return {};
  return {info.run_time_ns, info.run_cnt};
}

std::array<ProgCost, AKTS_NR_CALLBACKS> read_costs(const std::function<int(uint32_t)>& fd_of) {
  std::array<ProgCost, AKTS_NR_CALLBACKS> c{};
  for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_prog_get_info_by_fd(fd_of(cb), &info, &len) == 0) c[cb] = {info.run_time_ns, info.run_cnt};
  }
  return c;
}

// Runs the workload as SCHED_EXT: hackbench when installed, else the self-test's workers.
std::string run_workload() {
  if (access("/usr/bin/hackbench", X_OK) == 0) {
    pid_t pid = fork();
    if (pid == 0) {
      sched_param p{};
      sched_setscheduler(0, kSchedExt, &p);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execl("/usr/bin/hackbench", "hackbench", "-g", "2", "-l", "200", static_cast<char*>(nullptr));
      _exit(127);
    }
    waitpid(pid, nullptr, 0);
    return "hackbench -g 2 -l 200 (SCHED_EXT)";
  }
  WorkerSpec w;
  w.count = 8;
  w.iterations = 200;
  if (auto g = WorkerGroup::spawn(w)) g->wait(std::chrono::seconds(300));
  return "8 spin/sleep workers (SCHED_EXT)";
}

struct Config {
  std::string key, label;
  std::function<Result<std::function<int(uint32_t)>>()> start;  // loads + attaches; returns fd_of
  std::function<void()> stop;
};

json per_event_cost(const DispatchOptions& o) {
  std::unique_ptr<ExecutionPlane> plane;
  std::unique_ptr<StandaloneScheduler> sa;
  auto plane_config = [&](std::vector<std::string> policies) {
    return [&, policies]() -> Result<std::function<int(uint32_t)>> {
      PlaneOptions po;
      po.policies = policies;
      auto p = ExecutionPlane::load(po);
      if (!p) return p.error();
      if (auto st = (*p)->attach(); !st) return st.error();
      plane = std::move(p).value();
      ExecutionPlane* raw = plane.get();
      return std::function<int(uint32_t)>([raw](uint32_t cb) { return raw->dispatcher_prog_fd(cb); });
    };
  };
  auto sa_config = [&](std::string build) {
    return [&, build]() -> Result<std::function<int(uint32_t)>> {
      auto s = StandaloneScheduler::load(build);
      if (!s) return s.error();
      if (auto st = (*s)->attach(); !st) return st.error();
      sa = std::move(s).value();
      StandaloneScheduler* raw = sa.get();
      return std::function<int(uint32_t)>([raw](uint32_t cb) { return raw->prog_fd(cb); });
    };
  };
  std::vector<Config> configs = {
      {"dispatcher_2", "dispatcher + latency (2 slots filled)", plane_config({"latency", "throughput"}),
       [&] { plane.reset(); }},
      {"standalone", "latency stand-alone, same counters", sa_config("latency"), [&] { sa.reset(); }},
      {"dispatcher_8", "dispatcher + latency (8 slots filled)",
       plane_config({"latency", "throughput", "latency", "throughput", "latency", "throughput", "latency",
                     "throughput"}),
       [&] { plane.reset(); }},
      {"standalone_nocount", "latency stand-alone, no counters", sa_config("latency_nocount"), [&] { sa.reset(); }},
  };
  Fd stats_fd(bpf_enable_stats(BPF_STATS_RUN_TIME));  // run-time stats stay on while it is open
  if (!stats_fd) return {{"skipped", fmt::format("cannot enable bpf stats: {}", std::strerror(errno))}};
  std::map<std::string, std::array<ProgCost, AKTS_NR_CALLBACKS>> total;
  std::string workload;
  // The guard's own cost, on the dispatcher configs: its timer (timed inside
  // the callback: a timer's run time is not in bpf_stats) and the frame's tick.
  uint64_t timer_runs = 0, timer_ns = 0, timer_max_ns = 0;
  ProgCost tick;
  double seconds = 0;
  for (int rep = 0; rep < o.reps; ++rep) {
    for (auto& c : configs) {
      auto fd_of = c.start();
      if (!fd_of) {
        return {{"skipped", c.key + ": " + fd_of.error().to_string()}};
      }
      auto before = read_costs(*fd_of);
      Result<GuardReport> g0 = plane ? plane->read_guard() : make_error(ErrorKind::kUnsupported, "");
      ProgCost tick0 = plane ? prog_cost(plane->tick_prog_fd()) : ProgCost{};
      auto t0 = std::chrono::steady_clock::now();
      workload = run_workload();
      auto after = read_costs(*fd_of);
      if (plane && g0) {
        auto g1 = plane->read_guard();
        ProgCost tick1 = prog_cost(plane->tick_prog_fd());
        if (g1) {
          timer_runs += g1->state.runs - g0->state.runs;
          timer_ns += g1->state.run_ns_total - g0->state.run_ns_total;
          timer_max_ns = std::max<uint64_t>(timer_max_ns, g1->state.run_ns_max);
          tick.runs += tick1.runs - tick0.runs;
          tick.run_ns += tick1.run_ns - tick0.run_ns;
          seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
      }
      for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
        total[c.key][cb].run_ns += after[cb].run_ns - before[cb].run_ns;
        total[c.key][cb].runs += after[cb].runs - before[cb].runs;
      }
      c.stop();
      progress(fmt::format("[bench] per-event cost: rep {}/{} {:<20}", rep + 1, o.reps, c.key));
    }
  }
  progress_done();
  stats_fd.reset();
  json out = {{"workload", workload}, {"repetitions", o.reps}, {"configs", json::object()}};
  auto per_event = [](const ProgCost& c) { return c.runs ? static_cast<double>(c.run_ns) / c.runs : 0.0; };
  for (auto& c : configs) {
    json per_cb = json::object();
    ProgCost all;
    for (uint32_t cb = 0; cb < AKTS_NR_CALLBACKS; ++cb) {
      const auto& pc = total[c.key][cb];
      per_cb[std::string(callback_name(cb))] = {{"ns_per_event", per_event(pc)}, {"events", pc.runs}};
      all.run_ns += pc.run_ns;
      all.runs += pc.runs;
    }
    out["configs"][c.key] = {{"label", c.label}, {"per_callback", per_cb}, {"ns_per_event", per_event(all)},
                             {"events", all.runs}};
  }
  auto ns = [&](const char* k) { return out["configs"][k]["ns_per_event"].get<double>(); };
  if (ns("standalone") > 0) {
    out["dispatcher_over_standalone"] = ns("dispatcher_2") / ns("standalone");
    out["counters_ns_per_event"] = ns("standalone") - ns("standalone_nocount");
  }
  if (ns("dispatcher_2") > 0) out["eight_slots_over_two"] = ns("dispatcher_8") / ns("dispatcher_2");
  out["guard"] = {{"timer_firings", timer_runs},
                  {"timer_ns_per_firing", timer_runs ? static_cast<double>(timer_ns) / timer_runs : 0.0},
                  {"timer_max_ns", timer_max_ns},
                  {"timer_cpu_share", seconds > 0 ? static_cast<double>(timer_ns) / (seconds * 1e9) : 0.0},
                  {"tick_ns_per_event", tick.runs ? static_cast<double>(tick.run_ns) / tick.runs : 0.0},
                  {"tick_events", tick.runs}};
  return out;
}

}  // namespace

int run_dispatch(const DispatchOptions& o) {
  auto st = read_sched_ext_state();
  if (!st.supported || st.state != "disabled") {
    std::cerr << "akts: bench dispatch needs a sched_ext kernel with no scheduler attached (run it in the guest: "
                 "./akts vm -- akts bench dispatch)\n";
    return 1;
  }
  json report = {{"benchmark", "dispatch"},
                 {"environment", std::getenv("AKTS_IN_GUEST") ? "emulated: QEMU TCG guest" : "this host"}};
  report["switch_to_effect"] = switch_to_effect(o);
  report["per_event_cost"] = per_event_cost(o);
  if (!o.out.empty()) std::ofstream(o.out) << report.dump(2) << "\n";
  if (o.json) {
    std::cout << report.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("akts bench dispatch: {}\n\n", report["environment"].get<std::string>());
  const json& se = report["switch_to_effect"];
  if (se.contains("skipped")) {
    std::cout << "switch-to-effect: skipped: " << se["skipped"].get<std::string>() << "\n";
  } else {
    std::cout << "switch-to-effect (" << se["how"].get<std::string>() << ")\n";
    std::cout << fmt::format("  {:<8}{:>14}{:>14}{:>16}{:>16}\n", "mode", "first CPU p50", "p99", "every CPU p50",
                             "p99");
    for (const char* m : {"store", "kick"})
      std::cout << fmt::format("  {:<8}{:>14}{:>14}{:>16}{:>16}\n", m,
                               human_ns(se[m]["until_first_cpu"]["p50_ns"].get<double>()),
                               human_ns(se[m]["until_first_cpu"]["p99_ns"].get<double>()),
                               human_ns(se[m]["until_every_cpu"]["p50_ns"].get<double>()),
                               human_ns(se[m]["until_every_cpu"]["p99_ns"].get<double>()));
  }
  const json& pe = report["per_event_cost"];
  if (pe.contains("skipped")) {
    std::cout << "per-event cost: skipped: " << pe["skipped"].get<std::string>() << "\n";
    return 0;
  }
  std::cout << fmt::format("\nper-event cost (bpf_stats run time per invocation; workload: {})\n",
                           pe["workload"].get<std::string>());
  std::cout << fmt::format("  {:<12}", "callback");
  for (const auto& [k, c] : pe["configs"].items()) std::cout << fmt::format("{:>20}", k);
  std::cout << "\n";
  for (uint32_t cb = 0; cb <= AKTS_NR_CALLBACKS; ++cb) {
    std::string name = cb < AKTS_NR_CALLBACKS ? std::string(callback_name(cb)) : "all";
    std::cout << fmt::format("  {:<12}", name);
    for (const auto& [k, c] : pe["configs"].items()) {
      double v = cb < AKTS_NR_CALLBACKS ? c["per_callback"][name]["ns_per_event"].get<double>()
                                        : c["ns_per_event"].get<double>();
      std::cout << fmt::format("{:>20}", human_ns(v));
    }
    std::cout << "\n";
  }
  if (pe.contains("dispatcher_over_standalone"))
    std::cout << fmt::format("\ndispatcher / stand-alone: {:.3f} (goal: within 1.05); 8 slots / 2 slots: {:.3f}; "
                             "counters: {} per event\n",
                             pe["dispatcher_over_standalone"].get<double>(),
                             pe.value("eight_slots_over_two", 0.0),
                             human_ns(pe["counters_ns_per_event"].get<double>()));
  if (pe.contains("guard")) {
    const json& g = pe["guard"];
    std::cout << fmt::format("bounded-wait guard: timer {} per firing (max {}, {} firings, {:.3f}% of one CPU); "
                             "frame tick {} per tick\n",
                             human_ns(g["timer_ns_per_firing"].get<double>()),
                             human_ns(static_cast<double>(g["timer_max_ns"].get<uint64_t>())),
                             g["timer_firings"].get<uint64_t>(), 100 * g["timer_cpu_share"].get<double>(),
                             human_ns(g["tick_ns_per_event"].get<double>()));
  }
  return 0;
}

}  // namespace akts::bench
