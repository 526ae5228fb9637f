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

Result<PromSelector> parse_prom_selector(std::string_view text) {
  auto bad_sel = [&](std::string_view why) {
    return errorf(ErrorKind::kInvalidArgument, "\"{}\" is not a series selector such as name{{label=\"value\"}}: {}",
                  excerpt(text, 80), why);
  };
  PromSelector out;
  size_t i = 0;
  while (i < text.size() && name_char(text[i], i == 0)) ++i;
  if (i == 0 || i > 200) return bad_sel("it starts with a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)");
  out.name = std::string(text.substr(0, i));
  if (i == text.size()) return out;
  if (text[i] != '{' || text.back() != '}') return bad_sel("the labels go in {} after the name");
  ++i;
  while (i < text.size() - 1) {
    size_t k = i;
    while (i < text.size() && name_char(text[i], i == k) && text[i] != ':') ++i;
    std::string key(text.substr(k, i - k));
    if (key.empty() || i >= text.size() || text[i] != '=') return bad_sel("a label is name=\"value\"");
    if (key == "le" || key == "quantile") return bad_sel("\"le\" and \"quantile\" name a histogram's or summary's parts");
    if (out.labels.contains(key)) return bad_sel(fmt::format("\"{}\" is given twice", key));
    if (++i >= text.size() || text[i] != '"') return bad_sel("a label value is quoted");
    std::string val;
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) val += text[++i] == 'n' ? '\n' : text[i];
      else val += text[i];
    }
    if (i >= text.size() - 1) return bad_sel("an unterminated label value");
    out.labels[key] = std::move(val);
    if (text[++i] == ',') ++i;
    else if (i != text.size() - 1) return bad_sel("labels are separated by commas");
  }
  return out;
}

