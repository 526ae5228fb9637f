// The reasoning plane without a kernel: the arbiter's precedence (hold >
// operator switch > controller), dwell and rate limits, dry run, the oracle's
// schedule, the decision log's outcomes and rotation, the objective, and the
// sampler's windows from fake sources.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "control/api.h"
#include "fake_control_backend.h"
#include "reasoning/arbiter.h"
#include "reasoning/decision_log.h"
#include "reasoning/oracle.h"
#include "reasoning/reasoning_plane.h"
#include "telemetry/app_metrics.h"
#include "telemetry/sampler.h"

namespace akts {
namespace {

using namespace std::chrono_literals;
using Clock = Arbiter::Clock;

struct FakeSelection {
  uint32_t selected = 1;
  bool override_on = false;
  int stores = 0;
  Arbiter::Plane plane() {
    return {[this] { return selected; }, [this](uint32_t s) { selected = s, ++stores; },
            [this] { return override_on; }};
  }
};

std::vector<SlotInfo> two_slots() { return {{0, "latency", "", ""}, {1, "throughput", "", ""}}; }

TEST(Arbiter, AHoldBeatsAnOperatorSwitchWhichBeatsAController) {
  FakeSelection sel;
  ArbiterOptions o;
  o.min_dwell = 0ms;
  Arbiter a(sel.plane(), o);
  auto t = Clock::time_point{} + 100s;
  ASSERT_TRUE(a.hold(0, 30s, t));
  EXPECT_EQ(sel.selected, 0u);
  auto sw = a.operator_switch(1, t + 1s);
  ASSERT_FALSE(sw);
  EXPECT_NE(sw.error().message.find("held"), std::string::npos);
  EXPECT_EQ(sel.selected, 0u);
  EXPECT_FALSE(a.controller_proposes(1, t + 2s).applied);
  EXPECT_EQ(sel.selected, 0u);
  // The hold expires: the operator may switch, and controllers then wait the grace.
  ASSERT_TRUE(a.operator_switch(1, t + 31s));
  EXPECT_EQ(sel.selected, 1u);
  auto v = a.controller_proposes(0, t + 32s);
  EXPECT_FALSE(v.applied);
  EXPECT_NE(v.reason.find("operator"), std::string::npos);
  EXPECT_TRUE(a.controller_proposes(0, t + 31s + o.operator_grace).applied);
  EXPECT_EQ(sel.selected, 0u);
}

TEST(Arbiter, ItsStateCountsTheLastMinutesChangesAndTheSelectionsAge) {
  // What akts top shows: changes of the selection by any cause in the last minute (a switch to the slot already
  // selected is none), and how long ago the last was; a change without the arbiter (a reload on the safe slot)
  // counts too, in neither cause's counter.
  FakeSelection sel;
  ArbiterOptions o;
  o.min_dwell = 0ms;
  o.operator_grace = 0ms;
  Arbiter a(sel.plane(), o);
  auto t = Clock::time_point{} + 100s;
  EXPECT_TRUE(a.state(t)["selection_changed_ago_s"].is_null());
  ASSERT_TRUE(a.operator_switch(0, t));
  ASSERT_TRUE(a.operator_switch(0, t + 1s));  // no change
  ASSERT_TRUE(a.controller_proposes(1, t + 2s).applied);
  a.outside_change(1, 0, t + 3s);
  a.outside_change(0, 0, t + 4s);  // none
  auto st = a.state(t + 5s);
  EXPECT_EQ(st["switches_last_minute"], 3);
  EXPECT_DOUBLE_EQ(st["selection_changed_ago_s"].get<double>(), 2.0);
  EXPECT_EQ(st["switches"]["operator"], 1);
  EXPECT_EQ(st["switches"]["controller"], 1);
  EXPECT_EQ(a.state(t + 61s)["switches_last_minute"], 2) << "the first change is over a minute old";
  EXPECT_EQ(a.state(t + 64s)["switches_last_minute"], 0);
  EXPECT_DOUBLE_EQ(a.state(t)["selection_changed_ago_s"].get<double>(), 0.0) << "never negative";
}

TEST(Arbiter, NoSelectionChangesWhileAnExclusiveSectionRuns) {
  // A replacement checks its slot is not selected, then overwrites it: a switch in between would run half of each.
  FakeSelection sel;
  ArbiterOptions o;
  o.min_dwell = 0ms;
  Arbiter a(sel.plane(), o);
  std::atomic<bool> inside{false}, switched{false};
  std::vector<uint32_t> seen;
  std::thread replacer([&] {
    (void)a.exclusive([&] {
      inside = true;
      for (int i = 0; i < 20; ++i) {
        seen.push_back(sel.selected);
        std::this_thread::sleep_for(5ms);
      }
      EXPECT_FALSE(switched.load());
      return Status{};
    });
  });
  while (!inside) std::this_thread::yield();
  ASSERT_TRUE(a.operator_switch(0, Clock::now()));  // waits for the section to end
  switched = true;
  replacer.join();
  EXPECT_EQ(sel.selected, 0u);
  for (uint32_t s : seen) EXPECT_EQ(s, 1u);
}

TEST(Arbiter, TheBreakersOverrideLocksEveryoneButOperatorsStillStoreTheirSelection) {
  FakeSelection sel;
  ArbiterOptions o;
  o.min_dwell = 0ms;
  Arbiter a(sel.plane(), o);
  sel.override_on = true;
  auto v = a.controller_proposes(0, Clock::time_point{} + 10s);
  EXPECT_FALSE(v.applied);
  EXPECT_NE(v.reason.find("override"), std::string::npos);
  EXPECT_EQ(sel.selected, 1u);
  std::string why;
  EXPECT_TRUE(a.locked(Clock::time_point{} + 10s, &why));
}

TEST(Arbiter, ReleaseEndsAHoldAndTheGrace) {
  FakeSelection sel;
  ArbiterOptions o;
  o.min_dwell = 0ms;
  Arbiter a(sel.plane(), o);
  auto t = Clock::time_point{} + 5s;
  ASSERT_TRUE(a.hold(0, 60s, t));
  EXPECT_TRUE(a.release(t + 1s));
  EXPECT_FALSE(a.release(t + 1s));  // nothing left
  EXPECT_TRUE(a.controller_proposes(1, t + 2s).applied);
  EXPECT_FALSE(a.hold(0, 0ms, t + 3s));
}

TEST(Arbiter, MinimumDwellAndRateLimitAndDryRun) {
  FakeSelection sel;
  ArbiterOptions o;
  o.min_dwell = 1000ms;
  o.max_switches_per_minute = 3;
  Arbiter a(sel.plane(), o);
  auto t = Clock::time_point{} + 100s;
  EXPECT_TRUE(a.controller_proposes(0, t).applied);
  auto v = a.controller_proposes(1, t + 500ms);
  EXPECT_FALSE(v.applied);
  EXPECT_EQ(v.reason.rfind("minimum dwell", 0), 0u);
  EXPECT_TRUE(a.controller_proposes(1, t + 1s).applied);
  EXPECT_TRUE(a.controller_proposes(0, t + 2s).applied);
  v = a.controller_proposes(1, t + 3s);  // a fourth within the minute
  EXPECT_FALSE(v.applied);
  EXPECT_EQ(v.reason.rfind("rate limit", 0), 0u);
  EXPECT_TRUE(a.controller_proposes(1, t + 61s).applied);  // the first has left the minute
  a.set_dry_run(true);
  int stores = sel.stores;
  v = a.controller_proposes(0, t + 120s);
  EXPECT_FALSE(v.applied);
  EXPECT_EQ(sel.stores, stores);
  EXPECT_EQ(sel.selected, 1u);
}

TEST(Oracle, ParsesAndRefusesSchedules) {
  EXPECT_TRUE(OracleSchedule::parse(R"({"steps":[{"at":"0s","policy":"throughput"},{"at":"8s","policy":1}]})"));
  for (const char* bad : {"", "[]", "{}", R"({"steps":[]})", R"({"steps":[{"at":"1s","policy":"x"}]})",
                          R"({"steps":[{"at":"0s","policy":"a"},{"at":"0s","policy":"b"}]})",
                          R"({"steps":[{"at":"0s","policy":-1}]})", R"({"steps":[{"at":0,"policy":"a"}]})",
                          R"({"steps":[{"at":"0s","policy":"a","x":1}]})", R"({"loop":1,"steps":[]})",
                          R"({"steps":[{"at":"0s","policy":"a"}],"extra":true})",
                          R"({"loop":true,"steps":[{"at":"0s","policy":"a"}]})"})
    EXPECT_FALSE(OracleSchedule::parse(bad)) << bad;
  auto s = OracleSchedule::parse(R"({"steps":[{"at":"0s","policy":"nope"}]})");
  ASSERT_TRUE(s);
  EXPECT_FALSE(Oracle::create(*s, two_slots()));
}

TEST(Oracle, FollowsItsScheduleAndLoops) {
  auto s = OracleSchedule::parse(
      R"({"loop":true,"steps":[{"at":"0s","policy":"throughput"},{"at":"1s","policy":"latency"},{"at":"2s","policy":"throughput"}]})");
  ASSERT_TRUE(s);
  auto o = Oracle::create(*s, two_slots());
  ASSERT_TRUE(o);
  ControllerContext ctx;
  ctx.slots = two_slots();
  ctx.running = 1;
  std::vector<std::pair<int, uint32_t>> switches;
  for (int i = 1; i <= 50; ++i) {
    Window w;
    w.period_s = 0.1;
    w.t_s = 5.0 + 0.1 * i;
    auto d = (*o)->decide(w, ctx);
    if (d.slot) {
      switches.push_back({i, *d.slot});
      ctx.running = *d.slot;
    }
  }
  // Latency from 1 s to 2 s of every 2 s period.
  ASSERT_GE(switches.size(), 4u);
  EXPECT_EQ(switches[0], (std::pair<int, uint32_t>{10, 0}));
  EXPECT_EQ(switches[1], (std::pair<int, uint32_t>{20, 1}));
  EXPECT_EQ(switches[2], (std::pair<int, uint32_t>{30, 0}));
}

TEST(Oracle, FollowsThePhasesTheLoadSays) {
  EXPECT_TRUE(OracleSchedule::parse(R"({"phases":{"burst":"latency","steady":1}})"));
  for (const char* bad : {R"({"phases":{}})", R"({"phases":[]})", R"({"phases":{"burst":-1}})",
                          R"({"phases":{"":"latency"}})", R"({"phases":{"a\u0001":"latency"}})",
                          R"({"phases":{"burst":"latency"},"steps":[{"at":"0s","policy":"latency"}]})",
                          R"({"steps":[{"at":"0s","policy":"latency"}],"phases":{"burst":"latency"}})",
                          R"({"loop":true,"phases":{"burst":"latency","steady":"throughput"}})"})
    EXPECT_FALSE(OracleSchedule::parse(bad)) << bad;
  auto nope = OracleSchedule::parse(R"({"phases":{"burst":"nope"}})");
  ASSERT_TRUE(nope);
  EXPECT_FALSE(Oracle::create(*nope, two_slots()));  // a phase naming no loaded policy
  auto s = OracleSchedule::parse(R"({"phases":{"burst":"latency","steady":"throughput"}})");
  ASSERT_TRUE(s);
  auto o = Oracle::create(*s, two_slots());
  ASSERT_TRUE(o);
  ControllerContext ctx;
  ctx.slots = two_slots();
  ctx.running = 1;
  Window w;
  w.period_s = 0.1;
  w.t_s = 100;  // however long after the daemon started: the load's clock, not the controller's
  EXPECT_FALSE((*o)->decide(w, ctx).slot);  // no phase said yet
  w.app_phase = "warmup";
  EXPECT_FALSE((*o)->decide(w, ctx).slot);  // a phase the map does not name changes nothing
  w.app_phase = "burst";
  w.app_phase_age_ms = 40;
  auto d = (*o)->decide(w, ctx);
  ASSERT_TRUE(d.slot);
  EXPECT_EQ(*d.slot, 0u);
  EXPECT_NE(d.why.find("burst"), std::string::npos) << d.why;
  ctx.running = 0;
  EXPECT_FALSE((*o)->decide(w, ctx).slot);  // already there
  w.app_phase = "steady";
  EXPECT_EQ((*o)->decide(w, ctx).slot, std::optional<uint32_t>(1));
  EXPECT_EQ((*o)->state()["phase"], "steady");
}

TEST(Objective, RewardAndSignal) {
  Objective o;
  const Limit& lim = o.limits.front();
  EXPECT_EQ(lim.max_ms, 20);  // the default: the LC wait p99 at most 20 ms
  Window w;
  w.period_s = 0.1;
  w.cpus = 2;
  w.run_ms[AKTS_CLASS_BE] = 100;  // half of 200 CPU-ms
  EXPECT_FALSE(lim.observed_ms(w));
  EXPECT_TRUE(o.met(w));
  EXPECT_DOUBLE_EQ(o.reward(w), 0.75);
  w.wait_p99_ms[AKTS_CLASS_LC] = 40;
  EXPECT_FALSE(o.met(w));
  EXPECT_DOUBLE_EQ(o.reward(w), 0.25);  // half of 20/40, no batch credit
  w.wait_p99_ms[AKTS_CLASS_LC] = 5;
  w.oldest_wait_ms[AKTS_CLASS_LC] = 300;  // starved now
  EXPECT_DOUBLE_EQ(*lim.observed_ms(w), 300);
  EXPECT_FALSE(Objective::from_json({{"signal", "lc_wait_p99"}}));
  EXPECT_FALSE(Objective::from_json({{"max", "-1ms"}}));
  EXPECT_FALSE(Objective::from_json({{"max", "20ms"}, {"extra", 1}}));
  EXPECT_FALSE(Objective::from_json({{"max", 0}}));
  EXPECT_FALSE(Objective::from_json({{"max", "20ms"}, {"signal", "ttft"}}));
  auto r = Objective::from_json({{"max", "500ms"}, {"signal", "request_latency_p99"}});
  ASSERT_TRUE(r);
  EXPECT_DOUBLE_EQ(r->limits.front().max_ms, 500);
}

TEST(Window, RoundTripsThroughJson) {
  Window w;
  w.seq = 7;
  w.t_s = 1.5;
  w.period_s = 0.1;
  w.wait_p99_ms[AKTS_CLASS_LC] = 3.5;
  w.app_requests_processing = 2;
  w.effective_slot = 1;
  auto back = Window::from_json(w.to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->seq, 7u);
  EXPECT_EQ(*back->wait_p99_ms[AKTS_CLASS_LC], 3.5);
  EXPECT_FALSE(back->wait_p99_ms[AKTS_CLASS_BE]);
  EXPECT_EQ(*back->app_requests_processing, 2);
  EXPECT_EQ(back->effective_slot, 1u);
  EXPECT_EQ(back->selected_slot, AKTS_SLOT_NONE);
  EXPECT_FALSE(Window::from_json({{"seq", -1}}));
  EXPECT_FALSE(Window::from_json({{"classes", {{"lc", {{"waits", "x"}}}}}}));
}

std::filesystem::path temp_dir() {
  auto d = std::filesystem::temp_directory_path() /
           ("akts-reasoning-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

TEST(DecisionLog, RotatesBySizeAndKeepsNFiles) {
  auto d = temp_dir();
  DecisionLogOptions o;
  o.path = (d / "decisions.jsonl").string();
  o.max_bytes = 2000;
  o.keep = 2;
  DecisionLog log(o);
  ASSERT_TRUE(log.open());
  for (int i = 0; i < 200; ++i) log.decision({{"source", "test"}, {"why", std::string(50, 'x')}});
  log.flush();
  EXPECT_TRUE(std::filesystem::exists(o.path));
  EXPECT_TRUE(std::filesystem::exists(o.path + ".1"));
  EXPECT_TRUE(std::filesystem::exists(o.path + ".2"));
  EXPECT_FALSE(std::filesystem::exists(o.path + ".3"));
  uint64_t total = 0;
  for (const auto& e : std::filesystem::directory_iterator(d)) {
    EXPECT_LE(e.file_size(), o.max_bytes);
    total += e.file_size();
  }
  EXPECT_LE(total, 3 * o.max_bytes);
  // Every line of the live file is a JSON object.
  std::ifstream f(o.path);
  std::string line;
  int lines = 0;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    ++lines;
  }
  EXPECT_GT(lines, 0);
  EXPECT_EQ(log.recent(5).size(), 5u);
  EXPECT_EQ(log.recent(5).back()["id"], 200);
  std::filesystem::remove_all(d);
}

TEST(DecisionLog, InvalidUtf8InARawAnswerIsWrittenNotThrown) {
  auto d = temp_dir();
  DecisionLogOptions o;
  o.path = (d / "decisions.jsonl").string();
  DecisionLog log(o);
  ASSERT_TRUE(log.open());
  EXPECT_NO_THROW(log.decision({{"raw", std::string("\xff\xfe slot \xc3")}}));
  log.flush();
  EXPECT_GT(log.written_bytes(), 0u);
  std::filesystem::remove_all(d);
}

// A controller that proposes what it is told to.
class Scripted : public Controller {
 public:
  std::optional<uint32_t> next;
  bool refuse = false;
  int calls = 0;
  bool saw_locked = false;
  bool answer_without_proposal = false;
  std::string name() const override { return "scripted"; }
  ControllerDecision decide(const Window&, const ControllerContext& ctx) override {
    ++calls;
    saw_locked = ctx.locked;
    if (refuse) return {std::nullopt, "bad answer", std::string("0.3"), true, true, "malformed"};
    ControllerDecision d{next, "scripted"};
    d.answer = answer_without_proposal;
    return d;
  }
};

struct PlaneFixture {
  FakeSelection sel;
  Scripted* ctl = nullptr;
  std::unique_ptr<ReasoningPlane> rp;
  explicit PlaneFixture(ArbiterOptions ao = {}) {
    ReasoningOptions o;
    o.arbiter = ao;
    rp = std::make_unique<ReasoningPlane>(o, sel.plane(), [] { return two_slots(); },
                                          [this](const std::string& n, const std::vector<SlotInfo>&)
                                              -> Result<std::unique_ptr<Controller>> {
                                            if (n != "scripted")
                                              return make_error(ErrorKind::kInvalidArgument, "unknown controller");
                                            auto c = std::make_unique<Scripted>();
                                            ctl = c.get();
                                            return std::unique_ptr<Controller>(std::move(c));
                                          });
  }
  Window window(uint64_t seq) const {
    Window w;
    w.seq = seq;
    w.t_s = 0.1 * static_cast<double>(seq);
    w.period_s = 0.1;
    w.effective_slot = sel.selected;
    return w;
  }
};

TEST(ReasoningPlane, AppliesLogsAndFollowsUpOneAndFivePeriodsLater) {
  ArbiterOptions ao;
  ao.min_dwell = 0ms;
  PlaneFixture f(ao);
  EXPECT_FALSE(f.rp->set_controller("nonsense"));
  EXPECT_EQ(f.rp->controller_name(), "none");
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  auto t = Clock::time_point{} + 100s;
  f.ctl->next = 0;
  f.rp->on_window(f.window(1), t);
  EXPECT_EQ(f.sel.selected, 0u);
  f.ctl->next.reset();
  for (uint64_t s = 2; s <= 7; ++s) f.rp->on_window(f.window(s), t + std::chrono::milliseconds(100 * s));
  auto log = f.rp->log(10);
  ASSERT_EQ(log.size(), 2u);  // the controller change, then the decision
  const auto& d = log[1];
  EXPECT_EQ(d["source"], "scripted");
  EXPECT_EQ(d["proposed"], 0);
  EXPECT_EQ(d["applied"], true);
  EXPECT_EQ(d["selected_after"], 0);
  ASSERT_EQ(d["outcomes"].size(), 2u);
  EXPECT_EQ(d["outcomes"][0]["after_periods"], 1);
  EXPECT_EQ(d["outcomes"][1]["after_periods"], 5);
}

TEST(ReasoningPlane, ARefusedOutputIsLoggedAndChangesNothing) {
  PlaneFixture f;
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  f.ctl->refuse = true;
  f.rp->on_window(f.window(1));
  EXPECT_EQ(f.sel.stores, 0);
  auto d = f.rp->log(1)[0];
  EXPECT_EQ(d["raw"], "0.3");
  EXPECT_EQ(d["applied"], false);
  EXPECT_EQ(f.rp->state()["refused_outputs"], 1);
  // A proposal of an empty slot is refused too, whatever the controller says.
  f.ctl->refuse = false;
  f.ctl->next = 9;
  f.rp->on_window(f.window(2));
  EXPECT_EQ(f.sel.stores, 0);
  EXPECT_EQ(f.rp->log(1)[0]["applied"], false);
}

TEST(ReasoningPlane, TheControllerIsLockedOutDuringAHoldAndRepeatsAreCountedNotLogged) {
  ArbiterOptions ao;
  ao.min_dwell = 0ms;
  PlaneFixture f(ao);
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  auto t = Clock::time_point{} + 100s;
  ASSERT_TRUE(f.rp->hold(0, "latency", 10s, t));
  f.ctl->next = 1;
  for (uint64_t s = 1; s <= 20; ++s) f.rp->on_window(f.window(s), t + std::chrono::milliseconds(100 * s));
  EXPECT_TRUE(f.ctl->saw_locked);
  EXPECT_EQ(f.sel.selected, 0u);
  // controller, hold, then one refused proposal; the other 19 counted.
  EXPECT_EQ(f.rp->log(100).size(), 3u);
  EXPECT_EQ(f.rp->state()["repeats_not_logged"], 19);
  EXPECT_FALSE(f.rp->operator_switch(1, "throughput", t + 3s));
  EXPECT_TRUE(f.rp->release(t + 4s));
  f.rp->on_window(f.window(21), t + 5s);
  EXPECT_EQ(f.sel.selected, 1u);
}

class FakeSource : public TelemetrySource {
 public:
  KernelReading k;
  HostReading h;
  std::optional<AppScrape> app;
  bool fail = false;
  Result<KernelReading> read_kernel() override {
    if (fail) return make_error(ErrorKind::kSystem, "gone");
    return k;
  }
  HostReading read_host() override { return h; }
  std::optional<AppScrape> scrape_app() override { return app; }
};

TEST(Sampler, BuildsWindowsFromDeltas) {
  FakeSource src;
  Sampler s;
  src.k.cpus = 2;
  src.h.cpu = CpuTimes{100, 1000, 3, 0};
  src.h.pressure = Pressure{0, 0, 0, 1000};
  PushedSamples pushed;
  ASSERT_TRUE(pushed.push({1, 2, 3, 100}));
  auto first = s.sample(1.0, src, &pushed);
  ASSERT_TRUE(first);
  EXPECT_FALSE(*first);  // primes only
  src.k.stats.wait_hist[AKTS_CLASS_LC][20] = 10;  // ~1 ms each
  src.k.stats.run_ns[AKTS_CLASS_BE] = 100'000'000;
  src.k.oldest_wait_ns[AKTS_CLASS_LC] = 5'000'000;
  src.k.rescues[AKTS_CLASS_BE] = 4;
  src.k.effective = 1;
  src.h.cpu = CpuTimes{150, 1100, 5, 0};
  src.h.pressure = Pressure{0, 0, 0, 51000};
  auto app = parse_prometheus_text("llamacpp:requests_processing 3\nllamacpp:prompt_tokens_total 10\n");
  ASSERT_TRUE(app);
  src.app = AppScrape{*app, 0.02, 1};
  auto w = s.sample(1.1, src, &pushed);  // the samples pushed before priming land here
  ASSERT_TRUE(w);
  ASSERT_TRUE(*w);
  const Window& win = **w;
  EXPECT_EQ(win.seq, 1u);
  EXPECT_NEAR(win.period_s, 0.1, 1e-9);
  EXPECT_EQ(win.waits[AKTS_CLASS_LC], 10u);
  ASSERT_TRUE(win.wait_p99_ms[AKTS_CLASS_LC]);
  EXPECT_NEAR(*win.wait_p99_ms[AKTS_CLASS_LC], 1.48, 0.1);
  EXPECT_DOUBLE_EQ(win.oldest_wait_ms[AKTS_CLASS_LC], 5);
  EXPECT_DOUBLE_EQ(win.run_ms[AKTS_CLASS_BE], 100);
  EXPECT_NEAR(win.batch_share(), 0.5, 1e-9);
  EXPECT_EQ(win.rescues[AKTS_CLASS_BE], 4u);
  EXPECT_NEAR(win.cpu_util, 0.5, 1e-9);
  EXPECT_NEAR(win.cpu_pressure, 0.5, 1e-9);
  EXPECT_EQ(win.runnable, 5u);
  EXPECT_EQ(*win.app_requests_processing, 3);
  EXPECT_FALSE(win.app_prompt_tokens_per_s);  // one scrape: no rate yet
  EXPECT_EQ(win.app_latency_samples, 4u);
  EXPECT_EQ(*win.app_latency_p99_ms, 100);
  EXPECT_EQ(*win.app_latency_p50_ms, 2);
  EXPECT_FALSE(win.app_waiting_oldest_ms);  // no report of a wait
  // A report of the oldest unanswered request's wait lands in the next window, aged to its end.
  ASSERT_TRUE(pushed.report_waiting(7000, PushedSamples::Clock::now() - std::chrono::milliseconds(300)));
  auto w2 = s.sample(1.2, src, &pushed);
  ASSERT_TRUE(w2 && *w2);
  ASSERT_TRUE((*w2)->app_waiting_oldest_ms);
  EXPECT_GE(*(*w2)->app_waiting_oldest_ms, 7300);
  EXPECT_LT(*(*w2)->app_waiting_oldest_ms, 7300 + 5000);
  EXPECT_EQ((*w2)->app_latency_samples, 0u);
  const Limit ttft{Limit::Signal::kRequestLatencyP99, 6000};
  EXPECT_GE(*ttft.observed_ms(**w2), 7300);  // a starved server's wait is seen with no first token
  EXPECT_FALSE(ttft.met(**w2));
  auto round = Window::from_json((*w2)->to_json());
  ASSERT_TRUE(round);
  EXPECT_EQ(round->app_waiting_oldest_ms, (*w2)->app_waiting_oldest_ms);
  EXPECT_TRUE(round->app_phase.empty());
  // The load's phase: the latest said, with how long before the window's end it began; it holds until the next.
  EXPECT_FALSE(pushed.report_phase(""));
  EXPECT_FALSE(pushed.report_phase(std::string(65, 'a')));
  EXPECT_FALSE(pushed.report_phase("bad\xff"));
  EXPECT_FALSE(pushed.report_phase("tab\there"));
  ASSERT_TRUE(pushed.report_phase("burst", PushedSamples::Clock::now() - std::chrono::milliseconds(30)));
  auto wp = s.sample(1.25, src, &pushed);
  ASSERT_TRUE(wp && *wp);
  EXPECT_EQ((*wp)->app_phase, "burst");
  ASSERT_TRUE((*wp)->app_phase_age_ms);
  EXPECT_GE(*(*wp)->app_phase_age_ms, 30);
  auto wp2 = s.sample(1.27, src, &pushed);
  ASSERT_TRUE(wp2 && *wp2);
  EXPECT_EQ((*wp2)->app_phase, "burst");
  auto round_phase = Window::from_json((*wp2)->to_json());
  ASSERT_TRUE(round_phase);
  EXPECT_EQ(round_phase->app_phase, "burst");
  EXPECT_EQ(round_phase->app_phase_age_ms, (*wp2)->app_phase_age_ms);
  ASSERT_TRUE(pushed.say_phase(""));  // the load is over (v1.push phase null): no window carries its last phase on
  auto wp3 = s.sample(1.29, src, &pushed);
  ASSERT_TRUE(wp3 && *wp3);
  EXPECT_TRUE((*wp3)->app_phase.empty());
  EXPECT_FALSE((*wp3)->app_phase_age_ms);
  PushedSamples stale;
  ASSERT_TRUE(stale.report_waiting(7000, PushedSamples::Clock::now() - PushedSamples::kWaitingValidFor -
                                             std::chrono::milliseconds(100)));
  auto w3 = s.sample(1.3, src, &stale);  // a proxy that stopped reporting a second ago reports nothing
  ASSERT_TRUE(w3 && *w3);
  EXPECT_FALSE((*w3)->app_waiting_oldest_ms);
  EXPECT_FALSE(ttft.observed_ms(**w3));
  src.fail = true;
  ASSERT_TRUE(pushed.push({7}));
  EXPECT_FALSE(s.sample(1.2, src, &pushed));
  EXPECT_EQ(pushed.drain().size(), 1u);  // a failed read takes none
}

TEST(PushedSamples, RefusesBadValuesWhole) {
  PushedSamples p;
  auto kept = p.push({1, 2});
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, 2u);
  EXPECT_FALSE(p.push({3, -1}));
  EXPECT_FALSE(p.push({std::nan("")}));
  EXPECT_FALSE(p.push({1e300}));
  EXPECT_EQ(p.drain(), (std::vector<double>{1, 2}));
  EXPECT_TRUE(p.drain().empty());
}

TEST(PushedSamples, TimesPerOutputTokenAreKeptApartAndLeaveTheWaitAlone) {
  PushedSamples p;
  ASSERT_TRUE(p.report_waiting(300));
  auto kept = p.push_tpot({40, 55}, {2000, 900});
  ASSERT_TRUE(kept);
  EXPECT_EQ(*kept, 2u);
  EXPECT_FALSE(p.push_tpot({3, -1}, {1, 1}));
  EXPECT_FALSE(p.push_tpot({3}, {-1}));
  EXPECT_FALSE(p.push_tpot({3, 4}, {100}));  // one decode time per TPOT
  EXPECT_TRUE(p.drain().empty());            // not latencies to the first token
  auto [tpot, decode_max] = p.drain_tpot();
  EXPECT_EQ(tpot, (std::vector<double>{40, 55}));
  EXPECT_EQ(decode_max, 2000);  // the longest decode among them: how far back they reach
  EXPECT_TRUE(p.drain_tpot().first.empty());
  EXPECT_EQ(p.drain_tpot().second, 0);
  EXPECT_TRUE(p.drain_waiting());  // a finished request's TPOT says nothing of the one still waiting
}

TEST(Sampler, TimePerOutputTokenFromPushesElseTheInterTokenHistogram) {
  FakeSource src;
  PushedSamples pushed;
  AppMetricsChoice vllm;
  vllm.recognise = false;
  vllm.names = *app_metric_preset("vllm");
  Sampler s(vllm);
  auto itl = [](double le_002, double le_01, double inf) {
    return fmt::format(
        "vllm:num_requests_running{{engine=\"0\"}} 8.0\n"
        "# TYPE vllm:inter_token_latency_seconds histogram\n"
        "vllm:inter_token_latency_seconds_bucket{{engine=\"0\",le=\"0.02\"}} {}\n"
        "vllm:inter_token_latency_seconds_bucket{{engine=\"0\",le=\"0.1\"}} {}\n"
        "vllm:inter_token_latency_seconds_bucket{{engine=\"0\",le=\"+Inf\"}} {}\n"
        "vllm:inter_token_latency_seconds_count{{engine=\"0\"}} {}\n",
        le_002, le_01, inf, inf);
  };
  ASSERT_TRUE(s.sample(1.0, src, &pushed));
  auto a = parse_prometheus_text(itl(100, 100, 100));
  ASSERT_TRUE(a);
  src.app = AppScrape{*a, 0, 1};
  ASSERT_TRUE(s.sample(1.1, src, &pushed));
  // 100 gaps more, all between 20 and 100 ms: the histogram's p99 is in that bucket.
  auto b = parse_prometheus_text(itl(100, 200, 200));
  ASSERT_TRUE(b);
  src.app = AppScrape{*b, 0, 2};
  auto w = s.sample(1.2, src, &pushed);
  ASSERT_TRUE(w && *w);
  EXPECT_EQ((*w)->app_tpot_from, "histogram");
  EXPECT_EQ((*w)->app_tpot_samples, 100u);
  ASSERT_TRUE((*w)->app_tpot_p99_ms);
  EXPECT_GT(*(*w)->app_tpot_p99_ms, 20);
  EXPECT_LE(*(*w)->app_tpot_p99_ms, 100);
  EXPECT_FALSE((*w)->app_latency_p99_ms);  // no TTFT histogram moved, nothing pushed
  // Pushed times come first, reaching back the window and their longest decode.
  ASSERT_TRUE(pushed.push_tpot({300, 310}, {4000, 2500}));
  auto c = parse_prometheus_text(itl(100, 300, 300));
  ASSERT_TRUE(c);
  src.app = AppScrape{*c, 0, 3};
  w = s.sample(1.3, src, &pushed);
  ASSERT_TRUE(w && *w);
  EXPECT_EQ((*w)->app_tpot_from, "pushed");
  EXPECT_EQ((*w)->app_tpot_samples, 2u);
  EXPECT_EQ(*(*w)->app_tpot_p99_ms, 310);
  EXPECT_NEAR((*w)->app_tpot_span_ms, 100 + 4000, 1e-6);
  // And both survive a trace's round trip.
  auto back = Window::from_json((*w)->to_json());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back->app_tpot_p99_ms, 310);
  EXPECT_EQ(back->app_tpot_from, "pushed");
}

TEST(PushedSamples, TheLatestWaitingReportOfAWindowWinsAgedToItsEnd) {
  using namespace std::chrono_literals;
  PushedSamples p;
  const auto t0 = PushedSamples::Clock::now();
  EXPECT_FALSE(p.drain_waiting(t0));
  ASSERT_TRUE(p.report_waiting(5000, t0));
  ASSERT_TRUE(p.report_waiting(200, t0 + 50ms));  // the 5 s request was answered since
  ASSERT_TRUE(p.report_waiting(9000, t0 + 10ms));  // an older report, late: not over a newer one
  auto w = p.drain_waiting(t0 + 100ms);
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(*w, 250);
  // A window with no report of its own (a slow proxy) still sees the wait, aged, for a second; then nothing.
  EXPECT_DOUBLE_EQ(*p.drain_waiting(t0 + 200ms), 350);
  EXPECT_DOUBLE_EQ(*p.drain_waiting(t0 + 50ms + PushedSamples::kWaitingValidFor), 1200);
  EXPECT_FALSE(p.drain_waiting(t0 + 51ms + PushedSamples::kWaitingValidFor));
  EXPECT_FALSE(p.drain_waiting(t0 + 10ms));  // forgotten, not revived
  ASSERT_TRUE(p.report_waiting(0, t0));
  EXPECT_EQ(p.drain_waiting(t0 + 500ms), 0.0);  // none waits: 0 stays 0
  // Bad reports change nothing.
  ASSERT_TRUE(p.report_waiting(100, t0));
  EXPECT_FALSE(p.report_waiting(-1, t0 + 1ms));
  EXPECT_FALSE(p.report_waiting(std::nan(""), t0 + 1ms));
  EXPECT_FALSE(p.report_waiting(3600e3 + 1, t0 + 1ms));
  EXPECT_FALSE(p.report_waiting(HUGE_VAL, t0 + 1ms));
  EXPECT_EQ(p.drain_waiting(t0), 100.0);
  // A latency pushed after a wait report may have answered that request: the wait is not aged on past it.
  ASSERT_TRUE(p.push({700}));
  EXPECT_FALSE(p.drain_waiting(t0 + 10ms));
  ASSERT_TRUE(p.report_waiting(0, t0));
  ASSERT_TRUE(p.push({700}));
  EXPECT_EQ(p.drain_waiting(t0 + 10ms), 0.0);  // "none waits" still holds
  // JSON from a trace: a negative wait is not a window.
  Window bad;
  bad.app_waiting_oldest_ms = 5;
  auto j = bad.to_json();
  j["app"]["waiting_oldest_ms"] = -5;
  EXPECT_FALSE(Window::from_json(j));
}

TEST(Arbiter, AHoldCannotBeReplacedByAHoldOnAnotherSlot) {
  FakeSelection sel;
  Arbiter a(sel.plane(), ArbiterOptions{});
  auto t = Clock::time_point{} + 100s;
  ASSERT_TRUE(a.hold(0, 1800s, t));
  auto h = a.hold(1, 1ms, t + 1s);
  ASSERT_FALSE(h);
  EXPECT_NE(h.error().message.find("release"), std::string::npos);
  EXPECT_EQ(sel.selected, 0u);
  EXPECT_TRUE(a.hold(0, 10s, t + 2s));  // the same slot: a new end
  EXPECT_TRUE(a.locked(t + 11s));
  EXPECT_FALSE(a.locked(t + 13s + ArbiterOptions{}.operator_grace));
}

TEST(ReasoningPlane, ADryRunDecisionAfterAQuietSpellIsLoggedAgain) {
  ArbiterOptions ao;
  ao.min_dwell = 0ms;
  ao.dry_run = true;
  PlaneFixture f(ao);
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  auto t = Clock::time_point{} + 100s;
  f.ctl->next = 0;
  f.rp->on_window(f.window(1), t);
  f.rp->on_window(f.window(2), t + 100ms);  // the same proposal, the same refusal: counted
  f.ctl->next.reset();
  f.rp->on_window(f.window(3), t + 200ms);  // nothing proposed
  f.ctl->next = 0;
  f.rp->on_window(f.window(4), t + 300ms);  // a new streak: logged
  auto log = f.rp->log(10);
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1]["verdict"], "dry run: logged, not applied");
  EXPECT_EQ(log[2]["window"]["seq"], 4);
  EXPECT_EQ(f.rp->state()["repeats_not_logged"], 1);
  EXPECT_EQ(f.sel.stores, 0);
}

