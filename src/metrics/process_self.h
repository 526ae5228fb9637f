// The daemon's own process figures (CPU time, memory, start, descriptors),
// read from /proc, for the process_* metrics and the classification benchmark.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::metrics {

// {"cpu_seconds", "resident_bytes", "start_time_seconds", "open_fds"} of process `pid` ("self" by default),
// under `proc_root`. An unreadable or malformed file is an error.
Result<nlohmann::json> read_process(const std::string& proc_root = "/proc", const std::string& pid = "self");

}  // namespace akts::metrics
