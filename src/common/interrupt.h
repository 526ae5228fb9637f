// Stopping a worker thread that may be blocked in a request (an HTTP call to
// a model, a metrics scrape): call `interrupt` (e.g. shut the request's
// socket) until the worker says it has left the request, retrying every
// 10 ms, because an interrupt that lands before the request opens its socket
// finds nothing to shut.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace akts {

// `lk` holds the mutex that guards `busy`; the worker clears `busy` under it
// and notifies `done`. Returns with `lk` held and `busy` false.
template <class Interrupt>
void interrupt_until_idle(std::unique_lock<std::mutex>& lk, std::condition_variable& done, const bool& busy,
                          Interrupt interrupt) {
  while (busy) {
    lk.unlock();
    interrupt();
    lk.lock();
    done.wait_for(lk, std::chrono::milliseconds(10), [&] { return !busy; });
  }
}

}  // namespace akts
