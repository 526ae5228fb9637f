// The named scenarios: their programs, how they start and stop, what is read from their output.
#include "workload/scenarios.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "common/fd.h"
#include "common/text.h"

namespace akts::workload {
namespace {

struct Proc {
  std::vector<std::string> argv;
  std::string cls;  // "lc" or "be"
  pid_t pid = -1;
  Fd out_fd;   // a memfd holding what it printed
  Fd gate_fd;  // written once it is classified: then it executes
  int status = -1;
  bool done = false;
};

unsigned ncpu() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

std::string read_all(int fd) {
  std::string s;
  if (::lseek(fd, 0, SEEK_SET) < 0) return s;
  char buf[8192];
  ssize_t n;
  while (s.size() < (size_t{1} << 20) && (n = ::read(fd, buf, sizeof(buf))) > 0) s.append(buf, static_cast<size_t>(n));
  return s;
}

// Forks a child that waits for the gate, then executes argv with its output in a memfd.
Status start(Proc& p) {
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return sys_error("pipe", errno);
  Fd gate_r(gate[0]), gate_w(gate[1]);  // the parent's; the child never returns from below (it execs or _exits)
  p.out_fd.reset(::memfd_create("akts-workload", MFD_CLOEXEC));
  if (!p.out_fd) return sys_error("memfd_create", errno);
  std::vector<char*> argv;
  for (auto& a : p.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork", errno);
  if (pid == 0) {
    // If the server dies (killed, say) its scenario dies with it rather than run on unobserved.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(125);
    ::setpgid(0, 0);
    ::close(gate[1]);  // so that the parent's close is an end of file here
    ::dup2(p.out_fd.get(), 1);
    ::dup2(p.out_fd.get(), 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    char go = 0;
    if (::read(gate[0], &go, 1) != 1 || go != 'g') _exit(125);  // the parent gave up on it
    // Nothing of the server's (its sockets, its other scenarios' descriptors) goes into the program.
    ::close_range(3, ~0U, 0);
    ::execvp(argv[0], argv.data());
    dprintf(2, "cannot execute %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  ::setpgid(pid, pid);
  gate_r.reset();
  p.pid = pid;
  p.gate_fd = std::move(gate_w);
  return {};
}

void kill_all(std::vector<Proc>& procs) {
  for (auto& p : procs)
    if (p.pid > 0 && !p.done) ::kill(-p.pid, SIGKILL);
  for (auto& p : procs) {
    p.gate_fd.reset();
    if (p.pid > 0 && !p.done) {
      ::waitpid(p.pid, &p.status, 0);
      p.done = true;
    }
  }
}

std::optional<double> last_number(const std::string& out, const std::regex& re, size_t group) {
  std::optional<double> v;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator(); ++it) {
    try {
      v = std::stod((*it)[group].str());
    } catch (...) {
    }
  }
  return v;
}

}  // namespace

const std::vector<std::string>& scenario_names() {
  static const std::vector<std::string> v = {"wakeup_latency", "hackbench", "cpu_throughput"};
  return v;
}

Result<ScenarioArgs> parse_args(const json& a) {
  if (!a.is_object()) return make_error(ErrorKind::kInvalidArgument, "arguments must be an object {scenario, seconds}");
  ScenarioArgs out;
  for (const auto& [k, v] : a.items()) {
    if (k == "scenario") {
      if (!v.is_string()) return make_error(ErrorKind::kInvalidArgument, "scenario must be a string");
      out.scenario = v.get<std::string>();
    } else if (k == "seconds") {
      if (!(v.is_number_integer() || v.is_number_unsigned()) || v.get<int64_t>() < 1 || v.get<int64_t>() > 60)
        return errorf(ErrorKind::kInvalidArgument, "seconds must be a whole number from 1 to 60, not {}",
                      excerpt(v.dump(-1, ' ', false, json::error_handler_t::replace)));
      out.seconds = static_cast<int>(v.get<int64_t>());
    } else {
      return errorf(ErrorKind::kInvalidArgument, "unknown argument \"{}\" (scenario, seconds)", excerpt(k));
    }
  }
  bool known = false;
  for (const auto& n : scenario_names()) known = known || n == out.scenario;
  if (!known)
    return errorf(ErrorKind::kInvalidArgument, "'{}' is not a scenario (wakeup_latency, hackbench, cpu_throughput)",
                  excerpt(out.scenario));
  return out;
}

std::optional<json> parse_cyclictest(const std::string& out) {
  // With a histogram (-h): "%06d %06d" rows (microseconds, count; one thread), then "# Min Latencies: 00003" and
  // the like, and "# Histogram Overflows: 00002" (samples past its last row); without one, the quiet summary
  // line "T: 0 (...) ... Min: 3 Act: 5 Avg: 6 Max: 80".
  static const std::regex summary(R"(Min:\s*(\d+)\s+Act:\s*(\d+)\s+Avg:\s*(\d+)\s+Max:\s*(\d+))");
  static const std::regex row(R"(^(\d{6})\s+(\d+)\s*$)");
  static const std::regex footer(R"(^# (Min|Avg|Max) Latencies:\s*(\d+))");
  static const std::regex overflow(R"(^# Histogram Overflows:\s*(\d+))");
  std::vector<std::pair<uint64_t, uint64_t>> hist;
  std::map<std::string, double> foot;
  std::optional<uint64_t> overflows;
  std::istringstream in(out);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, row))
      hist.emplace_back(std::stoull(m[1].str()), std::stoull(m[2].str()));
    else if (std::regex_search(line, m, footer))
      foot[m[1].str()] = std::stod(m[2].str());
    else if (std::regex_search(line, m, overflow))
      overflows = std::stoull(m[1].str());
  }
  // rt-tests 2.x prints only the rows with samples; older ones every row. Every sample past the histogram
  // leaves no row at all: the footer still holds.
  if (foot.size() == 3 && overflows && (!hist.empty() || *overflows > 0)) {
    uint64_t total = *overflows;
    for (const auto& [us, n] : hist) total += n;
    json j = {{"min", foot["Min"]}, {"avg", foot["Avg"]}, {"max", foot["Max"]}, {"samples", total},
              {"overflows", *overflows}};
    // A percentile past the histogram's last row is not known, only that it is above: null, never the ceiling.
    for (auto [name, q] : {std::pair{"p50", 0.50}, std::pair{"p99", 0.99}}) {
      uint64_t need = static_cast<uint64_t>(std::ceil(q * static_cast<double>(total))), seen = 0;
      j[name] = nullptr;
      for (const auto& [us, n] : hist) {
        seen += n;
        if (need && seen >= need) {
          j[name] = static_cast<double>(us);
          break;
        }
      }
    }
    return j;
  }
  std::smatch last;
  bool found = false;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), summary); it != std::sregex_iterator(); ++it) {
    last = *it;
    found = true;
  }
  if (!found) return std::nullopt;
  return json{{"min", std::stod(last[1].str())}, {"avg", std::stod(last[3].str())}, {"max", std::stod(last[4].str())}};
}

