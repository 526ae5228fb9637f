// The control socket's transport under misbehaving clients: half-close,
// oversize lines after a newline, slow readers, idle connections, invalid
// UTF-8. A real UNIX socket and poll loop; a trivial method set behind it.
#include "control/unix_server.h"
#include "control/audit.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace akts::control {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("akts-sock-{}-{}", getpid(), n_++);
    fs::create_directories(dir_);
    path_ = (dir_ / "s.sock").string();
    d_.add("echo", [](const json& p) -> Result<json> { return p; });
    d_.add("big", [](const json&) -> Result<json> { return json(std::string(100000, 'x')); });
    d_.add("raw", [](const json&) -> Result<json> { return json{{"comm", std::string("ab\xff\xc3")}}; });
  }
  void TearDown() override {
    stop();
    fs::remove_all(dir_);
  }
  void start(ServerLimits limits = {}) {
    auto s = UnixServer::listen(path_, 0600, d_, limits);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    server_ = std::move(*s);
    loop_ = std::thread([this] {
      while (!done_) {
        auto fds = server_->poll_fds();
        ::poll(fds.data(), fds.size(), 10);
        server_->on_ready(fds);
        server_->sweep(UnixServer::Clock::now());
      }
    });
  }
  void stop() {
    done_ = true;
    if (loop_.joinable()) loop_.join();
    server_.reset();
  }
  int connect_client() {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof(a.sun_path) - 1);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }
  static void send_text(int fd, const std::string& s) {
    size_t off = 0;
    while (off < s.size()) {
      ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
      ASSERT_GT(n, 0);
      off += static_cast<size_t>(n);
    }
  }
  // Reads until EOF (or timeout); returns the lines.
  static std::vector<std::string> read_lines(int fd, size_t want = SIZE_MAX) {
    std::string buf;
    std::vector<std::string> lines;
    char chunk[65536];
    while (lines.size() < want) {
      ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) break;
      buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        lines.push_back(buf.substr(0, nl));
        buf.erase(0, nl + 1);
      }
    }
    return lines;
  }
  // A server with room for two clients, both holding half a request (busy until the stall timeout), and a method
  // that counts its runs.
  std::vector<int> start_full(std::atomic<int>& ran, std::chrono::milliseconds stall_timeout = 60s) {
    d_.add("count", [&ran](const json&) -> Result<json> { return json(++ran); });
    ServerLimits lim;
    lim.max_clients = 2;
    lim.stall_timeout = stall_timeout;  // by default never stalled within a test, however loaded the machine
    start(lim);
    std::vector<int> busy;
    for (int i = 0; i < 2; ++i) {
      busy.push_back(connect_client());
      send_text(busy.back(), "{\"jsonrpc\":");
    }
    return busy;
  }
  static std::string req(int id, const std::string& method, const json& params = json::object()) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump() + "\n";
  }
  // A client that asks for 200 answers of 100 KB (20 MB, far past any socket buffer) and does not read them.
  int connect_slow_reader() {
    int fd = connect_client();
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    std::string many;
    for (int i = 0; i < 200; ++i) many += req(i, "big");
    send_text(fd, many);
    return fd;
  }

  fs::path dir_;
  std::string path_;
  Dispatcher d_;
  std::unique_ptr<UnixServer> server_;
  std::thread loop_;
  std::atomic<bool> done_{false};
  static inline int n_ = 0;
};

