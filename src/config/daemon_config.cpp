// The daemon's configuration: parsing, checking, defaults.
#include "config/daemon_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "akts.h"
#include "common/http_url.h"
#include "common/parse.h"
#include "common/text.h"

namespace akts {
namespace {

using json = nlohmann::json;

Error bad(std::string_view where, std::string_view what) {
  return errorf(ErrorKind::kInvalidArgument, "config: {}: {}", where, what);
}

Result<GuardParams> parse_guard(const json& v) {
  if (!v.is_object()) return bad("guard", "must be an object such as {\"max_wait\": \"200ms\"}");
  GuardParams g;
  for (const auto& [key, d] : v.items()) {
    std::chrono::nanoseconds* field = key == "max_wait"       ? &g.max_wait
                                      : key == "rescue_slice" ? &g.rescue_slice
                                      : key == "period"       ? &g.period
                                      : key == "quantum_timer" ? &g.quantum_timer
                                                              : nullptr;
    if (!field)
      return bad("guard", fmt::format("unknown key \"{}\" (expected max_wait, rescue_slice, period, quantum_timer)",
                                      excerpt(key)));
    if (!d.is_string()) return bad("guard." + key, "must be a duration string such as \"200ms\"");
    if (key == "quantum_timer" && d.get_ref<const std::string&>() == "off") {
      *field = std::chrono::nanoseconds(0);
      continue;
    }
    auto n = parse_duration(d.get_ref<const std::string&>(), "guard." + key);
    if (!n) return make_error(ErrorKind::kInvalidArgument, "config: " + n.error().message);
    *field = *n;
  }
  if (auto st = g.validate(); !st) return bad("guard", st.error().message);
  return g;
}

Result<RestartPolicy> parse_restart(const json& v) {
  if (!v.is_object()) return bad("restart", "must be an object such as {\"on_eject\": true, \"max\": 3}");
  RestartPolicy r;
  for (const auto& [key, d] : v.items()) {
    const std::string where = "restart." + key;
    if (key == "on_request" || key == "on_eject") {
      if (!d.is_boolean()) return bad(where, "must be true or false");
      (key == "on_request" ? r.on_request : r.on_eject) = d;
    } else if (key == "max") {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > 100) return bad(where, "must be a whole number from 0 to 100");
      r.max = d.get<uint32_t>();
    } else if (key == "window") {
      if (!d.is_string()) return bad(where, "must be a duration string such as \"10m\"");
      auto n = parse_duration(d.get_ref<const std::string&>(), where);
      if (!n) return make_error(ErrorKind::kInvalidArgument, "config: " + n.error().message);
      if (*n < std::chrono::seconds(1) || *n > std::chrono::hours(24)) return bad(where, "must be from 1 s to 24 h");
      r.window = std::chrono::duration_cast<std::chrono::seconds>(*n);
    } else {
      return bad("restart", fmt::format("unknown key \"{}\" (expected on_request, on_eject, max, window)", excerpt(key)));
    }
  }
  return r;
}

// The breaker's settings; its safe slot stays a name until the policies are known.
Result<BreakerParams> parse_breaker(const json& v, std::string* safe, bool* oldest_given) {
  if (!v.is_object()) return bad("breaker", "must be an object such as {\"armed\": true, \"oldest_wait\": \"150ms\"}");
  BreakerParams b;
  b.armed = true;
  for (const auto& [key, d] : v.items()) {
    const std::string where = "breaker." + key;
    std::chrono::nanoseconds* dur = key == "oldest_wait" ? &b.oldest
                                    : key == "wait_p99"  ? &b.p99
                                    : key == "window"    ? &b.window
                                    : key == "cooldown"  ? &b.cooldown
                                    : key == "calm"      ? &b.calm
                                                         : nullptr;
    if (dur) {
      if (key == "wait_p99" && d == "off") {
        b.p99 = std::chrono::nanoseconds(0);
        continue;
      }
      if (!d.is_string()) return bad(where, "must be a duration string such as \"150ms\"");
      auto n = parse_duration(d.get_ref<const std::string&>(), where);
      if (!n) return make_error(ErrorKind::kInvalidArgument, "config: " + n.error().message);
      *dur = *n;
      if (key == "oldest_wait") *oldest_given = true;
    } else if (key == "armed") {
      if (!d.is_boolean()) return bad(where, "must be true or false");
      b.armed = d;
    } else if (key == "class") {
      auto c = parse_class(d, where);
      if (!c) return c.error();
      b.cls = *c;
    } else if (key == "safe_slot") {
      if (d.is_number_unsigned() && d.get<uint64_t>() < AKTS_MAX_SLOTS)
        *safe = std::to_string(d.get<uint64_t>());
      else if (d.is_string() && !d.get<std::string>().empty())
        *safe = d;
      else
        return bad(where, "must be \"default\" (the built-in default), a configured policy's name or its slot");
    } else if (key == "rescues" || key == "min_samples") {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > 1000000)
        return bad(where, "must be a whole number from 0 to 1000000");
      if (key == "rescues") {
        b.rescues = d.get<uint32_t>();
      } else {
        if (d.get<uint64_t>() == 0) return bad(where, "must be at least 1");
        b.min_samples = d.get<uint64_t>();
      }
    } else {
      return bad("breaker", fmt::format("unknown key \"{}\" (expected armed, class, safe_slot, oldest_wait, wait_p99, "
                                        "window, min_samples, rescues, cooldown, calm)", excerpt(key)));
    }
  }
  return b;
}

}  // namespace

