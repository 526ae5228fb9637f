// libFuzzer target: any bytes as the llm's answer. The parser must never crash,
// and whatever it accepts must name a filled slot, with the answer trimmed of
// ASCII whitespace being exactly that slot's decimal number or its exact name.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "reasoning/llm.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Slots 0, 1 and 3 filled; 2 and 4-7 empty. One name looks like a number.
  static const std::vector<akts::SlotInfo> kSlots = {
      {0, "latency", "", ""}, {1, "throughput", "", ""}, {3, "7", "", ""}};
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = akts::parse_llm_answer(text, kSlots);
  if (!r) {
    if (r.error().message.empty()) __builtin_trap();
    return 0;
  }
  const akts::SlotInfo* slot = nullptr;
  for (const auto& s : kSlots)
    if (s.slot == *r) slot = &s;
  if (!slot) __builtin_trap();  // an empty slot was accepted
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  if (text != std::to_string(slot->slot) && text != slot->name) __builtin_trap();
  return 0;
}
