// The daemon's state file, its lock and the reaper's work, without a daemon:
// a temporary folder, a fake /proc and fake scheduling-policy calls.
#include "daemon/state_file.h"

#include <sched.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "daemon/reaper.h"
#include "fake_sched_policy_ops.h"

namespace akts {
namespace {

namespace fs = std::filesystem;
constexpr int kExt = 7;

using Ops = FakeSchedPolicyOps;

class StateFileTest : public ::testing::Test {
 protected:
  StateFileTest() : dir_(fs::temp_directory_path() / fmt::format("akts-state-{}-{}", getpid(), n_++)) {
    fs::create_directories(dir_ / "proc" / "100" / "task" / "100");
    fs::create_directories(dir_ / "proc" / "100" / "task" / "101");
    std::ofstream(dir_ / "proc" / "100" / "stat") << "100 (server) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 2 0 5 0 0\n";
  }
  ~StateFileTest() override { fs::remove_all(dir_); }
  std::string path() const { return (dir_ / "run" / "state.json").string(); }
  std::string proc() const { return (dir_ / "proc").string(); }
  nlohmann::json state(uint64_t pid, bool clean) const {
    return {{"version", kStateVersion},
            {"daemon_pid", pid},
            {"clean", clean},
            {"reaped", false},
            {"selected", {{"slot", 1}, {"policy", "throughput"}}},
            {"tracker",
             {{"processes",
               {{{"pid", 100}, {"start_time", 5}, {"class", "lc"}, {"explicit", true},
                 {"threads", {{100, SCHED_OTHER}, {101, SCHED_BATCH}}}}}}}}};
  }
  fs::path dir_;
  static inline int n_ = 0;
};

TEST_F(StateFileTest, SavesAtomicallyAndLoadsWhatItSaved) {
  auto none = load_state(path());
  ASSERT_TRUE(none.ok()) << none.error().to_string();
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(save_state(path(), state(42, false).dump()).ok());
  EXPECT_EQ(fs::status(path()).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  auto back = load_state(path());
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ(**back, state(42, false));
  for (const auto& e : fs::directory_iterator(dir_ / "run"))
    EXPECT_EQ(e.path().extension(), e.path().filename() == "state.json" ? ".json" : ".lock") << e.path();
}

TEST_F(StateFileTest, RefusesAFileOfAnotherLayoutOrShape) {
  fs::create_directories(dir_ / "run");
  const std::string ok_rest = R"(, "daemon_pid": 1, "clean": false, "reaped": false, "tracker": {"processes": []}})";
  for (const std::string& text :
       {std::string(""), std::string("[]"), std::string("not json"), R"({"version": 2)" + ok_rest,
        R"({"version": "1")" + ok_rest, std::string(R"({"version": 1})"),
        std::string(R"({"version": 1, "daemon_pid": -3, "clean": false, "reaped": false, "tracker": {}})"),
        std::string(R"({"version": 1, "daemon_pid": 3, "clean": "no", "reaped": false, "tracker": {}})"),
        std::string(R"({"version": 1, "daemon_pid": 3, "clean": false, "reaped": false, "tracker": []})"),
        std::string(R"({"version": 1, "daemon_pid": 3, "clean": false, "reaped": false, "tracker": {}, "selected": 1})")}) {
    std::ofstream(path(), std::ios::trunc) << text;
    auto r = load_state(path());
    EXPECT_FALSE(r.ok()) << text;
  }
  // A first state without a selection yet is fine.
  std::ofstream(path(), std::ios::trunc) << R"({"version": 1, "selected": null)" + ok_rest;
  EXPECT_TRUE(load_state(path()).ok());
}

TEST_F(StateFileTest, TheSelectionFileIsRewrittenInPlace) {
  EXPECT_FALSE(load_selection(path()).has_value());
  SelectionFile f(path());
  ASSERT_TRUE(f.write({{"daemon_pid", 42}, {"slot", 1}, {"policy", "throughput"}}).ok());
  ASSERT_TRUE(f.write({{"daemon_pid", 42}, {"slot", 0}}).ok());  // shorter: the padding keeps it whole
  auto sel = load_selection(path());
  ASSERT_TRUE(sel.has_value());
  EXPECT_EQ((*sel)["slot"], 0);
  EXPECT_FALSE(sel->contains("policy"));
  EXPECT_EQ(fs::file_size(selection_path(path())), SelectionFile::kBlock);
  EXPECT_FALSE(f.write({{"policy", std::string(600, 'x')}}).ok());
}

TEST_F(StateFileTest, OneDaemonAtATime) {
  auto a = StateLock::try_acquire(path());
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  auto b = StateLock::try_acquire(path());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().kind, ErrorKind::kBusy);
  auto waited = StateLock::acquire(path(), std::chrono::milliseconds(50));
  EXPECT_FALSE(waited.ok());
  a->release();
  EXPECT_TRUE(StateLock::try_acquire(path()).ok());
}

TEST_F(StateFileTest, TheReaperGivesADeadDaemonsThreadsBackOnce) {
  Ops ops;
  ops.policy = {{100, kExt}, {101, kExt}};
  ASSERT_TRUE(save_state(path(), state(4242, false).dump()).ok());
  // Another daemon's file, or a clean one: nothing to do.
  auto other = reap_state(path(), 4343, proc(), ops);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(*other, 0u);
  EXPECT_EQ(ops.policy[100], kExt);
  auto n = reap_state(path(), 4242, proc(), ops);
  ASSERT_TRUE(n.ok()) << n.error().to_string();
  EXPECT_EQ(*n, 2u);
  EXPECT_EQ(ops.policy[100], SCHED_OTHER);
  EXPECT_EQ(ops.policy[101], SCHED_BATCH);
  auto after = load_state(path());
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_TRUE((**after)["reaped"].get<bool>());
  EXPECT_TRUE((**after)["tracker"]["processes"][0]["explicit"].get<bool>());  // kept for the next daemon
  EXPECT_TRUE((**after)["tracker"]["processes"][0]["threads"].empty());
  ops.policy = {{100, kExt}, {101, kExt}};  // moved again by a new daemon: a second reap must not touch them
  auto again = reap_state(path(), 4242, proc(), ops);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0u);
  EXPECT_EQ(ops.policy[100], kExt);
  ASSERT_TRUE(save_state(path(), state(5000, true).dump()).ok());
  auto clean = reap_state(path(), 5000, proc(), ops);
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(*clean, 0u);
}

TEST_F(StateFileTest, TheReaperWaitsForTheLockAndGivesUpIfANewDaemonKeepsIt) {
  Ops ops;
  ops.policy = {{100, kExt}, {101, kExt}};
  ASSERT_TRUE(save_state(path(), state(4242, false).dump()).ok());
  auto held = StateLock::try_acquire(path());
  ASSERT_TRUE(held.ok());
  // reap_state waits for the lock (10 s by default): a new daemon that keeps it adopts instead.
  auto t0 = std::chrono::steady_clock::now();
  auto n = reap_state(path(), 4242, proc(), ops, std::chrono::milliseconds(300));
  EXPECT_FALSE(n.ok());
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
  EXPECT_EQ(ops.policy[100], kExt);
}

}  // namespace
}  // namespace akts
