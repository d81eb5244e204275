#include "testing/child_process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <system_error>

extern char** environ;

namespace magnetar::testing {
namespace {

// Everything the forked child uses, prepared before fork(): in a multi-threaded parent the
// child may only make async-signal-safe calls until exec.
struct ChildSetup {
  pid_t parent;
  const char* cwd;  // null: stay
  char** argv;
  int stdin_fd;
  int log_fd;
  int error_pipe;  // write end, close-on-exec: a failed exec reports its errno here
  int max_fd;
};

[[noreturn]] void exec_child(const ChildSetup& s) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != s.parent) ::_exit(127);  // the parent died before prctl took effect
  // Ignored signals and the mask survive exec: the child must see SIGTERM as usual.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD}) {
    ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (::dup2(s.stdin_fd, 0) < 0 || ::dup2(s.log_fd, 1) < 0 || ::dup2(s.log_fd, 2) < 0 ||
      (s.cwd != nullptr && ::chdir(s.cwd) != 0)) {
    const int err = errno;
    (void)!::write(s.error_pipe, &err, sizeof err);
    ::_exit(127);
  }
  // No socket or file of the test may stay open in the child.
  if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < s.max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  ::execve(s.argv[0], s.argv, environ);
  const int err = errno;
  (void)!::write(s.error_pipe, &err, sizeof err);
  ::_exit(127);
}

}  // namespace

std::string errno_text(int err) { return std::generic_category().message(err); }

void ScopedFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<int> reap_child(pid_t pid, bool block) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return std::nullopt;
  return r == pid ? status : -1;
}

Result<pid_t> spawn_child(std::vector<std::string> args, const std::string& log_path,
                          const std::string& cwd) {
  MAGNETAR_ASSERT(!args.empty(), "spawn_child without a program");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  ScopedFd log_fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (log_fd.get() < 0) {
    return Status(Errc::kIoError, fmt::format("open {}: {}", log_path, errno_text(errno)));
  }
  ScopedFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_fd.get() < 0) return Status(Errc::kIoError, "open /dev/null: " + errno_text(errno));
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status(Errc::kIoError, "pipe2: " + errno_text(errno));
  }
  ScopedFd error_read(pipe_fds[0]);
  ScopedFd error_write(pipe_fds[1]);

  const ChildSetup setup{::getpid(),
                         cwd.empty() ? nullptr : cwd.c_str(),
                         argv.data(),
                         null_fd.get(),
                         log_fd.get(),
                         error_write.get(),
                         static_cast<int>(std::min(::sysconf(_SC_OPEN_MAX), 65536L))};
  const pid_t pid = ::fork();
  if (pid < 0) return Status(Errc::kIoError, "fork: " + errno_text(errno));
  if (pid == 0) exec_child(setup);

  // The pipe reaches EOF at a successful exec (close-on-exec) or carries the exec's errno.
  error_write.reset();
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n > 0) {
    (void)reap_child(pid, true);
    return Status(Errc::kNotFound,
                  fmt::format("cannot run {}: {}", args.front(), errno_text(child_errno)));
  }
  return pid;
}

bool pause_child(pid_t pid, int* exit_status) {
  ::kill(pid, SIGSTOP);
  // SIGSTOP is asynchronous: wait for the stop to be reported.
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WUNTRACED);
  } while (r < 0 && errno == EINTR);
  if (r == pid && WIFSTOPPED(status)) return true;
  *exit_status = r == pid ? status : -1;
  return false;
}

Result<std::string> make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path =
      fmt::format("{}/{}XXXXXX", tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", prefix);
  if (::mkdtemp(path.data()) == nullptr) {
    return Status(Errc::kIoError, fmt::format("mkdtemp {}: {}", path, errno_text(errno)));
  }
  return path;
}

std::string file_tail(const std::string& path, int lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  // A long test's log can be large; the last lines are in its last 64 KiB.
  constexpr std::streamoff kWindow = 64 * 1024;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  in.seekg(std::max<std::streamoff>(0, size - kWindow));
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  size_t start = text.size();
  if (start > 0 && text[start - 1] == '\n') --start;
  for (int i = 0; i < lines && start > 0; ++i) {
    size_t newline = text.rfind('\n', start - 1);
    start = newline == std::string::npos ? 0 : newline;
  }
  if (start < text.size() && text[start] == '\n') ++start;
  return text.substr(start);
}

std::pair<int, std::string> run_command(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {-1, ""};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int status = ::pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace magnetar::testing
