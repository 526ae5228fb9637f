// A strict reader of the Prometheus text exposition format (version 0.0.4).
#include "telemetry/prometheus.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "common/text.h"

namespace akts {
namespace {

bool name_char(char c, bool first) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
         (!first && std::isdigit(static_cast<unsigned char>(c)));
}

std::optional<double> parse_value(std::string_view s) {
  if (s == "+Inf" || s == "Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return std::nan("");
  if (s.empty()) return std::nullopt;
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  if (end != copy.c_str() + copy.size()) return std::nullopt;
  return v;
}

Error bad(size_t line_no, std::string_view line, std::string_view why) {
  return errorf(ErrorKind::kInvalidArgument, "metrics line {}: {} ({})", line_no, why, excerpt(line, 60));
}

}  // namespace

std::optional<double> PromScrape::value(std::string_view name, const PromLabels& labels) const {
  for (const auto& s : samples)
    if (s.name == name && s.labels == labels) return s.value;
  return std::nullopt;
}

namespace {
bool has_labels(const PromLabels& labels, const PromLabels& subset) {
  for (const auto& [k, v] : subset) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}
}  // namespace

std::optional<double> PromScrape::sum(std::string_view name, const PromLabels& subset) const {
  std::optional<double> total;
  for (const auto& s : samples)
    if (s.name == name && has_labels(s.labels, subset)) total = total.value_or(0) + s.value;
  return total;
}

bool PromScrape::has(std::string_view name) const {
  for (const auto& s : samples)
    if (s.name == name) return true;
  return false;
}

std::optional<PromHistogram> PromScrape::histogram(std::string_view base, const PromLabels& subset) const {
  const std::string bucket = std::string(base) + "_bucket", count = std::string(base) + "_count";
  PromHistogram h;
  bool any = false;
  for (const auto& s : samples) {
    if (!has_labels(s.labels, subset) || !std::isfinite(s.value) || s.value < 0) continue;
    if (s.name == bucket) {
      auto le = s.labels.find("le");
      if (le == s.labels.end()) continue;
      auto bound = parse_value(le->second);
      if (!bound || std::isnan(*bound)) continue;
      h.buckets[*bound] += s.value;
      any = true;
    } else if (s.name == count) {
      h.count += s.value;
    }
  }
  if (!any || !h.buckets.contains(HUGE_VAL)) return std::nullopt;
  return h;
}

Result<PromScrape> parse_prometheus_text(std::string_view text) {
  PromScrape out;
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (line.starts_with("# TYPE ")) {
        std::string_view rest = line.substr(7);
        auto sp = rest.find(' ');
        if (sp == std::string_view::npos) return bad(line_no, line, "a TYPE line needs a name and a type");
        out.types[std::string(rest.substr(0, sp))] = std::string(rest.substr(sp + 1));
      }
      continue;  // HELP and other comments
    }
    PromSample s;
    size_t i = 0;
    while (i < line.size() && name_char(line[i], i == 0)) ++i;
    if (i == 0) return bad(line_no, line, "a sample starts with a metric name");
    s.name = std::string(line.substr(0, i));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        size_t k = i;
        while (i < line.size() && name_char(line[i], i == k) && line[i] != ':') ++i;
        if (i == k || i >= line.size() || line[i] != '=') return bad(line_no, line, "a label is name=\"value\"");
        std::string key(line.substr(k, i - k));
        ++i;
        if (i >= line.size() || line[i] != '"') return bad(line_no, line, "a label value is quoted");
        ++i;
        std::string val;
        while (i < line.size() && line[i] != '"') {
          if (line[i] == '\\' && i + 1 < line.size()) {
            char e = line[i + 1];
            val += e == 'n' ? '\n' : e;
            i += 2;
          } else {
            val += line[i++];
          }
        }
        if (i >= line.size()) return bad(line_no, line, "an unterminated label value");
        ++i;
        s.labels[key] = val;
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size() && line[i] == ',') ++i;
      }
    }
    if (i >= line.size() || line[i] != ' ') return bad(line_no, line, "a value follows the name");
    while (i < line.size() && line[i] == ' ') ++i;
    size_t v_end = line.find(' ', i);
    auto v = parse_value(line.substr(i, v_end == std::string_view::npos ? std::string_view::npos : v_end - i));
    if (!v) return bad(line_no, line, "the value is not a number");
    if (v_end != std::string_view::npos) {  // an optional timestamp in ms
      std::string_view ts = line.substr(v_end + 1);
      while (!ts.empty() && ts.front() == ' ') ts.remove_prefix(1);
      if (!ts.empty() && !parse_value(ts)) return bad(line_no, line, "the timestamp is not a number");
    }
    s.value = *v;
    out.samples.push_back(std::move(s));
  }
  return out;
}

std::optional<double> counter_rate(const PromScrape& before, const PromScrape& after, std::string_view name,
                                   double seconds, const PromLabels& subset) {
  auto a = before.sum(name, subset), b = after.sum(name, subset);
  if (!a || !b || seconds <= 0 || *b < *a || !std::isfinite(*a) || !std::isfinite(*b)) return std::nullopt;
  return (*b - *a) / seconds;
}

std::optional<PromHistogram> histogram_delta(const PromHistogram& before, const PromHistogram& after) {
  if (before.buckets.size() != after.buckets.size()) return std::nullopt;
  PromHistogram d;
  for (auto a = before.buckets.begin(), b = after.buckets.begin(); a != before.buckets.end(); ++a, ++b) {
    if (a->first != b->first || b->second < a->second) return std::nullopt;
    d.buckets[a->first] = b->second - a->second;
  }
  d.count = d.buckets.rbegin()->second;  // +Inf's count is the count
  return d;
}

std::optional<double> histogram_quantile(const PromHistogram& h, double q) {
  if (h.buckets.empty()) return std::nullopt;
  double total = h.buckets.rbegin()->second;
  if (!(total > 0)) return std::nullopt;
  double rank = std::clamp(q, 0.0, 1.0) * total;
  double lower = 0, below = 0, largest_finite = 0;
  for (const auto& [le, cum] : h.buckets) {
    if (std::isfinite(le)) largest_finite = le;
    if (cum >= rank && cum > below) {
      if (!std::isfinite(le)) return largest_finite;
      return lower + (le - lower) * (rank - below) / (cum - below);
    }
    lower = std::isfinite(le) ? le : lower;
    below = cum;
  }
  return largest_finite;
}

}  // namespace akts
