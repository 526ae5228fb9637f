// The Server-Sent Events parser: the format's rules, and the same events however a stream is cut into pieces.
#include "serving/sse.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace akts {
namespace {

using namespace std::string_literals;

std::vector<SseEvent> parse_all(std::string_view s) {
  SseParser p;
  std::vector<SseEvent> out;
  auto st = p.feed(s, out);
  EXPECT_TRUE(st) << st.error().to_string();
  return out;
}

std::vector<SseEvent> parse_bytewise(std::string_view s, SseParser& p) {
  std::vector<SseEvent> out;
  for (char c : s) {
    auto st = p.feed(std::string_view(&c, 1), out);
    EXPECT_TRUE(st) << st.error().to_string();
  }
  return out;
}

std::vector<std::string> datas(const std::vector<SseEvent>& ev) {
  std::vector<std::string> d;
  for (const auto& e : ev) d.push_back(e.data);
  return d;
}

// A /completion stream as llama-server writes it ("data: " + JSON + "\n\n" per
// event; the partial and final results' fields in the server's order), for a
// random-weight model: multi-byte UTF-8 tokens, an escaped newline and quote,
// an empty-content event, and the final event with "stop": true and timings.
const std::string kLlamaStream =
    "data: {\"index\":0,\"content\":\" sched\",\"tokens\":[],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":1,"
    "\"tokens_evaluated\":31}\n\n"
    "data: {\"index\":0,\"content\":\"é\",\"tokens\":[],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":2,"
    "\"tokens_evaluated\":31}\n\n"
    "data: {\"index\":0,\"content\":\"\\n\\\"\",\"tokens\":[],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":3,"
    "\"tokens_evaluated\":31}\n\n"
    "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":4,"
    "\"tokens_evaluated\":31}\n\n"
    "data: {\"index\":0,\"content\":\"调度\",\"tokens\":[],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":5,"
    "\"tokens_evaluated\":31}\n\n"
    "data: {\"index\":0,\"content\":\" 🦙\",\"tokens\":[],\"stop\":false,\"id_slot\":-1,\"tokens_predicted\":6,"
    "\"tokens_evaluated\":31}\n\n"
    "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":\"tiny\","
    "\"tokens_predicted\":6,\"tokens_evaluated\":31,\"generation_settings\":{\"n_predict\":6,\"seed\":4294967295,"
    "\"temperature\":0.800000011920929,\"ignore_eos\":true,\"stream\":true},\"prompt\":\"<s> The scheduler\","
    "\"has_new_line\":true,\"truncated\":false,\"stop_type\":\"limit\",\"stopping_word\":\"\",\"tokens_cached\":36,"
    "\"timings\":{\"prompt_n\":31,\"prompt_ms\":212.35,\"prompt_per_token_ms\":6.85,\"prompt_per_second\":145.98,"
    "\"predicted_n\":6,\"predicted_ms\":301.2,\"predicted_per_token_ms\":50.2,\"predicted_per_second\":19.92,"
    "\"n_ctx\":4096,\"n_past\":36}}\n\n";

TEST(SseParser, OneEventPerBlankLine) {
  auto ev = parse_all("data: a\n\ndata: b\n\n");
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].data, "a");
  EXPECT_EQ(ev[0].type, "message");
  EXPECT_EQ(ev[0].id, "");
  EXPECT_EQ(ev[1].data, "b");
}

TEST(SseParser, OneSpaceAfterTheColonIsRemovedNoMore) {
  EXPECT_EQ(datas(parse_all("data:a\n\n")), std::vector<std::string>{"a"});
  EXPECT_EQ(datas(parse_all("data: a\n\n")), std::vector<std::string>{"a"});
  EXPECT_EQ(datas(parse_all("data:  a \n\n")), std::vector<std::string>{" a "});
  EXPECT_EQ(datas(parse_all("data:\ta\n\n")), std::vector<std::string>{"\ta"});
  EXPECT_EQ(datas(parse_all("data: a:b: c\n\n")), std::vector<std::string>{"a:b: c"});
}

TEST(SseParser, DataLinesAreJoinedByNewline) {
  EXPECT_EQ(datas(parse_all("data: YHOO\ndata: +2\ndata: 10\n\n")), std::vector<std::string>{"YHOO\n+2\n10"});
  // Empty data lines count: the format's own example.
  EXPECT_EQ(datas(parse_all("data\ndata\n\n")), std::vector<std::string>{"\n"});
  EXPECT_EQ(datas(parse_all("data:\n\n")), std::vector<std::string>{""});
  EXPECT_EQ(datas(parse_all("data\n\n")), std::vector<std::string>{""});
}

