#pragma once
// Child processes of the launcher commands (`cluster up`, `dr-drill`): started with no
// inherited descriptors, output appended to a log file, stopped gracefully or killed.

#include <sys/types.h>

#include <chrono>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar::tools {

struct Launched {
  std::string name;
  pid_t pid = -1;
  std::string dir;
  std::string log;
};

enum class ChildLifetime {
  kOwnSession,     // a session of its own: outlives the launcher (`cluster up`)
  kDiesWithParent  // killed by the kernel when the launching thread ends (a drill)
};

// Starts `args` (args[0] is the program's path) in `dir`, stdin from /dev/null, stdout and
// stderr appended to `log`.
Result<pid_t> launch(const std::vector<std::string>& args, const std::string& dir,
                     const std::string& log,
                     ChildLifetime lifetime = ChildLifetime::kOwnSession);
// Running (a child of ours that exited is reaped).
bool alive(pid_t pid);
// The process still is the one we started: its working directory is the recorded one.
bool same_process(pid_t pid, const std::string& dir);
// SIGTERM, then SIGKILL after 15 s; only while it still is the process started.
void stop_process(const Launched& p);

// Waits until the log, from byte `from` on (what this run wrote), matches `ready`; fails early
// when the process exits, quoting the log's last lines. `*text` gets what was read.
Result<std::smatch> wait_for_line(const Launched& p, const std::regex& ready,
                                  std::chrono::seconds timeout, std::string* text,
                                  size_t from = 0);

// The path of the running executable ("magnetar" when unknown).
std::string self_binary();
std::string read_text(const std::string& path);
// What `text` (a process's log, an error message) says when a port was taken between its pick
// and the bind: the first line with "address already in use" in any case (ours: "cannot listen
// on 127.0.0.1:N: Address already in use", Java's BindException, etcd's "bind: address already
// in use"), from "cannot listen" on when it says so, at most 200 characters; "" when none.
std::string port_taken_line(std::string_view text);
// The last `lines` lines of `text`.
std::string last_lines(const std::string& text, int lines);

}  // namespace magnetar::tools
