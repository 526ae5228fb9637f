// StateWriter, and the reading of what the last daemon left.
#include "daemon/state_writer.h"

#include <unistd.h>

#include <spdlog/spdlog.h>

namespace akts {

using json = nlohmann::json;

void StateWriter::save(const ExecutionPlane& plane, const TrackerWorker::Record& rec, bool clean) {
  if (path_.empty()) return;
  const uint32_t slot = plane.selected();
  std::string policy;
  for (const auto& p : plane.policies())
    if (p.slot == slot) policy = p.name;
  json selected = {{"slot", slot}, {"policy", policy.empty() ? json(nullptr) : json(policy)}};
  if (!written_ || slot != slot_) {
    json sel = selected;
    sel["daemon_pid"] = static_cast<uint64_t>(::getpid());
    if (auto st = selection_.write(sel); !st) {
      if (!warned_) spdlog::warn("{}: a restart would forget the selection", st.error().to_string());
      warned_ = true;
      return;
    }
    slot_ = slot;
  }
  if (written_ && rec.gen == gen_ && clean == clean_) return;
  json head = {{"version", kStateVersion},
               {"daemon_pid", static_cast<uint64_t>(::getpid())},
               {"clean", clean},
               {"reaped", false},
               {"selected", selected}};
  // The record goes in as it was serialised.
  std::string text = head.dump();
  text.pop_back();
  text += ",\"tracker\":" + *rec.json + "}";
  if (!write(text)) return;
  written_ = true;
  gen_ = rec.gen;
  clean_ = clean;
}

bool StateWriter::write(const std::string& text) {
  if (auto st = save_state_text(path_, text); !st) {
    if (!warned_) spdlog::warn("{}: a restart would forget classes, own policies or the selection", st.error().to_string());
    warned_ = true;
    return false;
  }
  warned_ = false;
  return true;
}

json last_selection(const json& prev, const std::string& state_path) {
  json sel = prev.contains("selected") ? prev["selected"] : json(nullptr);
  auto text = load_selection(state_path);
  if (text && text->is_object() && text->contains("daemon_pid") && (*text)["daemon_pid"] == prev["daemon_pid"] &&
      text->contains("slot"))
    sel = {{"slot", (*text)["slot"]}, {"policy", text->contains("policy") ? (*text)["policy"] : json(nullptr)}};
  return sel;
}

std::optional<uint32_t> restored_selection(const json& prev, const json& sel, const std::vector<std::string>& policies) {
  if (prev.value("clean", false) || !sel.is_object()) return std::nullopt;
  if (!sel.contains("slot") || !sel["slot"].is_number_unsigned()) return std::nullopt;
  uint64_t slot = sel["slot"].get<uint64_t>();
  if (!sel.contains("policy") || !sel["policy"].is_string())
    return slot >= policies.size() && slot <= AKTS_SLOT_NONE ? std::optional<uint32_t>(static_cast<uint32_t>(slot))
                                                            : std::nullopt;  // it ran the built-in default
  const std::string& name = sel["policy"].get_ref<const std::string&>();
  if (slot < policies.size() && policies[slot] == name) return static_cast<uint32_t>(slot);
  for (size_t i = 0; i < policies.size(); ++i)
    if (policies[i] == name) return static_cast<uint32_t>(i);
  return std::nullopt;
}

}  // namespace akts