TEST(ReasoningPlane, ARefusedAnswerRepeatedIsCountedNotLogged) {
  PlaneFixture f;
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  f.ctl->refuse = true;
  for (uint64_t s = 1; s <= 50; ++s) f.rp->on_window(f.window(s));
  EXPECT_EQ(f.rp->log(100).size(), 2u);  // the controller change and the first refusal
  EXPECT_EQ(f.rp->state()["refused_outputs"], 50);
  EXPECT_EQ(f.rp->state()["repeats_not_logged"], 49);
  // An llm is quiet between its answers: the quiet windows do not end the streak.
  f.ctl->refuse = false;
  f.ctl->next.reset();
  f.rp->on_window(f.window(51));
  f.ctl->refuse = true;
  f.rp->on_window(f.window(52));
  EXPECT_EQ(f.rp->log(100).size(), 2u);
  EXPECT_EQ(f.rp->state()["repeats_not_logged"], 50);
  // An answer it agrees with ends it: the next outage is logged.
  f.ctl->refuse = false;
  f.ctl->answer_without_proposal = true;
  f.rp->on_window(f.window(53));
  f.ctl->answer_without_proposal = false;
  f.ctl->refuse = true;
  f.rp->on_window(f.window(54));
  EXPECT_EQ(f.rp->log(100).size(), 3u);
}

