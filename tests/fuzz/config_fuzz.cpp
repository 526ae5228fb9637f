// libFuzzer target: any bytes as a daemon config. It must never crash, and
// whatever it accepts must be usable: 1 to 8 known policies, an initial
// selection among them, matchers of one kind each with a valid class.
#include <cstdint>
#include <string_view>

#include "akts.h"
#include "config/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> kKnown = {"latency", "throughput"};
  auto c = akts::parse_config(std::string_view(reinterpret_cast<const char*>(data), size), kKnown);
  if (!c) return 0;
  if (c->policies.empty() || c->policies.size() > AKTS_MAX_SLOTS) __builtin_trap();
  bool initial_ok = false;
  for (size_t i = 0; i < c->policies.size(); ++i)
    initial_ok = initial_ok || c->policies[i] == c->initial || std::to_string(i) == c->initial;
  if (!initial_ok) __builtin_trap();
  for (const auto& m : c->matchers) {
    if (m.cls >= AKTS_NR_CLASSES) __builtin_trap();
    if (m.kind == akts::Matcher::Kind::kComm && (m.value.empty() || m.value.size() > 15)) __builtin_trap();
    if (m.kind == akts::Matcher::Kind::kCgroup && (m.value.empty() || m.value[0] != '/')) __builtin_trap();
    if (m.kind == akts::Matcher::Kind::kPid && m.pid == 0) __builtin_trap();
  }
  if (c->socket_mode & 0007) __builtin_trap();
  return 0;
}
