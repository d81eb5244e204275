#include "testing/bookie_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <thread>

#include "common/logging.h"
#include "common/ports.h"
#include "testing/child_process.h"

extern char** environ;

namespace magnetar::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kHost = "127.0.0.1";
constexpr milliseconds kStopGrace{10000};
constexpr milliseconds kPollInterval{20};
constexpr int kLogTailLines = 40;
// A picked port may be taken by another process before the bookie binds it.
constexpr int kMaxStartAttempts = 3;

const log::Logger& logger() {
  static const log::Logger l("bookie-fixture");
  return l;
}



// Binds 127.0.0.1:0 and releases the port the kernel chose.
Result<int> pick_free_port() {
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<int> ports, pick_free_ports(1));
  return ports.front();
}

// The bytes of `path` from `offset` on (at most the last `window` bytes when window > 0).
std::string read_from(const std::string& path, long offset, long window) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const long size = static_cast<long>(in.tellg());
  long begin = std::min(offset, size);
  if (window > 0) begin = std::max(begin, size - window);
  in.seekg(begin);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

long file_size(const std::string& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<long>(size);
}


}  // namespace

BookieProcess::BookieProcess(Key, BookieProcessOptions options, std::string data_dir, bool owns_dir,
                             int port)
    : options_(std::move(options)),
      data_dir_(std::move(data_dir)),
      owns_dir_(owns_dir),
      port_(port) {}

BookieProcess::~BookieProcess() {
  kill();
  if (owns_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(data_dir_, ec);
  }
}

Result<std::unique_ptr<BookieProcess>> BookieProcess::launch(BookieProcessOptions options) {
  if (options.binary.empty() || ::access(options.binary.c_str(), X_OK) != 0) {
    return Status(Errc::kNotFound,
                  fmt::format("magnetar binary '{}' is not executable", options.binary));
  }
  bool owns_dir = false;
  std::string dir = options.data_dir;
  if (dir.empty()) {
    MAGNETAR_ASSIGN_OR_RETURN(dir, make_temp_dir("magnetar-bookie-"));
    owns_dir = true;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status(Errc::kIoError, fmt::format("mkdir {}: {}", dir, ec.message()));
  }
  int port = options.port;
  if (port == 0) {
    auto picked = pick_free_port();
    if (!picked.ok()) {
      std::error_code ec;
      if (owns_dir) std::filesystem::remove_all(dir, ec);
      return picked.status();
    }
    port = *picked;
  }
  auto process =
      std::make_unique<BookieProcess>(Key(), std::move(options), std::move(dir), owns_dir, port);
  MAGNETAR_TRY(process->spawn());
  return process;
}

Result<std::unique_ptr<BookieProcess>> BookieProcess::start(BookieProcessOptions options) {
  for (int attempt = 1;; ++attempt) {
    const auto began = Clock::now();
    MAGNETAR_ASSIGN_OR_RETURN(auto process, launch(options));
    Status st = process->wait_until_serving(options.start_timeout);
    if (st.ok()) {
      logger().info("bookie {} (pid {}) serving after {} ms", process->id(), process->pid(),
                    std::chrono::duration_cast<milliseconds>(Clock::now() - began).count());
      return process;
    }
    process->kill();
    if (options.port != 0 || attempt == kMaxStartAttempts || !process->lost_port_race()) return st;
    logger().warn("port {} was taken before the bookie bound it; retrying on another",
                  process->port());
    // The failed attempt stamped its cookie (naming the old port) in the directories.
    if (!options.data_dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(process->journal_dir(), ec);
      std::filesystem::remove_all(process->ledger_dir(), ec);
    }
  }
}

std::vector<std::string> BookieProcess::arguments() const {
  std::vector<std::pair<std::string, std::string>> sets = {
      {"bookiePort", std::to_string(port_)},
      {"advertisedAddress", kHost},
      {"journalDirectories", journal_dir()},
      {"ledgerDirectories", ledger_dir()},
      {"metadataStoreUrl", options_.metadata_url},
      // The metrics endpoint's default port (8000) would collide between bookies.
      {"httpServerPort", "0"},
  };
  sets.insert(sets.end(), options_.settings.begin(), options_.settings.end());
  std::vector<std::string> args = {options_.binary, "bookie"};
  for (const auto& [key, value] : sets) {
    args.push_back("--set");
    args.push_back(key + "=" + value);
  }
  return args;
}