TEST_F(ServerTest, AnAcceptedChangeIsAuditedWithTheCallerTheKernelVouchesFor) {
  d_.add("change", [](const json& p) -> Result<json> {
    if (p.contains("bad")) return make_error(ErrorKind::kInvalidArgument, "refused");
    return json{{"done", true}};
  });
  auto log = AuditLog::open((dir_ / "audit" / "audit.jsonl").string());  // its directory is created
  ASSERT_TRUE(log.ok()) << log.error().to_string();
  d_.set_audit({"change"}, [&](const Caller& who, std::string_view m, const json& p, const json& r) {
    (*log)->record(who, m, p, r);
  });
  start();
  int fd = connect_client();
  // Accepted, refused (not audited), a method that is not audited, and multi-byte text in the params.
  send_text(fd, req(1, "change", {{"target", "latency"}}) + req(2, "change", {{"bad", 1}}) + req(3, "echo") +
                    req(4, "change", {{"target", "lat\u00e9ncy \u2603"}}));
  auto answers = read_lines(fd, 4);
  ASSERT_EQ(answers.size(), 4u);
  ::close(fd);
  stop();
  std::ifstream in(dir_ / "audit" / "audit.jsonl");
  std::vector<json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(json::parse(l));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["method"], "change");
  EXPECT_EQ(lines[0]["uid"], static_cast<int64_t>(getuid()));
  EXPECT_EQ(lines[0]["pid"], static_cast<int64_t>(getpid()));
  EXPECT_EQ(lines[0]["params"]["target"], "latency");
  EXPECT_EQ(lines[0]["result"]["done"], true);
  EXPECT_EQ(lines[1]["params"]["target"], "lat\u00e9ncy \u2603");
  EXPECT_EQ(fs::status(dir_ / "audit" / "audit.jsonl").permissions(), fs::perms::owner_read | fs::perms::owner_write);
}

TEST(AuditLog, RotatesAndRefusesWhatIsNotAFile) {
  auto dir = fs::temp_directory_path() / fmt::format("akts-audit-{}", getpid());
  fs::create_directories(dir);
  auto log = AuditLog::open((dir / "a.jsonl").string(), 600);
  ASSERT_TRUE(log.ok());
  for (int i = 0; i < 10; ++i) (*log)->record(Caller{0, 0, i}, "v1.switch", json{{"i", i}}, json(std::string(300, 'x')));
  EXPECT_EQ((*log)->records(), 10u);
  EXPECT_EQ((*log)->write_errors(), 0u);
  EXPECT_TRUE(fs::exists(dir / "a.jsonl.1"));
  EXPECT_LE(fs::file_size(dir / "a.jsonl"), 600u);
  // A result past 4 KiB is replaced by its size.
  (*log)->record(Caller{}, "v1.controller", json::object(), json(std::string(5000, 'y')));
  std::ifstream in(dir / "a.jsonl");
  std::string last, l;
  while (std::getline(in, l)) last = l;
  EXPECT_EQ(json::parse(last)["result"]["truncated"], 5002);
  EXPECT_FALSE(AuditLog::open(dir.string()).ok());  // a directory
  // Never through a symbolic link, never blocking on a FIFO.
  fs::create_symlink(dir / "elsewhere", dir / "link.jsonl");
  EXPECT_FALSE(AuditLog::open((dir / "link.jsonl").string()).ok());
  EXPECT_FALSE(fs::exists(dir / "elsewhere"));
  ASSERT_EQ(::mkfifo((dir / "fifo.jsonl").c_str(), 0600), 0);
  EXPECT_FALSE(AuditLog::open((dir / "fifo.jsonl").string()).ok());
  // Rotation begins a new file when something else moved the live one away (logrotate).
  fs::rename(dir / "a.jsonl", dir / "moved.jsonl");
  for (int i = 0; i < 3; ++i) (*log)->record(Caller{}, "v1.switch", json{{"i", i}}, json(std::string(300, 'x')));
  EXPECT_TRUE(fs::exists(dir / "a.jsonl"));
  EXPECT_EQ((*log)->state()["rotate_errors"], 0);
  // Only a directory no one else may write.
  auto open_dir = dir / "open";
  fs::create_directories(open_dir);
  fs::permissions(open_dir, fs::perms::all);
  EXPECT_FALSE(AuditLog::open((open_dir / "a.jsonl").string()).ok());
  fs::remove_all(dir);
}

