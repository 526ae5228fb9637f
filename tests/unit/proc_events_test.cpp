// The proc connector's messages parsed from crafted buffers, and (where this
// machine lets a test subscribe: root, CONFIG_PROC_EVENTS) the real
// connector reporting a child's fork, exec and exit.
#include "classify/proc_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

namespace akts {
namespace {

// One netlink message carrying one proc_event.
std::vector<uint8_t> message(const proc_event& ev, uint32_t idx = CN_IDX_PROC, size_t cut = 0) {
  const size_t len = NLMSG_HDRLEN + sizeof(cn_msg) + sizeof(proc_event);
  std::vector<uint8_t> buf(NLMSG_ALIGN(len));
  nlmsghdr nl{};
  nl.nlmsg_len = static_cast<uint32_t>(len - cut);
  nl.nlmsg_type = NLMSG_DONE;
  cn_msg cn{};
  cn.id.idx = idx;
  cn.id.val = CN_VAL_PROC;
  cn.len = static_cast<uint16_t>(sizeof(proc_event) - cut);
  std::memcpy(buf.data(), &nl, sizeof(nl));
  std::memcpy(buf.data() + NLMSG_HDRLEN, &cn, sizeof(cn));
  std::memcpy(buf.data() + NLMSG_HDRLEN + sizeof(cn), &ev, sizeof(ev));
  return buf;
}

proc_event make_event(enum proc_event::what what, int pid, int tgid) {
  proc_event ev{};
  ev.what = what;
  ev.timestamp_ns = 1234;
  if (what == proc_event::PROC_EVENT_FORK) {
    ev.event_data.fork.parent_pid = ev.event_data.fork.parent_tgid = 1;
    ev.event_data.fork.child_pid = pid;
    ev.event_data.fork.child_tgid = tgid;
  } else {
    ev.event_data.exec.process_pid = pid;  // exec, comm and exit share the layout of their first two fields
    ev.event_data.exec.process_tgid = tgid;
  }
  return ev;
}

TEST(ProcEvents, MessagesParseIntoForksExecsRenamesAndExits) {
  std::vector<uint8_t> buf;
  for (const auto& m : {message(make_event(proc_event::PROC_EVENT_FORK, 10, 10)),
                        message(make_event(proc_event::PROC_EVENT_FORK, 11, 10)),
                        message(make_event(proc_event::PROC_EVENT_EXEC, 10, 10)),
                        message(make_event(proc_event::PROC_EVENT_UID, 10, 10)),  // skipped
                        message(make_event(proc_event::PROC_EVENT_COMM, 11, 10)),
                        message(make_event(proc_event::PROC_EVENT_EXEC, 10, 10), /*idx=*/7),  // another connector
                        message(make_event(proc_event::PROC_EVENT_EXIT, 10, 10))})
    buf.insert(buf.end(), m.begin(), m.end());
  auto evs = parse_proc_events(buf);
  ASSERT_EQ(evs.size(), 5u);
  EXPECT_TRUE(evs[0].new_process());
  EXPECT_EQ(evs[1].kind, ProcEvent::Kind::kFork);
  EXPECT_FALSE(evs[1].new_process());  // a thread
  EXPECT_EQ(evs[2].kind, ProcEvent::Kind::kExec);
  EXPECT_EQ(evs[3].kind, ProcEvent::Kind::kComm);
  EXPECT_EQ(evs[3].pid, 11u);
  EXPECT_EQ(evs[4].kind, ProcEvent::Kind::kExit);
  EXPECT_EQ(evs[4].timestamp_ns, 1234u);
}

TEST(ProcEvents, ATruncatedMessageEndsTheBufferAndKeepsWhatCameBefore) {
  auto good = message(make_event(proc_event::PROC_EVENT_EXEC, 10, 10));
  auto buf = good;
  auto bad = message(make_event(proc_event::PROC_EVENT_EXEC, 20, 20));
  buf.insert(buf.end(), bad.begin(), bad.begin() + 20);  // half a header
  auto evs = parse_proc_events(buf);
  ASSERT_EQ(evs.size(), 1u);
  EXPECT_EQ(evs[0].pid, 10u);
  EXPECT_TRUE(parse_proc_events({}).empty());
  auto shortev = message(make_event(proc_event::PROC_EVENT_FORK, 30, 30), CN_IDX_PROC, /*cut=*/sizeof(proc_event) - 8);
  EXPECT_TRUE(parse_proc_events(shortev).empty());  // too short to hold a fork's pids
  std::vector<uint8_t> garbage(100, 0xff);
  EXPECT_TRUE(parse_proc_events(garbage).empty());
}

TEST(ProcEvents, TheRealConnectorReportsAChildsForkExecAndExit) {
  auto pc = ProcConnector::open();
  if (!pc) GTEST_SKIP() << "this machine does not let the test subscribe: " << pc.error().to_string();
  pid_t child = ::fork();
  if (child == 0) {
    ::execl("/bin/true", "true", nullptr);
    ::_exit(127);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  bool fork = false, exec = false, exit = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!(fork && exec && exit) && std::chrono::steady_clock::now() < deadline) {
    pollfd p{(*pc)->fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    std::vector<ProcEvent> evs;
    bool lost = false;
    ASSERT_TRUE((*pc)->read(evs, &lost));
    for (const auto& e : evs) {
      if (e.tgid != static_cast<uint32_t>(child)) continue;
      fork = fork || e.new_process();
      exec = exec || e.kind == ProcEvent::Kind::kExec;
      exit = exit || e.kind == ProcEvent::Kind::kExit;
    }
  }
  EXPECT_TRUE(fork);
  EXPECT_TRUE(exec);
  EXPECT_TRUE(exit);
}

}  // namespace
}  // namespace akts
