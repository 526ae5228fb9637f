// `akts loadgen`: the serving experiment's load generator from the command line.
#pragma once

#include <string>

namespace akts::cli {

struct LoadgenFlags {
  std::string url = "http://127.0.0.1:8080";
  std::string path = "/completion";
  std::string phases = "steady:6s:1,burst:6s:8,steady:6s:1";
  uint32_t n_predict = 16;
  std::string prompt;
  std::string timeout = "30s";
  std::string push_socket;  // push each TTFT, the oldest unanswered request's wait and each phase's start (v1.push)
  uint64_t seed = 1;
  double burstiness = 1;
  uint32_t max_in_flight = 64;
  std::string drain;  // "" : the request timeout
  std::string slo_ttft, slo_tpot;  // "" : no such limit
  bool quiet = false;
  bool json = false;
  std::string out;
};

int cmd_loadgen(const LoadgenFlags& f);

}  // namespace akts::cli
