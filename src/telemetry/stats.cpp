#include "telemetry/stats.h"

#include <cmath>

namespace akts {

std::string_view callback_name(uint32_t cb) {
  static constexpr std::array<std::string_view, kNumCallbacks> kNames = {
      "select_cpu", "enqueue", "dispatch", "runnable", "running", "stopping", "quiescent"};
  return cb < kNames.size() ? kNames[cb] : "?";
}

std::string_view class_name(uint32_t cls) {
  switch (cls) {
    case AKTS_CLASS_BE: return "be";
    case AKTS_CLASS_LC: return "lc";
    default: return "?";
  }
}

Stats Stats::sum(std::span<const akts_cpu_stats> per_cpu) {
  Stats s;
  for (const auto& c : per_cpu) {
    for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) {
      s.entries[cb] += c.entries[cb];
      s.fallthrough[cb] += c.fallthrough[cb];
      for (uint32_t k = 0; k < kMaxSlots; ++k) s.calls[cb][k] += c.calls[cb][k];
    }
    for (uint32_t cls = 0; cls < kNumClasses; ++cls) {
      for (uint32_t b = 0; b < kWaitBuckets; ++b) s.wait_hist[cls][b] += c.wait_hist[cls][b];
      s.run_ns[cls] += c.run_ns[cls];
      s.wait_ns[cls] += c.wait_ns[cls];
    }
  }
  return s;
}

Stats Stats::operator-(const Stats& earlier) const {
  Stats d;
  for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) {
    d.entries[cb] = entries[cb] - earlier.entries[cb];
    d.fallthrough[cb] = fallthrough[cb] - earlier.fallthrough[cb];
    for (uint32_t k = 0; k < kMaxSlots; ++k) d.calls[cb][k] = calls[cb][k] - earlier.calls[cb][k];
  }
  for (uint32_t cls = 0; cls < kNumClasses; ++cls) {
    for (uint32_t b = 0; b < kWaitBuckets; ++b) d.wait_hist[cls][b] = wait_hist[cls][b] - earlier.wait_hist[cls][b];
    d.run_ns[cls] = run_ns[cls] - earlier.run_ns[cls];
    d.wait_ns[cls] = wait_ns[cls] - earlier.wait_ns[cls];
  }
  return d;
}

uint64_t Stats::total_entries() const {
  uint64_t t = 0;
  for (auto v : entries) t += v;
  return t;
}

uint64_t Stats::total_fallthrough() const {
  uint64_t t = 0;
  for (auto v : fallthrough) t += v;
  return t;
}

uint64_t Stats::total_calls(uint32_t slot) const {
  uint64_t t = 0;
  if (slot >= kMaxSlots) return 0;
  for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) t += calls[cb][slot];
  return t;
}

uint64_t Stats::total_calls_all_slots() const {
  uint64_t t = 0;
  for (uint32_t k = 0; k < kMaxSlots; ++k) t += total_calls(k);
  return t;
}

uint64_t Stats::waits(uint32_t cls) const {
  uint64_t t = 0;
  if (cls >= kNumClasses) return 0;
  for (auto v : wait_hist[cls]) t += v;
  return t;
}

std::optional<double> Stats::wait_percentile_ns(uint32_t cls, double q) const {
  uint64_t n = waits(cls);
  if (n == 0 || q < 0 || q > 1) return std::nullopt;
  // The sample of rank ceil(q*n) (1-based), at least the first.
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (uint32_t b = 0; b < kWaitBuckets; ++b) {
    seen += wait_hist[cls][b];
    if (seen >= rank) return b == 0 ? 1.0 : std::ldexp(std::sqrt(2.0), static_cast<int>(b));
  }
  return std::nullopt;
}

nlohmann::json Stats::to_json() const {
  nlohmann::json j;
  for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) {
    nlohmann::json c;
    c["entries"] = entries[cb];
    c["fallthrough"] = fallthrough[cb];
    c["calls_by_slot"] = calls[cb];
    j["callbacks"][std::string(callback_name(cb))] = c;
  }
  j["total"] = {{"entries", total_entries()}, {"fallthrough", total_fallthrough()}};
  for (uint32_t cls = 0; cls < kNumClasses; ++cls) {
    nlohmann::json w;
    w["count"] = waits(cls);
    auto p50 = wait_percentile_ns(cls, 0.50), p99 = wait_percentile_ns(cls, 0.99);
    w["p50_ns"] = p50 ? nlohmann::json(*p50) : nlohmann::json(nullptr);
    w["p99_ns"] = p99 ? nlohmann::json(*p99) : nlohmann::json(nullptr);
    w["log2_histogram"] = wait_hist[cls];
    j["wait"][std::string(class_name(cls))] = w;
    j["run_ns"][std::string(class_name(cls))] = run_ns[cls];
    j["wait_ns"][std::string(class_name(cls))] = wait_ns[cls];
  }
  return j;
}

std::optional<Stats> Stats::from_json(const nlohmann::json& j) {
  try {
    Stats s;
    for (uint32_t cb = 0; cb < kNumCallbacks; ++cb) {
      const auto& c = j.at("callbacks").at(std::string(callback_name(cb)));
      s.entries[cb] = c.at("entries").get<uint64_t>();
      s.fallthrough[cb] = c.at("fallthrough").get<uint64_t>();
      const auto& by_slot = c.at("calls_by_slot");
      if (by_slot.size() != kMaxSlots) return std::nullopt;
      for (uint32_t k = 0; k < kMaxSlots; ++k) s.calls[cb][k] = by_slot[k].get<uint64_t>();
    }
    for (uint32_t cls = 0; cls < kNumClasses; ++cls) {
      const auto& h = j.at("wait").at(std::string(class_name(cls))).at("log2_histogram");
      if (h.size() != kWaitBuckets) return std::nullopt;
      for (uint32_t b = 0; b < kWaitBuckets; ++b) s.wait_hist[cls][b] = h[b].get<uint64_t>();
      if (j.contains("run_ns")) s.run_ns[cls] = j["run_ns"].at(std::string(class_name(cls))).get<uint64_t>();
      if (j.contains("wait_ns")) s.wait_ns[cls] = j["wait_ns"].at(std::string(class_name(cls))).get<uint64_t>();
    }
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace akts
