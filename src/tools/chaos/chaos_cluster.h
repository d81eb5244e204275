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
// A stretched cluster (ClusterOptions::regions, `magnetar chaos --stretched`): one cluster over
// several regions, each with its own bookies and brokers, the bookies' racks /region/rack-N in
// /bookies, and every path between regions through a relay that can delay it (the round trip
// between regions) or cut it:
//
//   broker in region a ──► relay ──► bookie in region b     (dialled there through the
//                                                            broker's
//                                                            bookkeeperClientBookieAddressOverrides)
//   broker or bookie in region a ──► relay ──► ZooKeeper    (ZooKeeper sits apart, a witness
//                                                            site every region reaches alike)
//
// Within a region nothing is relayed (a broker reaches its own region's bookies directly).
// cut_region() cuts every relay into and out of the region, the brokers' client ports
// included: its processes run on, its bookies lose their registrations, its brokers their
// sessions. Each region has room for one bookie added later (add_bookie): its port is
// relayed from the start; a second one added to a region is reached directly.
//
// Children die with the thread that started them (PR_SET_PDEATHSIG): start the cluster and
// restart its processes from the main thread. Not thread-safe: one thread drives it.

#include <chrono>
#include <functional>
#include <memory>
#include <set>
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
  // Non-empty: a stretched cluster over these regions, with `bookies` bookies and `brokers`
  // brokers in each (above).
  std::vector<std::string> regions;
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

  // Stretched clusters: the region a bookie or broker is in (-1 for ZooKeeper, or without
  // regions), the regions' names, a bookie's id.
  int region_of(Role role, int i) const;
  const std::vector<std::string>& regions() const { return options_.regions; }
  std::string bookie_id(int i) const;
  // Every relay between regions (ZooKeeper's included) delays each direction by rtt / 2.
  void set_region_rtt(std::chrono::milliseconds rtt);
  // Every relay into or out of `region` cut (blackhole) or healed.
  void cut_region(int region);
  void heal_region(int region);
  // A new bookie in `region` (its rack in /bookies first), started; its index. The first in
  // a region takes the port reserved for it, relayed like the others.
  Result<int> add_bookie(int region);

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
    int region = -1;
  };
  explicit Cluster(ClusterOptions options);

 private:
  Status start_node(Role role, int i, const std::vector<std::string>& extra);
  // A relay to 127.0.0.1:`target_port` on a path from region `from` to region `to` (-1:
  // ZooKeeper's site); kept, delayed and cut with the regions. Its port.
  Result<int> region_link(int from, int to, int target_port);
  // Writes bookie i's rack (/<region>/rack-<i>) to /bookies.
  Status set_rack(int i);
  // Bookie i on `port`: its command line (its metadata store through its region's relays,
  // if any).
  Result<Node> bookie_node(int i, int region, int port);
  // A free port not handed out before by this cluster; 0 when none could be had.
  int fresh_port();
  Node& node(Role role, int i);
  const Node& node(Role role, int i) const;

  ClusterOptions options_;
  std::vector<Node> zookeepers_, bookies_, brokers_;
  // Per broker: service relay, web relay, then one relay per ZooKeeper server.
  std::vector<std::vector<std::unique_ptr<net::FaultRelay>>> relays_;
  struct Link {
    int from = -1, to = -1;  // regions; -1: ZooKeeper's site
    std::unique_ptr<net::FaultRelay> relay;
  };
  std::vector<Link> links_;  // stretched clusters: the relays between regions
  std::vector<int> zookeeper_ports_;
  std::vector<int> spare_ports_;  // per region: the replacement bookie's port (0: used)
  std::set<int> taken_ports_;
  std::string binary_;
};

}  // namespace magnetar::tools::chaos
