// Waiting on an event in a unit test: poll for it with a patience far beyond what a busy machine needs, instead
// of sleeping a fixed time that a busy machine can outrun.
#pragma once

#include <chrono>
#include <thread>

namespace akts::test {

// Polls `done` every millisecond until it holds or `patience` has passed; says whether it held.
template <class F>
bool wait_until(F done, std::chrono::steady_clock::duration patience) {
  const auto end = std::chrono::steady_clock::now() + patience;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace akts::test
