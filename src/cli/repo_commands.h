// `akts repo`: the policy repository on disk (src/repository/), without a daemon.
#pragma once

#include <string>
#include <vector>

namespace akts::cli {

struct RepoFlags {
  std::string dir = "/var/lib/akts/policies";
  bool json = false;
  std::string name;
  std::string workload;
  std::vector<std::string> metrics;  // NAME=NUMBER
  std::string source = "manual";
  std::string kernel;
  bool emulated = false;
};

int cmd_repo_list(const RepoFlags& f);
int cmd_repo_show(const RepoFlags& f);
int cmd_repo_seed(const RepoFlags& f);
int cmd_repo_add_result(const RepoFlags& f);

}  // namespace akts::cli