Status BookieProcess::spawn() {
  std::vector<std::string> args = arguments();
  // Readiness is looked for in what this start writes to the log, not an earlier start's.
  log_offset_ = file_size(log_path());
  auto pid = spawn_child(std::move(args), log_path());
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  exit_status_ = -1;
  return Status::OK();
}

std::string BookieProcess::id() const {
  return fmt::format("{}:{}", kHost, port_);
}

bool BookieProcess::running() const {
  if (pid_ < 0) return false;
  std::optional<int> status = reap_child(pid_, false);
  if (!status) return true;
  exit_status_ = *status;
  pid_ = -1;
  return false;
}

std::string BookieProcess::describe_state() const {
  if (running()) return "running";
  if (exit_status_ >= 0 && WIFEXITED(exit_status_)) {
    return fmt::format("exited with status {}", WEXITSTATUS(exit_status_));
  }
  if (exit_status_ >= 0 && WIFSIGNALED(exit_status_)) {
    return fmt::format("killed by signal {}", WTERMSIG(exit_status_));
  }
  return "exited";
}

int BookieProcess::exit_code() const {
  if (running() || exit_status_ < 0 || !WIFEXITED(exit_status_)) return -1;
  return WEXITSTATUS(exit_status_);
}

std::string BookieProcess::log_tail(int lines) const { return file_tail(log_path(), lines); }

std::string BookieProcess::log_of_this_run() const {
  return read_from(log_path(), log_offset_, 0);
}

bool BookieProcess::lost_port_race() const {
  const std::string text = log_of_this_run();
  return text.find("cannot listen on") != std::string::npos &&
         text.find("in use") != std::string::npos;
}

Status BookieProcess::wait_until_serving(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  const std::string marker = fmt::format("serving the bookie protocol on {}", id());
  while (true) {
    // Read the log before checking the process: a bookie that logged the line and then died
    // is reported as dead by the next poll, never as serving after its exit.
    const bool logged = log_of_this_run().find(marker) != std::string::npos;
    if (!running()) {
      return Status(
          Errc::kUnavailable,
          fmt::format("bookie {} {} before serving\n--- last {} lines of {} ---\n{}", id(),
                      describe_state(), kLogTailLines, log_path(), log_tail(kLogTailLines)));
    }
    if (logged) return Status::OK();
    if (Clock::now() >= deadline) {
      return Status(
          Errc::kTimeout,
          fmt::format("bookie {} not serving after {} ms\n--- last {} lines of {} ---\n{}", id(),
                      timeout.count(), kLogTailLines, log_path(), log_tail(kLogTailLines)));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

bool BookieProcess::wait_for_exit(milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (running()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

void BookieProcess::kill() {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);  // also ends a stopped process
  exit_status_ = *reap_child(pid_, true);
  pid_ = -1;
}

Status BookieProcess::stop() {
  if (!running()) return Status::OK();
  ::kill(pid_, SIGTERM);
  if (!wait_for_exit(kStopGrace)) {
    logger().warn("bookie {} ignored SIGTERM for {} ms; killing it", id(), kStopGrace.count());
    kill();
  }
  if (exit_code() != 0) {
    return Status(
        Errc::kInternal,
        fmt::format("bookie {} {} on SIGTERM\n--- last {} lines of {} ---\n{}", id(),
                    describe_state(), kLogTailLines, log_path(), log_tail(kLogTailLines)));
  }
  return Status::OK();
}

Status BookieProcess::restart() {
  MAGNETAR_TRY(stop());
  const auto began = Clock::now();
  MAGNETAR_TRY(spawn());
  Status st = wait_until_serving(options_.start_timeout);
  if (!st.ok()) {
    kill();
    return st;
  }
  logger().info("bookie {} (pid {}) serving again after {} ms", id(), pid_,
                std::chrono::duration_cast<milliseconds>(Clock::now() - began).count());
  return Status::OK();
}

}  // namespace magnetar::testing
