// The daemon's jobs without a kernel: admission's canary (its revert rules), the restart path after the kernel
// ends the scheduler, and the event loop's named sources. A fake plane (PlaneControl) and a real reasoning plane.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/canary.h"
#include "daemon/event_loop.h"
#include "daemon/metrics_listener.h"
#include "daemon/restart.h"

namespace akts {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The selection word, shared by the arbiter (through Arbiter::Plane) and the fake plane, as in the daemon.
struct Selection {
  uint32_t slot = 0;
  Arbiter::Plane plane() {
    return {[this] { return slot; }, [this](uint32_t s) { slot = s; }, [] { return false; }};
  }
};

class FakePlane : public PlaneControl {
 public:
  explicit FakePlane(Selection& sel) : sel_(sel) {}
  uint32_t selected() const override { return sel_.slot; }
  Result<BreakerReport> read_breaker() const override {
    if (breaker_unreadable) return errorf(ErrorKind::kSystem, "no map");
    return breaker;
  }
  Status set_breaker(const BreakerParams& p) override {
    calls.push_back(fmt::format("set_breaker armed={}", p.armed));
    breaker.params = p;
    return {};
  }
  Status evict(uint32_t slot) override {
    calls.push_back(fmt::format("evict {}", slot));
    return {};
  }
  Status reload(const PlaneOptions& o) override {
    calls.push_back(fmt::format("reload {}", o.initial_slot));
    return reload_fails ? Status(errorf(ErrorKind::kSystem, "verifier")) : Status{};
  }
  Status attach() override {
    calls.push_back("attach");
    return attach_fails ? Status(errorf(ErrorKind::kSystem, "attach")) : Status{};
  }
  BreakerReport breaker;
  bool breaker_unreadable = false, reload_fails = false, attach_fails = false;
  std::vector<std::string> calls;

 private:
  Selection& sel_;
};

std::vector<SlotInfo> three_slots() {
  return {{0, "latency", "", ""}, {1, "throughput", "", ""}, {2, "candidate", "", ""}};
}

class CanaryTest : public ::testing::Test {
 protected:
  CanaryTest()
      : plane_(sel_),
        reasoning_(options(), sel_.plane(), three_slots,
                   [](const std::string&, const std::vector<SlotInfo>&) -> Result<std::unique_ptr<Controller>> {
                     return errorf(ErrorKind::kInvalidArgument, "no controllers here");
                   }),
        canary_({plane_, reasoning_, 200ms, [this] { ++persisted_; },
                 [this](const PolicyRecord& r) { passed_.push_back(r.name); },
                 [](uint32_t s) { return s < 3 ? three_slots()[s].name : std::string(); }}) {
    sel_.slot = 1;  // throughput runs before the canary
  }
  static ReasoningOptions options() {
    ReasoningOptions o;
    o.arbiter.min_dwell = 0ms;
    return o;  // the objective: LC wait p99 <= 20 ms
  }
  // A window on `slot`: LC waits of `p99_ms` (at most), `rescues` rescues, an LC task waiting `oldest_ms` now.
  void window(uint32_t slot, double p99_ms = 5, uint64_t rescues = 0, double oldest_ms = 0) {
    Window w;
    w.seq = ++seq_;
    w.t_s = static_cast<double>(seq_) / 10;
    w.period_s = 0.1;
    w.cpus = 2;
    w.effective_slot = slot;
    w.waits[AKTS_CLASS_LC] = 10;
    w.wait_p99_ms[AKTS_CLASS_LC] = p99_ms;
    w.rescues[AKTS_CLASS_LC] = rescues;
    w.oldest_wait_ms[AKTS_CLASS_LC] = oldest_ms;
    reasoning_.on_window(w);
  }
  Status start(Clock::time_point t) {
    PolicyRecord rec;
    rec.name = "candidate";
    return canary_.start(2, "candidate", rec, 10s, t);
  }
  std::string state() const { return canary_.to_json(t0_ + 1s).value("state", ""); }
  std::string reason() const { return canary_.to_json(t0_ + 1s).value("reason", ""); }
  bool evicted() const { return std::find(plane_.calls.begin(), plane_.calls.end(), "evict 2") != plane_.calls.end(); }

