// What every client of the daemon's socket takes: the socket and --json (cli/commands.h adds them as flags).
#pragma once

#include <string>

namespace akts::cli {

struct ClientOptions {
  std::string socket = "/run/akts/akts.sock";
  bool json = false;
};

}  // namespace akts::cli
