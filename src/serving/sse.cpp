// The Server-Sent Events parser: line splitting across chunks, fields, dispatch.
#include "serving/sse.h"

#include <algorithm>
#include <charconv>

#include "common/text.h"

namespace akts {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

std::string utf8(std::string_view s) { return is_valid_utf8(s) ? std::string(s) : valid_utf8(s); }

}  // namespace

Status SseParser::feed(std::string_view chunk, std::vector<SseEvent>& out) {
  if (failed_) return errorf(ErrorKind::kInvalidArgument, "the event stream was already refused");
  if (!bom_done_) {
    // The BOM may itself arrive split: hold its first bytes until they match or not.
    while (!chunk.empty() && bom_seen_.size() < kBom.size() && chunk.front() == kBom[bom_seen_.size()]) {
      bom_seen_ += chunk.front();
      chunk.remove_prefix(1);
    }
    if (bom_seen_.size() == kBom.size()) {
      bom_done_ = true;
      bom_seen_.clear();
    } else if (!chunk.empty()) {
      bom_done_ = true;
      std::string held = std::move(bom_seen_);
      bom_seen_.clear();
      feed_bytes(held, out);  // not a BOM after all: ordinary (invalid UTF-8) bytes
    } else {
      return {};
    }
  }
  feed_bytes(chunk, out);
  if (failed_)
    return errorf(ErrorKind::kInvalidArgument, "an event of the stream is larger than {} bytes", max_event_bytes_);
  return {};
}

void SseParser::feed_bytes(std::string_view bytes, std::vector<SseEvent>& out) {
  while (!bytes.empty() && !failed_) {
    if (after_cr_) {
      after_cr_ = false;
      if (bytes.front() == '\n') {  // the second half of a "\r\n" the previous piece ended inside
        bytes.remove_prefix(1);
        continue;
      }
    }
    size_t end = bytes.find_first_of("\r\n");
    line_.append(bytes.substr(0, std::min(end, bytes.size())));
    if (line_.size() + data_.size() + type_.size() + last_id_.size() > max_event_bytes_) {
      failed_ = true;
      line_.clear();
      data_.clear();
      return;
    }
    if (end == std::string_view::npos) return;
    after_cr_ = bytes[end] == '\r';
    bytes.remove_prefix(end + 1);
    end_line(out);
  }
}

void SseParser::end_line(std::vector<SseEvent>& out) {
  std::string_view line = line_;
  if (line.empty()) {
    dispatch(out);
  } else if (line.front() == ':') {
    ++comments_;
  } else {
    fields_pending_ = true;
    size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      data_.append(value);
      data_ += '\n';
    } else if (field == "event") {
      type_.assign(value);
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
    } else if (field == "retry") {
      uint32_t ms = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      bool digits =
          !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (digits && ec == std::errc() && p == value.data() + value.size()) retry_ms_ = ms;
    }
  }
  line_.clear();
}

void SseParser::dispatch(std::vector<SseEvent>& out) {
  fields_pending_ = false;
  if (data_.empty()) {  // no data field: nothing to dispatch
    type_.clear();
    return;
  }
  data_.pop_back();  // the "\n" after the last data line
  SseEvent e;
  if (!type_.empty()) e.type = utf8(type_);
  e.data = utf8(data_);
  e.id = utf8(last_id_);
  out.push_back(std::move(e));
  ++events_;
  data_.clear();
  type_.clear();
}

bool SseParser::at_event_boundary() const { return line_.empty() && !fields_pending_ && bom_seen_.empty(); }

}  // namespace akts