  Selection sel_;
  FakePlane plane_;
  ReasoningPlane reasoning_;
  Canary canary_;
  int persisted_ = 0;
  std::vector<std::string> passed_;
  uint64_t seq_ = 0;
  Clock::time_point t0_ = Clock::now();
};

TEST_F(CanaryTest, HealthyWindowsPassAtTheEndAndTheBreakerIsDisarmedAgain) {
  for (int i = 0; i < 5; ++i) window(1);
  ASSERT_TRUE(start(t0_));
  EXPECT_TRUE(canary_.running());
  EXPECT_EQ(sel_.slot, 2u);  // held selected
  EXPECT_EQ(plane_.calls, std::vector<std::string>{"set_breaker armed=true"});  // armed for it
  for (int i = 0; i < 6; ++i) window(2);
  canary_.poll(t0_ + 5s);
  EXPECT_TRUE(canary_.running());
  canary_.poll(t0_ + 10s);
  EXPECT_EQ(state(), "passed") << reason();
  EXPECT_EQ(passed_, std::vector<std::string>{"candidate"});
  EXPECT_EQ(plane_.calls.back(), "set_breaker armed=false");  // as configured again
  EXPECT_FALSE(evicted());
  EXPECT_EQ(sel_.slot, 2u);  // the passed policy stays selected
  EXPECT_GE(persisted_, 2);
}

TEST_F(CanaryTest, ARescueOfLcWorkRevertsAndEvicts) {
  window(1);
  ASSERT_TRUE(start(t0_));
  window(2);  // in flight at the start: not judged
  window(2, 5, /*rescues=*/0);
  window(2, 5, /*rescues=*/1);
  canary_.poll(t0_ + 1s);
  EXPECT_EQ(state(), "failed");
  EXPECT_NE(reason().find("rescue"), std::string::npos) << reason();
  EXPECT_EQ(sel_.slot, 1u);  // the previous slot again
  EXPECT_TRUE(evicted());
  EXPECT_TRUE(passed_.empty());
}

TEST_F(CanaryTest, AnLcWaitPastHalfTheGuardsBoundReverts) {
  window(1);
  ASSERT_TRUE(start(t0_));
  window(2);
  window(2, 5, 0, /*oldest_ms=*/99);  // half of 200 ms is 100: not yet
  canary_.poll(t0_ + 1s);
  EXPECT_TRUE(canary_.running());
  window(2, 5, 0, /*oldest_ms=*/101);
  canary_.poll(t0_ + 2s);
  EXPECT_EQ(state(), "failed");
  EXPECT_NE(reason().find("waited 101 ms"), std::string::npos) << reason();
  EXPECT_EQ(sel_.slot, 1u);
}

TEST_F(CanaryTest, ThreeUnmetWindowsRevertWhenTheObjectiveHeldBefore) {
  for (int i = 0; i < 10; ++i) window(1);  // met before: baseline 100%
  ASSERT_TRUE(start(t0_));
  window(2);
  window(2, 50);
  window(2, 50);
  window(2, 5);  // met: the streak starts again
  window(2, 50);
  window(2, 50);
  canary_.poll(t0_ + 1s);
  EXPECT_TRUE(canary_.running()) << reason();
  window(2, 50);
  canary_.poll(t0_ + 2s);
  EXPECT_EQ(state(), "failed");
  EXPECT_NE(reason().find("3 windows in a row"), std::string::npos) << reason();
  EXPECT_EQ(sel_.slot, 1u);
  EXPECT_TRUE(evicted());
}

TEST_F(CanaryTest, UnmetWindowsDoNotRevertWhenTheObjectiveRarelyHeldBefore) {
  for (int i = 0; i < 10; ++i) window(1, i < 5 ? 5 : 50);  // met in half the windows before
  ASSERT_TRUE(start(t0_));
  window(2);
  for (int i = 0; i < 5; ++i) window(2, 50);
  canary_.poll(t0_ + 1s);
  EXPECT_TRUE(canary_.running()) << reason();
  canary_.poll(t0_ + 10s);
  EXPECT_EQ(state(), "passed");
}

TEST_F(CanaryTest, AnOperatorsSwitchStandsAndTheUnprovenPolicyGoes) {
  window(1);
  ASSERT_TRUE(start(t0_));
  sel_.slot = 0;  // the operator released the hold and chose latency
  canary_.poll(t0_ + 1s);
  EXPECT_EQ(state(), "failed");
  EXPECT_NE(reason().find("an operator selected slot 0"), std::string::npos) << reason();
  EXPECT_EQ(sel_.slot, 0u);  // not reverted
  EXPECT_TRUE(evicted());
}

TEST_F(CanaryTest, ABreakerTripReverts) {
  window(1);
  ASSERT_TRUE(start(t0_));
  plane_.breaker.state.trips = 1;
  canary_.poll(t0_ + 1s);
  EXPECT_EQ(state(), "failed");
  EXPECT_NE(reason().find("circuit breaker tripped"), std::string::npos) << reason();
  EXPECT_EQ(sel_.slot, 1u);
}

TEST_F(CanaryTest, ARefusedStartEvictsAndKeepsTheLastReport) {
  plane_.breaker.state.tripped_at_ns = 5;  // in a trip's cool-down
  auto st = start(t0_);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cool-down"), std::string::npos) << st.error().message;
  EXPECT_NE(st.error().message.find("the policy was evicted"), std::string::npos) << st.error().message;
  EXPECT_TRUE(evicted());
  EXPECT_EQ(sel_.slot, 1u);
  EXPECT_TRUE(canary_.to_json().is_null());
  plane_.breaker = {};
  plane_.breaker_unreadable = true;
  st = start(t0_);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("cannot read the circuit breaker"), std::string::npos);
}

