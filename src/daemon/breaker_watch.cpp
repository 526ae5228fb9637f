// BreakerWatch::poll: a trip or a release since the last tick, said once each.
#include "daemon/breaker_watch.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace akts {

using nlohmann::json;

void BreakerWatch::poll(const PlaneControl& plane, ReasoningPlane& reasoning) {
  auto b = plane.read_breaker();
  if (!b) return;
  const auto& s = b->state;
  if (s.trips != trips_) {
    json last = b->to_json()["last_trip"];
    auto slot_name = [](uint32_t k) {
      return k < AKTS_MAX_SLOTS ? fmt::format("slot {}", k) : std::string("the built-in default");
    };
    std::string why = fmt::format(
        "the circuit breaker tripped ({}{}) on {}: {} runs for at least {:g} s", last["reason"].get<std::string>(),
        trips_ + 1 < s.trips ? fmt::format(", {} trips since the last poll", s.trips - trips_) : "",
        slot_name(s.last_slot), slot_name(s.word & AKTS_OVERRIDE_SLOT_MASK),
        std::chrono::duration<double>(b->params.cooldown).count());
    spdlog::warn("{}", why);
    reasoning.note("breaker", "trip", why, {{"trip", last}, {"trips", s.trips}});
    trips_ = s.trips;
  }
  // By its time stamp: a trip and its end between two polls still show.
  if (s.last_release_ns != released_ns_) {
    std::string why = "the circuit breaker let go: the selection rules again";
    spdlog::info("{}", why);
    reasoning.note("breaker", "release", why, {{"held_s", static_cast<double>(s.last_release_ns - s.last_trip_ns) / 1e9}});
    released_ns_ = s.last_release_ns;
  }
}

}  // namespace akts