SystemCounters read_system_counters(const std::string& proc) {
  SystemCounters c;
  std::ifstream stat(proc + "/stat");
  std::string line;
  while (std::getline(stat, line))
    if (line.rfind("ctxt ", 0) == 0) c.context_switches = std::strtoull(line.c_str() + 5, nullptr, 10);
  std::ifstream irq(proc + "/interrupts");
  while (std::getline(irq, line)) {
    std::istringstream f(line);
    std::string name, tok;
    f >> name;
    uint64_t* dst = name == "RES:"   ? &c.resched_ipis
                    : name == "CAL:" ? &c.call_ipis
                    : name == "IWI:" ? &c.irq_work
                                     : nullptr;
    if (!dst) continue;
    // One count per CPU, then the description: the counts are the leading numbers.
    while (f >> tok && !tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])))
      *dst += std::strtoull(tok.c_str(), nullptr, 10);
  }
  return c;
}

std::optional<double> parse_stress_ng_bogo_ops_per_s(const std::string& out) {
  // "stress-ng: metrc: [123] cpu   12345   5.00   9.90   0.01   2469.00   1245.00"
  static const std::regex re(R"(\]\s+cpu\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+))");
  return last_number(out, re, 1);
}

std::optional<double> parse_hackbench_seconds(const std::string& out) {
  static const std::regex re(R"(Time:\s*([\d.]+))");
  return last_number(out, re, 1);
}

std::optional<double> parse_sysbench_events_per_s(const std::string& out) {
  static const std::regex re(R"(events per second:\s*([\d.]+))");
  return last_number(out, re, 1);
}

json flatten_metrics(const json& metrics) {
  json out = json::object();
  for (const auto& [k, v] : metrics.items()) {
    if (v.is_object()) {
      const json inner = flatten_metrics(v);  // a named value: items() of a temporary would dangle
      for (const auto& [k2, v2] : inner.items()) out[k + "." + k2] = v2;
    } else if (v.is_number()) {
      out[k] = v;
    }
  }
  return out;
}