TEST(ReasoningPlane, AControllerChosenInDryRunNeverApplies) {
  ArbiterOptions ao;
  ao.min_dwell = 0ms;
  PlaneFixture f(ao);
  ASSERT_TRUE(f.rp->configure(std::string("scripted"), true));
  f.ctl->next = 0;
  f.rp->on_window(f.window(1));
  EXPECT_EQ(f.sel.stores, 0);
  EXPECT_FALSE(f.rp->configure(std::string("nonsense"), false));
  EXPECT_TRUE(f.rp->state()["arbiter"]["dry_run"]) << "a refused change changes nothing";
  EXPECT_EQ(f.rp->controller_name(), "scripted");
}

TEST(ReasoningPlane, ReleasingNothingIsNotADecision) {
  PlaneFixture f;
  EXPECT_FALSE(f.rp->release());
  EXPECT_TRUE(f.rp->log(10).empty());
}

TEST(DecisionLog, ARotationThatCannotRenameKeepsWhatTheFileHolds) {
  auto d = temp_dir();
  DecisionLogOptions o;
  o.path = (d / "decisions.jsonl").string();
  o.max_bytes = 4096;
  o.keep = 1;
  std::filesystem::create_directories(o.path + ".rotating/blocker");  // moving the live file aside fails
  DecisionLog log(o);
  ASSERT_TRUE(log.open());
  for (int i = 0; i < 100; ++i) log.decision({{"why", std::string(100, 'y')}});
  log.flush();
  EXPECT_GE(log.state()["rotate_errors"], 1);
  int lines = 0;
  std::ifstream f(o.path);
  for (std::string line; std::getline(f, line); ++lines) ASSERT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded());
  EXPECT_EQ(lines, 100);
  std::filesystem::remove_all(d);
}

