// `akts top`'s terminal: a live view of a running daemon, read through its control socket only (v1.stats and
// v1.log every telemetry period), drawn with ncurses, with keys that switch the policy (after a confirmation),
// change the controller, pause it (a hold on the selection) and quit.
#pragma once

#include <chrono>
#include <string>

namespace akts::top {

struct Options {
  std::string socket = "/run/akts/akts.sock";
  std::chrono::milliseconds interval{0};  // between refreshes; 0: the daemon's telemetry period
  std::chrono::seconds pause{300};        // how long `p` holds the selection
};

// Runs until `q` (0), or until the terminal cannot be set up (1, said on stderr). A daemon that does not answer is
// shown as such and asked again every second; a terminal smaller than layout()'s minimum is told so.
//
// Two switches exist for the tests only (tests/guest/t_top.sh shows each check fails with them):
// AKTS_TOP_TEST_FREEZE=1 stops the refresh after the first answer, AKTS_TOP_TEST_DEAD_KEYS=1 makes every key but
// `q` do nothing.
int run(const Options& o);

}  // namespace akts::top
