// The stdio transport: a reader loop, a writer lock, a thread per tool call.
#include "mcp/stdio.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace akts::mcp {
namespace {

class Writer {
 public:
  explicit Writer(int fd) : fd_(fd) {}
  void line(const std::string& s) {
    std::lock_guard lock(mu_);
    if (broken_) return;
    std::string out = s + "\n";
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = ::write(fd_, out.data() + off, out.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;  // the client went away: nothing more can reach it
        spdlog::warn("mcp: stdout closed; answers are dropped");
        return;
      }
      off += static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mu_;
  bool broken_ = false;
};

bool is_tool_call(const std::string& line) {
  // A cheap look before the session parses it: only tools/call goes to a thread.
  auto j = json::parse(line, nullptr, false);
  return j.is_object() && j.contains("id") && j.value("method", json()) == "tools/call";
}

}  // namespace

int serve_stdio(const Server& server, StdioOptions o) {
  // A client that closes its end: writes fail with EPIPE (and are dropped), not a signal that ends the server.
  ::signal(SIGPIPE, SIG_IGN);
  Session session(server);
  Writer out(o.out_fd);
  std::mutex mu;
  std::condition_variable cv;
  size_t running = 0;
  struct Call {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  };
  std::list<Call> calls;
  auto join_finished = [&] {
    for (auto it = calls.begin(); it != calls.end();)
      if (it->done->load()) {
        it->thread.join();
        it = calls.erase(it);
      } else {
        ++it;
      }
  };

  auto answer = [&](const std::string& line) {
    if (is_tool_call(line)) {
      std::unique_lock lock(mu);
      if (running >= o.max_running) {
        lock.unlock();
        auto j = json::parse(line, nullptr, false);
        out.line(error_message(j["id"], -32000,
                               "too many tool calls running at once; wait for one to finish (or cancel one)"));
        return;
      }
      ++running;
      lock.unlock();
      join_finished();  // only this thread touches `calls`
      session.expect_call(line);  // a cancellation on the next line finds it
      Call& c = calls.emplace_back();
      try {
        c.thread = std::thread([&, line, done = c.done] {
          if (auto a = session.handle(line)) out.line(*a);
          std::lock_guard l(mu);
          --running;
          done->store(true);
          cv.notify_all();
        });
      } catch (const std::system_error& e) {  // no thread to be had: answered here, nothing runs
        calls.pop_back();
        {
          std::lock_guard l(mu);
          --running;
        }
        auto j = json::parse(line, nullptr, false);
        out.line(error_message(j["id"], -32000, fmt::format("cannot start the call: {}", e.what())));
      }
      return;
    }
    if (auto a = session.handle(line)) out.line(*a);
  };

  std::string buf;
  bool skipping = false;  // inside a line past max_line
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(o.in_fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      char c = chunk[i];
      if (c == '\n') {
        if (skipping) {
          skipping = false;
        } else {
          if (!buf.empty() && buf.back() == '\r') buf.pop_back();
          if (!buf.empty()) answer(buf);
        }
        buf.clear();
        continue;
      }
      if (skipping) continue;
      buf.push_back(c);
      if (buf.size() > o.max_line) {
        out.line(error_message(nullptr, -32700, "parse error: the message is longer than the limit; skipped"));
        buf.clear();
        skipping = true;
      }
    }
  }
  if (!skipping && !buf.empty()) answer(buf);  // a last line without a newline
  session.cancel_all();
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return running == 0; });
  }
  for (auto& c : calls) c.thread.join();
  return 0;
}

}  // namespace akts::mcp