TEST_F(ServerTest, HalfCloseGetsEveryBufferedRequestAnswered) {
  start();
  int fd = connect_client();
  // Two full lines and a last one without its newline, then SHUT_WR (socat, nc -N).
  std::string last = req(3, "echo", {{"x", 3}});
  last.pop_back();
  send_text(fd, req(1, "echo", {{"x", 1}}) + req(2, "echo", {{"x", 2}}) + last);
  ::shutdown(fd, SHUT_WR);
  auto lines = read_lines(fd);
  ASSERT_EQ(lines.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(json::parse(lines[i])["result"]["x"], i + 1);
  ::close(fd);
}

TEST_F(ServerTest, AnOversizeLineAfterANewlineIsRefusedAndLaterLinesServed) {
  start();
  int fd = connect_client();
  send_text(fd, req(1, "echo") + std::string(kMaxRequestBytes + 5000, 'a'));
  send_text(fd, std::string(3000, 'b') + "\n" + req(2, "echo"));
  auto lines = read_lines(fd, 3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json::parse(lines[0])["id"], 1);
  EXPECT_EQ(json::parse(lines[1])["error"]["code"], kInvalidRequest);
  EXPECT_EQ(json::parse(lines[2])["id"], 2);
  ::close(fd);
}

TEST_F(ServerTest, ASlowReaderHoldsNobody) {
  ServerLimits lim;
  lim.max_output = 1 << 20;
  lim.idle_timeout = 60s;  // the slow reader stays throughout: a server it held would answer nobody else meanwhile
  start(lim);
  int slow = connect_slow_reader();
  // Meanwhile another client is answered at once: within seconds, where one the slow reader held back would wait
  // for it to be closed (a minute), past this client's 5 s receive timeout.
  auto t0 = std::chrono::steady_clock::now();
  int fd = connect_client();
  send_text(fd, req(7, "echo", {{"ok", true}}));
  auto lines = read_lines(fd, 1);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0])["result"]["ok"], true);
  EXPECT_LT(took, 5s);
  ::close(fd);
  ::close(slow);
}

TEST_F(ServerTest, ASlowReaderIsClosedWhenItStopsReading) {
  ServerLimits lim;
  lim.max_output = 1 << 20;
  lim.idle_timeout = 1s;
  start(lim);
  int slow = connect_slow_reader();
  // It read nothing for longer than the idle timeout: closed (waited for without reading, which would be progress),
  // well before 200 answers.
  pollfd p{slow, POLLRDHUP, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  auto got = read_lines(slow);
  EXPECT_LT(got.size(), 200u);
  ::close(slow);
}

TEST_F(ServerTest, IdleConnectionsCannotLockOutAnOperator) {
  ServerLimits lim;
  lim.max_clients = 4;
  start(lim);
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(connect_client());
  std::this_thread::sleep_for(50ms);
  int fd = connect_client();
  send_text(fd, req(1, "echo", {{"switch", 1}}));
  auto lines = read_lines(fd, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0])["result"]["switch"], 1);
  EXPECT_LE(server_->client_count(), 4u);
  ::close(fd);
  for (int i : idle) ::close(i);
}

TEST_F(ServerTest, AFloodOfRequestsIsAnsweredInTurnsAndCompletely) {
  ServerLimits lim;
  lim.lines_per_turn = 8;
  start(lim);
  int flood = connect_client();
  std::string many;
  for (int i = 0; i < 2000; ++i) many += req(i, "echo", {{"i", i}});
  send_text(flood, many);
  int fd = connect_client();
  send_text(fd, req(1, "echo", {{"other", true}}));
  auto mine = read_lines(fd, 1);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(json::parse(mine[0])["result"]["other"], true);
  auto all = read_lines(flood, 2000);
  ASSERT_EQ(all.size(), 2000u);
  EXPECT_EQ(json::parse(all.back())["result"]["i"], 1999);
  ::close(fd);
  ::close(flood);
}

TEST_F(ServerTest, AConnectFloodDoesNotPushOutARequestInFlight) {
  ServerLimits lim;
  lim.max_clients = 4;
  lim.stall_timeout = 60s;  // the operator is never stalled within the test, however loaded the machine
  start(lim);
  int op = connect_client();
  // Four answers of 100 KB, more than the socket buffers hold: some stay unsent until the operator reads, so it is
  // busy throughout (an operator whose answer had all gone out would be idle, and fair game for eviction).
  std::string four;
  for (int i = 1; i <= 4; ++i) four += req(i, "big");
  send_text(op, four);
  std::vector<int> flood;
  for (int i = 0; i < 50; ++i) flood.push_back(connect_client());
  // Every newcomer got in, each (past the first three) by evicting an idle one of the flood.
  for (int i = 0; i < 1000 && server_->accepted() < 51; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->accepted(), 51u);
  // Evicted with answers unsent, the operator would be closed mid-answer: fewer than four lines.
  auto lines = read_lines(op, 4);
  ASSERT_EQ(lines.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    json a = json::parse(lines[i]);
    EXPECT_EQ(a["id"], i + 1);
    EXPECT_EQ(a["result"].get<std::string>().size(), 100000u);
  }
  ::close(op);
  for (int f : flood) ::close(f);
}