Result<json> run(const ScenarioArgs& a, const Hooks& hooks, const std::atomic<bool>& cancelled) {
  std::vector<Proc> procs;
  std::string s = std::to_string(a.seconds);
  std::string cpus = std::to_string(ncpu());
  if (a.scenario == "wakeup_latency") {
    // The histogram (to 30 ms, past a 20 ms slice) gives the p99; quiet mode then prints no summary line.
    procs.push_back({{"cyclictest", "-q", "-t1", "-i", "1000", "-h", "30000", "-D", s + "s"}, "lc"});
    procs.push_back({{"stress-ng", "--cpu", cpus, "--timeout", s + "s", "--metrics-brief"}, "be"});
  } else if (a.scenario == "hackbench") {
    // About a second of work per 100 loops at 4 groups on two TCG vCPUs; ends on its own.
    procs.push_back({{"hackbench", "-g", "4", "-l", std::to_string(100 * a.seconds)}, "be"});
  } else if (a.scenario == "cpu_throughput") {
    procs.push_back({{"sysbench", "cpu", "--threads=" + cpus, "--time=" + s, "run"}, "be"});
  } else {
    return errorf(ErrorKind::kInvalidArgument, "'{}' is not a scenario", excerpt(a.scenario));
  }

  // One scenario at a time in this process: two at once would share the CPUs and each report half.
  static std::mutex one_at_a_time;
  std::unique_lock busy(one_at_a_time, std::try_to_lock);
  if (!busy.owns_lock())
    return make_error(ErrorKind::kBusy, "another scenario is running; its figures would be shared: wait for it");
  std::optional<std::string> policy = hooks.policy ? hooks.policy() : std::nullopt;
  for (auto& p : procs) {
    if (auto st = start(p); !st) {
      kill_all(procs);
      return st.error();
    }
    if (hooks.classify) {
      if (auto st = hooks.classify(p.pid, p.cls); !st) {
        kill_all(procs);
        return errorf(ErrorKind::kSystem, "cannot classify {} as {}: {}", p.argv[0], p.cls, st.error().message);
      }
    }
  }
  const SystemCounters sys0 = read_system_counters();
  auto t0 = std::chrono::steady_clock::now();
  for (auto& p : procs) {
    if (::write(p.gate_fd.get(), "g", 1) != 1) {
      int e = errno;  // before kill_all's calls
      kill_all(procs);
      return sys_error("cannot start " + p.argv[0], e);
    }
    p.gate_fd.reset();
  }
  // Each program ends on its own after `seconds`; a margin for start-up, then it is killed.
  auto deadline = t0 + std::chrono::seconds(a.seconds + 30);
  for (;;) {
    bool all = true;
    for (auto& p : procs) {
      if (p.done) continue;
      if (::waitpid(p.pid, &p.status, WNOHANG) == p.pid)
        p.done = true;
      else
        all = false;
    }
    if (all) break;
    if (cancelled.load()) {
      kill_all(procs);
      return make_error(ErrorKind::kInvalidArgument, "cancelled: every process of the scenario was stopped");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill_all(procs);
      return errorf(ErrorKind::kTimeout, "{} did not end within {} s: stopped", a.scenario, a.seconds + 30);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const SystemCounters sys1 = read_system_counters();
  auto rate = [&](uint64_t a, uint64_t b) { return took > 0 && b >= a ? static_cast<double>(b - a) / took : 0.0; };
  // The whole node's, not the scenario's alone: what the scheduler's preemptions cost everyone.
  const json system = {{"context_switches_per_s", rate(sys0.context_switches, sys1.context_switches)},
                       {"resched_ipis_per_s", rate(sys0.resched_ipis, sys1.resched_ipis)},
                       {"call_ipis_per_s", rate(sys0.call_ipis, sys1.call_ipis)},
                       {"irq_work_per_s", rate(sys0.irq_work, sys1.irq_work)}};

  json processes = json::array();
  std::vector<std::string> outs;
  for (auto& p : procs) {
    outs.push_back(read_all(p.out_fd.get()));
    int code = WIFEXITED(p.status) ? WEXITSTATUS(p.status) : 128 + WTERMSIG(p.status);
    processes.push_back({{"program", p.argv[0]}, {"class", p.cls}, {"exit", code}});
    if (code != 0)
      return errorf(ErrorKind::kSystem, "{} exited with {}: {}", p.argv[0], code,
                    excerpt(valid_utf8(outs.back()), 300));
  }
  json metrics;
  auto missing = [&](const std::string& what, const std::string& out) {
    return errorf(ErrorKind::kSystem, "cannot read {} from the output: {}", what, excerpt(valid_utf8(out), 300));
  };
  if (a.scenario == "wakeup_latency") {
    auto lat = parse_cyclictest(outs[0]);
    if (!lat) return missing("cyclictest's latencies", outs[0]);
    auto ops = parse_stress_ng_bogo_ops_per_s(outs[1]);
    if (!ops) return missing("stress-ng's bogo ops/s", outs[1]);
    metrics = {{"lc_wakeup_us", *lat}, {"be_bogo_ops_per_s", *ops}};
  } else if (a.scenario == "hackbench") {
    auto t = parse_hackbench_seconds(outs[0]);
    if (!t) return missing("hackbench's time", outs[0]);
    metrics = {{"seconds", *t}};
  } else {
    auto e = parse_sysbench_events_per_s(outs[0]);
    if (!e) return missing("sysbench's events per second", outs[0]);
    metrics = {{"events_per_s", *e}};
  }
  std::optional<std::string> policy_end = hooks.policy ? hooks.policy() : std::nullopt;
  return json{{"scenario", a.scenario},
              {"seconds", took},
              {"policy", policy ? json(*policy) : json(nullptr)},
              {"policy_at_end", policy_end ? json(*policy_end) : json(nullptr)},
              {"metrics", metrics},
              {"system", system},
              {"processes", processes}};
}

}  // namespace akts::workload
