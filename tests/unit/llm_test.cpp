// The llm controller: its parser refuses every malformed answer (judged against
// the filled slots), its prompt and config, and the controller itself against a
// real in-process HTTP server (valid answers, garbage, errors, a slow model, no
// server at all) with decide() timed on every call: it must never block.
#include "reasoning/llm.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "common/text.h"
#include "wait_until.h"

namespace akts {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Bounds on time are seconds, so that a loaded machine (ASan, ctest -j2, a guest on both cores) passes, and far
// below what the defect each guards against would take: a call that waited for a question the model holds would
// return only once the test releases it (after the bound) or at kHold.
constexpr auto kNoWait = 5s;  // what must not wait for the model returns within this
constexpr double kNoWaitMs = std::chrono::duration<double, std::milli>(kNoWait).count();
constexpr auto kHold = 60s;      // a slow model holds a question this long, unless released first
constexpr auto kPatience = 30s;  // how long a test waits for what must come

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Slots 0 and 1 filled, everything else (5, say) empty.
std::vector<SlotInfo> slots() {
  return {{0, "latency", "short slices, LC first", "LC work waits"},
          {1, "throughput", "long slices, batch first", "nothing latency-critical waits"}};
}

ControllerContext context(uint32_t running = 1) {
  ControllerContext ctx;
  ctx.slots = slots();
  ctx.running = running;
  ctx.objective.limits.front().max_ms = 20;
  return ctx;
}

TEST(LlmAnswer, RefusesEveryMalformedAnswer) {
  // clang-format off
  const std::vector<std::string> bad = {
      "0.3", "-1", "", "  ", "\t\r\n", "1 2", "slot 1", "Slot: 1", "1.", "01", "00", "+1", "0x1", "1e0",
      "\xef\xbc\x91",                             // full-width 1
      "\xc2\xa0" "1",                             // a no-break space is not ASCII whitespace
      "1\n2", "1\n\nThe", "I think the latency policy is best.", "The answer is 1",
      "5",                                        // an empty slot
      "2", "7", "8", "4294967295",                // empty slots, the last AKTS_SLOT_NONE
      "4294967296", "99999999999999999999",       // past 32 bits
      "\xff\xfe", "1\xff", "\xc0\xb1",            // invalid UTF-8 (an overlong '1')
      std::string("1\0", 2), std::string("\0" "1", 2), std::string("\0", 1),
      "Latency", "latenc", "latency throughput", "latency\n1", "lat ency", "'latency'", "\"1\"", "[1]", "{1}",
      "1/2", "one", "١",                          // an Arabic-Indic one
  };
  // clang-format on
  for (const auto& a : bad) {
    auto r = parse_llm_answer(a, slots());
    EXPECT_FALSE(r.ok()) << "accepted \"" << valid_utf8(a) << "\" as slot " << (r ? *r : 0);
    if (r) continue;
    const auto& msg = r.error().message;
    EXPECT_FALSE(msg.empty());
    EXPECT_TRUE(is_valid_utf8(msg)) << msg;
    EXPECT_EQ(msg.find('\0'), std::string::npos);
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // quoted answers are escaped
  }
}

TEST(LlmAnswer, ErrorsSayWhatWasWrong) {
  EXPECT_NE(parse_llm_answer("5", slots()).error().message.find("slot 5, which is empty"), std::string::npos);
  EXPECT_NE(parse_llm_answer("", slots()).error().message.find("empty"), std::string::npos);
  EXPECT_NE(parse_llm_answer("4294967296", slots()).error().message.find("out of range"), std::string::npos);
  EXPECT_NE(parse_llm_answer("01", slots()).error().message.find("leading zero"), std::string::npos);
  auto prose = parse_llm_answer("0.3", slots()).error().message;
  EXPECT_NE(prose.find("\"0.3\""), std::string::npos) << prose;
  EXPECT_NE(prose.find("0 (latency), 1 (throughput)"), std::string::npos) << prose;
  EXPECT_NE(parse_llm_answer("1\n2", slots()).error().message.find("\"1\\n2\""), std::string::npos);
  // Nothing filled: every answer is refused.
  EXPECT_FALSE(parse_llm_answer("0", {}).ok());
  // A slot with no name is never matched by an empty answer.
  EXPECT_FALSE(parse_llm_answer(" ", {{3, "", "", ""}}).ok());
}

TEST(LlmAnswer, AcceptsAFilledSlotsNumberOrExactName) {
  struct Case {
    std::string text;
    uint32_t slot;
  };
  for (const auto& c : std::vector<Case>{
           {"1", 1}, {" 1\n", 1}, {"0", 0}, {"\t0\r\n", 0}, {"latency", 0}, {" throughput\n", 1}, {"\v\f1 ", 1}}) {
    auto r = parse_llm_answer(c.text, slots());
    ASSERT_TRUE(r.ok()) << valid_utf8(c.text) << ": " << r.error().message;
    EXPECT_EQ(*r, c.slot) << c.text;
  }
}

TEST(LlmPrompt, ShortWithTheObjectiveTheFiguresAndEverySlot) {
  Window w;
  w.period_s = 0.1;
  w.cpus = 2;
  w.wait_p99_ms[AKTS_CLASS_LC] = 31.5;
  w.oldest_wait_ms[AKTS_CLASS_LC] = 4;
  w.cpu_pressure = 0.25;
  w.app_requests_processing = 3;
  w.app_requests_waiting = 2;
  auto ctx = context(1);
  std::string p = build_llm_prompt(w, ctx);
  EXPECT_NE(p.find(ctx.objective.describe()), std::string::npos) << p;
  EXPECT_NE(p.find("LC wait p99 31.5 ms"), std::string::npos) << p;
  EXPECT_NE(p.find("oldest LC wait 4.0 ms"), std::string::npos) << p;
  EXPECT_NE(p.find("batch CPU share"), std::string::npos) << p;
  EXPECT_NE(p.find("CPU pressure 25%"), std::string::npos) << p;
  // The learner's features (features.h): the load it bins on, and each limit with its margin.
  EXPECT_NE(p.find("Load: load 5 (requests running 3, waiting 2)"), std::string::npos) << p;
  EXPECT_NE(p.find("objective: LC wait p99 31.5 ms of 20 (over by 11.5 ms; ended p99 31.5 ms, oldest still waiting "
                   "4.0 ms); missed"),
            std::string::npos)
      << p;
  EXPECT_NE(p.find("Running: slot 1 (throughput)"), std::string::npos) << p;
  EXPECT_NE(p.find("\n0: latency - short slices, LC first (pick when LC work waits)\n"), std::string::npos) << p;
  EXPECT_NE(p.find("\n1: throughput - long slices, batch first (pick when nothing latency-critical waits)\n"),
            std::string::npos)
      << p;
  EXPECT_TRUE(p.ends_with("Answer with the slot number only.\nSlot:")) << p;
  EXPECT_LT(p.size(), 1000u) << p;

  // No LC wait, no application, the built-in default running; a policy's text stays on its line.
  Window quiet;
  auto ctx2 = context(AKTS_SLOT_NONE);
  ctx2.slots[0].summary = "two\nlines";
  std::string q = build_llm_prompt(quiet, ctx2);
  EXPECT_NE(q.find("LC wait p99 none"), std::string::npos) << q;
  EXPECT_EQ(q.find("requests running"), std::string::npos) << q;
  EXPECT_NE(q.find("(LC tasks running or waiting)"), std::string::npos) << q;
  EXPECT_NE(q.find("Running: the built-in default"), std::string::npos) << q;
  EXPECT_NE(q.find("0: latency - two lines"), std::string::npos) << q;
}

TEST(LlmOptions, FromJson) {
  auto o = LlmOptions::from_json({{"endpoint", "http://10.0.2.2:8081/api/"},
                                  {"model", "tiny"},
                                  {"timeout", "2.5s"},
                                  {"max_tokens", 8},
                                  {"temperature", 0.7},
                                  {"decide_every", 20}});
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->endpoint, "http://10.0.2.2:8081/api/");
  EXPECT_EQ(o->model, "tiny");
  EXPECT_EQ(o->timeout, 2500ms);
  EXPECT_EQ(o->max_tokens, 8u);
  EXPECT_DOUBLE_EQ(o->temperature, 0.7);
  EXPECT_EQ(o->decide_every, 20u);
  auto defaults = LlmOptions::from_json(nlohmann::json::object());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->timeout, 10000ms);

  struct Bad {
    nlohmann::json j;
    std::string mentions;
  };
  for (const auto& b : std::vector<Bad>{
           {{{"endpoint", "https://example.com:443"}}, "no TLS"},
           {{{"endpoint", "127.0.0.1:8081"}}, "llm.endpoint"},
           {{{"endpoint", "http://127.0.0.1"}}, "no port"},
           {{{"endpoint", "http://127.0.0.1:0"}}, "1-65535"},
           {{{"endpoint", "http://127.0.0.1:65536"}}, "1-65535"},
           {{{"endpoint", "http://127.0.0.1:80x"}}, "port"},
           {{{"endpoint", "http://user@host:80"}}, "llm.endpoint"},
           {{{"endpoint", "http://host:80/a?b"}}, "path"},
           {{{"endpoint", 8081}}, "llm.endpoint"},
           {{{"model", 3}}, "llm.model"},
           {{{"timeout", "10"}}, "llm.timeout"},
           {{{"timeout", 10}}, "llm.timeout"},
           {{{"timeout", "0ms"}}, "llm.timeout"},
           {{{"timeout", "1h"}}, "llm.timeout"},
           {{{"max_tokens", 0}}, "llm.max_tokens"},
           {{{"max_tokens", -1}}, "llm.max_tokens"},
           {{{"max_tokens", 1.5}}, "llm.max_tokens"},
           {{{"temperature", -1}}, "llm.temperature"},
           {{{"temperature", "0"}}, "llm.temperature"},
           {{{"decide_every", 0}}, "llm.decide_every"},
           {{{"decide_every", "3"}}, "llm.decide_every"},
           {{{"decide_evrey", 3}}, "unknown key \"decide_evrey\""},
           {nlohmann::json::array(), "object"},
       }) {
    auto r = LlmOptions::from_json(b.j);
    ASSERT_FALSE(r.ok()) << b.j.dump();
    EXPECT_NE(r.error().message.find(b.mentions), std::string::npos) << b.j.dump() << ": " << r.error().message;
  }
}