TEST_F(ServerTest, ClientsThatDribbleOrDoNotReadCannotHoldEverySlot) {
  ServerLimits lim;
  lim.max_clients = 4;
  lim.stall_timeout = 200ms;
  start(lim);
  // Four clients each holding half a request, a byte every 50 ms until the newcomer is answered (or 20 s): bytes are
  // not progress (a server that counted them would never let the newcomer in).
  std::vector<int> dribblers;
  for (int i = 0; i < 4; ++i) {
    dribblers.push_back(connect_client());
    send_text(dribblers.back(), "{");
  }
  std::atomic<bool> answered{false};
  std::thread dribble([&] {
    for (int t = 0; t < 400 && !answered; ++t) {  // past the client's 5 s receive timeout
      for (int d : dribblers) (void)::send(d, "\"", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(50ms);
    }
  });
  int fd = connect_client();
  send_text(fd, req(1, "echo", {{"switch", 0}}));
  auto lines = read_lines(fd, 1);
  answered = true;
  dribble.join();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0])["result"]["switch"], 0);
  ::close(fd);
  for (int d : dribblers) ::close(d);
  // Four clients whose answers (400 KB each, past the socket buffers) wait unread: stalled, fair game too.
  std::string four;
  for (int i = 1; i <= 4; ++i) four += req(i, "big");
  std::vector<int> deaf;
  for (int i = 0; i < 4; ++i) {
    deaf.push_back(connect_client());
    send_text(deaf.back(), four);
  }
  fd = connect_client();
  send_text(fd, req(2, "echo", {{"switch", 1}}));
  lines = read_lines(fd, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0])["result"]["switch"], 1);
  ::close(fd);
  for (int d : deaf) ::close(d);
}

TEST_F(ServerTest, ClientsPastTheLimitWaitUnreadAndAreEachServedOnceWhenSlotsFree) {
  std::atomic<int> ran{0};
  std::vector<int> busy = start_full(ran);
  for (int i = 0; i < 500 && server_->accepted() < 2; ++i) std::this_thread::sleep_for(10ms);
  std::vector<int> waiting;
  for (int i = 0; i < 10; ++i) {
    waiting.push_back(connect_client());  // completes: the kernel's backlog holds it
    send_text(waiting.back(), req(i, "count"));
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(ran, 0);  // not read, not run, not closed
  EXPECT_EQ(server_->client_count(), 2u);
  pollfd p{waiting[0], POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  for (int b : busy) ::close(b);
  for (size_t i = 0; i < waiting.size(); ++i) {
    // Its answer, and, if the server has since evicted it (idle) to make room for one still waiting, the notice
    // after it: one recv may bring both.
    auto lines = read_lines(waiting[i], 1);
    ASSERT_GE(lines.size(), 1u) << i;
    ASSERT_LE(lines.size(), 2u) << i;
    EXPECT_EQ(json::parse(lines[0])["id"], static_cast<int>(i));
    if (lines.size() == 2) {
      json notice = json::parse(lines[1]);
      EXPECT_TRUE(notice["id"].is_null()) << lines[1];
      EXPECT_TRUE(notice["error"]["data"].contains("retry_after_ms")) << lines[1];
    }
    ::close(waiting[i]);
  }
  EXPECT_EQ(ran, 10);
}

TEST_F(ServerTest, AClientWaitingForAFullServerGetsInWhenABusyClientStalls) {
  std::atomic<int> ran{0};
  std::vector<int> busy = start_full(ran, 300ms);
  int fd = connect_client();  // before they stall: it waits, and the server looks again later
  send_text(fd, req(1, "count"));
  auto lines = read_lines(fd, 1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0])["result"], 1);
  ::close(fd);
  for (int b : busy) ::close(b);
}