TEST_F(CanaryTest, ALoadOfThePlaneFailsARunningCanary) {
  window(1);
  ASSERT_TRUE(start(t0_));
  canary_.plane_reloaded(t0_ + 1s);
  EXPECT_EQ(state(), "failed");
  EXPECT_NE(reason().find("loaded again"), std::string::npos);
  EXPECT_EQ(sel_.slot, 1u);
}

// The restart path.
class RestartTest : public ::testing::Test {
 protected:
  RestartTest() : plane_(sel_) {
    sel_.slot = 1;
    opts_.policies = {"latency", "throughput"};
    hooks_ = {[this] { order_.push_back("pause"); }, [this] { order_.push_back("reapply"); },
              [this] { order_.push_back("reloaded"); }, [this] { order_.push_back("resume"); }};
  }
  static ExitInfo ejection() { return {1025, "SCX_EXIT_ERROR_STALL", 0, "watchdog", "runnable task stall", ""}; }
  static ExitInfo request() { return {64, "SCX_EXIT_UNREG_KERN", kRestartFlag, "hotplug", "", ""}; }
  RestartOutcome run(const ExitInfo& ei, const RestartPolicy& p, RestartGate& gate, Clock::time_point t) {
    order_.clear();
    plane_.calls.clear();
    return restart_after_exit(ei, kRestartFlag, p, gate, plane_, opts_, /*safe_slot=*/0, hooks_, t);
  }
  static constexpr int64_t kRestartFlag = 1ll << 40;  // a bit of the exit code
  Selection sel_;
  FakePlane plane_;
  PlaneOptions opts_;
  RestartHooks hooks_;
  std::vector<std::string> order_;
  Clock::time_point t0_ = Clock::now();
};

TEST_F(RestartTest, AnEjectionEndsTheDaemonUnlessOnEjectIsSet) {
  RestartPolicy p;  // on_eject false by default
  RestartGate gate(p);
  auto r = run(ejection(), p, gate, t0_);
  EXPECT_FALSE(r.restarted);
  EXPECT_FALSE(r.requested);
  EXPECT_TRUE(plane_.calls.empty());
  EXPECT_TRUE(order_.empty());
}

TEST_F(RestartTest, AnEjectionReattachesOnTheSafeSlotWithTheWorkersPaused) {
  RestartPolicy p;
  p.on_eject = true;
  RestartGate gate(p);
  auto r = run(ejection(), p, gate, t0_);
  EXPECT_TRUE(r.restarted);
  EXPECT_EQ(r.slot, 0u);
  EXPECT_EQ(plane_.calls, (std::vector<std::string>{"reload 0", "attach"}));
  EXPECT_EQ(order_, (std::vector<std::string>{"pause", "reapply", "reloaded", "resume"}));
  EXPECT_NE(r.why.find("slot 0 (latency)"), std::string::npos) << r.why;
}