TEST(DecisionLog, AFileMovedAwayIsStartedAfreshAndNothingRotatedIsShredded) {
  auto d = temp_dir();
  DecisionLogOptions o;
  o.path = (d / "decisions.jsonl").string();
  o.max_bytes = 4096;
  o.keep = 2;
  DecisionLog log(o);
  ASSERT_TRUE(log.open());
  for (int i = 0; i < 60; ++i) log.decision({{"why", std::string(100, 'z')}});
  log.flush();
  ASSERT_TRUE(std::filesystem::exists(o.path + ".1"));
  auto rotated = std::filesystem::file_size(o.path + ".1");
  std::filesystem::rename(o.path, d / "moved-by-logrotate");
  for (int i = 0; i < 60; ++i) log.decision({{"why", std::string(100, 'z')}});
  log.flush();
  EXPECT_TRUE(std::filesystem::exists(o.path));  // a fresh live file
  EXPECT_LE(std::filesystem::file_size(o.path), o.max_bytes);
  EXPECT_TRUE(std::filesystem::exists(o.path + ".1"));
  EXPECT_GE(std::filesystem::file_size(o.path + ".1") + 1, rotated / 2);
  std::filesystem::remove_all(d);
}

TEST(DecisionLog, AnUnwritablePathLeavesItInMemoryAndSaysSo) {
  DecisionLogOptions o;
  o.path = "/proc/akts-cannot-write-here/decisions.jsonl";
  DecisionLog log(o);
  EXPECT_FALSE(log.open());
  log.decision({{"why", "kept in memory"}});
  EXPECT_EQ(log.recent(5).size(), 1u);
  EXPECT_FALSE(log.state()["open"]);
}