Result<DaemonConfig> parse_config(std::string_view text, const std::vector<std::string>& known_policies) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return make_error(ErrorKind::kInvalidArgument, "config: not valid JSON");
  if (!j.is_object()) return make_error(ErrorKind::kInvalidArgument, "config: must be a JSON object");
  DaemonConfig c;
  bool oldest_given = false;
  for (const auto& [key, v] : j.items()) {
    if (key == "socket") {
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>()[0] != '/' ||
          v.get<std::string>().size() > 107)
        return bad(key, "must be an absolute path of at most 107 bytes");
      c.socket_path = v;
    } else if (key == "socket_mode") {
      if (!v.is_string()) return bad(key, "must be an octal string such as \"0600\"");
      const auto& s = v.get_ref<const std::string&>();
      if (s.empty() || s.size() > 4 || s.find_first_not_of("01234567") != std::string::npos)
        return bad(key, fmt::format("\"{}\" is not an octal mode such as \"0600\"", excerpt(s)));
      c.socket_mode = static_cast<mode_t>(std::stoul(s, nullptr, 8));
      if (c.socket_mode & 0007) return bad(key, "must not give access to others (the socket switches the scheduler)");
    } else if (key == "socket_group") {
      if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64)
        return bad(key, "must be a group name or number");
      c.socket_group = v;
    } else if (key == "audit_log") {
      if (!v.is_string() || (!v.get<std::string>().empty() && v.get<std::string>()[0] != '/'))
        return bad(key, "must be an absolute path, or \"\" for none");
      c.audit_log = v;
    } else if (key == "repository") {
      if (!v.is_string() || (!v.get<std::string>().empty() && v.get<std::string>()[0] != '/'))
        return bad(key, "must be an absolute path, or \"\" for none");
      c.repository = v;
    } else if (key == "state_file") {
      if (!v.is_string() || (!v.get<std::string>().empty() && v.get<std::string>()[0] != '/'))
        return bad(key, "must be an absolute path, or \"\" for none");
      c.state_file = v;
    } else if (key == "metrics_listen") {
      if (!v.is_string()) return bad(key, "must be \"HOST:PORT\", a port alone (on 127.0.0.1), or \"\" for none");
      if (!v.get<std::string>().empty())
        if (auto a = parse_listen_address(v.get<std::string>(), "metrics_listen", "127.0.0.1"); !a) return a.error();
      c.metrics_listen = v;
    } else if (key == "policies") {
      if (!v.is_array() || v.empty() || v.size() > AKTS_MAX_SLOTS)
        return bad(key, fmt::format("must be a list of 1 to {} policy names", AKTS_MAX_SLOTS));
      c.policies.clear();
      for (const auto& p : v) {
        if (!p.is_string()) return bad(key, "policy names are strings");
        bool known = false;
        for (const auto& k : known_policies) known = known || k == p.get<std::string>();
        if (!known) return bad(key, fmt::format("no policy named {}", excerpt(p.dump())));
        c.policies.push_back(p);
      }
    } else if (key == "initial") {
      if (v.is_number_unsigned())
        c.initial = std::to_string(v.get<uint64_t>());
      else if (v.is_string())
        c.initial = v;
      else
        return bad(key, "must be a policy name or a slot number");
    } else if (key == "switch_all") {
      if (!v.is_boolean()) return bad(key, "must be true or false");
      c.switch_all = v;
    } else if (key == "scan_interval_ms") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 10 || v.get<uint64_t>() > 60000)
        return bad(key, "must be a whole number of milliseconds from 10 to 60000");
      c.scan_interval_ms = v;
    } else if (key == "process_events") {
      if (!v.is_boolean()) return bad(key, "must be true or false");
      c.process_events = v;
    } else if (key == "rescan_interval_ms") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 100 || v.get<uint64_t>() > 600000)
        return bad(key, "must be a whole number of milliseconds from 100 to 600000");
      c.rescan_interval_ms = v.get<uint32_t>();
    } else if (key == "guard") {
      auto g = parse_guard(v);
      if (!g) return g.error();
      c.guard = *g;
    } else if (key == "breaker") {
      auto b = parse_breaker(v, &c.breaker_safe_slot, &oldest_given);
      if (!b) return b.error();
      c.breaker = *b;
    } else if (key == "restart") {
      auto r = parse_restart(v);
      if (!r) return r.error();
      c.restart = *r;
    } else if (key == "classes") {
      if (!v.is_array()) return bad(key, "must be a list of matchers");
      for (size_t i = 0; i < v.size(); ++i) {
        auto m = parse_matcher(v[i], i);
        if (!m) return m.error();
        c.matchers.push_back(*m);
      }
    } else if (auto r = parse_reasoning_key(key, v, c.reasoning); !r) {
      return r.error();
    } else if (!*r) {
      return bad(excerpt(key), "unknown key");
    }
  }
  // A group given the socket must be able to use it, and nobody else may.
  if (!c.socket_group.empty() && (c.socket_mode & 0060) != 0060)
    return bad("socket_mode", "must let socket_group read and write (e.g. \"0660\")");
  // The initial selection must name a configured policy.
  if (!policy_slot(c.policies, c.initial))
    return bad("initial", fmt::format("\"{}\" is not one of the configured policies or slots", c.initial));
  if (auto st = check_reasoning_config(c.reasoning, c.policies); !st) return st.error();
  // The breaker's safe slot names a configured policy, or the built-in default.
  if (c.breaker_safe_slot == "default") {
    c.breaker.safe_slot = AKTS_SLOT_NONE;
  } else if (auto slot = policy_slot(c.policies, c.breaker_safe_slot)) {
    c.breaker.safe_slot = static_cast<uint32_t>(*slot);
  } else {
    return bad("breaker.safe_slot", fmt::format("\"{}\" is not \"default\" or one of the configured policies or slots",
                                                excerpt(c.breaker_safe_slot)));
  }
  // Unless given, the breaker trips at three quarters of the guard's max_wait, two periods before it at the latest;
  // disarmed too, since a canary arms it (admission's gate 5).
  c.breaker_oldest_given = oldest_given;
  if (!oldest_given) {
    auto d = std::min(c.guard.max_wait * 3 / 4, c.guard.max_wait - 2 * c.guard.period);
    if (d >= std::chrono::milliseconds(10))
      c.breaker.oldest = d;
    else if (c.breaker.armed)
      return bad("breaker", fmt::format("the guard (max_wait {} ms, period {} ms) leaves no room for the breaker's "
                                        "default threshold: give guard.max_wait at least four periods, set "
                                        "breaker.oldest_wait, or \"armed\": false",
                                        c.guard.max_wait.count() / 1000000, c.guard.period.count() / 1000000));
  }
  // A disarmed breaker never trips: its thresholds need not fit the guard.
  if (c.breaker.armed)
    if (auto st = c.breaker.validate(c.guard); !st) return bad("breaker", st.error().message);
  // The learner's file is its own: never the daemon's state file, its lock or selection, a log (or one rotated)
  // or the socket. Compared as written, made normal ("a//b", "a/./b", "a/x/../b" are one path).
  if (const std::string& path = c.reasoning.controller.learner.state_path; !path.empty()) {
    auto normal = [](const std::string& p) { return std::filesystem::path(p).lexically_normal().string(); };
    const std::string learnt = normal(path);
    const std::string log = c.reasoning.log.path.empty() ? "" : normal(c.reasoning.log.path);
    const std::string audit = c.audit_log.empty() ? "" : normal(c.audit_log);
    std::vector<std::string> others = {log, audit, c.socket_path.empty() ? "" : normal(c.socket_path)};
    if (!c.state_file.empty())
      for (const char* suffix : {"", ".lock", ".selected"}) others.push_back(normal(c.state_file + suffix));
    for (const std::string& other : others)
      if (!other.empty() && (learnt == other || ((other == log || other == audit) && learnt.starts_with(other + "."))))
        return bad("controller.learner.state", fmt::format("\"{}\" is a file the daemon keeps for something else",
                                                            excerpt(path)));
  }
  return c;
}

std::optional<size_t> policy_slot(const std::vector<std::string>& policies, std::string_view name_or_slot) {
  for (size_t i = 0; i < policies.size(); ++i)
    if (policies[i] == name_or_slot || std::to_string(i) == name_or_slot) return i;
  return std::nullopt;
}

Result<nlohmann::json> read_config_document(const std::string& path) {
  std::ifstream in(path);
  if (!in) return sys_error("cannot read config " + path, errno);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > (1 << 20)) return errorf(ErrorKind::kInvalidArgument, "config {} is larger than 1 MiB", path);
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return errorf(ErrorKind::kInvalidArgument, "{}: config: not valid JSON", path);
  if (!j.is_object()) return errorf(ErrorKind::kInvalidArgument, "{}: config: must be a JSON object", path);
  return j;
}

Result<DaemonConfig> load_config(const std::string& path, const std::vector<std::string>& known_policies) {
  auto doc = read_config_document(path);
  if (!doc) return doc.error();
  auto c = parse_config(doc->dump(), known_policies);
  if (!c) {
    Error e = c.error();
    e.message = path + ": " + e.message;
    return e;
  }
  return c;
}

}  // namespace akts
