// `akts bench actuation`: the cost of applying a decision, once made, for every
// way there is to change a scheduler (the paper's Table 1, extended).
//
// Fast arms run interleaved in rounds, each round in a rotated order, after a
// discarded warm-up round, so drift on a noisy machine hits every arm alike.
#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench.h"
#include "common/fd.h"
#include "exec/execution_plane.h"
#include "exec/sched_ext_sysfs.h"
#include "samples.h"

extern char** environ;

namespace akts::bench {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

double ns_since(Clock::time_point t0) { return std::chrono::duration<double, std::nano>(Clock::now() - t0).count(); }

struct Arm {
  std::string key;
  std::string label;
  std::string how;
  std::vector<double> samples;
  std::string skipped;  // reason, when it could not run here
  std::function<double()> sample;  // one timed sample, ns
  std::function<void()> restore;
};

// The selector the fast arms write: the live scheduler's when this kernel has
// sched_ext, else a map of the same type, flags and layout made for the run.
struct SelectorTarget {
  std::unique_ptr<ExecutionPlane> plane;
  int fd = -1;  // the plane's selector map, or `made`
  Fd made;      // a map made for the run (no sched_ext here)
  akts_selector* word = nullptr;
  std::string where;
  ~SelectorTarget() {
    if (!plane && word) munmap(word, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  }
};

Result<std::unique_ptr<SelectorTarget>> make_selector() {
  auto t = std::make_unique<SelectorTarget>();
  auto st = read_sched_ext_state();
  if (st.supported && st.state == "disabled") {
    auto plane = ExecutionPlane::load(PlaneOptions{});
    if (!plane) return plane.error();
    if (auto a = (*plane)->attach(); !a) return a.error();
    t->fd = (*plane)->selector_map_fd();
    t->word = reinterpret_cast<akts_selector*>(const_cast<uint32_t*>((*plane)->selected_word()));
    t->plane = std::move(plane).value();
    t->where = "the attached dispatcher's selector";
    return t;
  }
  LIBBPF_OPTS(bpf_map_create_opts, mo, .map_flags = BPF_F_MMAPABLE);
  t->made.reset(bpf_map_create(BPF_MAP_TYPE_ARRAY, "akts_selector", 4, sizeof(akts_selector), 1, &mo));
  if (!t->made) return sys_error("cannot create a selector map", errno);
  t->fd = t->made.get();
  void* p = mmap(nullptr, static_cast<size_t>(sysconf(_SC_PAGESIZE)), PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
  if (p == MAP_FAILED) return sys_error("cannot mmap the selector map", errno);
  t->word = static_cast<akts_selector*>(p);
  t->where = "a selector-shaped BPF_F_MMAPABLE array (no sched_ext on this kernel)";
  return t;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// A scalar knob written with pwrite on a held fd, alternating two values; the
// original is put back afterwards.
void knob_arm(Arm& a, const std::string& path, int64_t step, bool reopen) {
  std::string orig = read_first_line(path);
  char* end = nullptr;
  long long v = std::strtoll(orig.c_str(), &end, 10);
  if (orig.empty() || *end != '\0') {
    a.skipped = path + " is not readable here";
    return;
  }
  // Held by the sampler and the restore, closed by the restore (or with the arm).
  auto held = std::make_shared<Fd>(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  const int fd = held->get();
  if (fd < 0) {
    a.skipped = fmt::format("{} is not writable here ({})", path, std::strerror(errno));
    return;
  }
  std::string vals[2] = {std::to_string(v) + "\n", std::to_string(v + step) + "\n"};
  // debugfs attributes are not seekable: write() there, pwrite() on sysctls.
  bool seekable = pwrite(fd, vals[0].data(), vals[0].size(), 0) >= 0 || errno != ESPIPE;
  if ((seekable ? pwrite(fd, vals[0].data(), vals[0].size(), 0) : write(fd, vals[0].data(), vals[0].size())) < 0) {
    a.skipped = fmt::format("writing {} fails ({})", path, std::strerror(errno));
    return;
  }
  auto counter = std::make_shared<size_t>(0);
  if (reopen) {
    held->reset();
    a.sample = [path, vals, counter]() {
      const std::string& s = vals[(*counter)++ & 1];
      auto t0 = Clock::now();
      Fd f(open(path.c_str(), O_WRONLY | O_CLOEXEC));
      ssize_t w = f ? write(f.get(), s.data(), s.size()) : -1;
      double ns = ns_since(t0);
      return w < 0 ? -1.0 : ns;
    };
  } else {
    a.sample = [held, fd, vals, counter, seekable]() {
      const std::string& s = vals[(*counter)++ & 1];
      auto t0 = Clock::now();
      ssize_t w = seekable ? pwrite(fd, s.data(), s.size(), 0) : write(fd, s.data(), s.size());
      double ns = ns_since(t0);
      return w < 0 ? -1.0 : ns;
    };
  }
  a.restore = [path, orig, held]() {
    if (Fd f(open(path.c_str(), O_WRONLY | O_CLOEXEC)); f) {
      std::string s = orig + "\n";
      (void)!write(f.get(), s.data(), s.size());
    }
    held->reset();
  };
}

pid_t spawn_quiet(const std::string& prog) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  char* argv[] = {const_cast<char*>(prog.c_str()), nullptr};
  pid_t pid = -1;
  if (posix_spawnp(&pid, prog.c_str(), &fa, nullptr, argv, environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

bool on_path(const std::string& prog) {
  std::string cmd = "command -v " + prog + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

json platform_json() {
  utsname u{};
  uname(&u);
  bool guest = std::getenv("AKTS_IN_GUEST") != nullptr;
  return {{"kernel", u.release},
          {"cpus", sysconf(_SC_NPROCESSORS_ONLN)},
          {"environment", guest ? "emulated: QEMU TCG guest (figures are not native speed)" : "this host"},
          {"emulated", guest}};
}

}  // namespace

int run_actuation(const ActuationOptions& o) {
  auto sel = make_selector();
  if (!sel) {
    std::cerr << "akts: bench: " << sel.error().to_string() << "\n";
    return 1;
  }
  SelectorTarget& t = **sel;
  spdlog::info("actuation: writing {}", t.where);

  std::vector<Arm> arms(5);
  // 1. The daemon's switch path: one release store into the mmap'd selector.
  arms[0] = {"store", "selector store (mmap)",
             fmt::format("atomic release store into the mmap'd selector; far below the clock's resolution, so each "
                         "sample is the mean of a batch of {} stores",
                         o.batch),
             {}, "", nullptr, nullptr};
  {
    auto* word = &t.word->selected;
    size_t batch = o.batch;
    arms[0].sample = [word, batch]() {
      auto t0 = Clock::now();
      for (size_t i = 0; i < batch; ++i)
        std::atomic_ref<uint32_t>(*word).store(static_cast<uint32_t>(i & 1), std::memory_order_release);
      return ns_since(t0) / static_cast<double>(batch);
    };
  }
  // 2. The same word through the bpf(2) syscall (the paper's AKTS arm).
  arms[1] = {"map_update", "selector bpf_map_update_elem", "BPF_MAP_UPDATE_ELEM on the selector map, timed per call",
             {}, "", nullptr, nullptr};
  {
    int fd = t.fd;
    auto counter = std::make_shared<uint32_t>(0);
    arms[1].sample = [fd, counter]() {
      uint32_t zero = 0;
      akts_selector v{(*counter)++ & 1, AKTS_OVERRIDE_OFF};
      auto t0 = Clock::now();
      int r = bpf_map_update_elem(fd, &zero, &v, BPF_ANY);
      double ns = ns_since(t0);
      return r ? -1.0 : ns;
    };
  }
  // 3-4. Scalar knobs: the paper's baseline A, and a scheduler knob of today's kernels.
  arms[2] = {"sysctl_pwrite", "sysctl pwrite (fd held open)",
             "pwrite to /proc/sys/kernel/sched_rr_timeslice_ms with the fd open (the paper's baseline A)", {}, "",
             nullptr, nullptr};
  knob_arm(arms[2], "/proc/sys/kernel/sched_rr_timeslice_ms", 1, false);
  arms[3] = {"sysctl_open_write_close", "sysctl open+write+close", "open, write, close of the same sysctl", {}, "",
             nullptr, nullptr};
  knob_arm(arms[3], "/proc/sys/kernel/sched_rr_timeslice_ms", 1, true);
  arms[4] = {"debugfs_base_slice", "debugfs base_slice_ns write",
             "write to /sys/kernel/debug/sched/base_slice_ns, fd open (a LumOS-style scheduler knob; not seekable)", {}, "",
             nullptr, nullptr};
  knob_arm(arms[4], "/sys/kernel/debug/sched/base_slice_ns", 1000, false);

  constexpr size_t kRounds = 20;
  const size_t per_round = std::max<size_t>(1, o.n / kRounds);
  for (size_t round = 0; round <= kRounds; ++round) {  // round 0 is the warm-up
    for (size_t i = 0; i < arms.size(); ++i) {
      Arm& a = arms[(i + round) % arms.size()];
      if (!a.sample) continue;
      size_t k = a.key == "store" ? std::max<size_t>(1, per_round / 10) : per_round;
      for (size_t j = 0; j < k; ++j) {
        double ns = a.sample();
        if (ns < 0) {
          a.skipped = "a write failed mid-run";
          a.sample = nullptr;
          break;
        }
        if (round > 0) a.samples.push_back(ns);
      }
    }
    progress(fmt::format("[bench] fast arms: round {}/{}", round, kRounds));
  }
  progress_done();
  for (auto& a : arms)
    if (a.restore) a.restore();
  if (t.plane) t.plane->select(0);

  // 5. Full reload of the library (guest): detach, open, load and verify, fill, attach, wait enabled.
  Arm reload{"full_reload", "full reload (detach, load+verify, attach)",
             "detach and wait for disabled, open/load/verify the dispatcher and policies, fill the prog arrays, "
             "attach and wait for enabled (the paper's baseline B without the compiler)",
             {}, "", nullptr, nullptr};
  std::vector<double> detach_ns, load_ns, attach_ns;
  if (!t.plane) {
    reload.skipped = "needs a sched_ext kernel (run it in the guest)";
  } else {
    for (size_t i = 0; i < o.reload_n; ++i) {
      auto t0 = Clock::now();
      if (auto st = t.plane->detach(); !st) {
        reload.skipped = st.error().to_string();
        break;
      }
      auto t1 = Clock::now();
      t.plane.reset();
      auto plane = ExecutionPlane::load(PlaneOptions{});
      auto t2 = Clock::now();
      if (!plane) {
        reload.skipped = plane.error().to_string();
        break;
      }
      if (auto st = (*plane)->attach(); !st) {
        reload.skipped = st.error().to_string();
        break;
      }
      auto t3 = Clock::now();
      t.plane = std::move(plane).value();
      detach_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
      load_ns.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count());
      attach_ns.push_back(std::chrono::duration<double, std::nano>(t3 - t2).count());
      reload.samples.push_back(std::chrono::duration<double, std::nano>(t3 - t0).count());
      progress(fmt::format("[bench] full reload {}/{}", i + 1, o.reload_n));
    }
    progress_done();
    if (t.plane) (void)t.plane->detach();
  }

  // 5b. Compiling the library's BPF sources (where a compiler and the sources are).
  Arm compile{"compile", "compile the BPF library (clang)", "clang -O2 -target bpf on the dispatcher and policies",
              {}, "", nullptr, nullptr};
  if (o.bpf_compile.empty()) {
    compile.skipped = "no compile command given";
  } else if (!on_path("clang-19")) {
    compile.skipped = "clang-19, the build's compiler, is not on PATH here (the command compiles the build host's sources: run it there)";
  } else {
    for (size_t i = 0; i < 3; ++i) {
      auto t0 = Clock::now();
      if (std::system(o.bpf_compile.c_str()) != 0) {
        compile.skipped = "the compile command failed";
        compile.samples.clear();
        break;
      }
      compile.samples.push_back(ns_since(t0));
    }
  }

  // 6. A process switch to a real peer, the way scx_loader does it.
  Arm peer{"process_switch", "process switch (scx_simple -> scx_simple)",
           "stop the running scheduler process (SIGINT), wait for disabled, start scx_simple from the kernel's "
           "tools/sched_ext, wait for enabled",
           {}, "", nullptr, nullptr};
  if (read_sched_ext_state().state != "disabled") {
    peer.skipped = "needs a sched_ext kernel with no scheduler attached (run it in the guest)";
  } else if (!on_path("scx_simple")) {
    peer.skipped = "scx_simple is not on PATH";
  } else {
    pid_t cur = spawn_quiet("scx_simple");
    if (cur < 0 || !wait_sched_ext_state("enabled", std::chrono::seconds(20))) {
      peer.skipped = "scx_simple did not start";
    } else {
      for (size_t i = 0; i < o.reload_n; ++i) {
        auto t0 = Clock::now();
        kill(cur, SIGINT);
        waitpid(cur, nullptr, 0);
        if (!wait_sched_ext_state("disabled", std::chrono::seconds(20))) break;
        cur = spawn_quiet("scx_simple");
        if (cur < 0 || !wait_sched_ext_state("enabled", std::chrono::seconds(20))) break;
        peer.samples.push_back(ns_since(t0));
        progress(fmt::format("[bench] process switch {}/{}", i + 1, o.reload_n));
      }
      progress_done();
      if (cur > 0) {
        kill(cur, SIGINT);
        waitpid(cur, nullptr, 0);
      }
      (void)wait_sched_ext_state("disabled", std::chrono::seconds(20));
    }
  }
  arms.push_back(reload);
  arms.push_back(compile);
  arms.push_back(peer);

  // Report.
  double base = 0;
  for (auto& a : arms)
    if (a.key == "sysctl_pwrite" && !a.samples.empty()) base = summarize(a.samples).p50;
  json report = {{"benchmark", "actuation"}, {"platform", platform_json()}, {"selector", t.where},
                 {"baseline", "sysctl_pwrite"}, {"arms", json::array()}};
  std::string table = fmt::format("{:<44}{:>7}{:>12}{:>12}{:>12}{:>12}\n", "arm", "n", "p50", "p99", "mean",
                                  "x sysctl");
  for (auto& a : arms) {
    json j = {{"key", a.key}, {"label", a.label}, {"how", a.how}};
    if (a.samples.empty()) {
      j["skipped"] = a.skipped.empty() ? "no samples" : a.skipped;
      table += fmt::format("{:<44}  skipped: {}\n", a.label, j["skipped"].get<std::string>());
    } else {
      Summary s = summarize(a.samples);
      j["summary"] = s.to_json();
      j["ratio_to_sysctl_p50"] = base > 0 ? json(s.p50 / base) : json(nullptr);
      table += fmt::format("{:<44}{:>7}{:>12}{:>12}{:>12}{:>12}\n", a.label, s.n, human_ns(s.p50), human_ns(s.p99),
                           human_ns(s.mean), base > 0 ? fmt::format("{:.3g}x", s.p50 / base) : "-");
    }
    report["arms"].push_back(j);
  }
  if (!load_ns.empty())
    report["full_reload_phases"] = {{"detach", summarize(detach_ns).to_json()},
                                    {"load_verify_fill", summarize(load_ns).to_json()},
                                    {"attach", summarize(attach_ns).to_json()}};
  // The targets (reported, not asserted).
  auto p50_of = [&](const std::string& key) {
    for (auto& a : arms)
      if (a.key == key && !a.samples.empty()) return summarize(a.samples).p50;
    return 0.0;
  };
  double store = p50_of("store"), update = p50_of("map_update");
  report["targets"] = {{"store_vs_map_update", store > 0 ? json(update / store) : json(nullptr)},
                       {"store_vs_map_update_goal", ">= 20x"},
                       {"map_update_vs_sysctl", base > 0 ? json(update / base) : json(nullptr)}};
  if (!o.out.empty()) std::ofstream(o.out) << report.dump(2) << "\n";
  if (o.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << fmt::format("akts bench actuation: {}; {}\n\n", report["platform"]["environment"].get<std::string>(),
                             t.where);
    std::cout << table;
    if (store > 0 && update > 0)
      std::cout << fmt::format("\nstore is {:.0f}x below bpf_map_update_elem (goal: 20x); bpf_map_update_elem is "
                               "{:.2f}x the sysctl write (the kernel's ratio, not akts's)\n",
                               update / store, base > 0 ? update / base : 0.0);
  }
  return 0;
}

}  // namespace akts::bench