TEST_F(ServerTest, AnIdleClientEvictedForRoomIsToldAfterItsAnswers) {
  ServerLimits lim;
  lim.max_clients = 1;
  start(lim);
  int idle = connect_client();
  send_text(idle, req(7, "echo", {{"mine", true}}));
  auto answer = read_lines(idle, 1);  // answered and read: idle now
  ASSERT_EQ(answer.size(), 1u);
  EXPECT_EQ(json::parse(answer[0])["id"], 7);
  int fd = connect_client();
  send_text(fd, req(1, "echo", {{"switch", 1}}));
  auto mine = read_lines(fd, 1);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(json::parse(mine[0])["result"]["switch"], 1);
  auto lines = read_lines(idle);
  ASSERT_EQ(lines.size(), 1u);
  json n = json::parse(lines[0]);
  EXPECT_TRUE(n["id"].is_null());
  EXPECT_NE(n["error"]["message"].get<std::string>().find("make room"), std::string::npos) << lines[0];
  EXPECT_TRUE(n["error"]["data"].contains("retry_after_ms"));
  ::close(fd);
  ::close(idle);
}

TEST_F(ServerTest, RpcCallWaitsForAFullServerAndRunsItsRequestOnce) {
  std::atomic<int> ran{0};
  std::vector<int> busy = start_full(ran);
  std::atomic<std::chrono::steady_clock::time_point> freed{};
  std::thread freer([&] {
    std::this_thread::sleep_for(300ms);
    freed = std::chrono::steady_clock::now();
    ::close(busy[0]);
  });
  auto r = rpc_call(path_, "count", json::object(), 5000);
  auto returned = std::chrono::steady_clock::now();
  freer.join();
  // Answered only once a slot freed: the busy clients (never stalled within the test) were not pushed out.
  EXPECT_GE(returned, freed.load());
  pollfd p{busy[1], POLLIN | POLLRDHUP, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, 1);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(server_->accepted(), 3u);  // it waited; it was not closed and let in again
  ::close(busy[1]);
}

// A scripted daemon for rpc_call: each connection gets the next script's text, then a close.
class ScriptedDaemon {
 public:
  explicit ScriptedDaemon(std::vector<std::string> scripts) : scripts_(std::move(scripts)) {
    dir_ = fs::temp_directory_path() / fmt::format("akts-scripted-{}-{}", getpid(), n_++);
    fs::create_directories(dir_);
    path_ = (dir_ / "s.sock").string();
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof(a.sun_path) - 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    thread_ = std::thread([this] {
      for (const auto& text : scripts_) {
        int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        ++connections_;
        char buf[4096];
        (void)::recv(c, buf, sizeof(buf), 0);  // the request (one line, small)
        (void)::send(c, text.data(), text.size(), MSG_NOSIGNAL);
        ::close(c);
      }
    });
  }
  ~ScriptedDaemon() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    fs::remove_all(dir_);
  }
  const std::string& path() const { return path_; }
  int connections() const { return connections_; }

 private:
  std::vector<std::string> scripts_;
  fs::path dir_;
  std::string path_;
  int fd_ = -1;
  std::thread thread_;
  std::atomic<int> connections_{0};
  static inline int n_ = 0;
};

const std::string kNotice =
    R"({"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"busy","data":{"retry_after_ms":5}}})" "\n";

TEST(RpcCall, AnAnsweredRequestIsNeverSentAgainWhateverFollowsItsAnswer) {
  ScriptedDaemon d({R"({"jsonrpc":"2.0","id":1,"result":{"ran":true}})" "\n" + kNotice, "unused"});
  auto r = rpc_call(d.path(), "v1.switch", json::object(), 2000);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)["ran"], true);
  EXPECT_EQ(d.connections(), 1);
}

