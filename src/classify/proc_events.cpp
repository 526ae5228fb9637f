// The proc connector: subscribing over netlink and reading its messages.
#include "classify/proc_events.h"

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace akts {
namespace {

// Sends PROC_CN_MCAST_LISTEN or _IGNORE.
Status send_op(int fd, proc_cn_mcast_op op) {
  // nlmsghdr, cn_msg (whose flexible data member the operation fills), the operation.
  alignas(nlmsghdr) uint8_t msg[NLMSG_HDRLEN + sizeof(cn_msg) + sizeof(op)]{};
  nlmsghdr nl{};
  nl.nlmsg_len = sizeof(msg);
  nl.nlmsg_type = NLMSG_DONE;
  nl.nlmsg_pid = 0;  // the kernel fills in the port it bound
  cn_msg cn{};
  cn.id.idx = CN_IDX_PROC;
  cn.id.val = CN_VAL_PROC;
  cn.len = sizeof(op);
  std::memcpy(msg, &nl, sizeof(nl));
  std::memcpy(msg + NLMSG_HDRLEN, &cn, sizeof(cn));
  std::memcpy(msg + NLMSG_HDRLEN + sizeof(cn), &op, sizeof(op));
  if (::send(fd, &msg, sizeof(msg), 0) != static_cast<ssize_t>(sizeof(msg)))
    return sys_error("proc connector: cannot subscribe", errno);
  return {};
}

}  // namespace

std::vector<ProcEvent> parse_proc_events(std::span<const uint8_t> buf) {
  std::vector<ProcEvent> out;
  size_t off = 0;
  while (off + sizeof(nlmsghdr) <= buf.size()) {
    nlmsghdr nl;
    std::memcpy(&nl, buf.data() + off, sizeof(nl));
    if (nl.nlmsg_len < sizeof(nlmsghdr) || nl.nlmsg_len > buf.size() - off) break;
    const size_t body = off + NLMSG_HDRLEN;
    const size_t end = off + nl.nlmsg_len;
    off += NLMSG_ALIGN(nl.nlmsg_len);
    if (nl.nlmsg_type == NLMSG_ERROR || nl.nlmsg_type == NLMSG_NOOP) continue;
    if (end - body < sizeof(cn_msg)) continue;
    cn_msg cn;
    std::memcpy(&cn, buf.data() + body, sizeof(cn));
    if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC) continue;
    // The event's fixed head (what, cpu, timestamp) and the largest member read here (fork: four pids).
    constexpr size_t kHead = offsetof(proc_event, event_data);
    constexpr size_t kNeed = kHead + sizeof(proc_event::event_data.fork);
    if (cn.len < kNeed || end - body - sizeof(cn_msg) < kNeed) continue;
    proc_event ev;
    std::memset(&ev, 0, sizeof(ev));
    std::memcpy(&ev, buf.data() + body + sizeof(cn_msg), std::min<size_t>(sizeof(ev), end - body - sizeof(cn_msg)));
    ProcEvent e;
    e.timestamp_ns = ev.timestamp_ns;
    switch (ev.what) {
      case proc_event::PROC_EVENT_FORK:
        e.kind = ProcEvent::Kind::kFork;
        e.pid = static_cast<uint32_t>(ev.event_data.fork.child_pid);
        e.tgid = static_cast<uint32_t>(ev.event_data.fork.child_tgid);
        break;
      case proc_event::PROC_EVENT_EXEC:
        e.kind = ProcEvent::Kind::kExec;
        e.pid = static_cast<uint32_t>(ev.event_data.exec.process_pid);
        e.tgid = static_cast<uint32_t>(ev.event_data.exec.process_tgid);
        break;
      case proc_event::PROC_EVENT_COMM:
        e.kind = ProcEvent::Kind::kComm;
        e.pid = static_cast<uint32_t>(ev.event_data.comm.process_pid);
        e.tgid = static_cast<uint32_t>(ev.event_data.comm.process_tgid);
        break;
      case proc_event::PROC_EVENT_EXIT:
        e.kind = ProcEvent::Kind::kExit;
        e.pid = static_cast<uint32_t>(ev.event_data.exit.process_pid);
        e.tgid = static_cast<uint32_t>(ev.event_data.exit.process_tgid);
        break;
      default:
        continue;
    }
    out.push_back(e);
  }
  return out;
}

Result<std::unique_ptr<ProcConnector>> ProcConnector::open() {
  Fd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR));
  if (!fd) return sys_error("proc connector: no netlink connector socket", errno);
  // A fork storm queues many events at once: a large buffer (root may exceed rmem_max) keeps them.
  int size = 8 << 20;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  sockaddr_nl addr{};
  addr.nl_family = AF_NETLINK;
  addr.nl_groups = CN_IDX_PROC;
  addr.nl_pid = 0;  // the kernel picks a port
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return sys_error("proc connector: cannot join its group (CAP_NET_ADMIN? CONFIG_PROC_EVENTS? the host's network "
                     "namespace: a container needs --network=host)", errno);
  }
  if (auto st = send_op(fd.get(), PROC_CN_MCAST_LISTEN); !st) {
    Error e = st.error();
    e.message += " (the connector exists in the host's network namespace only: a container needs --network=host)";
    return e;
  }
  return std::unique_ptr<ProcConnector>(new ProcConnector(std::move(fd)));
}

ProcConnector::~ProcConnector() {
  if (fd_) (void)send_op(fd_.get(), PROC_CN_MCAST_IGNORE);  // then the Fd closes it
}

Status ProcConnector::read(std::vector<ProcEvent>& out, bool* lost) {
  alignas(nlmsghdr) uint8_t buf[16384];
  // A bounded batch: under a flood the caller handles these and comes back, rather than read forever.
  for (int datagrams = 0; datagrams < 256; ++datagrams) {
    sockaddr_nl from{};
    socklen_t len = sizeof(from);
    ssize_t n = ::recvfrom(fd_.get(), buf, sizeof(buf), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
      if (errno == ENOBUFS) {  // the kernel dropped events; the socket goes on
        if (lost) *lost = true;
        continue;
      }
      return sys_error("proc connector: recv", errno);
    }
    if (len < sizeof(from) || from.nl_family != AF_NETLINK || from.nl_pid != 0) continue;  // not the kernel's
    auto evs = parse_proc_events({buf, static_cast<size_t>(n)});
    out.insert(out.end(), evs.begin(), evs.end());
  }
  return {};
}

}  // namespace akts