TEST(Sampler, AnInfiniteApplicationFigureIsDropped) {
  FakeSource src;
  Sampler s;
  ASSERT_TRUE(s.sample(1.0, src));
  auto app = parse_prometheus_text("llamacpp:requests_processing +Inf\n");
  ASSERT_TRUE(app);
  src.app = AppScrape{*app, 0, 1};
  auto w = s.sample(1.1, src);
  ASSERT_TRUE(w && *w);
  EXPECT_FALSE((*w)->app_requests_processing);
}

TEST(Sampler, RatesUseTheTimesScrapesWereTakenAndStaleScrapesAreIgnored) {
  FakeSource src;
  Sampler s;
  ASSERT_TRUE(s.sample(1.0, src));
  auto a = parse_prometheus_text("llamacpp:requests_processing 2\nllamacpp:prompt_tokens_total 100\n");
  auto b = parse_prometheus_text("llamacpp:requests_processing 2\nllamacpp:prompt_tokens_total 150\n");
  ASSERT_TRUE(a && b);
  src.app = AppScrape{*a, 0.05, 1};  // taken at 1.05
  ASSERT_TRUE(s.sample(1.1, src));
  src.app = AppScrape{*b, 0.05, 2};  // taken at 1.15: 50 tokens in 0.1 s
  auto w = s.sample(1.2, src);
  ASSERT_TRUE(w && *w && (*w)->app_prompt_tokens_per_s);
  EXPECT_NEAR(*(*w)->app_prompt_tokens_per_s, 500, 1e-6);
  src.app = AppScrape{*b, 0.25, 2};  // the same scrape, now 2.5 periods old: still used, no new rate
  w = s.sample(1.3, src);
  ASSERT_TRUE(w && *w);
  EXPECT_TRUE((*w)->app_requests_processing);
  EXPECT_FALSE((*w)->app_prompt_tokens_per_s);
  src.app = AppScrape{*b, 0.5, 2};  // too old
  w = s.sample(1.4, src);
  ASSERT_TRUE(w && *w);
  EXPECT_FALSE((*w)->app_requests_processing);
}

