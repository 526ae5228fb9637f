// `akts top`'s terminal: the fetch-draw-key loop on ncurses, and the keys' requests to the daemon.
#include "top/top_screen.h"

#include <algorithm>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "control/unix_server.h"
#include "reasoning/controller.h"
#include "top/top_view.h"

// Last, and without its function-like macros (clear(), erase(), ...), which would rewrite other headers' code.
#define NCURSES_NOMACROS
#include <curses.h>

namespace akts::top {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

// The terminal database: the user's TERMINFO_DIRS if set, ncurses's compiled-in list (/etc/terminfo,
// /lib/terminfo, /usr/share/terminfo), then the few the package and the image carry (akts is static: a root
// without ncurses-base, as the container image, has none of its own).
void terminfo_fallback() {
  const char* dirs = std::getenv("TERMINFO_DIRS");
  // An empty entry stands for the compiled-in list.
  std::string v = (dirs ? std::string(dirs) : std::string()) + ":/usr/share/akts/terminfo";
  setenv("TERMINFO_DIRS", v.c_str(), 1);
}

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// A prompt at the bottom: a choice among `options` by digit, then a confirmation. A policy is asked for by its
// slot (two slots may hold policies of one name), a controller by its name.
struct Prompt {
  enum class Kind { kPolicy, kController } kind;
  std::vector<std::pair<json, std::string>> options;  // the request's target, and its label
  std::optional<size_t> chosen;                       // awaiting y/n once set
};

// endwin() however the loop ends, an exception included: the terminal is never left in cbreak and noecho.
struct TermGuard {
  SCREEN* scr;
  ~TermGuard() {
    endwin();
    delscreen(scr);
  }
};

class Screen {
 public:
  explicit Screen(const Options& o) : o_(o), freeze_(env_on("AKTS_TOP_TEST_FREEZE")), dead_keys_(env_on("AKTS_TOP_TEST_DEAD_KEYS")) {}

  int run() {
    std::setlocale(LC_ALL, "");
    terminfo_fallback();
    SCREEN* scr = newterm(nullptr, stdout, stdin);
    if (!scr) {
      const char* term = std::getenv("TERM");
      std::fprintf(stderr, "akts top: cannot use the terminal (TERM=%s): no terminfo entry for it, or not a terminal\n",
                   term ? term : "(unset)");
      return 1;
    }
    set_term(scr);
    TermGuard guard{scr};
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);  // Esc cancels a prompt at once, not after ncurses's default second
    return loop();
  }

