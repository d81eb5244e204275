#pragma once
// The cluster `magnetar chaos` runs its faults on: ZooKeeper (one server or an ensemble),
// bookies and brokers as child processes on loopback under one directory, each of which can
// be SIGKILLed, SIGSTOPped and restarted over its own data on its own ports. Every broker sits
// behind fault-injecting relays (net/fault_relay.h) so that it can be cut off while it runs:
//
//   clients, other brokers ──► relay 127.0.0.1:S ──► broker listening on 127.0.0.2:S
//                              relay 127.0.0.1:W ──► its admin HTTP on 127.0.0.2:W
//   broker i ──► relay 127.0.0.1:Z(i,k) ──► ZooKeeper server k
//
// A broker advertises 127.0.0.1 with its own port numbers, so lookups, redirects and other
// brokers all go through its relays; it binds 127.0.0.2 (loopback too) on the same numbers.
// Bookies bind the address they advertise, so they are reached directly.
//
//   DIR/zookeeper-K/   zoo.cfg, data/, zookeeper.log
//   DIR/bookie-N/      journal/, ledgers/, bookie.log
//   DIR/broker-N/      broker.log
//
// Children die with the thread that started them (PR_SET_PDEATHSIG): start the cluster and
// restart its processes from the main thread. Not thread-safe: one thread drives it.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "net/fault_relay.h"
#include "tools/processes.h"

namespace magnetar::tools::chaos {

enum class Role { kZooKeeper, kBookie, kBroker };
const char* role_name(Role role);

struct ClusterOptions {
  std::string dir;  // created; the caller removes it
  int zookeepers = 1;
  int bookies = 3;
  int brokers = 2;
  int ensemble = 2;  // managed ledgers' E = Qw = Qa
  int zookeeper_tick_ms = 1000;
  int session_timeout_ms = 6000;  // brokers' and bookies' metadata sessions
  std::vector<std::string> broker_settings;
  std::vector<std::string> bookie_settings;
};

class Cluster {
 public:
  // Starts every process and returns once each serves; `progress` gets one line per step.
  static Result<std::unique_ptr<Cluster>> start(ClusterOptions options,
                                                std::function<void(const std::string&)> progress);
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;
  // SIGKILLs every process still running (resumed first), then closes the relays.
  ~Cluster();

  int count(Role role) const;
  std::string name(Role role, int i) const;  // "broker-1"
  pid_t pid(Role role, int i) const;         // -1 when not running
  int port(Role role, int i) const;          // bookie port, broker service port, client port
  bool running(Role role, int i) const;

  // SIGKILL and reap.
  void kill(Role role, int i);
  // Starts it again over its data on its ports, `extra` settings (bookies and brokers:
  // key=value) added for this run only; returns once it serves.
  Status restart(Role role, int i, const std::vector<std::string>& extra = {});
  // SIGSTOP / SIGCONT.
  Status pause(Role role, int i);
  void resume(Role role, int i);

  // Every path into and out of broker i but its bookie connections: its service and web
  // ports (cut as blackholes: connections stay, nothing passes) and its ZooKeeper sessions.
  void cut_broker(int i);
  void heal_broker(int i);

  // pulsar://127.0.0.1:S1,127.0.0.1:S2,... (through the relays).
  std::string service_url() const;
  std::string web_url(int broker) const;
  // The broker whose advertised service URL (pulsar://127.0.0.1:S) this is; -1 if none.
  int broker_of(const std::string& service_url) const;
  // The ZooKeeper ensemble's leader (or the one standalone server).
  Result<int> zookeeper_leader() const;
  std::string bookie_dir(int i) const;
  std::string log_path(Role role, int i) const;
  // OK when every process not paused runs; else names the dead ones with their log tails.
  Status check_running() const;

  struct Node {
    Launched process;
    std::vector<std::string> command;
    int port = 0;  // bookie, broker service, ZooKeeper client port
    int web_port = 0;
    bool paused = false;
  };
  explicit Cluster(ClusterOptions options);

 private:
  Status start_node(Role role, int i, const std::vector<std::string>& extra);
  Node& node(Role role, int i);
  const Node& node(Role role, int i) const;

  ClusterOptions options_;
  std::vector<Node> zookeepers_, bookies_, brokers_;
  // Per broker: service relay, web relay, then one relay per ZooKeeper server.
  std::vector<std::vector<std::unique_ptr<net::FaultRelay>>> relays_;
};

}  // namespace magnetar::tools::chaos
