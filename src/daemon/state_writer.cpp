// StateWriter, and the reading of what the last daemon left.
#include "daemon/state_writer.h"

#include <unistd.h>

#include <cstdio>

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
  if (auto st = save_state(path_, text); !st) {
    if (!warned_) spdlog::warn("{}: a restart would forget classes, own policies or the selection", st.error().to_string());
    warned_ = true;
    return false;
  }
  warned_ = false;
  return true;
}

Result<StateTakeover> take_over_state(const std::string& state_file) {
  StateTakeover t;
  auto l = StateLock::acquire(state_file, std::chrono::seconds(5));
  if (!l) return l.error();
  t.lock.emplace(std::move(*l));
  auto prev = load_state(state_file);
  if (!prev) {
    std::string aside = state_file + ".bad";
    spdlog::warn("{}; set aside as {}, starting without it", prev.error().to_string(), aside);
    (void)::rename(state_file.c_str(), aside.c_str());
  } else if (*prev) {
    t.previous = std::move(**prev);
    (*t.previous)["selected"] = last_selection(*t.previous, state_file);
  }
  auto r = Reaper::start(state_file, t.lock->fd());
  if (!r) return r.error();
  t.reaper.emplace(std::move(*r));
  const std::optional<json>& p = t.previous;
  json first = {{"version", kStateVersion},
                {"daemon_pid", static_cast<uint64_t>(::getpid())},
                {"clean", false},
                {"reaped", false},
                {"selected", p && p->contains("selected") ? (*p)["selected"] : json(nullptr)},
                {"tracker", p ? (*p)["tracker"] : json{{"processes", json::array()}}}};
  json sel_first = first["selected"].is_object() ? first["selected"] : json::object();
  sel_first["daemon_pid"] = static_cast<uint64_t>(::getpid());
  if (auto st = save_state(state_file, first.dump()); !st || !(st = SelectionFile(state_file).write(sel_first))) {
    return make_error(st.error().kind, st.error().to_string() +
                                           " (set \"state_file\": \"\" to run without restart state and without a reaper)");
  }
  return t;
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