TEST_F(RestartTest, ARequestKeepsTheSelectionAndNeedsOnRequest) {
  RestartPolicy p;  // on_request true by default
  RestartGate gate(p);
  auto r = run(request(), p, gate, t0_);
  EXPECT_TRUE(r.restarted);
  EXPECT_TRUE(r.requested);
  EXPECT_EQ(plane_.calls, (std::vector<std::string>{"reload 1", "attach"}));
  p.on_request = false;
  RestartGate gate2(p);
  EXPECT_FALSE(run(request(), p, gate2, t0_).restarted);
  EXPECT_TRUE(plane_.calls.empty());
  // A kernel that names no restart bit (flag 0): every end is an ejection.
  order_.clear();
  auto r2 = restart_after_exit(request(), 0, p, gate2, plane_, opts_, 0, hooks_, t0_);
  EXPECT_FALSE(r2.requested);
}

TEST_F(RestartTest, TheGateRefusesOneMoreThanMaxWithinTheWindow) {
  RestartPolicy p;
  p.on_eject = true;
  p.max = 2;
  p.window = 60s;
  RestartGate gate(p);
  EXPECT_TRUE(run(ejection(), p, gate, t0_).restarted);
  EXPECT_TRUE(run(ejection(), p, gate, t0_ + 10s).restarted);
  auto r = run(ejection(), p, gate, t0_ + 20s);
  EXPECT_FALSE(r.restarted);
  EXPECT_TRUE(plane_.calls.empty());
  EXPECT_TRUE(run(ejection(), p, gate, t0_ + 71s).restarted);  // the first one left the window
}

TEST_F(RestartTest, AFailedReloadOrAttachEndsTheDaemonWithTheWorkersStopped) {
  RestartPolicy p;
  p.on_eject = true;
  RestartGate gate(p);
  plane_.reload_fails = true;
  auto r = run(ejection(), p, gate, t0_);
  EXPECT_FALSE(r.restarted);
  EXPECT_EQ(plane_.calls, std::vector<std::string>{"reload 0"});
  EXPECT_EQ(order_, std::vector<std::string>{"pause"});
  plane_.reload_fails = false;
  plane_.attach_fails = true;
  r = run(ejection(), p, gate, t0_ + 1s);
  EXPECT_FALSE(r.restarted);
  EXPECT_EQ(order_, (std::vector<std::string>{"pause", "reapply"}));
}

// The event loop.
struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
    r = fds[0], w = fds[1];
  }
  ~Pipe() {
    ::close(r);
    ::close(w);
  }
  void poke() { EXPECT_EQ(::write(w, "x", 1), 1); }
  void drain() {
    char b[64];
    while (::read(r, b, sizeof(b)) > 0) {
    }
  }
};

TEST(EventLoop, RunsEachReadySourcesHandlerInTheOrderAdded) {
  EventLoop loop;
  Pipe a, b, c;
  std::vector<std::string> ran;
  loop.add("a", a.r, [&] { a.drain(), ran.push_back("a"); });
  loop.add("b", b.r, [&] { b.drain(), ran.push_back("b"); });
  loop.add("c", c.r, [&] {
    c.drain(), ran.push_back("c");
    loop.stop(7);
  });
  c.poke();
  a.poke();
  EXPECT_EQ(loop.run(), 7);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "c"}));  // b was not ready
}

TEST(EventLoop, AStopSkipsTheRestOfTheRoundAndARemovedSourceDoesNotRun) {
  EventLoop loop;
  Pipe a, b, c;
  std::vector<std::string> ran;
  loop.add("a", a.r, [&] {
    a.drain(), ran.push_back("a");
    loop.remove("b");  // ready in this round: never runs
  });
  loop.add("b", b.r, [&] { ran.push_back("b"); });
  loop.add("c", c.r, [&] {
    c.drain(), ran.push_back("c");
    loop.stop(0);
  });
  loop.add("d", a.r, [&] { ran.push_back("d"); });  // after the stop: skipped
  a.poke(), b.poke(), c.poke();
  EXPECT_EQ(loop.run(), 0);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "c"}));
  EXPECT_FALSE(loop.has("b"));
}

TEST(EventLoop, AnEndedRoundSkipsTheRestUntilTheNextPoll) {
  // The restart path's way: the plane was loaded again, so readiness polled before it is not acted on.
  EventLoop loop;
  Pipe a, b;
  std::vector<std::string> ran;
  int round = 0;
  loop.add("a", a.r, [&] {
    a.drain(), ran.push_back("a");
    if (++round == 1) {
      a.poke();  // ready again for the next round
      loop.end_round();
    }
  });
  loop.add("b", b.r, [&] {
    b.drain(), ran.push_back("b");
    loop.stop(0);
  });
  a.poke(), b.poke();
  EXPECT_EQ(loop.run(), 0);
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "a", "b"}));  // b waited for the second round
}

