// `akts bench bimodal`: the bimodal request server (src/workload/bimodal.h) swept over offered loads, as a
// table or JSON: per load the p99.9 slowdown, the goodput within the slowdown objective, and the short and
// long requests' latencies; optionally each request's size given to srpt as a hint.
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "bench.h"
#include "common/exit_codes.h"
#include "common/parse.h"
#include "common/text.h"
#include "control/unix_server.h"
#include "samples.h"
#include "workload/bimodal.h"

namespace akts::bench {

using json = nlohmann::json;

namespace {

Result<std::vector<double>> parse_loads(const std::string& text) {
  std::vector<double> out;
  for (const std::string& part : split(text, ',')) {
    char* end = nullptr;
    errno = 0;
    double v = part.empty() ? 0 : std::strtod(part.c_str(), &end);
    if (part.empty() || errno != 0 || end != part.c_str() + part.size())
      return make_error(ErrorKind::kInvalidArgument,
                        fmt::format("--loads: '{}' is not a list of fractions like 0.2,0.5,0.8", text));
    out.push_back(v);
  }
  return out;
}

}  // namespace

int run_bimodal_bench(const BimodalFlags& f) {
  workload::BimodalOptions o;
  auto loads = parse_loads(f.loads);
  auto short_ns = parse_duration(f.short_time, "--short");
  auto long_ns = parse_duration(f.long_time, "--long");
  for (const Error* e : {loads ? nullptr : &loads.error(), short_ns ? nullptr : &short_ns.error(),
                         long_ns ? nullptr : &long_ns.error()})
    if (e) {
      std::cerr << "akts: bench bimodal: " << e->message << "\n";
      return kExitUsage;
    }
  o.loads = *loads;
  o.seconds = f.seconds;
  o.short_ns = *short_ns;
  o.long_ns = *long_ns;
  o.long_fraction = f.long_fraction;
  o.workers = f.workers;
  o.cpus = f.cpus;
  o.slo_slowdown = f.slo;
  o.seed = f.seed;
  o.rt_generator = !f.no_rt_generator;
  if (auto st = workload::check(o); !st) {
    std::cerr << "akts: bench bimodal: " << st.error().message << "\n";
    return kExitUsage;
  }
  workload::HintFn hint;
  if (!f.hint_socket.empty()) {
    // The daemon must be there, and take a hint, before any load starts.
    if (auto r = control::rpc_call(f.hint_socket, "v1.status", json::object()); !r) {
      std::cerr << fmt::format("akts: bench bimodal: --hint-socket {}: {}\n", f.hint_socket, r.error().to_string());
      return kExitNoDaemon;
    }
    hint = [sock = f.hint_socket](pid_t tid, std::chrono::nanoseconds ns) -> Status {
      auto r = control::rpc_call(sock, "v1.hint", {{"pid", tid}, {"remaining", static_cast<uint64_t>(ns.count())}}, 2000);
      if (!r) return r.error();
      return {};
    };
  }
  auto r = workload::run_bimodal(o, hint, [](const std::string& line) {
    progress(line);
    progress_done();
  });
  if (!r) {
    std::cerr << "akts: bench bimodal: " << r.error().to_string() << "\n";
    return kExitFail;
  }
  if (!f.out.empty()) {
    std::ofstream file(f.out);
    file << r->dump(1) << "\n";
    if (!file) {
      std::cerr << fmt::format("akts: bench bimodal: cannot write {}\n", f.out);
      return kExitFail;
    }
  }
  if (f.json) {
    std::cout << r->dump(1) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format(
      "bimodal: {:.2f}% long requests of {}, the rest {}; {} CPUs' capacity; {} worker threads; arrivals from a {} "
      "thread{}\n",
      o.long_fraction * 100, human_ns(static_cast<double>(o.long_ns.count())),
      human_ns(static_cast<double>(o.short_ns.count())), (*r)["cpus"].get<unsigned>(), o.workers,
      (*r)["generator"].get<std::string>(), hint ? "; sizes hinted to the scheduler" : "");
  // A figure, or "-" where there is none (no requests of that kind at that load).
  auto fig = [](const json& v, int width, int prec) {
    return v.is_number() ? fmt::format("{:>{}.{}f}", v.get<double>(), width, prec) : fmt::format("{:>{}}", "-", width);
  };
  std::cout << fmt::format("{:>5} {:>9} {:>9} {:>10} {:>12} {:>12} {:>11} {:>10} {:>10}\n", "load", "offered/s", "goodput/s",
                           "slowdown50", "slowdown99.9", "short p99 ms", "long p99 ms", "unfinished", "app-queued");
  for (const auto& l : (*r)["loads"])
    std::cout << fmt::format("{:>5.2f} {:>9.0f} {:>9.0f} {} {} {} {} {:>10} {:>10}\n", l["load"].get<double>(),
                             l["offered_rps"].get<double>(), l["goodput_rps"].get<double>(),
                             fig(l["slowdown"]["p50"], 10, 1), fig(l["slowdown"]["p999"], 12, 1),
                             fig(l["short_latency_ms"]["p99"], 12, 2), fig(l["long_latency_ms"]["p99"], 11, 1),
                             l["unfinished"].get<size_t>(), l["app_queued"].get<size_t>());
  if (hint)
    for (const auto& l : (*r)["loads"]) {
      if (!l.contains("hint_ms")) continue;
      std::cout << fmt::format("load {:.2f}: a hint took {} ms p50, {} ms p99 (counted in the latency); {} failed{}\n",
                               l["load"].get<double>(), fig(l["hint_ms"]["p50"], 0, 2), fig(l["hint_ms"]["p99"], 0, 2),
                               l["hint_errors"].get<size_t>(),
                               l.contains("first_hint_error") ? " (first: " + l["first_hint_error"].get<std::string>() + ")"
                                                              : std::string());
    }
  std::cout << fmt::format("highest load with p99.9 slowdown <= {:g}: {:.2f}\n", o.slo_slowdown,
                           (*r)["max_load_at_slo"].get<double>());
  return kExitOk;
}

}  // namespace akts::bench
