// The control socket: a UNIX stream socket carrying newline-delimited
// JSON-RPC requests and responses. Driven by the daemon's poll loop: the
// server hands out its descriptors and is told which are ready. It never
// blocks: answers wait in a per-client buffer until the socket takes them.
//
// What a misbehaving client can and cannot do:
//   - hold connections: at max_clients, a new connection evicts the least
//     recently active client that is idle (no request unread or unanswered) or
//     stalled (nothing answered and read for stall_timeout: a line sent a byte
//     at a time, answers not read), or, when every client is busy and
//     progressing, waits in the kernel's listen backlog (its connect() done, its
//     request unread) until a client leaves or stalls, at no cost to the loop; a
//     connect() past a full backlog (64 waiting) waits in the kernel, for the
//     client's own timeout. The victim is closed only once the newcomer is
//     accepted. Clients idle for idle_timeout are closed. A client evicted with
//     every answer handed to the kernel gets a last line before the close: a
//     kBusy error with id null and data {retry_after_ms}, meaning every request
//     it sent that has no answer before that line was not run (notifications,
//     never answered, ran; rpc_call comes back); one evicted with answers still
//     unsent is closed without it;
//   - flood requests: each client gets at most lines_per_turn answers per
//     turn of the loop, and none while its unread answers pass half of
//     max_output, so one busy client cannot hold the others;
//   - stop reading: its answers wait (no more are made for it) and it is
//     closed when idle for idle_timeout, when evicted as stalled, or once a
//     single answer would take it past max_output; nobody else waits for it;
//   - send a line past kMaxRequestBytes: it gets an error, the rest of that
//     line is discarded, and its later lines are served;
//   - half-close (shutdown(SHUT_WR), as socat and nc -N do): every request it
//     sent is answered (a last line without a newline too), then it is closed.
#pragma once

#include <poll.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/fd.h"
#include "common/result.h"
#include "control/jsonrpc.h"

namespace akts::control {

struct ServerLimits {
  size_t max_clients = 64;
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds stall_timeout{2000};  // a client busy this long without progress may be evicted
  size_t max_output = size_t{1} << 20;  // answers a client has not read yet
  size_t read_budget = size_t{256} << 10;  // bytes read from one client per readiness, for fairness
  size_t lines_per_turn = 64;              // requests answered per client per turn
};

class UnixServer {
 public:
  using Clock = std::chrono::steady_clock;

  // Binds `path` (mode `mode`, group `group` unless -1). Refuses when another
  // process is listening there, or when something other than a socket sits at
  // the path; removes a stale socket left by a dead daemon.
  static Result<std::unique_ptr<UnixServer>> listen(const std::string& path, mode_t mode, const Dispatcher& d,
                                                    ServerLimits limits = {}, gid_t group = static_cast<gid_t>(-1));
  ~UnixServer();

  // Descriptors to poll, listener first: POLLIN, and POLLOUT where answers wait. The listener's events are 0
  // while the server is full of busy clients: call again now and then (the daemon's loop does at
  // every tick, 100 ms) for it to look for a client that has stalled since.
  std::vector<pollfd> poll_fds() const;
  // Handles readiness reported by poll() for the fds returned above.
  void on_ready(const std::vector<pollfd>& fds);
  // Closes clients idle for longer than the idle timeout (call it now and then).
  void sweep(Clock::time_point now);
  // True when requests already received wait for their turn: poll without
  // blocking and call on_ready() again.
  bool backlog() const;
  size_t client_count() const { return clients_.size(); }
  size_t accepted() const { return accepted_.load(std::memory_order_relaxed); }  // connections since listen()
  const std::string& path() const { return path_; }

 private:
  struct Client {
    std::string in;   // received, not yet a full line
    std::string out;  // answers not yet sent
    Clock::time_point last_active;
    Clock::time_point last_progress;  // connected, or last had every answer read
    size_t answered = 0;        // answers made in this turn
    bool eof = false;           // the peer will send nothing more
    bool discarding = false;    // skipping the rest of an oversize line
    bool backlog = false;       // complete lines left for the next turn
    Caller caller;              // the peer's credentials, taken at accept (SO_PEERCRED)
    Fd fd;                      // its connection, closed with it (clients_ is keyed by its number)
  };
  UnixServer(std::string path, Fd fd, const Dispatcher& d, ServerLimits limits)
      : path_(std::move(path)), listen_fd_(std::move(fd)), d_(d), limits_(limits) {}
  void accept_clients();
  // The client to close for room: the least recently active one that is idle or stalled; -1 when every client is
  // busy and progressing.
  int least_recent_evictable() const;
  // Closes it, with the notice when every answer it was owed went out.
  void evict(int fd);
  // Reads what is there and answers complete lines; false when the client is to be dropped.
  bool read_from(int fd, Client& c);
  // Answers up to lines_per_turn complete lines (and, at EOF, a last unterminated one).
  void answer_lines(Client& c, bool at_eof);
  // Serves a client: its backlog, what it sent, its pending answers. false: drop it.
  bool serve(int fd, Client& c, short revents);
  // Sends what the socket takes now; false on a broken connection.
  bool flush(int fd, Client& c);
  void drop(int fd);  // erases the client: its Fd closes the connection

  std::string path_;
  Fd listen_fd_;
  Clock::time_point accept_paused_until_{};  // after EMFILE: do not spin on a listener we cannot drain
  std::atomic<size_t> accepted_{0};
  Clock::time_point full_until_{};           // full of busy clients: the listener rests until a slot frees or then
  const Dispatcher& d_;
  ServerLimits limits_;
  std::unordered_map<int, Client> clients_;
};

// A JSON-RPC response as the client sees it: its result, or its error as an
// Error (invalid params/request and unknown methods: kInvalidArgument; busy:
// kBusy; others: kKernel). Never throws, whatever the answer holds.
Result<json> result_of(const json& response);

// Client side: one request, one response, within timeout_ms (connect() included). Evicted with the notice
// above, it connects again after the pause the daemon asked for, doubled each time and spread at random, for at
// most 10 s (or timeout_ms, if shorter): then the error is kBusy, with the daemon's reason. The request runs at
// most once: it is sent again only when the daemon said it was not run. It returns by timeout_ms.
Result<json> rpc_call(const std::string& socket_path, const std::string& method, const json& params,
                      int timeout_ms = 10000);

}  // namespace akts::control
