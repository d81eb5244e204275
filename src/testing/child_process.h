#pragma once
// Child processes for tests (ZooKeeper JVMs, `magnetar bookie`, ...): started with no
// inherited descriptors, default signal handling, output appended to a log file, and killed
// by the kernel if the test process dies (PR_SET_PDEATHSIG, bound to the calling thread:
// start children from a thread that outlives them, such as the test's main thread).

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace magnetar::testing {

std::string errno_text(int err);

// Owns a file descriptor.
class ScopedFd {
 public:
  explicit ScopedFd(int fd = -1) : fd_(fd) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  ScopedFd& operator=(ScopedFd&&) = delete;
  ~ScopedFd() { reset(); }
  int get() const { return fd_; }
  void reset();

 private:
  int fd_;
};

// Runs `args` (args[0] is the program's path): stdin from /dev/null, stdout and stderr
// appended to `log_path`, in `cwd` (empty: the current directory). Returns the pid once the
// exec succeeded; a failed exec is an error naming the program and the reason.
Result<pid_t> spawn_child(std::vector<std::string> args, const std::string& log_path,
                          const std::string& cwd = "");

// Collects an exited child. block = false: nullopt while it still runs. Otherwise its wait
// status, or -1 when someone else already reaped it (ECHILD).
std::optional<int> reap_child(pid_t pid, bool block);

// SIGSTOP, returning once the child is stopped: true. False when it exited instead (it is
// reaped then, its wait status in *exit_status, -1 if unknown).
bool pause_child(pid_t pid, int* exit_status);

// A fresh directory `$TMPDIR/<prefix>XXXXXX` (TMPDIR unset: /tmp).
Result<std::string> make_temp_dir(const std::string& prefix);

// The last `lines` lines of a text file ("" when it cannot be read).
std::string file_tail(const std::string& path, int lines);

// Runs a shell command to its end: its exit code (-1 when it did not exit normally) and what
// it printed (stdout and stderr together).
std::pair<int, std::string> run_command(const std::string& command);

}  // namespace magnetar::testing
