// The process tracker on a fake /proc: threads, real-time threads, pid reuse,
// a leader that exits before its threads, refusals, names. No root needed:
// the scheduling-policy calls go to a fake.
#include "classify/process_tracker.h"

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "akts.h"
#include "fake_sched_policy_ops.h"

namespace akts {
namespace {

namespace fs = std::filesystem;
constexpr int kExt = 7;

using FakeOps = FakeSchedPolicyOps;

class FakeProc {
 public:
  FakeProc() : root_(fs::temp_directory_path() / fmt::format("akts-proc-{}-{}", getpid(), counter_++)) {
    fs::create_directories(root_);
  }
  ~FakeProc() { fs::remove_all(root_); }
  std::string root() const { return root_.string(); }

  // A process with its threads (the first is the leader unless leader_gone).
  void add(uint32_t pid, uint32_t ppid, const std::string& comm, uint64_t start, std::vector<uint32_t> tids,
           uint32_t flags = 0, uint32_t tgid_in_status = 0) {
    fs::remove_all(root_ / std::to_string(pid));
    fs::create_directories(root_ / std::to_string(pid) / "task");
    write(pid, "stat",
          fmt::format("{} ({}) S {} {} {} 0 -1 {} 0 0 0 0 0 0 0 0 20 0 {} 0 {} 0 0\n", pid, comm, ppid, pid, pid,
                      flags, tids.size(), start));
    write(pid, "status", fmt::format("Name:\t{}\nTgid:\t{}\nPid:\t{}\n", comm, tgid_in_status ? tgid_in_status : pid, pid));
    for (uint32_t t : tids) fs::create_directories(root_ / std::to_string(pid) / "task" / std::to_string(t));
  }
  void remove(uint32_t pid) { fs::remove_all(root_ / std::to_string(pid)); }
  void set_cgroup(uint32_t pid, const std::string& path) { write(pid, "cgroup", "0::" + path + "\n"); }
  // The process exited and its parent has not reaped it: its stat says Z.
  void make_zombie(uint32_t pid) {
    auto stat = root_ / std::to_string(pid) / "stat";
    std::ifstream in(stat);
    std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    line.replace(line.find(") S "), 4, ") Z ");
    std::ofstream(stat) << line;
  }
  void remove_thread(uint32_t pid, uint32_t tid) {
    fs::remove_all(root_ / std::to_string(pid) / "task" / std::to_string(tid));
  }

 private:
  void write(uint32_t pid, const char* file, const std::string& text) {
    std::ofstream(root_ / std::to_string(pid) / file) << text;
  }
  fs::path root_;
  static inline int counter_ = 0;
};

struct Recorder {
  std::map<uint32_t, uint32_t> classes;
  std::vector<uint32_t> cleared;
  ProcessTracker::Hooks hooks() {
    return {[this](uint32_t tgid, uint32_t cls) {
              classes[tgid] = cls;
              return Status{};
            },
            [this](uint32_t tgid) {
              classes.erase(tgid);
              cleared.push_back(tgid);
              return Status{};
            }};
  }
};

class TrackerTest : public ::testing::Test {
 protected:
  ProcessTracker make(std::vector<Matcher> m = {}) {
    classifier_ = std::make_unique<Classifier>(std::move(m));
    return ProcessTracker(*classifier_, rec_.hooks(), true, proc_.root(), ops_, /*self=*/999999);
  }
  static Matcher comm(const std::string& c, uint32_t cls = AKTS_CLASS_BE) {
    Matcher m;
    m.kind = Matcher::Kind::kComm;
    m.value = c;
    m.cls = cls;
    return m;
  }
  FakeProc proc_;
  FakeOps ops_;
  Recorder rec_;
  std::unique_ptr<Classifier> classifier_;
};

TEST_F(TrackerTest, EveryThreadMovesAndGetsItsOwnPolicyBack) {
  proc_.add(100, 1, "server", 5, {100, 101, 102});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_BATCH}, {102, SCHED_IDLE}};
  auto t = make();
  ASSERT_TRUE(t.classify_explicit(100, AKTS_CLASS_LC).ok());
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  for (pid_t tid : {100, 101, 102}) EXPECT_EQ(ops_.policy[tid], kExt) << tid;
  t.restore_all();
  EXPECT_EQ(ops_.policy[100], SCHED_OTHER);
  EXPECT_EQ(ops_.policy[101], SCHED_BATCH);
  EXPECT_EQ(ops_.policy[102], SCHED_IDLE);
  EXPECT_TRUE(rec_.classes.empty());
}