TEST(LlmEndpoint, Splits) {
  auto e = parse_llm_endpoint("http://localhost:8081/srv/llm//");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->host, "localhost");
  EXPECT_EQ(e->port, 8081);
  EXPECT_EQ(e->prefix, "/srv/llm");
  auto plain = parse_llm_endpoint("http://127.0.0.1:1");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->prefix, "");
}

// An OpenAI-compatible completions server on 127.0.0.1, an ephemeral port.
class FakeModel {
 public:
  enum class Mode { kAnswer, kBody, kStatus500, kSlow };

  FakeModel() {
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      ++requests_;
      Mode mode;
      std::string payload;
      {
        std::lock_guard lk(mu_);
        last_body_ = req.body;
        last_path_ = req.path;
        mode = mode_;
        payload = payload_;
      }
      switch (mode) {
        case Mode::kAnswer:
          res.set_content(nlohmann::json{{"id", "cmpl-1"}, {"choices", {{{"text", payload}, {"index", 0}}}}}.dump(),
                          "application/json");
          break;
        case Mode::kBody:
          res.set_content(payload, "application/json");
          break;
        case Mode::kStatus500:
          res.status = 500;
          res.set_content("model crashed", "text/plain");
          break;
        case Mode::kSlow: {  // holds the question until released, or kHold
          in_slow_ = true;
          auto t0 = Clock::now();
          while (!release_ && Clock::now() - t0 < kHold) std::this_thread::sleep_for(5ms);
          res.set_content(R"({"choices": [{"text": "0"}]})", "application/json");
          break;
        }
      }
    };
    svr_.Post("/v1/completions", handler);
    svr_.Post("/prefix/v1/completions", handler);
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    auto t0 = Clock::now();
    while (!svr_.is_running() && Clock::now() - t0 < 5s) std::this_thread::sleep_for(1ms);
  }
  ~FakeModel() {
    release_ = true;
    svr_.stop();
    thread_.join();
  }

  void set(Mode m, std::string payload = "") {
    std::lock_guard lk(mu_);
    mode_ = m;
    payload_ = std::move(payload);
  }
  std::string endpoint(std::string_view prefix = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(prefix);
  }
  nlohmann::json last_body() const {
    std::lock_guard lk(mu_);
    return nlohmann::json::parse(last_body_, nullptr, false);
  }
  std::string last_path() const {
    std::lock_guard lk(mu_);
    return last_path_;
  }
  int requests() const { return requests_; }
  bool in_slow() const { return in_slow_; }
  void release() { release_ = true; }

 private:
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  Mode mode_ = Mode::kAnswer;
  std::string payload_, last_body_, last_path_;
  std::atomic<int> requests_{0};
  std::atomic<bool> in_slow_{false}, release_{false};
};

