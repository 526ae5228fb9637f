// `akts bench control`: how promptly a running daemon answers a switch while
// misbehaving clients hold connections open (and whatever its tracker is
// doing meanwhile). Round trips of v1.switch through the real socket.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "bench.h"
#include "common/fd.h"
#include "control/unix_server.h"
#include "samples.h"

namespace akts::bench {

int run_control(const ControlOptions& o) {
  // Idle clients: connected, never sending (the daemon may close them; we just hold ours).
  std::vector<Fd> idle;
  for (int i = 0; i < o.idle_clients; ++i) {
    Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", o.socket.c_str());
    if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      std::cerr << fmt::format("akts: bench control: cannot connect to {}: {}\n", o.socket, std::strerror(errno));
      return 3;
    }
    idle.push_back(std::move(fd));
  }
  auto first = control::rpc_call(o.socket, "v1.policies", control::json::object());
  if (!first) {
    std::cerr << "akts: bench control: " << first.error().to_string() << "\n";
    return 3;
  }
  uint32_t original = first->value("selected", 0u);
  std::vector<double> rtt;
  size_t failed = 0;
  for (size_t i = 0; i < o.requests; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = control::rpc_call(o.socket, "v1.switch", {{"target", static_cast<uint32_t>(i % 2)}}, 5000);
    auto ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (r)
      rtt.push_back(ns);
    else
      ++failed;
    if (i % 50 == 0) progress(fmt::format("control: {}/{} switches", i, o.requests));
  }
  progress_done();
  (void)control::rpc_call(o.socket, "v1.switch", {{"target", original}});
  idle.clear();
  Summary s = summarize(rtt);
  nlohmann::json report = {{"benchmark", "control"},
                           {"idle_clients", o.idle_clients},
                           {"requests", o.requests},
                           {"failed", failed},
                           {"switch_round_trip_ns", s.to_json()},
                           {"note", o.note}};
  if (!o.out.empty()) std::ofstream(o.out) << report.dump(2) << "\n";
  if (o.json) {
    std::cout << report.dump(2) << "\n";
  } else {
    std::cout << fmt::format("v1.switch round trip with {} idle clients connected{}: n={} p50 {} p99 {} max {}; {} "
                             "failed\n",
                             o.idle_clients, o.note.empty() ? "" : " (" + o.note + ")", s.n, human_ns(s.p50),
                             human_ns(s.p99), human_ns(s.max), failed);
  }
  return failed ? 1 : 0;
}

}  // namespace akts::bench