TEST_F(TrackerTest, RealTimeThreadsAreLeftAlone) {
  proc_.add(100, 1, "rt", 5, {100, 101});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_FIFO}};
  auto t = make();
  ASSERT_TRUE(t.classify_explicit(100, AKTS_CLASS_LC).ok());
  EXPECT_EQ(ops_.policy[100], kExt);
  EXPECT_EQ(ops_.policy[101], SCHED_FIFO);
  EXPECT_EQ(ops_.sets[101], 0);
  // A moved thread that makes itself real-time keeps its choice on release.
  ops_.policy[100] = SCHED_RR;
  t.restore_all();
  EXPECT_EQ(ops_.policy[100], SCHED_RR);
  EXPECT_EQ(ops_.policy[101], SCHED_FIFO);
}

TEST_F(TrackerTest, NewThreadsAndThreadsThatResetThemselvesAreAdopted) {
  proc_.add(100, 1, "cyclictest", 5, {100});
  ops_.policy = {{100, SCHED_OTHER}};
  auto t = make({comm("cyclictest", AKTS_CLASS_LC)});
  t.scan();
  EXPECT_EQ(ops_.policy[100], kExt);
  proc_.add(100, 1, "cyclictest", 5, {100, 101});
  ops_.policy[101] = SCHED_BATCH;
  ops_.policy[100] = SCHED_IDLE;  // it left SCHED_EXT by itself, for a policy of its choice
  t.scan();
  EXPECT_EQ(ops_.policy[100], kExt);
  EXPECT_EQ(ops_.policy[101], kExt);
  t.restore_all();
  EXPECT_EQ(ops_.policy[100], SCHED_IDLE);  // its latest own choice, not the one before
  EXPECT_EQ(ops_.policy[101], SCHED_BATCH);
}

TEST_F(TrackerTest, AReusedPidIsANewProcess) {
  proc_.add(100, 1, "batch", 5, {100});
  ops_.policy = {{100, SCHED_OTHER}};
  auto t = make();
  ASSERT_TRUE(t.classify_explicit(100, AKTS_CLASS_LC).ok());
  // The process exits and an unrelated one gets pid 100 (another start time).
  proc_.add(100, 1, "unrelated", 9, {100});
  ops_.policy[100] = SCHED_OTHER;
  ops_.sets.clear();
  t.scan();
  EXPECT_EQ(t.managed_count(), 0u);               // the explicit class was for the old process
  EXPECT_EQ(ops_.sets[100], 0);                   // and nothing touched the new one
  EXPECT_EQ(rec_.cleared, std::vector<uint32_t>{100});
  EXPECT_FALSE(rec_.classes.count(100));
  // Released on shutdown: still nothing done to the newcomer.
  t.restore_all();
  EXPECT_EQ(ops_.sets[100], 0);
}

// A daemon that dies leaves its record; the next one takes it up.
TEST_F(TrackerTest, ARestartedTrackerKeepsExplicitClassesAndOwnPolicies) {
  proc_.add(100, 1, "server", 5, {100, 101});
  proc_.add(200, 1, "hog", 6, {200});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_BATCH}, {200, SCHED_IDLE}};
  nlohmann::json rec;
  {
    auto a = make({comm("hog")});
    ASSERT_TRUE(a.classify_explicit(100, AKTS_CLASS_LC).ok());
    a.scan();
    rec = a.record();
    // The daemon is killed here: nothing is restored.
  }
  for (pid_t tid : {100, 101, 200}) ASSERT_EQ(ops_.policy[tid], kExt);
  rec_.classes.clear();
  auto b = make({comm("hog")});
  ASSERT_TRUE(b.adopt_record(rec).ok());
  // Killed again before its first pass: its own record still holds everything.
  EXPECT_EQ(b.record(), rec);
  b.scan();
  EXPECT_EQ(b.managed_count(), 2u);
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);  // the explicit class came back
  EXPECT_EQ(rec_.classes[200], AKTS_CLASS_BE);  // the rule's
  auto again = b.record();
  EXPECT_TRUE(again["processes"][0]["explicit"].get<bool>());
  b.restore_all();
  EXPECT_EQ(ops_.policy[100], SCHED_OTHER);
  EXPECT_EQ(ops_.policy[101], SCHED_BATCH);  // its own, not SCHED_OTHER
  EXPECT_EQ(ops_.policy[200], SCHED_IDLE);
}

