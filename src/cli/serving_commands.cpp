// `akts loadgen`: parses the phases strictly, runs the load, prints each
// request as it ends and the per-phase report (vLLM's metric names), and can
// push each request's TTFT, and how long its oldest unanswered request has
// waited, to the daemon so controllers see them.
#include "cli/serving_commands.h"

#include <csignal>
#include <fstream>
#include <iostream>
#include <mutex>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/exit_codes.h"
#include "common/parse.h"
#include "common/text.h"
#include "control/unix_server.h"
#include "serving/loadgen.h"

namespace akts::cli {
namespace {

std::atomic<bool> g_load_cancel{false};
void on_load_sigint(int) { g_load_cancel = true; }

// "steady:6s:1:500ms,burst:6s:8" -> phases; each part NAME:DURATION:CONCURRENCY[:THINK], a THINK of "~500ms"
// drawn at random (exponential, that mean) per request.
Result<std::vector<Phase>> parse_phases(const std::string& text) {
  std::vector<Phase> out;
  for (const std::string& part : split(text, ',')) {
    std::vector<std::string> f = split(part, ':');
    if (f.size() < 3 || f.size() > 4 || f[0].empty())
      return errorf(ErrorKind::kInvalidArgument,
                    "--phases: '{}' is not NAME:DURATION:CONCURRENCY[:THINK] (e.g. burst:6s:8, steady:6s:1:500ms or, "
                    "with random think times of that mean, steady:6s:3:~500ms)",
                    excerpt(part));
    auto d = parse_duration(f[1], "--phases duration");
    if (!d) return d.error();
    auto c = parse_u32(f[2], "--phases concurrency");
    if (!c) return c.error();
    Phase p{f[0], std::chrono::duration<double>(*d).count(), *c};
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
  auto t = parse_duration(f.timeout, "--timeout");
  if (!t) {
    std::cerr << "akts: " << t.error().to_string() << "\n";
    return kExitUsage;
  }
  o.request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(*t);
  if (auto st = validate_load_options(o); !st) {
    std::cerr << "akts: " << st.error().to_string() << "\n";
    return kExitUsage;
  }
  std::mutex print_mu;
  uint64_t push_failures = 0;
  std::mutex push_mu;
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
  o.on_request = [&](const RequestRecord& r) {
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
  std::signal(SIGINT, SIG_DFL);
  if (!report) {
    std::cerr << "akts: " << report.error().to_string() << "\n";
    return report.error().kind == ErrorKind::kInvalidArgument ? kExitUsage : kExitFail;
  }
  auto j = report->to_json();
  if (!f.push_socket.empty()) {
    j["push_failures"] = push_failures;
    if (push_failures)
      std::cerr << fmt::format("akts: loadgen: {} pushes (TTFTs and waits) to the daemon failed\n", push_failures);
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
      "Drive an LLM server (llama-server's /completion, or /v1/completions) with closed-loop phases of streaming\n"
      "requests; print each request as it ends and, per phase, TTFT, TPOT, ITL and E2EL (ms) as `vllm bench\n"
      "serve` defines them. With --push-socket each TTFT also goes to the daemon (v1.push), where controllers\n"
      "see it, with the wait of the oldest request still waiting for its first token. Ctrl-C stops early and still reports.");
  loadgen->add_option("--url", lg.url, "the server, http://host:port")->capture_default_str();
  loadgen->add_option("--path", lg.path, "/completion (llama-server) or /v1/completions (OpenAI)")
      ->capture_default_str();
  loadgen->add_option("--phases", lg.phases, "NAME:DURATION:CONCURRENCY[:THINK],... (concurrency 0: idle; THINK: each worker's pause between its requests, ~THINK: drawn per request from an exponential distribution of that mean, seeded)")
      ->capture_default_str();
  loadgen->add_option("--n-predict", lg.n_predict, "tokens per request (ignore_eos: always this many)")
      ->check(CLI::Range(1u, 100000u))
      ->capture_default_str();
  loadgen->add_option("--prompt", lg.prompt, "the prompt every request sends (default: a fixed sentence)");
  loadgen->add_option("--timeout", lg.timeout, "a request is cut (failed) after this")->capture_default_str();
  loadgen->add_option("--push-socket", lg.push_socket, "push each TTFT to the daemon at this socket as its first token arrives, and every 50 ms while a request waits, how long the oldest has waited");
  loadgen->add_flag("--quiet", lg.quiet, "no line per request");
  loadgen->add_flag("--json", lg.json, "print the report (phases and every request) as JSON");
  loadgen->add_option("--out", lg.out, "also write the JSON report to this file");
  c.on(loadgen, [&] { return cmd_loadgen(lg); });
}

}  // namespace akts::cli