TEST(EventLoop, AHandlerMayReplaceItsOwnSourceAndAGroupGetsItsOwnDescriptors) {
  EventLoop loop;
  Pipe a, g1, g2;
  int rounds = 0, replaced_ran = 0;
  loop.add("a", a.r, [&] {
    a.drain();
    loop.add("a", a.r, [&] {  // replaces the running handler: it runs from the next round
      a.drain();
      ++replaced_ran;
      loop.stop(3);
    });
    a.poke();
  });
  std::vector<int> seen;
  int busy_rounds = 2;
  loop.add_group("g", {.fds = [&] { return std::vector<pollfd>{{g1.r, POLLIN, 0}, {g2.r, POLLIN, 0}}; },
                       .ready =
                           [&](const std::vector<pollfd>& fds) {
                             ++rounds;
                             ASSERT_EQ(fds.size(), 2u);
                             for (const auto& p : fds)
                               if (p.revents) seen.push_back(p.fd);
                             g2.drain();
                           },
                       .busy = [&] { return busy_rounds-- > 0; }});
  g2.poke();
  a.poke();
  EXPECT_EQ(loop.run(), 3);
  EXPECT_EQ(replaced_ran, 1);
  EXPECT_GE(rounds, 1);
  EXPECT_EQ(seen, std::vector<int>{g2.r});  // only the ready one, by its own descriptor
}

TEST(SignalFd, ItsSignalsWaitInTheDescriptorAndTheMaskComesBackWhenItGoes) {
  auto blocked = [] {
    sigset_t now;
    sigprocmask(SIG_BLOCK, nullptr, &now);
    return sigismember(&now, SIGUSR2) == 1;
  };
  ASSERT_FALSE(blocked());
  {
    auto s = SignalFd::open({SIGUSR2});
    ASSERT_TRUE(s) << s.error().to_string();
    EXPECT_TRUE(blocked());
    SignalFd moved(std::move(*s));  // the moved-from one puts nothing back
    raise(SIGUSR2);
    raise(SIGUSR2);  // standard signals coalesce: one comes
    auto got = moved.read_all();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].signo, SIGUSR2);
    EXPECT_EQ(got[0].sender, static_cast<uint32_t>(getpid()));  // raise() is a kill by this process
    EXPECT_TRUE(moved.read_all().empty());
    EXPECT_TRUE(blocked());
  }
  EXPECT_FALSE(blocked()) << "the mask before it came back";
}

TEST(TimerFd, CountsItsExpirations) {
  auto later = TimerFd::open(std::chrono::seconds(10), std::chrono::seconds(10));
  ASSERT_TRUE(later) << later.error().to_string();
  EXPECT_EQ(later->read(), 0u);  // none yet: it does not block
  auto t = TimerFd::open(std::chrono::milliseconds(1), std::chrono::milliseconds(5));
  ASSERT_TRUE(t) << t.error().to_string();
  usleep(30000);
  EXPECT_GE(t->read(), 3u);
}

TEST(MetricsListener, AMalformedAddressIsTheConfigsErrorAndATakenPortTheSystems) {
  auto render = [](metrics::Format) -> Result<std::string> { return std::string("x 1\n"); };
  auto bad = MetricsListener::start("nonsense:port", render);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::kInvalidArgument);  // the daemon exits 2
  EXPECT_NE(bad.error().to_string().find("metrics_listen"), std::string::npos) << bad.error().to_string();
  auto first = MetricsListener::start("127.0.0.1:0", render);
  ASSERT_TRUE(first) << first.error().to_string();
  const std::string url = (*first)->url();
  const std::string port = url.substr(url.rfind(':') + 1, url.find('/', url.rfind(':')) - url.rfind(':') - 1);
  auto taken = MetricsListener::start("127.0.0.1:" + port, render);
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().kind, ErrorKind::kInvalidArgument);  // the daemon exits 1
  EXPECT_NE(taken.error().to_string().find("cannot listen on"), std::string::npos) << taken.error().to_string();
  (*first)->stop();
}

}  // namespace
}  // namespace akts