// v1.switch's "previous" against the decision log when a controller's switch lands between the operator's
// request and its switch (a hook in select() makes that moment deterministic, where the reasoning thread would
// hit it now and then). The reply's "previous" is read with the switch, under the reasoning plane's lock: it
// agrees with the log's record. (Read before the switch, outside every lock, as it once was, the reply said 1
// while the log said 0.)
class ReasoningBackend : public control::FakeBackend {
 public:
  ReasoningBackend(PlaneFixture& f) : f_(f) {}
  uint32_t selected() const override { return f_.sel.selected; }
  uint32_t effective() const override { return f_.sel.selected; }
  Result<uint32_t> select(uint32_t slot) override {
    if (before_select) before_select();
    return f_.rp->operator_switch(slot, slot == 0 ? "latency" : "throughput");
  }
  std::function<void()> before_select;

 private:
  PlaneFixture& f_;
};

TEST(ReasoningPlane, AnOperatorsSwitchReportsThePreviousSlotTheLogRecords) {
  ArbiterOptions ao;
  ao.min_dwell = 0ms;
  ao.operator_grace = 0ms;
  PlaneFixture f(ao);
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  f.sel.selected = 1;
  ReasoningBackend b(f);
  control::Dispatcher d;
  control::register_v1(d, b);
  // The controller's switch to latency lands after the request arrived, before the operator's switch.
  b.before_select = [&] {
    f.ctl->next = 0;
    f.rp->on_window(f.window(1));
    f.ctl->next.reset();
  };
  nlohmann::json req = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "v1.switch"}, {"params", {{"target", "throughput"}}}};
  nlohmann::json reply = nlohmann::json::parse(d.handle(req.dump()));
  ASSERT_TRUE(reply.contains("result")) << reply.dump();
  EXPECT_EQ(f.sel.selected, 1u);
  nlohmann::json op;
  for (const auto& r : f.rp->log(50))
    if (r.value("source", "") == "operator" && r.value("action", "") == "switch") op = r;
  ASSERT_TRUE(op.is_object()) << f.rp->log(50).dump();
  EXPECT_EQ(op["previous"], 0) << op.dump();  // the controller's switch came first
  EXPECT_EQ(reply["result"]["previous"], op["previous"]) << reply.dump() << " against " << op.dump();
  EXPECT_NE(op["why"].get<std::string>().find("switch 0 -> 1"), std::string::npos) << op.dump();
}

