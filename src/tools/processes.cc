#include "tools/processes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace magnetar::tools {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string port_taken_line(std::string_view text) {
  constexpr std::string_view kInUse = "address already in use";
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const auto found = std::search(
        line.begin(), line.end(), kInUse.begin(), kInUse.end(),
        [](char c, char lower) { return std::tolower(static_cast<unsigned char>(c)) == lower; });
    if (found == line.end()) continue;
    if (const size_t at = line.find("cannot listen"); at != std::string_view::npos) {
      line.remove_prefix(at);  // ours: without the log line's time and level
    }
    constexpr size_t kMax = 200;
    return line.size() > kMax ? std::string(line.substr(0, kMax)) + "..." : std::string(line);
  }
  return "";
}

std::string last_lines(const std::string& text, int lines) {
  size_t pos = text.size();
  for (int i = 0; i <= lines && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

Result<pid_t> launch(const std::vector<std::string>& args, const std::string& dir,
                     const std::string& log, ChildLifetime lifetime) {
  // Everything the child touches is made before fork() (no allocation after it).
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return Status(Errc::kIoError, fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    if (lifetime == ChildLifetime::kOwnSession) {
      ::setsid();
    } else {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);  // the parent is already gone
    }
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    int in = ::open("/dev/null", O_RDONLY);
    int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || out < 0) ::_exit(126);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

Result<std::smatch> wait_for_line(const Launched& p, const std::regex& ready,
                                  std::chrono::seconds timeout, std::string* text, size_t from) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    *text = read_text(p.log);
    *text = text->size() > from ? text->substr(from) : std::string();
    std::smatch m;
    if (std::regex_search(*text, m, ready)) return m;
    if (!alive(p.pid)) {
      return Status(Errc::kUnavailable, fmt::format("{} exited; last lines of {}:\n{}", p.name,
                                                    p.log, last_lines(*text, 15)));
    }
    std::this_thread::sleep_for(100ms);
  }
  return Status(Errc::kTimeout, fmt::format("{} not ready after {} s; last lines of {}:\n{}",
                                            p.name, timeout.count(), p.log,
                                            last_lines(*text, 15)));
}

bool alive(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid) return false;  // our child, exited
  return ::kill(pid, 0) == 0;
}

std::string self_binary() {
  std::error_code ec;
  auto path = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "magnetar" : path.string();
}

bool same_process(pid_t pid, const std::string& dir) {
  std::error_code ec;
  auto cwd = fs::read_symlink(fmt::format("/proc/{}/cwd", pid), ec);
  return !ec && fs::equivalent(cwd, dir, ec);
}

void stop_process(const Launched& p) {
  if (p.pid <= 0 || !alive(p.pid) || !same_process(p.pid, p.dir)) return;
  ::kill(p.pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  while (std::chrono::steady_clock::now() < deadline && alive(p.pid)) {
    std::this_thread::sleep_for(50ms);
  }
  if (alive(p.pid)) {
    std::fprintf(stderr, "%s (pid %d) ignored SIGTERM for 15 s: killing it\n", p.name.c_str(),
                 p.pid);
    ::kill(p.pid, SIGKILL);
  }
}

}  // namespace magnetar::tools
