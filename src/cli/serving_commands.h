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
  std::string push_socket;  // push each TTFT, and the oldest unanswered request's wait, to the daemon (v1.push)
  bool quiet = false;
  bool json = false;
  std::string out;
};

int cmd_loadgen(const LoadgenFlags& f);

}  // namespace akts::cli