// A reload moves the log: what was queued reaches the old file, what comes after the new one; the ids and the
// records in memory run on; a path that does not open is refused before anything changes; "" is memory only; a
// file moved away is followed by a new one.
TEST(DecisionLog, ARetargetMovesTheFileAndKeepsTheHistory) {
  auto d = temp_dir();
  DecisionLogOptions o;
  o.path = (d / "a.jsonl").string();
  DecisionLog log(o);
  ASSERT_TRUE(log.open());
  for (int i = 0; i < 50; ++i) log.decision({{"n", i}});
  auto lines = [](const std::string& path) {
    std::ifstream f(path);
    std::vector<nlohmann::json> out;
    for (std::string l; std::getline(f, l);) out.push_back(nlohmann::json::parse(l));
    return out;
  };
  DecisionLogOptions moved = o;
  moved.path = (d / "sub" / "b.jsonl").string();
  EXPECT_FALSE(DecisionLog::open_file({.path = "/proc/akts-cannot-write-here/x.jsonl"}));
  auto fd = DecisionLog::open_file(moved);
  ASSERT_TRUE(fd) << fd.error().to_string();
  log.retarget(moved, std::move(*fd));
  uint64_t id = log.decision({{"n", 50}});
  log.flush();
  EXPECT_EQ(id, 51u);
  auto a = lines(o.path), b = lines(moved.path);
  ASSERT_EQ(a.size(), 50u);  // none lost in the move
  EXPECT_EQ(a.back()["n"], 49);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["id"], 51);
  EXPECT_EQ(log.recent(100).size(), 51u);
  // A file logrotate moves away is followed by a new one at the next line, with no retarget.
  std::filesystem::rename(moved.path, moved.path + ".1");
  log.decision({{"n", 51}});
  log.flush();
  EXPECT_EQ(lines(moved.path).size(), 1u);
  EXPECT_EQ(lines(moved.path + ".1").size(), 1u);
  // Memory only.
  log.retarget({}, Fd{});
  log.decision({{"n", 52}});
  log.flush();
  EXPECT_FALSE(log.state()["open"]);
  EXPECT_EQ(lines(moved.path).size(), 1u);
  EXPECT_EQ(log.recent(100).size(), 53u);
  std::filesystem::remove_all(d);
}

