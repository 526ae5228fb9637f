// One logger for the whole program (spdlog, to stderr). libbpf's own printer is
// routed into it: its warnings always, its debug output with -v.
#pragma once

#include <spdlog/spdlog.h>

namespace akts {

void init_logging(int verbosity);  // 0 = info, 1 = debug (+ libbpf debug), 2 = trace

}  // namespace akts
