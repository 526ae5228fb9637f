// The exit status of every akts command and tool, documented in the README.
#pragma once

namespace akts {

inline constexpr int kExitOk = 0;        // done
inline constexpr int kExitFail = 1;      // failed
inline constexpr int kExitUsage = 2;     // bad input: nothing changed
inline constexpr int kExitNoDaemon = 3;  // no daemon is listening

}  // namespace akts
