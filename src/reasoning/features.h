// What the learner decides on, in one place, so the llm controller's prompt
// shows the same: the load (requests running + waiting, else the LC tasks
// running or waiting on average), its parts, and the objective's signal with
// its two parts (what ended, and the oldest still waiting).
#pragma once

#include <optional>
#include <string>

#include "reasoning/objective.h"
#include "telemetry/window.h"

namespace akts {

struct Features {
  double load = 0;                        // what the learner bins on
  std::optional<double> running, waiting;  // the application's requests (when scraped)
  // LC tasks running or waiting on average: LC CPU time over the window, plus the LC tasks waiting at the
  // guard's firings (else, in an older trace, LC time waited over the window).
  double lc_busy_tasks = 0;
  std::optional<double> prompt_tokens_per_s;
  std::optional<double> observed_ms;  // the objective's signal; nullopt: no sample
  // Its parts (Objective::ended_ms, waiting_ms): the p99 of what ended, the oldest still waiting (0: none).
  std::optional<double> ended_ms;
  double waiting_ms = 0;
  bool met = true;
  double batch_share = 0;

  static Features of(const Window& w, const Objective& obj);
  // One line for people and the llm: "load 5 (requests running 4, waiting 1), LC tasks busy 1.3, ...".
  std::string describe(const Objective& obj) const;
};

}  // namespace akts
