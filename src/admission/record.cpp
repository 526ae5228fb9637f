// Object hashes (OpenSSL's SHA-256) and gate 3's records beside the objects.
#include "admission/record.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "common/fd.h"
#include "common/text.h"

namespace akts::admission {

Result<std::string> read_regular_file(const std::string& path, size_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno == ENOENT) return errorf(ErrorKind::kInvalidArgument, "no file {}", path);
    return sys_error("cannot open " + path, errno);
  }
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    return errorf(ErrorKind::kInvalidArgument, "{} is not a regular file", path);
  if (static_cast<size_t>(st.st_size) > max_bytes)
    return errorf(ErrorKind::kInvalidArgument, "{} is {} bytes; at most {}", path, st.st_size, max_bytes);
  std::string bytes;
  char buf[65536];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof(buf))) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error("cannot read " + path, errno);
    bytes.append(buf, static_cast<size_t>(n));
    if (bytes.size() > max_bytes)
      return errorf(ErrorKind::kInvalidArgument, "{} grew past {} bytes while read", path, max_bytes);
  }
  return bytes;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string dynamic_record_path(const std::string& object) { return object + ".dynamic.json"; }

Result<std::optional<DynamicVerdict>> load_dynamic_record(const std::string& path) {
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<DynamicVerdict>();
  auto text = read_regular_file(path, size_t{1} << 20);
  if (!text) return text.error();
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (!j.is_object() || !j.contains("sha256") || !j["sha256"].is_string() || !j.contains("passed") ||
      !j["passed"].is_boolean())
    return errorf(ErrorKind::kInvalidArgument, "{} is not a gate 3 record ({{sha256, passed, evidence}})", path);
  DynamicVerdict v;
  v.sha256 = j["sha256"].get<std::string>();
  v.passed = j["passed"].get<bool>();
  v.evidence = j.value("evidence", nlohmann::json());
  return std::optional<DynamicVerdict>(std::move(v));
}

nlohmann::json judge_dynamic(const std::string& object, const std::string& sha256, const std::string& record_path,
                             bool forced) {
  std::string path = record_path.empty() ? dynamic_record_path(object) : record_path;
  nlohmann::json out = {{"gate", "dynamic"}, {"record", path}};
  auto rec = load_dynamic_record(path);
  std::string detail;
  bool passed = false;
  if (!rec) {
    detail = rec.error().message;
  } else if (!*rec) {
    detail = fmt::format("no gate 3 record at {} (`./akts admit-test OBJECT` runs the candidate in a throwaway guest "
                         "and writes it; --force-untested admits without one, and says so)",
                         path);
  } else if ((*rec)->sha256 != sha256) {
    detail = fmt::format("the record at {} is for another object (sha256 {}, this one {})", path,
                         excerpt((*rec)->sha256, 16), sha256.substr(0, 16));
  } else if (!(*rec)->passed) {
    detail = "the candidate failed its dynamic run";
    out["evidence"] = (*rec)->evidence;
  } else {
    passed = true;
    detail = "a passing dynamic run of this exact object is on record";
    out["evidence"] = (*rec)->evidence;
  }
  if (!passed && forced) {
    out["forced"] = true;
    detail += "; admitted anyway (forced)";
    passed = true;
  }
  out["passed"] = passed;
  out["detail"] = detail;
  return out;
}

}  // namespace akts::admission
