// An incremental Server-Sent Events parser (the WHATWG event-stream format): bytes in, events out.
//
// Feed the stream in whatever pieces the network hands over: a piece may end
// anywhere, inside a field name, between the "\r" and "\n" of a line end, or
// inside a UTF-8 sequence; the events are the same as for the whole stream fed
// at once. What it follows of the format:
//   - lines end with "\r\n", "\n" or "\r";
//   - a blank line dispatches the event; an event with no "data" field is not
//     dispatched (its "event" field is dropped with it);
//   - "field: value" and "field:value" are the same (one space after the
//     colon is removed, no more); a line with no colon is a field with an
//     empty value; field names are case-sensitive;
//   - "data" lines are joined by "\n"; "event" sets the type (default
//     "message"); "id" sets the last event id, which every later event
//     carries until another "id" (a value holding NUL is ignored); "retry"
//     with only ASCII digits is kept; other fields are ignored;
//   - a line starting with ':' is a comment (counted, else ignored);
//   - one UTF-8 byte-order mark at the very start is skipped; invalid UTF-8
//     becomes U+FFFD in what is dispatched;
//   - an event the stream ends in the middle of (no blank line after it) is
//     never dispatched: at_event_boundary() says whether that happened.
// What the parser holds (the current line, one event's fields) is capped at
// max_event_bytes: past it feed() fails and the parser stays failed, so a
// server cannot make it hold unbounded memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace akts {

struct SseEvent {
  std::string type = "message";  // the "event" field
  std::string data;              // the "data" lines joined by "\n"
  std::string id;                // the last "id" seen in the stream ("" when none)
};

class SseParser {
 public:
  static constexpr size_t kDefaultMaxEventBytes = 1 << 20;
  explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes) : max_event_bytes_(max_event_bytes) {}

  // Appends to `out` every event `chunk` completes, in order. An error (the
  // event passed max_event_bytes, or an earlier feed failed) leaves `out` with
  // the events completed before it.
  Status feed(std::string_view chunk, std::vector<SseEvent>& out);

  // True when nothing is half-received: no partial line, no fields waiting
  // for their blank line. At the end of a stream, false means the last event
  // was cut off (and, as the format says, dropped).
  bool at_event_boundary() const;

  std::optional<uint32_t> retry_ms() const { return retry_ms_; }
  uint64_t comments() const { return comments_; }
  uint64_t events() const { return events_; }
  bool failed() const { return failed_; }

 private:
  void feed_bytes(std::string_view bytes, std::vector<SseEvent>& out);
  void end_line(std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);

  size_t max_event_bytes_;
  std::string line_;  // the current line, without its end
  std::string data_;  // data lines, each followed by "\n"
  std::string type_;  // "" until an "event" field
  std::string last_id_;
  bool fields_pending_ = false;  // a field line since the last blank line
  bool after_cr_ = false;        // the last byte was "\r": a "\n" next belongs to it
  bool bom_done_ = false;
  std::string bom_seen_;  // the first bytes while they may still be a BOM
  std::optional<uint32_t> retry_ms_;
  uint64_t comments_ = 0, events_ = 0;
  bool failed_ = false;
};

}  // namespace akts