TEST(SseParser, CommentsAndUnknownFieldsAreIgnored) {
  SseParser p;
  std::vector<SseEvent> ev;
  ASSERT_TRUE(p.feed(": keep-alive\n: another\ndata: x\nfoo: bar\nData: no\nDATA: no\n:\n\n", ev));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "x");
  EXPECT_EQ(p.comments(), 3u);
  // A comment alone dispatches nothing, and leaves the parser between events.
  ev.clear();
  ASSERT_TRUE(p.feed(": ping\n\n", ev));
  EXPECT_TRUE(ev.empty());
  EXPECT_TRUE(p.at_event_boundary());
}

TEST(SseParser, EventTypeIdAndRetry) {
  SseParser p;
  std::vector<SseEvent> ev;
  ASSERT_TRUE(p.feed("event: add\nid: 7\nretry: 1500\ndata: 1\n\ndata: 2\n\nid\nevent: x\ndata: 3\n\n", ev));
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].type, "add");
  EXPECT_EQ(ev[0].id, "7");
  EXPECT_EQ(ev[1].type, "message");  // the type is per event
  EXPECT_EQ(ev[1].id, "7");          // the id is the stream's last
  EXPECT_EQ(ev[2].type, "x");
  EXPECT_EQ(ev[2].id, "");  // "id" with no value clears it
  EXPECT_EQ(p.retry_ms(), 1500u);
  ev.clear();
  ASSERT_TRUE(p.feed("id: 9\nretry: 12a\nretry: -1\nretry:\nid: a\0b\ndata: 4\n\n"s, ev));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, "9");        // an id holding NUL is ignored
  EXPECT_EQ(p.retry_ms(), 1500u);  // so is a retry that is not all digits
}

TEST(SseParser, AnEventWithoutDataIsNotDispatched) {
  SseParser p;
  std::vector<SseEvent> ev;
  ASSERT_TRUE(p.feed("event: ping\n\ndata: x\n\n", ev));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].type, "message");  // the dropped event's type went with it
  ev.clear();
  ASSERT_TRUE(p.feed("id: 3\n\n\n\n", ev));
  EXPECT_TRUE(ev.empty());
}

TEST(SseParser, EveryLineEnding) {
  for (std::string_view s : {"data: a\r\ndata: b\r\n\r\n", "data: a\rdata: b\r\r", "data: a\ndata: b\n\n",
                             "data: a\r\ndata: b\rdata\n\r\n"}) {
    auto ev = parse_all(s);
    ASSERT_EQ(ev.size(), 1u) << s;
    EXPECT_EQ(ev[0].data.substr(0, 3), "a\nb") << s;
  }
}

TEST(SseParser, ACrLfSplitBetweenPiecesIsOneLineEnd) {
  // Were the "\n" after a piece-final "\r" taken for a blank line, "a" would be dispatched alone.
  SseParser p;
  std::vector<SseEvent> ev;
  ASSERT_TRUE(p.feed("data: a\r", ev));
  ASSERT_TRUE(p.feed("\ndata: b\r", ev));
  ASSERT_TRUE(p.feed("\n\r", ev));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "a\nb");
  ASSERT_TRUE(p.feed("\n", ev));  // the rest of the last "\r\n": no second event
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_TRUE(p.at_event_boundary());
}

TEST(SseParser, Utf8SplitAcrossPiecesArrivesWhole) {
  const std::string s = "data: héllo €𝄞 调度\n\n";
  SseParser p;
  auto ev = parse_bytewise(s, p);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "héllo €𝄞 调度");
}