TEST_F(TrackerTest, RecordedThreadsNoRuleManagesGoBackAfterTheFirstPass) {
  proc_.add(200, 1, "hog", 6, {200, 201});
  ops_.policy = {{200, SCHED_BATCH}, {201, SCHED_OTHER}};
  nlohmann::json rec;
  {
    auto a = make({comm("hog")});
    a.scan();
    rec = a.record();
  }
  auto b = make();  // the new config no longer names hog
  ASSERT_TRUE(b.adopt_record(rec).ok());
  EXPECT_EQ(ops_.policy[200], kExt);  // nothing before a complete pass
  b.scan();
  EXPECT_EQ(b.managed_count(), 0u);
  EXPECT_EQ(ops_.policy[200], SCHED_BATCH);
  EXPECT_EQ(ops_.policy[201], SCHED_OTHER);
}

TEST_F(TrackerTest, ARecordIsForItsProcessesOnly) {
  proc_.add(100, 1, "server", 5, {100});
  ops_.policy = {{100, SCHED_OTHER}};
  nlohmann::json rec;
  {
    auto a = make();
    ASSERT_TRUE(a.classify_explicit(100, AKTS_CLASS_LC).ok());
    rec = a.record();
  }
  // Pid 100 is reused by an unrelated process in SCHED_EXT (someone else put it there).
  proc_.add(100, 1, "unrelated", 9, {100});
  ops_.sets.clear();
  auto b = make();
  ASSERT_TRUE(b.adopt_record(rec).ok());
  b.scan();
  EXPECT_EQ(b.managed_count(), 0u);
  EXPECT_EQ(ops_.sets[100], 0);
  auto n = ProcessTracker::release_record(rec, proc_.root(), ops_);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 0u);
  EXPECT_EQ(ops_.sets[100], 0);
}

TEST_F(TrackerTest, TheReaperGivesEveryRecordedThreadItsOwnPolicy) {
  proc_.add(100, 1, "server", 5, {100, 101, 102});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_BATCH}, {102, SCHED_FIFO}};
  nlohmann::json rec;
  {
    auto a = make();
    ASSERT_TRUE(a.classify_explicit(100, AKTS_CLASS_LC).ok());
    rec = a.record();
  }
  ops_.policy[101] = SCHED_IDLE;  // left SCHED_EXT on its own meanwhile: its choice stays
  auto n = ProcessTracker::release_record(rec, proc_.root(), ops_);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(ops_.policy[100], SCHED_OTHER);
  EXPECT_EQ(ops_.policy[101], SCHED_IDLE);
  EXPECT_EQ(ops_.policy[102], SCHED_FIFO);  // never moved
}

// What the record could not know yet: a thread born since it was written, a child forked since.
TEST_F(TrackerTest, TheReaperAlsoGivesBackWhatWasBornAfterTheRecord) {
  proc_.add(100, 1, "server", 5, {100, 101});
  proc_.add(400, 1, "stranger", 7, {400});  // in SCHED_EXT by its own choice, not akts's
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_BATCH}, {400, kExt}};
  nlohmann::json rec;
  {
    auto a = make();
    ASSERT_TRUE(a.classify_explicit(100, AKTS_CLASS_LC).ok());
    rec = a.record();
  }
  proc_.add(100, 1, "server", 5, {100, 101, 102});  // a new thread, born in SCHED_EXT
  proc_.add(300, 100, "child", 9, {300, 301});      // a child, and its child
  proc_.add(310, 300, "grandchild", 10, {310});
  ops_.policy[102] = kExt;
  ops_.policy[300] = ops_.policy[301] = ops_.policy[310] = kExt;
  auto n = ProcessTracker::release_record(rec, proc_.root(), ops_);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 6u);
  EXPECT_EQ(ops_.policy[101], SCHED_BATCH);
  for (pid_t tid : {100, 102, 300, 301, 310}) EXPECT_EQ(ops_.policy[tid], SCHED_OTHER) << tid;
  EXPECT_EQ(ops_.policy[400], kExt);  // not akts's to touch
}