TEST(RpcCall, ComesBackAfterNoticesAndOnlyAfterNotices) {
  ScriptedDaemon d({kNotice, kNotice, R"({"jsonrpc":"2.0","id":1,"result":7})" "\n", "unused"});
  auto r = rpc_call(d.path(), "v1.status", json::object(), 5000);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(*r, 7);
  EXPECT_EQ(d.connections(), 3);
  // An error without the notice's data, a busy error with an id, a closed connection: not sent again.
  for (const std::string& first :
       {std::string(R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}})" "\n"),
        std::string(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"held","data":{"retry_after_ms":5}}})"
                    "\n"),
        std::string()}) {
    ScriptedDaemon once({first, R"({"jsonrpc":"2.0","id":1,"result":7})" "\n"});
    auto e = rpc_call(once.path(), "v1.switch", json::object(), 2000);
    EXPECT_FALSE(e.ok()) << first;
    EXPECT_EQ(once.connections(), 1) << first;
  }
}

TEST(RpcCall, ADaemonThatAcceptsNothingDoesNotHoldTheClientPastItsTimeout) {
  auto dir = fs::temp_directory_path() / fmt::format("akts-noaccept-{}", getpid());
  fs::create_directories(dir);
  std::string path = (dir / "s.sock").string();
  int l = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(l, 0), 0);
  // Its backlog filled by connections nobody accepts: the next connect() would wait for ever.
  std::vector<int> queued;
  for (int i = 0; i < 2; ++i) {
    int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    (void)::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    queued.push_back(c);
  }
  // On a thread, so that a client that waits for ever fails the test instead of hanging it.
  auto done = std::make_shared<std::promise<Result<json>>>();
  auto result = done->get_future();
  std::thread([done, path] { done->set_value(rpc_call(path, "v1.status", json::object(), 300)); }).detach();
  ASSERT_EQ(result.wait_for(30s), std::future_status::ready) << "connect() was not bounded by the timeout";
  auto r = result.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kTimeout) << r.error().to_string();
  for (int c : queued) ::close(c);
  ::close(l);
  fs::remove_all(dir);
}

TEST_F(ServerTest, PipelinedLargeAnswersAreServedToAClientThatReads) {
  start();
  int fd = connect_client();
  std::string many;
  for (int i = 0; i < 60; ++i) many += req(i, "big");  // 6 MB of answers, far past max_output
  send_text(fd, many);
  auto lines = read_lines(fd, 60);
  ASSERT_EQ(lines.size(), 60u);
  EXPECT_EQ(json::parse(lines.back())["id"], 59);
  ::close(fd);
}

TEST_F(ServerTest, IdleClientsAreClosedAfterTheTimeout) {
  ServerLimits lim;
  lim.idle_timeout = 100ms;
  start(lim);
  auto t0 = std::chrono::steady_clock::now();
  int fd = connect_client();
  char c;
  EXPECT_EQ(::recv(fd, &c, 1, 0), 0);  // closed by the server (the client's receive timeout is far longer)
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);  // not at once: its idle time counts from the accept
  ::close(fd);
}

TEST_F(ServerTest, InvalidUtf8InAndOutStaysValidJson) {
  start();
  int fd = connect_client();
  send_text(fd, std::string("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\xfe\"}\n"));
  // A multi-byte method name whose 40-byte cut would split a character.
  std::string name;
  for (int i = 0; i < 30; ++i) name += "\xc3\xa9";  // é
  send_text(fd, req(2, name));
  send_text(fd, req(3, "raw"));
  auto lines = read_lines(fd, 3);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(json::parse(lines[0])["error"]["code"], kParseError);
  EXPECT_EQ(json::parse(lines[1])["error"]["code"], kMethodNotFound);
  EXPECT_EQ(json::parse(lines[2])["result"]["comm"], "ab\xEF\xBF\xBD\xEF\xBF\xBD");
  ::close(fd);
}

TEST_F(ServerTest, OnlyAStaleSocketIsReplaced) {
  std::ofstream(path_) << "precious";
  auto s = UnixServer::listen(path_, 0600, d_);
  EXPECT_FALSE(s.ok());
  std::ifstream in(path_);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
  fs::remove(path_);
  fs::create_directory(path_);
  EXPECT_FALSE(UnixServer::listen(path_, 0600, d_).ok());
  EXPECT_TRUE(fs::is_directory(path_));
}

}  // namespace
}  // namespace akts::control
