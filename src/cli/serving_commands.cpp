// `akts loadgen`: parses the phases strictly, runs the load, prints each
// request as it ends and the per-phase report (vLLM's metric names), and can
// push each request's TTFT and TPOT, and how long its oldest unanswered request has
// waited, to the daemon so controllers see them.
#include "cli/serving_commands.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <fstream>
#include <iostream>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/parse.h"
#include "common/text.h"
#include "control/unix_server.h"
#include "serving/loadgen.h"
#include "telemetry/sampler.h"

namespace akts::cli {
namespace {

std::atomic<bool> g_load_cancel{false};
void on_load_sigint(int) { g_load_cancel = true; }

// "2.5/s" -> 2.5: a rate of arrivals, DIGITS[.DIGITS] then "/s" (as serving/calibrate.py writes them); 0/s is
// an idle phase.
Result<double> parse_rate(std::string_view text) {
  std::string_view num = text;
  if (!num.ends_with("/s"))
    return errorf(ErrorKind::kInvalidArgument, "--phases rate '{}' is not RATE/s (e.g. 2/s, 0.5/s)", excerpt(text));
  num.remove_suffix(2);
  const size_t dot = num.find('.');
  auto digits = [](std::string_view d) {
    return !d.empty() && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const bool form = dot == std::string_view::npos ? digits(num) : digits(num.substr(0, dot)) && digits(num.substr(dot + 1));
  double v = 0;
  auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
  if (!form || ec != std::errc() || end != num.data() + num.size())
    return errorf(ErrorKind::kInvalidArgument, "--phases rate '{}' is not RATE/s (e.g. 2/s, 0.5/s)", excerpt(text));
  return v;
}

// "steady:6s:1:500ms,burst:6s:8" -> phases; each part NAME:DURATION:LOAD[:THINK], LOAD a concurrency (closed-loop
// users of that name) or RATE/s (open-loop arrivals), a THINK of "~500ms" drawn at random (exponential, that
// mean) per request.
Result<std::vector<Phase>> parse_phases(const std::string& text) {
  std::vector<Phase> out;
  for (const std::string& part : split(text, ',')) {
    std::vector<std::string> f = split(part, ':');
    if (f.size() < 3 || f.size() > 4 || f[0].empty())
      return errorf(ErrorKind::kInvalidArgument,
                    "--phases: '{}' is not NAME:DURATION:LOAD[:THINK] (e.g. burst:6s:8, steady:6s:1:500ms or, "
                    "with random think times of that mean, steady:6s:3:~500ms; open loop: burst:6s:4/s)",
                    excerpt(part));
    auto d = parse_duration(f[1], "--phases duration");
    if (!d) return d.error();
    Phase p{f[0], std::chrono::duration<double>(*d).count(), 0};
    if (f[2].find('/') != std::string::npos) {
      auto r = parse_rate(f[2]);
      if (!r) return r.error();
      p.rate = *r;
      if (f.size() == 4)
        return errorf(ErrorKind::kInvalidArgument,
                      "--phases: '{}': an open-loop phase (a rate) has no think time: its arrivals come on a schedule",
                      excerpt(part));
    } else {
      auto c = parse_u32(f[2], "--phases concurrency");
      if (!c) return c.error();
      p.concurrency = *c;
    }
    if (f.size() == 4) {
      std::string_view think = f[3];
      if (think.starts_with('~')) {
        p.think_random = true;
        think.remove_prefix(1);
      }
      auto t = parse_duration(std::string(think), "--phases think time");
      if (!t) return t.error();
      p.think = std::chrono::duration_cast<std::chrono::milliseconds>(*t);
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

int cmd_loadgen(const LoadgenFlags& f) {
  LoadOptions o;
  o.url = f.url;
  o.path = f.path;
  o.n_predict = f.n_predict;
  if (!f.prompt.empty()) o.prompt = f.prompt;
  auto phases = parse_phases(f.phases);
  if (!phases) {
    std::cerr << "akts: " << phases.error().to_string() << "\n";
    return kExitUsage;
  }
  o.phases = *phases;
  if (!f.push_socket.empty())
    // The daemon takes a phase's name only as v1.push does: say so now, not as a push that fails at each phase.
    for (const auto& p : o.phases)
      if (auto st = PushedSamples::check_phase(p.name); !st) {
        std::cerr << "akts: --phases: with --push-socket, " << st.error().to_string() << "\n";
        return kExitUsage;
      }
  auto t = parse_duration(f.timeout, "--timeout");
  if (!t) {
    std::cerr << "akts: " << t.error().to_string() << "\n";
    return kExitUsage;
  }
  o.request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*t);
  o.seed = f.seed;
  o.burstiness = f.burstiness;
  o.max_in_flight = f.max_in_flight;
  auto ms_of = [](const std::string& text, const char* what) -> Result<std::optional<double>> {
    if (text.empty()) return std::optional<double>();
    auto d = parse_duration(text, what);
    if (!d) return d.error();
    return std::optional<double>(std::chrono::duration<double, std::milli>(*d).count());
  };
  auto drain = ms_of(f.drain, "--drain");
  auto slo_ttft = ms_of(f.slo_ttft, "--slo-ttft");
  auto slo_tpot = ms_of(f.slo_tpot, "--slo-tpot");
  for (const auto* r : {&drain, &slo_ttft, &slo_tpot})
    if (!*r) {
      std::cerr << "akts: " << r->error().to_string() << "\n";
      return kExitUsage;
    }
  if (*drain) o.drain = std::chrono::milliseconds(std::llround(**drain));
  o.slo_ttft_ms = *slo_ttft;
  o.slo_tpot_ms = *slo_tpot;
  if (auto st = validate_load_options(o); !st) {
    std::cerr << "akts: " << st.error().to_string() << "\n";
    return kExitUsage;
  }
  std::mutex print_mu;
  uint64_t push_failures = 0;
  std::mutex push_mu;
  // Each finished request's TPOT and decode time, pushed by a thread of their own: on_request runs under the
  // load generator's callback lock, which every worker takes as its request ends, so a push there would hold
  // them all for as long as the daemon takes to answer.
  std::mutex tpot_mu;
  std::condition_variable tpot_cv;
  std::vector<std::pair<double, double>> tpot_queue;
  bool tpot_done = false;
  std::thread tpot_pusher;
  if (!f.push_socket.empty())
    tpot_pusher = std::thread([&] {
      std::unique_lock lock(tpot_mu);
      while (true) {
        tpot_cv.wait(lock, [&] { return tpot_done || !tpot_queue.empty(); });
        if (tpot_queue.empty()) return;  // done, and all pushed
        std::vector<std::pair<double, double>> batch;
        batch.swap(tpot_queue);
        lock.unlock();
        json tpot = json::array(), decode = json::array();
        for (const auto& [t, d] : batch) tpot.push_back(t), decode.push_back(d);
        auto res = control::rpc_call(f.push_socket, "v1.push", {{"tpot_ms", tpot}, {"decode_ms", decode}}, 500);
        {
          std::lock_guard plock(push_mu);
          if (!res && push_failures++ == 0)
            std::cerr << "akts: loadgen: cannot push TPOT to the daemon: " << res.error().to_string() << "\n";
        }
        lock.lock();
      }
    });
  if (!f.push_socket.empty())
    // Each TTFT as it is measured, at the first token (a controller reading it learns when it happened, not a
    // decode later). Briefly: it delays the reading of that stream; a push the daemon does not answer in time
    // costs at most this, and its sample is lost (counted, and reported at the end).
    o.on_first_token = [&](double ttft_ms) {
      auto res = control::rpc_call(f.push_socket, "v1.push", {{"latency_ms", {ttft_ms}}}, 500);
      std::lock_guard lock(push_mu);
      if (!res && push_failures++ == 0)
        std::cerr << "akts: loadgen: cannot push TTFT to the daemon: " << res.error().to_string() << "\n";
    };
  if (!f.push_socket.empty())
    // How long the oldest unanswered request has waited, every 50 ms while one waits: a starved server sends no
    // first token, and this is how the daemon's objective sees the wait (Window::app_waiting_oldest_ms).
    o.on_waiting = [&](double waiting_ms) {
      auto res = control::rpc_call(f.push_socket, "v1.push", {{"waiting_ms", waiting_ms}}, 500);
      std::lock_guard lock(push_mu);
      if (!res && push_failures++ == 0)
        std::cerr << "akts: loadgen: cannot push to the daemon: " << res.error().to_string() << "\n";
    };
  std::atomic<bool> said_phase{false};
  if (!f.push_socket.empty())
    // Each phase as it begins: the daemon's oracle can follow the load's own clock (Window::app_phase).
    o.on_phase = [&](size_t, const std::string& name) {
      said_phase = true;
      // Once more on a failure: a phase lost is a whole phase the oracle misses.
      auto res = control::rpc_call(f.push_socket, "v1.push", {{"phase", name}}, 500);
      if (!res) res = control::rpc_call(f.push_socket, "v1.push", {{"phase", name}}, 500);
      std::lock_guard lock(push_mu);
      if (!res && push_failures++ == 0)
        std::cerr << "akts: loadgen: cannot push to the daemon: " << res.error().to_string() << "\n";
    };
  o.on_request = [&](const RequestRecord& r) {
    // Its time per output token, as it ends, with how long it decoded (the objective's TPOT limit; a request of
    // one token has none): handed to the pusher thread.
    if (!f.push_socket.empty() && r.ok && r.tpot_ms) {
      {
        std::lock_guard lock(tpot_mu);
        tpot_queue.emplace_back(*r.tpot_ms, std::max(0.0, r.e2el_ms - r.ttft_ms));
      }
      tpot_cv.notify_one();
    }
    if (f.quiet || f.json) return;
    std::lock_guard lock(print_mu);
    if (r.ok)
      std::cout << fmt::format("[{:7.2f}s] {:<8} ttft {:7.1f} ms  e2el {:7.1f} ms  {} tokens\n", r.start_s,
                               r.phase_name, r.ttft_ms, r.e2el_ms, r.output_tokens);
    else
      std::cout << fmt::format("[{:7.2f}s] {:<8} failed after {:.1f} ms: {}\n", r.start_s, r.phase_name, r.e2el_ms,
                               r.error);
    std::cout.flush();
  };
  o.cancel = &g_load_cancel;
  std::signal(SIGINT, on_load_sigint);
  auto report = run_load(o);
  if (tpot_pusher.joinable()) {
    {
      std::lock_guard lock(tpot_mu);
      tpot_done = true;
    }
    tpot_cv.notify_one();
    tpot_pusher.join();  // what is queued is pushed first
  }
  std::signal(SIGINT, SIG_DFL);
  if (said_phase) {
    // The load is over, however it ended: no phase of it holds any more (an oracle of phases then changes nothing
    // until the next load says one).
    auto res = control::rpc_call(f.push_socket, "v1.push", {{"phase", nullptr}}, 500);
    if (!res) res = control::rpc_call(f.push_socket, "v1.push", {{"phase", nullptr}}, 500);
    if (!res) {
      std::cerr << "akts: loadgen: cannot tell the daemon the load is over: " << res.error().to_string() << "\n";
      std::lock_guard lock(push_mu);
      ++push_failures;
    }
  }
  if (!report) {
    std::cerr << "akts: " << report.error().to_string() << "\n";
    return report.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
  }
  auto j = report->to_json();
  if (!f.push_socket.empty()) {
    j["push_failures"] = push_failures;
    if (push_failures)
      std::cerr << fmt::format("akts: loadgen: {} pushes (TTFTs, waits and phases) to the daemon failed\n",
                               push_failures);
  }
  if (!f.out.empty()) {
    std::ofstream out(f.out);
    out << j.dump(2) << "\n";
    if (!out) {
      std::cerr << "akts: cannot write " << f.out << "\n";
      return kExitFail;
    }
  }
  if (f.json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << report->to_text();
  size_t completed = 0;
  for (const auto& p : report->phases) completed += p.completed;
  return completed > 0 ? kExitOk : kExitFail;
}

void add_serving_commands(Commands& c) {
  auto& app = c.app();
  auto& lg = c.keep<LoadgenFlags>();
  auto* loadgen = app.add_subcommand(
      "loadgen",
      "Drive an LLM server (llama-server's /completion, or /v1/completions) with phases of streaming requests:\n"
      "closed-loop users (a phase's users are its name's own: steady users never send in a burst) or open-loop\n"
      "arrivals on a seeded schedule (RATE/s; the same flags replay the same schedule). Prints each request as it\n"
      "ends and, per phase, TTFT, TPOT, ITL and E2EL (ms) as `vllm bench serve` defines them, and with\n"
      "--slo-ttft/--slo-tpot the goodput: requests per second that met every limit (a failed or unanswered\n"
      "request never does). With --push-socket each TTFT and TPOT also goes to the daemon (v1.push), where\n"
      "controllers see them, with the wait of the oldest request still waiting for its first token and each phase as it\n"
      "begins. Ctrl-C stops early and still reports.\n"
      "  akts loadgen --phases steady:10s:1:1s,burst:6s:6,steady:10s:1:1s\n"
      "  akts loadgen --phases steady:10s:1/s,burst:6s:5/s,steady:10s:1/s --seed 7 --slo-ttft 2s --slo-tpot 300ms");
  loadgen->add_option("--url", lg.url, "the server, http://host:port")->capture_default_str();
  loadgen->add_option("--path", lg.path, "/completion (llama-server) or /v1/completions (OpenAI)")
      ->capture_default_str();
  loadgen->add_option("--phases", lg.phases, "NAME:DURATION:LOAD[:THINK],... LOAD: a concurrency (closed-loop users of that name; 0: idle) or RATE/s (open-loop arrivals); THINK: each user's pause between its requests, ~THINK: drawn per request from an exponential distribution of that mean, seeded")
      ->capture_default_str();
  loadgen->add_option("--seed", lg.seed, "seeds the arrival schedule and the random think times")->capture_default_str();
  loadgen->add_option("--burstiness", lg.burstiness, "open loop: the gamma shape of the gaps between arrivals (1: Poisson; below 1 burstier)")
      ->check(CLI::Range(0.01, 100.0))
      ->capture_default_str();
  loadgen->add_option("--max-in-flight", lg.max_in_flight, "open loop: connections sending at once (an arrival with none free waits, and its wait counts)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  loadgen->add_option("--drain", lg.drain, "after the last phase, how long requests in flight may take; then they count as unanswered (default: --timeout)");
  loadgen->add_option("--slo-ttft", lg.slo_ttft, "goodput's TTFT limit (e.g. 2s)");
  loadgen->add_option("--slo-tpot", lg.slo_tpot, "goodput's TPOT limit (e.g. 300ms)");
  loadgen->add_option("--n-predict", lg.n_predict, "tokens per request (ignore_eos: always this many)")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  loadgen->add_option("--prompt", lg.prompt, "the prompt every request sends (default: a fixed sentence)");
  loadgen->add_option("--timeout", lg.timeout, "a request is cut (failed) after this")->capture_default_str();
  loadgen->add_option("--push-socket", lg.push_socket, "push each TTFT to the daemon at this socket as its first token arrives, each TPOT as its request ends, every 50 ms while a request waits how long the oldest has waited, each phase's name as it begins, and that the load is over at its end");
  loadgen->add_flag("--quiet", lg.quiet, "no line per request");
  loadgen->add_flag("--json", lg.json, "print the report (phases and every request) as JSON");
  loadgen->add_option("--out", lg.out, "also write the JSON report to this file");
  c.on(loadgen, [&] { return cmd_loadgen(lg); });
}

}  // namespace akts::cli
