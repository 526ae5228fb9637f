// `akts workload`: one of the named benchmark scenarios (src/workload/scenarios.h) run from the command line,
// its processes classified through a daemon when one is named, its figures as text or JSON.
#pragma once

#include <string>

namespace akts::cli {

struct WorkloadFlags {
  std::string scenario;
  int seconds = 5;
  std::string socket;  // classify the scenario's processes through this daemon ("" = leave them be)
  bool json = false;
};

int cmd_workload(const WorkloadFlags& f);

}  // namespace akts::cli
