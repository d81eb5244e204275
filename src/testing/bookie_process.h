#pragma once
// A real bookie for process-level tests: this build's `magnetar bookie` binary run as a child
// process on 127.0.0.1, with its journal and ledger directories under one data directory:
//
//   <data_dir>/journal    journalDirectories
//   <data_dir>/ledgers    ledgerDirectories
//   <data_dir>/bookie.log the child's stdout and stderr (every run appends)
//
// The port is fixed for the object's life (the bookie id, "127.0.0.1:<port>", is stamped in
// the cookie), so restart() brings back the same bookie over the same directories.
//
// Readiness: start() and restart() return once this run's log says "serving the bookie
// protocol on 127.0.0.1:<port>". The bookie registers /ledgers/available/<id> in the metadata
// store right after that line; a test that needs the registration waits for it in the store
// (this library does not link the metadata client).
//
// The child gets PR_SET_PDEATHSIG(SIGKILL), so a crashed test leaves no bookie behind. Linux
// sends that signal when the *thread* that forked exits: call start(), launch() and restart()
// from a thread that outlives the process, such as the test's main thread. The child inherits
// no file descriptor but stdin (/dev/null), stdout and stderr (the log).
//
// Not thread-safe: a BookieProcess belongs to one test thread.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace magnetar::testing {

struct BookieProcessOptions {
  std::string binary;        // path of the `magnetar` executable
  std::string metadata_url;  // metadataStoreUrl, e.g. "zk:127.0.0.1:2181/bk"
  // Empty: a fresh $TMPDIR/magnetar-bookie-XXXXXX, deleted by the destructor. Otherwise the
  // caller's directory (created if missing, never deleted).
  std::string data_dir;
  int port = 0;  // 0: a free port picked at start (the bookie needs a concrete id)
  // Extra `--set key=value` pairs, given after the fixture's own, so they override them.
  std::vector<std::pair<std::string, std::string>> settings;
  // Bounds start() and restart(): the wait for the "serving" line.
  std::chrono::milliseconds start_timeout{30000};
};

class BookieProcess {
  struct Key {
    explicit Key() = default;
  };

 public:
  // launch() and then wait_until_serving(). Fails (quoting the log tail) when the bookie exits
  // or is not serving in time; the child is killed then. A picked port that another process
  // took first is replaced by a fresh one (the attempt's directories are wiped).
  static Result<std::unique_ptr<BookieProcess>> start(BookieProcessOptions options);
  // Spawns the bookie without waiting for it: for bookies expected to fail at start.
  static Result<std::unique_ptr<BookieProcess>> launch(BookieProcessOptions options);

  BookieProcess(const BookieProcess&) = delete;
  BookieProcess& operator=(const BookieProcess&) = delete;
  // SIGKILLs the bookie if running and reaps it; deletes the data dir if this object made it.
  ~BookieProcess();

  std::string id() const;  // "127.0.0.1:<port>"
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // -1 when not running
  // True while the child has not exited; reaps it when it has.
  bool running() const;
  const std::string& data_dir() const { return data_dir_; }
  std::string journal_dir() const { return data_dir_ + "/journal"; }
  std::string ledger_dir() const { return data_dir_ + "/ledgers"; }
  std::string log_path() const { return data_dir_ + "/bookie.log"; }
  // The last `lines` lines of the log (all runs).
  std::string log_tail(int lines = 40) const;
  // What this run has logged so far (since the last launch/restart).
  std::string log_of_this_run() const;
  // "running", "exited with status N" or "killed by signal N".
  std::string describe_state() const;
  // The exit code of the last run: -1 while running or when killed by a signal.
  int exit_code() const;

  // Polls the log for the "serving" line; fails early (with the log tail) when the child exits.
  Status wait_until_serving(std::chrono::milliseconds timeout);
  // Reaps the child if it exits within `timeout`; true when it is gone.
  bool wait_for_exit(std::chrono::milliseconds timeout);
  // SIGKILL and reap: a crash, with no flush and no deregistration (the metadata store drops
  // the registration when the bookie's session times out).
  void kill();
  // SIGTERM and wait for a clean exit; SIGKILL after 10 s. OK when not running; an error
  // (with the log tail) when the bookie did not exit with status 0.
  Status stop();
  // Starts the bookie again (stop() first if running) with the same port, directories and
  // settings; returns once it serves.
  Status restart();

  BookieProcess(Key, BookieProcessOptions options, std::string data_dir, bool owns_dir, int port);

 private:
  Status spawn();
  std::vector<std::string> arguments() const;
  bool lost_port_race() const;

  const BookieProcessOptions options_;
  const std::string data_dir_;
  const bool owns_dir_;
  const int port_;
  mutable pid_t pid_ = -1;        // -1 when not running
  mutable int exit_status_ = -1;  // waitpid status of the last run; -1 while running or unknown
  long log_offset_ = 0;           // log size when the current run was spawned
};

}  // namespace magnetar::testing
