#include "common/result.h"

#include <cstring>

namespace akts {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInvalidArgument: return "invalid_argument";
    case ErrorKind::kSystem: return "system";
    case ErrorKind::kLoad: return "load";
    case ErrorKind::kVerifier: return "verifier";
    case ErrorKind::kKernel: return "kernel";
    case ErrorKind::kBusy: return "busy";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kUnsupported: return "unsupported";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string s = message;
  if (err != 0) s += fmt::format(" ({})", std::strerror(err > 0 ? err : -err));
  for (const auto& d : details) s += "\n    " + d;
  return s;
}

Error sys_error(std::string what, int ret_or_errno) {
  int e = ret_or_errno < 0 ? -ret_or_errno : ret_or_errno;
  if (ret_or_errno == -1) e = errno;
  return Error{ErrorKind::kSystem, e, std::move(what), {}};
}

}  // namespace akts
