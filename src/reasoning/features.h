// What the learner decides on, in one place, so the llm controller's prompt
// shows the same: the load (requests running + waiting, else the LC tasks
// running or waiting on average), its parts, and each of the objective's
// limits with its margin (Objective::margins).
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
  std::string margins;  // each limit, observed against its max (Objective::margins)
  bool met = true;      // every limit
  double batch_share = 0;

  static Features of(const Window& w, const Objective& obj);
  // One line for people and the llm: "load 5 (requests running 4, waiting 1), LC tasks busy 1.3, ...".
  std::string describe() const;
};

}  // namespace akts
