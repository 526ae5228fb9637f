// Admission's records: an object's SHA-256, and gate 3's verdict kept beside
// it (<object>.dynamic.json: {sha256, passed, evidence}), which the live
// admission requires, for that exact object, unless forced. The record is
// made by vm/admit_dynamic.sh (the candidate selected under CPU hogs and an
// LC loop), which `./akts admit-test` runs in a throwaway guest.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace akts::admission {

// A regular file's bytes, read once: never a FIFO, a device or a symlink
// (O_NOFOLLOW, O_NONBLOCK, S_ISREG), at most max_bytes. Every gate then judges
// these bytes and the kernel loads them, so the file cannot change between gates.
Result<std::string> read_regular_file(const std::string& path, size_t max_bytes);
inline constexpr size_t kMaxObjectBytes = size_t{16} << 20;

// Lowercase hex.
std::string sha256_hex(std::string_view bytes);

struct DynamicVerdict {
  std::string sha256;
  bool passed = false;
  nlohmann::json evidence;
};

std::string dynamic_record_path(const std::string& object);
// nullopt when there is no record; an error when there is one that cannot be read (at most 1 MiB, a regular file).
Result<std::optional<DynamicVerdict>> load_dynamic_record(const std::string& path);

// Gate 3 as the live admission sees it: {gate, passed, detail, record}. Passes
// when a passing record names this object's hash, or when forced (said so).
nlohmann::json judge_dynamic(const std::string& object, const std::string& sha256, const std::string& record_path,
                             bool forced);

}  // namespace akts::admission