TEST_F(TrackerTest, AMalformedRecordChangesNothing) {
  proc_.add(100, 1, "server", 5, {100});
  ops_.policy = {{100, kExt}};
  for (const char* text :
       {"null", "[]", R"({"processes": 3})", R"({"processes": [{"pid": 100}]})",
        R"({"processes": [{"pid": 100, "start_time": 5, "class": "rt"}]})",
        R"({"processes": [{"pid": 1, "start_time": 5, "class": "lc"}]})",
        R"({"processes": [{"pid": 100, "start_time": 5, "class": "lc", "threads": {"100": 0}}]})",
        R"({"processes": [{"pid": 100, "start_time": 5, "class": "lc", "threads": [[100]]}]})",
        R"({"processes": [{"pid": -100, "start_time": 5, "class": "lc"}]})",
        R"({"processes": [{"pid": 100, "start_time": 5, "class": "lc", "explicit": "yes"}]})",
        R"({"processes": [{"pid": 100, "start_time": 5, "class": "lc", "threads": [[99999999999, 0]]}]})"}) {
    auto rec = nlohmann::json::parse(text);
    auto t = make();
    EXPECT_FALSE(t.adopt_record(rec).ok()) << text;
    t.scan();
    EXPECT_EQ(t.managed_count(), 0u) << text;
    EXPECT_FALSE(ProcessTracker::release_record(rec, proc_.root(), ops_).ok()) << text;
    EXPECT_EQ(ops_.policy[100], kExt) << text;
  }
  // A recorded policy that was never a thread's own comes back as SCHED_OTHER.
  auto odd = nlohmann::json::parse(R"({"processes": [{"pid": 100, "start_time": 5, "class": "lc",
                                                      "threads": [[100, 1]]}]})");
  auto n = ProcessTracker::release_record(odd, proc_.root(), ops_);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(ops_.policy[100], SCHED_OTHER);
}

TEST_F(TrackerTest, RestoreActsOnlyOnTheProcessItManaged) {
  proc_.add(100, 1, "batch", 5, {100, 101});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_OTHER}};
  auto t = make({comm("batch")});
  t.scan();
  // Between the last scan and shutdown the process is replaced under the same pid.
  proc_.add(100, 1, "batch", 7, {100, 101});
  ops_.sets.clear();
  t.restore_all();
  EXPECT_EQ(ops_.sets[100], 0);
  EXPECT_EQ(ops_.sets[101], 0);
}

TEST_F(TrackerTest, ALeaderThatExitsFirstKeepsTheProcessManaged) {
  proc_.add(100, 1, "server", 5, {100, 101});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_OTHER}};
  auto t = make({comm("server", AKTS_CLASS_LC)});
  t.scan();
  proc_.remove_thread(100, 100);  // the leader is gone; /proc/100 stays while 101 runs
  ops_.policy.erase(100);
  t.scan();
  EXPECT_EQ(t.managed_count(), 1u);
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  EXPECT_TRUE(rec_.cleared.empty());
  t.restore_all();
  EXPECT_EQ(ops_.policy[101], SCHED_OTHER);
}

TEST_F(TrackerTest, RefusesWhatItCannotHonour) {
  proc_.add(100, 1, "app", 5, {100, 101});
  proc_.add(101, 1, "app", 5, {101}, 0, /*tgid_in_status=*/100);  // a thread id
  proc_.add(50, 2, "kworker/0:1", 1, {50}, 0x00200000);
  proc_.add(1, 0, "init", 1, {1});
  ops_.policy = {{100, SCHED_OTHER}, {101, SCHED_OTHER}, {50, SCHED_OTHER}, {1, SCHED_OTHER}};
  auto t = make();
  for (uint32_t pid : {101u, 50u, 1u, 999999u, 4242u}) {
    auto st = t.classify_explicit(pid, AKTS_CLASS_LC);
    EXPECT_FALSE(st.ok()) << pid;
    if (!st.ok()) {
      EXPECT_EQ(st.error().kind, ErrorKind::kInvalidArgument) << pid;
    }
  }
  EXPECT_NE(t.classify_explicit(101, AKTS_CLASS_LC).error().message.find("thread of process 100"), std::string::npos);
  EXPECT_EQ(t.managed_count(), 0u);
  EXPECT_TRUE(ops_.sets.empty());
  EXPECT_TRUE(rec_.classes.empty());
}