namespace {
bool has_labels(const PromLabels& labels, const PromLabels& subset) {
  for (const auto& [k, v] : subset) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

// The samples named `name` that sum() counts: those whose labels include `subset`, and of series that differ only
// in the labels of `repeats`, the one whose labels sort first.
std::vector<const PromSample*> chosen(const PromScrape& s, std::string_view name, const PromLabels& subset,
                                      const PromRepeats& repeats) {
  std::vector<const PromSample*> out;
  std::map<PromLabels, const PromSample*> one;  // the labels but the repeated ones -> the series counted
  for (const auto& x : s.samples) {
    if (x.name != name || !has_labels(x.labels, subset)) continue;
    if (repeats.empty()) {
      out.push_back(&x);
      continue;
    }
    PromLabels rest = x.labels;
    for (const auto& r : repeats) rest.erase(r);
    auto [it, fresh] = one.emplace(std::move(rest), &x);
    if (!fresh && x.labels < it->second->labels) it->second = &x;
  }
  for (const auto& [rest, x] : one) out.push_back(x);
  return out;
}

// A histogram's series, by its labels without "le": bucket bound -> cumulative count. (Its buckets are chosen
// bound by bound; the series whose labels sort first is the same rank's at every bound.)
std::map<PromLabels, std::map<double, double>> histogram_series(const PromScrape& s, std::string_view base,
                                                               const PromLabels& subset, const PromRepeats& repeats) {
  std::map<PromLabels, std::map<double, double>> out;
  for (const PromSample* xp : chosen(s, std::string(base) + "_bucket", subset, repeats)) {
    const PromSample& x = *xp;
    if (!std::isfinite(x.value) || x.value < 0) continue;
    auto le = x.labels.find("le");
    if (le == x.labels.end()) continue;
    auto bound = parse_value(le->second);
    if (!bound || std::isnan(*bound)) continue;
    PromLabels key = x.labels;
    key.erase("le");
    out[key][*bound] = x.value;
  }
  return out;
}
}  // namespace

std::optional<double> PromScrape::sum(std::string_view name, const PromLabels& subset,
                                      const PromRepeats& repeats) const {
  std::optional<double> total;
  for (const PromSample* s : chosen(*this, name, subset, repeats)) total = total.value_or(0) + s->value;
  return total;
}

bool PromScrape::has(std::string_view name) const {
  for (const auto& s : samples)
    if (s.name == name) return true;
  return false;
}

std::optional<PromHistogram> PromScrape::histogram(std::string_view base, const PromLabels& subset,
                                                   const PromRepeats& repeats) const {
  PromHistogram h;
  for (const auto& [labels, buckets] : histogram_series(*this, base, subset, repeats))
    if (buckets.contains(HUGE_VAL))  // a series without its +Inf bucket is not whole (histogram_increase skips it too)
      for (const auto& [bound, count] : buckets) h.buckets[bound] += count;
  if (!h.buckets.contains(HUGE_VAL)) return std::nullopt;
  h.count = h.buckets.at(HUGE_VAL);
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

PromSeries counter_series(const PromScrape& s, std::string_view name, const PromLabels& subset,
                          const PromRepeats& repeats) {
  PromSeries out;
  for (const PromSample* x : chosen(s, name, subset, repeats)) out[x->labels] = x->value;
  return out;
}

std::optional<double> counter_increase(const PromSeries& before, const PromSeries& after) {
  std::optional<double> increase;
  for (const auto& [labels, v] : after) {
    auto it = before.find(labels);
    if (it == before.end()) continue;  // a new series: its history is not this interval's
    if (!std::isfinite(v) || !std::isfinite(it->second) || v < 0) return std::nullopt;
    increase = increase.value_or(0) + (v >= it->second ? v - it->second : v);  // restarted
  }
  return increase;
}

std::optional<double> counter_rate(const PromScrape& before, const PromScrape& after, std::string_view name,
                                   double seconds, const PromLabels& subset, const PromRepeats& repeats) {
  if (!(seconds > 0)) return std::nullopt;
  auto increase =
      counter_increase(counter_series(before, name, subset, repeats), counter_series(after, name, subset, repeats));
  if (!increase) return std::nullopt;
  return *increase / seconds;
}

std::optional<PromHistogram> histogram_increase(const PromScrape& before, const PromScrape& after,
                                                std::string_view base, const PromLabels& subset,
                                                const PromRepeats& repeats) {
  auto was = histogram_series(before, base, subset, repeats);
  std::optional<PromHistogram> out;
  for (const auto& [labels, buckets] : histogram_series(after, base, subset, repeats)) {
    auto it = was.find(labels);
    if (it == was.end() || !buckets.contains(HUGE_VAL)) continue;
    PromHistogram a{it->second, 0}, b{buckets, 0};
    auto d = histogram_delta(a, b);
    if (!d) {
      bool same_bounds = a.buckets.size() == b.buckets.size() &&
                         std::equal(a.buckets.begin(), a.buckets.end(), b.buckets.begin(),
                                    [](const auto& x, const auto& y) { return x.first == y.first; });
      if (!same_bounds) continue;  // reconfigured: nothing comparable
      d = b;                       // restarted: the new counts are the increase
    }
    if (!out) out = PromHistogram{};
    for (const auto& [bound, count] : d->buckets) out->buckets[bound] += count;
  }
  if (!out || !out->buckets.contains(HUGE_VAL)) return std::nullopt;
  out->count = out->buckets.at(HUGE_VAL);
  return out;
}

std::optional<PromHistogram> histogram_delta(const PromHistogram& before, const PromHistogram& after) {
  if (before.buckets.empty() || before.buckets.size() != after.buckets.size()) return std::nullopt;
  PromHistogram d;
  for (auto a = before.buckets.begin(), b = after.buckets.begin(); a != before.buckets.end(); ++a, ++b) {
    if (a->first != b->first || b->second < a->second) return std::nullopt;
    d.buckets[a->first] = b->second - a->second;
  }
  d.count = d.buckets.rbegin()->second;  // +Inf's count is the count
  return d;
}

std::optional<double> histogram_quantile(const PromHistogram& h, double q) {
  bool finite = false;
  for (const auto& [le, cum] : h.buckets) finite = finite || std::isfinite(le);
  if (!finite || !h.buckets.contains(HUGE_VAL)) return std::nullopt;
  // Cumulative counts made monotonic, as Prometheus does for buckets scraped at slightly different moments.
  std::vector<std::pair<double, double>> b;
  double run = 0;
  for (const auto& [le, cum] : h.buckets) {
    run = std::max(run, cum);
    b.emplace_back(le, run);
  }
  double total = b.back().second;
  if (!(total > 0)) return std::nullopt;
  double rank = std::clamp(q, 0.0, 1.0) * total;
  double largest_finite = 0;
  for (const auto& [le, cum] : b)
    if (std::isfinite(le)) largest_finite = le;
  double lower = 0, below = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const auto [le, cum] = b[i];
    if (cum >= rank && cum > below) {
      if (!std::isfinite(le)) return largest_finite;
      if (i == 0 && le <= 0) return le;  // nothing below a first bound of 0 or less to interpolate from
      return lower + (le - lower) * (rank - below) / (cum - below);
    }
    if (std::isfinite(le)) lower = le;
    below = cum;
  }
  return largest_finite;
}

}  // namespace akts
