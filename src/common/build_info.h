// What this binary was built from: the version and the commit (generated at
// build time by cmake/build_info.cmake into the build's gen/build_info.cpp).
#pragma once

#include <string_view>

namespace akts {

std::string_view build_version();  // "0.1.0"
std::string_view build_commit();   // "3f2a9c1d0b7e", "3f2a9c1d0b7e-dirty" or "unknown"

}  // namespace akts