TEST_F(TrackerTest, NamesFollowExecAndAreValidUtf8) {
  proc_.add(100, 1, "akts", 5, {100});
  ops_.policy = {{100, SCHED_OTHER}};
  auto t = make();
  ASSERT_TRUE(t.classify_explicit(100, AKTS_CLASS_LC).ok());
  proc_.add(100, 1, "llama-server", 5, {100});
  t.scan();
  EXPECT_EQ(t.to_json()[0]["comm"], "llama-server");
  proc_.add(100, 1, "bad\xff\xc3name", 5, {100});  // the kernel cuts names at 15 bytes, mid-character
  t.scan();
  std::string dumped = t.to_json().dump();  // throws on invalid UTF-8
  EXPECT_NE(dumped.find("bad\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace akts

namespace akts {
namespace {

// What an event names, handled alone: a new process, an exec that renames it, a reused pid, an exit.
TEST_F(TrackerTest, ARefreshHandlesOneProcessAsAPassWould) {
  auto t = make({comm("server", AKTS_CLASS_LC), comm("hog", AKTS_CLASS_BE)});
  proc_.add(100, 1, "bash", 5, {100});
  ops_.policy = {{100, SCHED_OTHER}, {200, SCHED_OTHER}};
  t.refresh(100);  // a fork: no rule names it
  EXPECT_FALSE(rec_.classes.count(100));
  proc_.add(100, 1, "server", 5, {100});
  t.refresh(100);  // its exec
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  EXPECT_EQ(ops_.policy[100], kExt);
  proc_.add(200, 100, "bash", 9, {200});
  t.refresh(200);  // a child inherits its parent's class
  EXPECT_EQ(rec_.classes[200], AKTS_CLASS_LC);
  proc_.add(200, 100, "hog", 9, {200});
  t.refresh(200);  // and execs something a rule names otherwise
  EXPECT_EQ(rec_.classes[200], AKTS_CLASS_BE);
  proc_.remove(100);
  t.refresh(100);  // its exit
  EXPECT_FALSE(rec_.classes.count(100));
  EXPECT_EQ(t.managed_count(), 1u);
  // A pid reused before its old process's events were handled: released, then the new one judged on its own.
  proc_.add(200, 1, "bash", 50, {200});
  t.refresh(200);
  EXPECT_FALSE(rec_.classes.count(200));
  EXPECT_EQ(t.managed_count(), 0u);
  t.refresh(12345);  // a process already gone: nothing
  t.refresh(2);      // kthreadd and the daemon itself are never touched
  EXPECT_EQ(t.managed_count(), 0u);
}

}  // namespace
}  // namespace akts

namespace akts {
namespace {

// The kernel reports an exit before the parent reaps: the process is a zombie then, and its exit must still
// release it; a leader that exited alone, its threads running, must not be.
TEST_F(TrackerTest, AnExitReleasesAZombieButNotALeaderWhoseThreadsRun) {
  auto t = make({comm("server", AKTS_CLASS_LC)});
  proc_.add(100, 1, "server", 5, {100});
  proc_.add(200, 1, "server", 6, {200, 201});
  ops_.policy = {{100, SCHED_OTHER}, {200, SCHED_OTHER}, {201, SCHED_OTHER}};
  t.refresh(100);
  t.refresh(200);
  ASSERT_EQ(t.managed_count(), 2u);
  auto zombie = [&](uint32_t pid, std::vector<uint32_t> tids, uint64_t start) {
    proc_.add(pid, 1, "server", start, tids);
    proc_.make_zombie(pid);
  };
  zombie(100, {100}, 5);  // exited, its parent has not reaped it yet
  t.exited(100);
  EXPECT_FALSE(rec_.classes.count(100));
  zombie(200, {200, 201}, 6);  // the leader exited, thread 201 runs on
  t.exited(200);
  EXPECT_EQ(rec_.classes[200], AKTS_CLASS_LC);
  proc_.remove_thread(200, 201);  // and then the last thread: the process has ended
  t.exited(200);
  EXPECT_FALSE(rec_.classes.count(200));
  EXPECT_EQ(t.managed_count(), 0u);
  t.exited(300);  // never managed: nothing
}

}  // namespace
}  // namespace akts

namespace akts {
namespace {

// A scan's listing is read without the lock, over seconds on a busy machine: an event handled meanwhile is newer
// than what the listing shows, and the pass must not undo it.
TEST_F(TrackerTest, AScanDoesNotUndoWhatAnEventHandledAfterItsListingWasRead) {
  auto t = make({comm("server", AKTS_CLASS_LC)});
  proc_.add(100, 1, "bash", 5, {100});
  proc_.add(200, 1, "server", 6, {200});
  ops_.policy = {{100, SCHED_OTHER}, {200, SCHED_OTHER}};
  t.scan();
  ASSERT_EQ(rec_.classes[200], AKTS_CLASS_LC);
  uint64_t since = t.event_seq();
  auto listing = t.list_processes();  // shows 100 as bash and 200 alive
  ASSERT_TRUE(listing);
  proc_.add(100, 1, "server", 5, {100});  // 100 execs the server...
  t.refresh(100);                          // ...and its event is handled
  ASSERT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  proc_.make_zombie(200);  // 200 exits (a zombie)...
  t.exited(200);  // ...and its exit is handled
  ASSERT_FALSE(rec_.classes.count(200));
  t.apply(*listing, since);  // the pass with the older listing
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC) << "the pass reclassified 100 by its name before the exec";
  EXPECT_FALSE(rec_.classes.count(200)) << "the pass took the exited 200 back";
  t.scan();  // a later scan leaves the zombie alone too
  EXPECT_FALSE(rec_.classes.count(200));
  EXPECT_EQ(t.managed_count(), 1u);
}

// A reload's new rules: the next pass judges every process by them; explicit classes outrank them and stay.
TEST_F(TrackerTest, NewRulesApplyAtTheNextPassAndExplicitClassesStay) {
  proc_.add(100, 1, "server", 5, {100});
  proc_.add(200, 1, "batch", 5, {200});
  proc_.add(300, 1, "pinned", 5, {300});
  ops_.policy = {{100, SCHED_OTHER}, {200, SCHED_BATCH}, {300, SCHED_OTHER}};
  auto t = make({comm("server", AKTS_CLASS_LC)});
  t.scan();
  ASSERT_TRUE(t.classify_explicit(300, AKTS_CLASS_LC).ok());
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  EXPECT_FALSE(rec_.classes.count(200));
  const uint64_t gen = t.rules_generation();
  // server is no rule's any more, batch is; pinned's explicit class stays though a rule names it as be.
  t.set_rules({comm("batch", AKTS_CLASS_BE), comm("pinned", AKTS_CLASS_BE)});
  EXPECT_GT(t.rules_generation(), gen);
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);  // nothing moves before the pass
  t.scan();
  EXPECT_FALSE(rec_.classes.count(100));
  EXPECT_EQ(ops_.policy[100], SCHED_OTHER);  // its own policy back
  EXPECT_EQ(rec_.classes[200], AKTS_CLASS_BE);
  EXPECT_EQ(ops_.policy[200], kExt);
  EXPECT_EQ(rec_.classes[300], AKTS_CLASS_LC);
  EXPECT_EQ(t.managed_count(), 2u);
}

// A listing read under the old rules is not applied after new ones came: read without cgroups (no rule needed
// them), it would judge a process the new cgroup rule names as named by none, and release it for a pass.
TEST_F(TrackerTest, APassUnderWayStopsWhenNewRulesCome) {
  proc_.add(100, 1, "server", 5, {100});
  proc_.set_cgroup(100, "/serving");
  proc_.add(200, 1, "other", 5, {200});
  ops_.policy = {{100, SCHED_OTHER}, {200, SCHED_OTHER}};
  auto t = make({comm("server", AKTS_CLASS_LC)});
  t.scan();
  ASSERT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  auto listing = t.list_processes();  // no cgroups read: no rule needs them
  ASSERT_TRUE(listing);
  ASSERT_TRUE(listing->at(100).cgroup.empty());
  Matcher cg;
  cg.kind = Matcher::Kind::kCgroup;
  cg.value = "/serving";
  cg.cls = AKTS_CLASS_LC;
  bool swapped = false;
  t.apply(*listing, t.event_seq(), nullptr, [&] {
    if (!swapped) t.set_rules({cg});  // between two processes, as the worker lets a request in
    swapped = true;
  });
  EXPECT_TRUE(rec_.cleared.empty()) << "released by a listing of the old rules";
  EXPECT_EQ(ops_.policy[100], kExt);
  t.scan();  // a listing of the new rules: the cgroup rule names it
  EXPECT_TRUE(rec_.cleared.empty());
  EXPECT_EQ(rec_.classes[100], AKTS_CLASS_LC);
  EXPECT_EQ(t.to_json()[0]["reason"], "cgroup /serving");
}

}  // namespace
}  // namespace akts