 private:
  int loop() {
    auto next_fetch = Clock::now();
    bool fetched = false;
    for (;;) {
      auto now = Clock::now();
      if (now >= next_fetch && !(freeze_ && fetched)) {
        fetch();
        fetched = true;
        auto every = o_.interval.count() > 0 ? o_.interval
                                             : std::chrono::milliseconds(static_cast<int64_t>(view_.period_s * 1e3));
        every = std::max(every, std::chrono::milliseconds(50));
        next_fetch = now + (view_.connected ? every : std::chrono::milliseconds(1000));
      }
      draw();
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_fetch - Clock::now()).count();
      timeout(static_cast<int>(std::clamp<int64_t>(wait, 10, 1000)));
      int ch = getch();
      if (ch == ERR || ch == KEY_RESIZE) continue;
      if (!key(ch)) return 0;
    }
  }

  void fetch() {
    auto stats = control::rpc_call(o_.socket, "v1.stats", json::object(), 1000);
    if (!stats || !stats->is_object()) {
      view_ = View{};
      view_.error = stats ? std::string("v1.stats did not answer an object") : stats.error().to_string();
      return;
    }
    auto log = control::rpc_call(o_.socket, "v1.log", json{{"limit", 20}}, 1000);
    view_ = read_view(*stats, log ? *log : json::object(), now_unix());
  }

  void draw() {
    erase();
    int h = 0, w = 0;
    getmaxyx(stdscr, h, w);
    auto lines = layout(view_, w, h);
    for (size_t i = 0; i < lines.size(); ++i) mvaddstr(static_cast<int>(i), 0, lines[i].c_str());
    std::string bottom;
    if (prompt_) {
      if (prompt_->chosen) {
        bottom = fmt::format("{} {}? y to confirm, anything else cancels",
                             prompt_->kind == Prompt::Kind::kPolicy ? "switch to" : "controller",
                             prompt_->options[*prompt_->chosen].second);
      } else {
        bottom = prompt_->kind == Prompt::Kind::kPolicy ? "switch to:" : "controller:";
        for (size_t i = 0; i < prompt_->options.size() && i < 10; ++i)
          bottom += fmt::format("  {} {}", i, prompt_->options[i].second);
        bottom += "  (a digit; Esc cancels)";
      }
    } else if (!message_.empty() && Clock::now() < message_until_) {
      bottom = message_;
    }
    if (!bottom.empty() && h >= kMinHeight && w >= kMinWidth) {
      attron(A_BOLD);
      mvaddstr(h - 2, 0, fit(bottom, w).c_str());
      attroff(A_BOLD);
    }
    refresh();
  }

  void say(const std::string& m) {
    message_ = m;
    message_until_ = Clock::now() + std::chrono::seconds(5);
  }

  // Answers a request: its result as the daemon said it, or its error.
  void request(const std::string& method, const json& params, const std::string& done) {
    auto r = control::rpc_call(o_.socket, method, params, 5000);
    last_ok_ = static_cast<bool>(r);
    say(r ? done : fmt::format("{}: {}", method, r.error().to_string()));
    fetch();
  }

  // false: quit.
  bool key(int ch) {
    if (prompt_) {
      Prompt p = *prompt_;
      prompt_.reset();
      if (ch == 27) return true;  // Esc
      if (!p.chosen) {
        if (ch < '0' || ch > '9' || static_cast<size_t>(ch - '0') >= p.options.size()) {
          say("cancelled");
          return true;
        }
        p.chosen = static_cast<size_t>(ch - '0');
        prompt_ = p;
        return true;
      }
      if (ch != 'y' && ch != 'Y') {
        say("cancelled: nothing changed");
        return true;
      }
      const auto& [target, label] = p.options[*p.chosen];
      if (p.kind == Prompt::Kind::kPolicy)
        request("v1.switch", {{"target", target}}, "switched to " + label);
      else
        request("v1.controller", {{"name", target}}, "controller " + label);
      return true;
    }
    if (ch == 'q' || ch == 'Q') return false;
    if (dead_keys_) return true;
    switch (ch) {
      case 's':
      case 'S': {
        std::vector<std::pair<json, std::string>> slots;
        for (size_t k = 0; k < view_.policies.size(); ++k)
          if (!view_.policies[k].empty()) slots.emplace_back(json(k), view_.policies[k]);
        if (!view_.connected || slots.empty()) {
          say("no policies to switch to (the daemon does not answer)");
          break;
        }
        prompt_ = Prompt{Prompt::Kind::kPolicy, slots, std::nullopt};
        break;
      }
      case 'c':
      case 'C': {
        std::vector<std::pair<json, std::string>> names;
        for (const auto& n : kControllerNames) names.emplace_back(json(n), n);
        prompt_ = Prompt{Prompt::Kind::kController, names, std::nullopt};
        break;
      }
      case 'p':
      case 'P':
        if (view_.hold_remaining_s && !paused_) {
          say("the selection is held by someone else: akts release ends that hold");
        } else if (view_.hold_remaining_s) {
          request("v1.release", json::object(), "resumed: the controller may switch again");
          paused_ = false;
        } else if (!view_.selected_slot) {
          say("cannot pause on the built-in default: switch to a policy first");
        } else {
          request("v1.hold", {{"target", *view_.selected_slot}, {"duration", fmt::format("{}s", o_.pause.count())}},
                  fmt::format("paused: {} held for {} s (p resumes)", view_.selected, o_.pause.count()));
          paused_ = last_ok_;
        }
        break;
      default:
        break;
    }
    return true;
  }

  Options o_;
  bool freeze_, dead_keys_;
  View view_;
  std::optional<Prompt> prompt_;
  bool paused_ = false;   // the hold in force is the one `p` asked for
  bool last_ok_ = false;  // the last request's answer was not an error
  std::string message_;
  Clock::time_point message_until_{};
};

}  // namespace

int run(const Options& o) { return Screen(o).run(); }

}  // namespace akts::top
