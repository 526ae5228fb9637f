// The daemon's metrics in the Prometheus text exposition format (0.0.4) and in
// OpenMetrics 1.0, rendered from a v1.stats answer (so `akts stats
// --prometheus` and the daemon's /metrics say the same thing), and the choice
// between the two from an HTTP Accept header.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::metrics {

enum class Format { kPrometheus, kOpenMetrics };

// The Content-Type each format is served with.
std::string_view content_type(Format f);

// OpenMetrics when the Accept header ranks application/openmetrics-text at
// least as high as text/plain (by q-value, as Prometheus's scraper asks),
// else the Prometheus text format (also for an empty or malformed header).
Format negotiate(std::string_view accept);

// What names the build in akts_build_info.
struct BuildInfo {
  std::string version;
  std::string commit;
};

// Every metric the daemon exports, from a v1.stats answer (the daemon's
// DaemonBackend::stats). A field missing from the answer leaves its metric
// out; a field of the wrong type is an error (nothing is rendered).
Result<std::string> render(const nlohmann::json& stats, const BuildInfo& build, Format f);

}  // namespace akts::metrics