TEST(SseParser, InvalidUtf8BecomesReplacementCharacters) {
  auto ev = parse_all("data: a\xff\xc3(b\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].data, "a\xEF\xBF\xBD\xEF\xBF\xBD(b");
}

TEST(SseParser, ALeadingByteOrderMarkIsSkippedEvenSplit) {
  EXPECT_EQ(datas(parse_all("\xEF\xBB\xBF"
                            "data: a\n\n")),
            std::vector<std::string>{"a"});
  SseParser p;
  auto ev = parse_bytewise(
      "\xEF\xBB\xBF"
      "data: a\n\n",
      p);
  EXPECT_EQ(datas(ev), std::vector<std::string>{"a"});
  // Only one, only at the start: a second makes the field name "\uFEFFdata", which is unknown.
  EXPECT_TRUE(parse_all("\xEF\xBB\xBF\xEF\xBB\xBF"
                        "data: a\n\n")
                  .empty());
  // Bytes that start like a BOM and are not one are kept (as U+FFFD): again an unknown field.
  EXPECT_TRUE(parse_all("\xEF\xBB"
                        "data: a\n\n")
                  .empty());
  SseParser q;
  EXPECT_TRUE(parse_bytewise("\xEF"
                             "data: a\n\ndata: b\n\n",
                             q)
                  .size() == 1u);
}

TEST(SseParser, AnUnterminatedEventIsNotDispatched) {
  SseParser p;
  std::vector<SseEvent> ev;
  ASSERT_TRUE(p.feed("data: a\n\ndata: b\n", ev));
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_FALSE(p.at_event_boundary());  // "b" waits for its blank line
  SseParser q;
  ev.clear();
  ASSERT_TRUE(q.feed("data: a\n\ndata: b", ev));
  EXPECT_EQ(ev.size(), 1u);
  EXPECT_FALSE(q.at_event_boundary());
  SseParser r;
  EXPECT_TRUE(r.at_event_boundary());
}

TEST(SseParser, AnEventPastTheCapFailsAndStaysFailed) {
  SseParser p(64);
  std::vector<SseEvent> ev;
  ASSERT_TRUE(p.feed("data: small\n\n", ev));
  auto st = p.feed("data: " + std::string(100, 'x'), ev);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("64 bytes"), std::string::npos) << st.error().message;
  EXPECT_TRUE(p.failed());
  EXPECT_FALSE(p.feed("\n\ndata: ok\n\n", ev));
  EXPECT_EQ(ev.size(), 1u);
  // Many lines of one event count together.
  SseParser q(64);
  ev.clear();
  std::string many;
  for (int i = 0; i < 20; ++i) many += "data: 0123456789\n";
  EXPECT_FALSE(q.feed(many, ev));
  EXPECT_TRUE(ev.empty());
  // A comment line is held too, until its end.
  SseParser r(64);
  EXPECT_FALSE(r.feed(":" + std::string(100, 'c'), ev));
}

TEST(SseParser, ALlamaServerStreamByteByByte) {
  auto whole = parse_all(kLlamaStream);
  ASSERT_EQ(whole.size(), 7u);
  EXPECT_EQ(whole[0].data.substr(0, 32), R"({"index":0,"content":" sched","t)");
  EXPECT_NE(whole[4].data.find("\"调度\""), std::string::npos);
  EXPECT_NE(whole[5].data.find("🦙"), std::string::npos);
  EXPECT_NE(whole[6].data.find("\"stop\":true"), std::string::npos);
  EXPECT_EQ(whole[6].data.back(), '}');

  SseParser p;
  auto bytewise = parse_bytewise(kLlamaStream, p);
  ASSERT_EQ(bytewise.size(), whole.size());
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(bytewise[i].data, whole[i].data) << i;
  EXPECT_TRUE(p.at_event_boundary());
  EXPECT_EQ(p.events(), 7u);
}

TEST(SseParser, AnyCutOfAStreamGivesTheSameEvents) {
  // The llama stream with CRLF line ends, a comment and an event type: cut at random places.
  std::string crlf;
  for (char c : kLlamaStream) {
    if (c == '\n')
      crlf += "\r\n";
    else
      crlf += c;
  }
  crlf = ": hello\r\nevent: token\r\n" + crlf;
  auto whole = parse_all(crlf);
  ASSERT_EQ(whole.size(), 7u);
  EXPECT_EQ(whole[0].type, "token");
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    SseParser p;
    std::vector<SseEvent> ev;
    size_t at = 0;
    while (at < crlf.size()) {
      size_t n = std::uniform_int_distribution<size_t>(0, 7)(rng);
      n = std::min(n, crlf.size() - at);
      ASSERT_TRUE(p.feed(std::string_view(crlf).substr(at, n), ev));
      at += n;
    }
    ASSERT_EQ(ev.size(), whole.size()) << trial;
    for (size_t i = 0; i < ev.size(); ++i) {
      EXPECT_EQ(ev[i].data, whole[i].data);
      EXPECT_EQ(ev[i].type, whole[i].type);
    }
    EXPECT_TRUE(p.at_event_boundary());
  }
}

}  // namespace
}  // namespace akts
