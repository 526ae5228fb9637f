// `akts params` and `akts set`: the live parameters of the running policies, and one changed.
#pragma once

#include <string>

#include "cli/client_commands.h"

namespace akts::cli {

int cmd_params(const ClientOptions& o, const std::string& policy);
int cmd_set(const ClientOptions& o, const std::string& target, const std::string& value);

}  // namespace akts::cli
