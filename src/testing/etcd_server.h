#pragma once
// Real etcd servers for tests: Debian's `etcd-server` (3.4) run as child processes on
// 127.0.0.1 only, on ports picked free at start. One server alone, or an EtcdCluster of N
// members forming one Raft group.
//
// Each member owns a fresh `$TMPDIR/magnetar-etcd-XXXXXX` directory with its data and
// `etcd.log` (stdout and stderr). Short Raft timings (heartbeat 100 ms, election 500 ms) make
// leader elections, and etcd's minimum lease TTL, about a second. The destructor kills the
// process and deletes the directory; failures to start quote the log's tail.
//
// Children get PR_SET_PDEATHSIG(SIGKILL) bound to the starting thread (child_process.h):
// start them from the test's main thread. Not thread-safe.

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace magnetar::testing {

struct EtcdOptions {
  std::string binary = "/usr/bin/etcd";
  int heartbeat_ms = 100;
  int election_ms = 500;
  std::chrono::milliseconds start_timeout{30000};
  // Non-empty: clients are served over TLS (https://) with this certificate and key, and
  // /health on a plain-HTTP metrics port. With a CA, client certificates it signs are
  // required (--client-cert-auth).
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
};

class EtcdServer {
  struct Key {
    explicit Key() = default;
  };

 public:
  // A one-member cluster on free ports; returns once it serves (has a leader).
  static Result<std::unique_ptr<EtcdServer>> start(EtcdOptions options = {});

  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;
  ~EtcdServer();

  std::string endpoint() const;  // "http://127.0.0.1:PORT" (https:// with TLS)
  std::string url() const;       // "etcd:" + endpoint()
  int client_port() const { return client_port_; }
  pid_t pid() const { return pid_; }
  bool running() const;
  const std::string& dir() const { return dir_; }
  std::string log_tail(int lines = 30) const;

  // SIGTERM (SIGKILL after 10 s). OK when not running.
  Status stop();
  // Starts it again with the same name, ports and data; returns once it serves. A member
  // of a cluster serves once the cluster has a leader again.
  Status restart();
  // SIGSTOP, returning once it is stopped: connections are accepted, nothing is answered.
  void pause();
  void resume();  // SIGCONT
  void kill();    // SIGKILL and reap

  // Polls GET /health until it answers {"health":"true"}; fails early when the process exits.
  Status wait_until_serving(std::chrono::milliseconds timeout) const;
  // One GET /health: true when this member has a leader and answers.
  bool healthy(std::chrono::milliseconds timeout = std::chrono::seconds(1)) const;

  EtcdServer(Key, EtcdOptions options, std::string dir, std::string name, int client_port,
             int peer_port, int metrics_port, std::string initial_cluster);

 private:
  friend class EtcdCluster;
  static Result<std::unique_ptr<EtcdServer>> prepare(const EtcdOptions& options, std::string name,
                                                     int client_port, int peer_port,
                                                     int metrics_port, std::string initial_cluster);
  Status spawn(bool first_start);

  const EtcdOptions options_;
  const std::string dir_;
  const std::string name_;
  const int client_port_;
  const int peer_port_;
  const int metrics_port_;  // where /health is polled: the client port without TLS
  const std::string initial_cluster_;  // "m0=http://127.0.0.1:P0,..."
  mutable pid_t pid_ = -1;
  bool paused_ = false;
};

class EtcdCluster {
 public:
  // Returns once every member serves.
  static Result<std::unique_ptr<EtcdCluster>> start(int members = 3, EtcdOptions options = {});

  // "etcd:http://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3"
  std::string url() const;
  EtcdServer& member(int i) { return *members_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(members_.size()); }
  // Waits until every running member is healthy (a leader is elected among them).
  Status wait_until_serving(std::chrono::milliseconds timeout) const;

  explicit EtcdCluster(std::vector<std::unique_ptr<EtcdServer>> members)
      : members_(std::move(members)) {}

 private:
  std::vector<std::unique_ptr<EtcdServer>> members_;
};

}  // namespace magnetar::testing