// A reload's controller and arbiter: installed under the lock, logged with the reload as their source; the
// factory given builds later controllers too.
TEST(ReasoningPlane, AReloadInstallsItsControllerAndArbiterRules) {
  PlaneFixture f;
  ASSERT_TRUE(f.rp->set_controller("scripted"));
  int built = 0;
  Scripted* made = nullptr;
  ControllerFactory other = [&built, &made](const std::string& n, const std::vector<SlotInfo>& slots)
      -> Result<std::unique_ptr<Controller>> {
    EXPECT_EQ(slots.size(), 2u);
    ++built;
    if (n != "scripted") return make_error(ErrorKind::kInvalidArgument, "unknown controller");
    auto c = std::make_unique<Scripted>();
    made = c.get();
    return std::unique_ptr<Controller>(std::move(c));
  };
  auto next = other("scripted", f.rp->slots());
  ASSERT_TRUE(next);
  Scripted* installed = made;
  f.rp->install_controller(other, std::move(*next), "reload");
  f.rp->on_window(f.window(1));  // the old one is destroyed here, on the reasoning thread; the new one decides
  EXPECT_EQ(installed->calls, 1);
  ArbiterOptions ao;
  ao.dry_run = true;
  ao.min_dwell = 5s;
  f.rp->set_arbiter_options(ao, "reload");
  EXPECT_EQ(f.rp->state()["arbiter"]["dry_run"], true);
  EXPECT_EQ(f.rp->state()["arbiter"]["min_dwell_s"], 5.0);
  ASSERT_TRUE(f.rp->set_controller("scripted"));  // by the new factory
  EXPECT_EQ(built, 2);
  auto log = f.rp->log(10);
  ASSERT_GE(log.size(), 3u);
  EXPECT_EQ(log[1]["source"], "reload");
  EXPECT_EQ(log[1]["action"], "controller");
  EXPECT_EQ(log[2]["source"], "reload");
  EXPECT_EQ(log[2]["action"], "dry_run");
}

}  // namespace
}  // namespace akts
