// The per-CPU counters summed, their deltas, percentiles of their histograms, and JSON.
#include "telemetry/stats.h"

#include <algorithm>
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

namespace {

// Percentile q of a log2 histogram (bucket b: [2^b, 2^(b+1)) ns): the
// geometric middle of the bucket the sample of rank ceil(q*n) falls in.
std::optional<double> log2_percentile(const std::array<uint64_t, kWaitBuckets>& hist, double q) {
  uint64_t n = 0;
  for (auto v : hist) n += v;
  if (n == 0 || q < 0 || q > 1) return std::nullopt;
  auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(n)));
  if (rank == 0) rank = 1;
  uint64_t seen = 0;
  for (uint32_t b = 0; b < kWaitBuckets; ++b) {
    seen += hist[b];
    if (seen >= rank) return b == 0 ? 1.0 : std::ldexp(std::sqrt(2.0), static_cast<int>(b));
  }
  return std::nullopt;
}

nlohmann::json maybe(std::optional<double> v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

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
    for (uint32_t b = 0; b < kWaitBuckets; ++b) s.quantum_hist[b] += c.quantum_hist[b];
    s.quantum_ends += c.quantum_ends;
    s.quantum_overrun_ns += c.quantum_overrun_ns;
    s.quantum_overrun_max_ns = std::max<uint64_t>(s.quantum_overrun_max_ns, c.quantum_overrun_max_ns);
    s.quantum_kicks += c.quantum_kicks;
    s.quantum_cut += c.quantum_cut;
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
  for (uint32_t b = 0; b < kWaitBuckets; ++b) d.quantum_hist[b] = quantum_hist[b] - earlier.quantum_hist[b];
  d.quantum_ends = quantum_ends - earlier.quantum_ends;
  d.quantum_overrun_ns = quantum_overrun_ns - earlier.quantum_overrun_ns;
  d.quantum_overrun_max_ns = quantum_overrun_max_ns;
  d.quantum_kicks = quantum_kicks - earlier.quantum_kicks;
  d.quantum_cut = quantum_cut - earlier.quantum_cut;
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
  if (cls >= kNumClasses) return std::nullopt;
  return log2_percentile(wait_hist[cls], q);
}

std::optional<double> Stats::overrun_percentile_ns(double q) const { return log2_percentile(quantum_hist, q); }

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
    w["p50_ns"] = maybe(wait_percentile_ns(cls, 0.50));
    w["p99_ns"] = maybe(wait_percentile_ns(cls, 0.99));
    w["log2_histogram"] = wait_hist[cls];
    j["wait"][std::string(class_name(cls))] = w;
    j["run_ns"][std::string(class_name(cls))] = run_ns[cls];
    j["wait_ns"][std::string(class_name(cls))] = wait_ns[cls];
  }
  j["quantum"] = {{"ends", quantum_ends},
                  {"cut_short", quantum_cut},
                  {"kicks", quantum_kicks},
                  {"overrun_p50_ns", maybe(overrun_percentile_ns(0.50))},
                  {"overrun_p99_ns", maybe(overrun_percentile_ns(0.99))},
                  {"overrun_mean_ns", quantum_ends ? nlohmann::json(static_cast<double>(quantum_overrun_ns) /
                                                                     static_cast<double>(quantum_ends))
                                                   : nlohmann::json(nullptr)},
                  {"overrun_ns", quantum_overrun_ns},
                  {"overrun_max_ns", quantum_overrun_max_ns},
                  {"log2_histogram", quantum_hist}};
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
    if (j.contains("quantum")) {  // absent from documents written before the quantum timer
      const auto& q = j["quantum"];
      const auto& h = q.at("log2_histogram");
      if (h.size() != kWaitBuckets) return std::nullopt;
      for (uint32_t b = 0; b < kWaitBuckets; ++b) s.quantum_hist[b] = h[b].get<uint64_t>();
      s.quantum_ends = q.at("ends").get<uint64_t>();
      s.quantum_kicks = q.at("kicks").get<uint64_t>();
      s.quantum_cut = q.value("cut_short", uint64_t{0});  // absent before slices cut short were counted
      s.quantum_overrun_ns = q.at("overrun_ns").get<uint64_t>();
      s.quantum_overrun_max_ns = q.at("overrun_max_ns").get<uint64_t>();
    }
    return s;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

}  // namespace akts
