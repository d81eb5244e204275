#pragma once
// Real ZooKeeper servers for tests: Debian's `zookeeper` 3.8 package run as JVM child processes,
// listening on 127.0.0.1 only, on ports picked free at start.
//
// Each server owns a fresh `$TMPDIR/magnetar-zk-XXXXXX` directory holding its generated zoo.cfg and
// log4j.properties, its data (`data/`) and `zookeeper.log`, where the JVM's stdout, stderr and
// log4j output (INFO) go. The destructor kills the JVM and deletes the directory; failures to
// start quote the last 30 lines of the log.
//
// The JVM gets PR_SET_PDEATHSIG(SIGKILL), so a crashed test leaves no server behind. Linux sends
// that signal when the *thread* that forked exits, so start() and restart() must run on a thread
// that outlives the server, such as the test's main thread.
//
// Not thread-safe: a fixture object belongs to one test thread.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar::testing {

struct ZooKeeperOptions {
  int tick_time_ms = 200;  // small, so tests can use short session timeouts (min = 2 ticks)
  int max_session_timeout_ms = 60000;
  // -Djute.maxbuffer of the server JVM: the largest packet it accepts. A 1 MiB value plus its
  // request header needs a little more than 1 MiB.
  size_t jute_max_buffer = 4 * 1024 * 1024;
  std::chrono::milliseconds start_timeout{30000};
  std::string java_binary = "/usr/bin/java";
  // Empty: the Debian jars in /usr/share/java (see default_zookeeper_classpath()).
  std::string classpath;
  // 0: a free port, picked again if another process takes it first. Otherwise this port and
  // no retry (tests of the fixture itself).
  int port = 0;
};

// The classpath of Debian's ZooKeeper server with its log4j 1.2 backend; NotFound names any
// jar that is missing.
Result<std::string> default_zookeeper_classpath();

// Sends a four-letter word ("ruok", "srvr", ...) to 127.0.0.1:port and returns the whole answer.
// Unavailable when the connection is refused; Timeout when the answer does not end (the server
// closes the connection) within `timeout`, which bounds the whole exchange.
Result<std::string> four_letter_word(int port, std::string_view word,
                                     std::chrono::milliseconds timeout);

// One server process: standalone from start(), or a member of a ZooKeeperEnsemble.
class ZooKeeperServer {
  // Only start() and ZooKeeperEnsemble can name it, hence construct servers.
  struct Key {
    explicit Key() = default;
  };

 public:
  // A standalone server on a free port with a fresh data dir; returns once it serves.
  static Result<std::unique_ptr<ZooKeeperServer>> start(ZooKeeperOptions options = {});

  ZooKeeperServer(const ZooKeeperServer&) = delete;
  ZooKeeperServer& operator=(const ZooKeeperServer&) = delete;
  // SIGKILLs the JVM if running, reaps it and deletes the data dir.
  ~ZooKeeperServer();

  std::string connect_string() const;  // "127.0.0.1:PORT"
  int port() const { return port_; }
  // The JVM's process id; -1 when not running.
  pid_t pid() const { return pid_; }
  // True while the JVM has not exited (also while paused). Reaps it when it has.
  bool running() const;
  const std::string& dir() const { return dir_; }
  std::string log_path() const;
  // The last `lines` lines of zookeeper.log.
  std::string log_tail(int lines = 30) const;

  // SIGTERM, then SIGKILL if the JVM has not exited after 10 s. OK when not running.
  Status stop();
  // Starts the JVM again (stopping it first if running) with the same port, config and data;
  // returns once it serves.
  Status restart();
  // SIGSTOP, returning once the JVM is stopped: it accepts TCP connections but never answers,
  // like a hung server, so its clients' sessions expire.
  void pause();
  void resume();  // SIGCONT
  // SIGKILL and reap: afterwards the client port refuses connections.
  void kill();

  // Polls `srvr` until the answer shows a Mode (standalone, leader, follower, observer). Fails
  // early when the JVM exits; the error quotes the log tail.
  Status wait_until_serving(std::chrono::milliseconds timeout);
  // The Mode line of `srvr`: "standalone", "leader" or "follower".
  Result<std::string> mode(std::chrono::milliseconds timeout = std::chrono::seconds(2)) const;

  ZooKeeperServer(Key, ZooKeeperOptions options, std::string dir, int port);

 private:
  friend class ZooKeeperEnsemble;

  // Creates the directory and writes the configs; `quorum` is empty for a standalone server,
  // else the "server.N=..." lines and `my_id` this member's N.
  static Result<std::unique_ptr<ZooKeeperServer>> prepare(const ZooKeeperOptions& options, int port,
                                                          int my_id, const std::string& quorum);
  Status spawn();
  // Reaps the JVM if it exits within `timeout`; true when it is gone.
  bool wait_for_exit(std::chrono::milliseconds timeout);
  // True when a port we picked was taken before the JVM bound it: its log says so, or
  // another server answered on it (wait_until_serving() checks the data directory).
  bool lost_port_race() const;
  std::string describe_exit() const;

  const ZooKeeperOptions options_;
  const std::string dir_;
  const int port_;
  mutable pid_t pid_ = -1;        // -1 when not running
  mutable int exit_status_ = -1;  // waitpid status of the last JVM; -1 if unknown
  bool paused_ = false;           // SIGSTOPped by pause(), not yet resumed
  bool other_server_on_port_ = false;  // another zookeeper answered on port_
};

// N servers forming one quorum on 127.0.0.1, each with its own client, quorum and election port.
class ZooKeeperEnsemble {
 public:
  // Returns once every member serves (one leader, the others followers).
  static Result<std::unique_ptr<ZooKeeperEnsemble>> start(int servers = 3,
                                                          ZooKeeperOptions options = {});

  std::string connect_string() const;  // "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
  // 0-based; member i has ZooKeeper id i + 1.
  ZooKeeperServer& server(int i);
  int size() const { return static_cast<int>(servers_.size()); }
  // Waits until every running member serves. Right after a member dies the others may still
  // serve in their old roles for a moment; wait_for_leader() sees the new election through.
  Status wait_until_serving(std::chrono::milliseconds timeout);
  // Waits until a running member leads and every other running member serves; returns the
  // leader's index.
  Result<int> wait_for_leader(std::chrono::milliseconds timeout);

  explicit ZooKeeperEnsemble(std::vector<std::unique_ptr<ZooKeeperServer>> servers)
      : servers_(std::move(servers)) {}

 private:
  // With `skip_stopped`, members that are not running are not waited for; else they fail it.
  Status wait_members(std::chrono::milliseconds timeout, bool skip_stopped);

  std::vector<std::unique_ptr<ZooKeeperServer>> servers_;
};

}  // namespace magnetar::testing