LlmOptions options(const std::string& endpoint, std::chrono::milliseconds timeout = 300ms) {
  LlmOptions o;
  o.endpoint = endpoint;
  o.timeout = timeout;
  o.decide_every = 1;
  return o;
}

// Waits for `done` (polled), at most kPatience; says whether it came.
template <class F>
bool wait_until(F done) { return akts::test::wait_until(done, kPatience); }

// Runs f on a thread of its own and says whether it returned within `bound`; then releases the model, so that a
// call waiting for it returns, and waits for f.
template <class F>
bool returns_within(FakeModel& m, std::chrono::milliseconds bound, F f) {
  auto done = std::async(std::launch::async, std::move(f));
  const bool in_time = done.wait_for(bound) == std::future_status::ready;
  m.release();
  done.get();
  return in_time;
}

// decide() once per "window" until the controller reports an answer or a
// refusal (bounded: kPatience), timing every call: none may block. (A
// question answered at once cannot tell a call that waited for it; the tests
// that hold a question can.)
struct Driven {
  bool reported = false;
  ControllerDecision d;
  int calls = 0;
  double max_call_ms = 0, waited_ms = 0;
};

Driven drive(LlmController& c, const ControllerContext& ctx, const Window& w = {}) {
  Driven out;
  auto start = Clock::now();
  while (Clock::now() - start < kPatience) {
    auto t0 = Clock::now();
    auto d = c.decide(w, ctx);
    double ms = ms_since(t0);
    out.max_call_ms = std::max(out.max_call_ms, ms);
    EXPECT_LT(ms, kNoWaitMs) << "decide() blocked for " << ms << " ms";
    ++out.calls;
    if (d.slot || d.refused || d.raw) {
      out.reported = true;
      out.d = d;
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  out.waited_ms = ms_since(start);
  return out;
}

TEST(LlmController, ProposesAValidAnswerAndSendsTheQuestion) {
  FakeModel m;
  m.set(FakeModel::Mode::kAnswer, " 0\n");
  auto o = options(m.endpoint("/prefix/"));
  o.model = "tiny";
  o.max_tokens = 3;
  o.temperature = 0.5;
  o.decide_every = 1000;  // one question only: the counters below are exact
  LlmController c(o);
  EXPECT_EQ(c.name(), "llm");
  Window w;
  w.wait_p99_ms[AKTS_CLASS_LC] = 42;
  auto r = drive(c, context(1), w);
  ASSERT_TRUE(r.reported);
  ASSERT_TRUE(r.d.slot);
  EXPECT_EQ(*r.d.slot, 0u);
  EXPECT_FALSE(r.d.refused);
  EXPECT_EQ(r.d.raw, " 0\n");
  EXPECT_NE(r.d.why.find("slot 0 (latency)"), std::string::npos) << r.d.why;
  EXPECT_GE(r.calls, 2);  // the first call only asks

  EXPECT_EQ(m.last_path(), "/prefix/v1/completions");
  auto body = m.last_body();
  ASSERT_TRUE(body.is_object()) << body;
  ASSERT_TRUE(body["prompt"].is_string());
  EXPECT_NE(body["prompt"].get<std::string>().find("LC wait p99 42.0 ms"), std::string::npos);
  EXPECT_TRUE(body["prompt"].get<std::string>().ends_with("Slot:"));
  EXPECT_EQ(body["max_tokens"], 3);
  EXPECT_EQ(body["temperature"], 0.5);
  EXPECT_EQ(body["stream"], false);
  EXPECT_EQ(body["model"], "tiny");

  auto s = c.state();
  EXPECT_EQ(s["asked"], 1);
  EXPECT_EQ(s["answered"], 1);
  EXPECT_EQ(s["proposed"], 1);
  EXPECT_EQ(s["refused"]["total"], 0);
  EXPECT_EQ(s["latency_ms"]["samples"], 1);
  EXPECT_GE(s["latency_ms"]["min"].get<double>(), 0.0);
  EXPECT_LE(s["latency_ms"]["min"].get<double>(), s["latency_ms"]["max"].get<double>());
}

TEST(LlmController, NoModelKeyWhenNoneIsSet) {
  FakeModel m;
  m.set(FakeModel::Mode::kAnswer, "latency");
  LlmController c(options(m.endpoint()));
  auto r = drive(c, context(1));
  ASSERT_TRUE(r.reported);
  ASSERT_TRUE(r.d.slot);
  EXPECT_EQ(*r.d.slot, 0u);
  EXPECT_FALSE(m.last_body().contains("model"));
  EXPECT_EQ(m.last_body()["max_tokens"], 4);
  EXPECT_EQ(m.last_body()["temperature"], 0);
}

TEST(LlmController, AnAnswerNamingWhatRunsChangesNothing) {
  FakeModel m;
  m.set(FakeModel::Mode::kAnswer, "1");
  LlmController c(options(m.endpoint()));
  auto r = drive(c, context(1));
  ASSERT_TRUE(r.reported);
  EXPECT_FALSE(r.d.slot);
  EXPECT_FALSE(r.d.refused);
  EXPECT_EQ(r.d.raw, "1");
  EXPECT_NE(r.d.why.find("model agrees with what runs"), std::string::npos) << r.d.why;
  EXPECT_EQ(c.state()["agreed"], 1);
}

TEST(LlmController, RefusesMalformedAnswersAndKeepsThePolicy) {
  struct Case {
    std::string text;
    const char* kind;
    const char* why;
  };
  for (const auto& k : std::vector<Case>{{"0.3", "malformed", "\"0.3\""},
                                         {"I would pick the latency policy.", "malformed", "neither"},
                                         {"5", "empty_slot", "slot 5, which is empty"},
                                         {"", "malformed", "empty"},
                                         {"1\n\nThe", "malformed", "\"1\\n\\nThe\""}}) {
    FakeModel m;
    m.set(FakeModel::Mode::kAnswer, k.text);
    LlmController c(options(m.endpoint()));
    auto r = drive(c, context(1));
    ASSERT_TRUE(r.reported) << k.text;
    EXPECT_FALSE(r.d.slot) << k.text;
    EXPECT_TRUE(r.d.refused) << k.text;
    EXPECT_EQ(r.d.raw, k.text);
    EXPECT_NE(r.d.why.find(k.why), std::string::npos) << r.d.why;
    auto s = c.state();
    EXPECT_EQ(s["refused"][k.kind], 1) << k.text << ": " << s;
    EXPECT_EQ(s["refused"]["total"], 1) << s;
    EXPECT_EQ(s["answered"], 1);
    EXPECT_EQ(s["proposed"], 0);
  }
}

TEST(LlmController, RefusesABodyThatIsNotACompletion) {
  struct Case {
    std::string body;
    const char* why;
  };
  for (const auto& k : std::vector<Case>{{"not json at all {", "not JSON"},
                                         {R"({"choices": []})", "choices[0].text"},
                                         {R"({"choices": [{"text": 1}]})", "choices[0].text"},
                                         {R"({"choices": [{"message": {"content": "1"}}]})", "choices[0].text"},
                                         {R"([1])", "choices[0].text"},
                                         {"", "not JSON"}}) {
    FakeModel m;
    m.set(FakeModel::Mode::kBody, k.body);
    LlmController c(options(m.endpoint()));
    auto r = drive(c, context(1));
    ASSERT_TRUE(r.reported) << k.body;
    EXPECT_FALSE(r.d.slot);
    EXPECT_TRUE(r.d.refused);
    EXPECT_FALSE(r.d.raw);
    EXPECT_NE(r.d.why.find(k.why), std::string::npos) << r.d.why;
    EXPECT_EQ(c.state()["refused"]["http_error"], 1);
    EXPECT_EQ(c.state()["answered"], 0);
  }
}

TEST(LlmController, RefusesAnHttpError) {
  FakeModel m;
  m.set(FakeModel::Mode::kStatus500);
  LlmController c(options(m.endpoint()));
  auto r = drive(c, context(1));
  ASSERT_TRUE(r.reported);
  EXPECT_TRUE(r.d.refused);
  EXPECT_FALSE(r.d.slot);
  EXPECT_TRUE(r.d.why.starts_with("HTTP 500: \"model crashed\"")) << r.d.why;
  EXPECT_EQ(c.state()["refused"]["http_error"], 1);
}

TEST(LlmController, ASlowModelTimesOutWithoutBlockingDecide) {
  {
    // decide() keeps returning while the model is silent: one that waited for it would wait until released
    // (after kNoWait) or its timeout (kHold).
    FakeModel held;
    held.set(FakeModel::Mode::kSlow);
    LlmController c(options(held.endpoint(), kHold));
    c.decide(Window{}, context(1));  // asks; the model holds the question
    ASSERT_TRUE(wait_until([&] { return held.in_slow(); }));
    EXPECT_TRUE(returns_within(held, kNoWait, [&] {
      for (int i = 0; i < 20; ++i) {
        auto d = c.decide(Window{}, context(1));
        EXPECT_NE(d.why.find("waiting for the model"), std::string::npos) << d.why;
      }
    })) << "decide() waited for the model";
  }
  FakeModel m;
  m.set(FakeModel::Mode::kSlow);
  LlmController c(options(m.endpoint(), 300ms));
  auto r = drive(c, context(1));
  ASSERT_TRUE(r.reported);
  EXPECT_TRUE(r.d.refused);
  EXPECT_FALSE(r.d.slot);
  EXPECT_EQ(r.d.why, "timeout after 300 ms");
  EXPECT_GE(r.waited_ms, 290);
  EXPECT_LT(r.waited_ms, 10000);  // cut at the timeout, not when the model answers (kHold)
  EXPECT_LT(r.max_call_ms, kNoWaitMs);
  EXPECT_EQ(c.state()["refused"]["timeout"], 1);
  m.release();
}

TEST(LlmController, NothingListening) {
  // A socket bound to a port but not listening: connecting to it is refused.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  LlmController c(options("http://127.0.0.1:" + std::to_string(ntohs(a.sin_port))));
  auto r = drive(c, context(1));
  close(fd);
  ASSERT_TRUE(r.reported);
  EXPECT_TRUE(r.d.refused);
  EXPECT_FALSE(r.d.slot);
  EXPECT_NE(r.d.why.find("connection refused"), std::string::npos) << r.d.why;
  EXPECT_EQ(c.state()["refused"]["http_error"], 1);
}

TEST(LlmController, AnInvalidEndpointRefusesEveryQuestion) {
  LlmOptions o;
  o.endpoint = "https://example.com:443";
  LlmController c(o);
  auto r = drive(c, context(1));
  ASSERT_TRUE(r.reported);
  EXPECT_TRUE(r.d.refused);
  EXPECT_NE(r.d.why.find("no TLS"), std::string::npos) << r.d.why;
}

TEST(LlmController, AsksNothingWhileLockedAndDiscardsALockedAnswer) {
  FakeModel m;
  m.set(FakeModel::Mode::kAnswer, "0");
  LlmController c(options(m.endpoint()));
  auto locked = context(1);
  locked.locked = true;
  for (int i = 0; i < 20; ++i) {
    auto d = c.decide(Window{}, locked);
    EXPECT_FALSE(d.slot);
    EXPECT_NE(d.why.find("locked"), std::string::npos) << d.why;
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(m.requests(), 0);
  EXPECT_EQ(c.state()["asked"], 0);

  EXPECT_FALSE(c.decide(Window{}, context(1)).slot);  // unlocked: asks
  auto r = drive(c, locked);                          // ... and the answer arrives while locked
  ASSERT_TRUE(r.reported);
  EXPECT_FALSE(r.d.slot);
  EXPECT_FALSE(r.d.refused);
  EXPECT_EQ(r.d.raw, "0");
  EXPECT_NE(r.d.why.find("locked: discarded"), std::string::npos) << r.d.why;
  EXPECT_EQ(c.state()["discarded_locked"], 1);
  EXPECT_EQ(c.state()["proposed"], 0);
}

TEST(LlmController, OneQuestionAtATimeEveryDecideEveryPeriods) {
  FakeModel m;
  m.set(FakeModel::Mode::kAnswer, "0");
  auto o = options(m.endpoint());
  o.decide_every = 1000;
  LlmController c(o);
  auto r = drive(c, context(1));
  ASSERT_TRUE(r.reported);
  for (int i = 0; i < 30; ++i) {
    auto d = c.decide(Window{}, context(1));
    EXPECT_FALSE(d.slot);
    EXPECT_NE(d.why.find("next question in"), std::string::npos) << d.why;
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(m.requests(), 1);
  EXPECT_EQ(c.state()["asked"], 1);

  // With a question in flight (the model holds it, and the timeout is longer still), no second one starts however
  // many periods pass; nor does decide() wait for it.
  FakeModel slow;
  slow.set(FakeModel::Mode::kSlow);
  LlmController s(options(slow.endpoint(), kHold));
  s.decide(Window{}, context(1));
  ASSERT_TRUE(wait_until([&] { return slow.in_slow(); }));
  EXPECT_TRUE(returns_within(slow, kNoWait, [&] {
    for (int i = 0; i < 40; ++i) s.decide(Window{}, context(1));
  })) << "decide() waited for the model";  // and released it: it answers "0"
  EXPECT_EQ(slow.requests(), 1);
  EXPECT_EQ(s.state()["asked"], 1);
  EXPECT_EQ(s.state()["in_flight"], true);  // until a decide() reports the answer
  auto done = drive(s, context(1));
  ASSERT_TRUE(done.reported);
  ASSERT_TRUE(done.d.slot);
  EXPECT_EQ(*done.d.slot, 0u);
}

TEST(LlmController, DestructionWhileARequestIsInFlightIsPrompt) {
  FakeModel m;
  m.set(FakeModel::Mode::kSlow);
  auto c = std::make_unique<LlmController>(options(m.endpoint(), kHold));
  c->decide(Window{}, context(1));
  ASSERT_TRUE(wait_until([&] { return m.in_slow(); }));  // the request is on the wire, held
  // Documented: about 10 ms once the request is on the wire. One that waited for the request would wait until the
  // model is released (after kNoWait) or the timeout (kHold).
  EXPECT_TRUE(returns_within(m, kNoWait, [&] { c.reset(); })) << "the destructor waited for the model";
}

TEST(LlmController, DestructionWithNothingInFlightIsPrompt) {
  // Its timeout is kHold: a destructor that waited out anything it bounds would not return within kNoWait.
  auto t0 = Clock::now();
  { LlmController c(options("http://127.0.0.1:9", kHold)); }
  EXPECT_LT(ms_since(t0), kNoWaitMs);
}

}  // namespace
}  // namespace akts
