// `akts admit` and `akts evict`: a new policy into the running scheduler through admission's gates, and out again.
#pragma once

#include <string>
#include <vector>

#include "cli/client_commands.h"

namespace akts::cli {

struct AdmitFlags {
  std::string file;  // .c source (gate 1 compiles it) or a compiled .o
  bool check_only = false;
  std::string name, record, description, pick_when;
  int slot = -1;
  bool force_untested = false;
  bool replace = false;
  std::string canary;  // e.g. "10s": gate 5 on the live node
  std::string btf = "/sys/kernel/btf/vmlinux";
  std::vector<std::string> include_dirs;
};

int cmd_admit(const ClientOptions& o, const AdmitFlags& f);
int cmd_evict(const ClientOptions& o, const std::string& target);

}  // namespace akts::cli
