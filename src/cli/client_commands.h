// The commands that talk to a running daemon over its socket.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/client_options.h"
#include "metrics/exposition.h"

namespace akts::cli {

int cmd_policies(const ClientOptions& o);
int cmd_switch(const ClientOptions& o, const std::string& target, bool force);
int cmd_status(const ClientOptions& o);
// interval 0: one cumulative snapshot; else `count` deltas (0 = until interrupted).
int cmd_stats(const ClientOptions& o, std::chrono::nanoseconds interval, int count, bool reset_longest);
// The daemon's totals once, as its /metrics would serve them.
int cmd_stats_exposition(const ClientOptions& o, metrics::Format f);
int cmd_hold(const ClientOptions& o, const std::string& target, const std::string& duration);
int cmd_release(const ClientOptions& o);
// Without words: the current objective; with words: the goal in words (v1.objective).
int cmd_objective(const ClientOptions& o, const std::vector<std::string>& words);
// name empty: show; dry_run nullopt: leave as is.
int cmd_controller(const ClientOptions& o, const std::string& name, std::optional<bool> dry_run);
// The decision log, latest last; with follow, then each new decision as the daemon makes it (polled every
// 200 ms) until the daemon goes away or the process is stopped.
int cmd_log(const ClientOptions& o, uint32_t limit, bool follow);
// The reasoning plane's last telemetry windows, oldest first (JSON: one window a line).
int cmd_telemetry(const ClientOptions& o, uint32_t last);
int cmd_push(const ClientOptions& o, const std::vector<double>& latency_ms, std::optional<double> waiting_ms,
             const std::optional<std::string>& phase = std::nullopt, const std::vector<double>& tpot_ms = {},
             const std::vector<double>& decode_ms = {});
int cmd_classify(const ClientOptions& o, const std::string& pid, const std::string& cls);
int cmd_hint(const ClientOptions& o, const std::string& tid, const std::string& remaining, bool clear);
// Classifies this process, then execs `argv` (which keeps the pid, and so the class).
int cmd_run(const ClientOptions& o, const std::string& cls, const std::vector<std::string>& argv);

}  // namespace akts::cli
