#include "tools/chaos/chaos_cluster.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "common/asio.h"
#include "common/ports.h"
#include "ledger/placement.h"
#include "metadata/metadata_store.h"
#include "tools/local_cluster.h"

namespace magnetar::tools::chaos {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// Where a broker listens; it advertises 127.0.0.1, where its relays listen.
constexpr const char* kBrokerBindAddress = "127.0.0.2";
constexpr const char* kClusterName = "chaos";

std::string join_hosts(const std::vector<int>& ports) {
  std::string out;
  for (int p : ports) out += fmt::format("{}127.0.0.1:{}", out.empty() ? "" : ",", p);
  return out;
}

}  // namespace

const char* role_name(Role role) {
  switch (role) {
    case Role::kZooKeeper:
      return "zookeeper";
    case Role::kBookie:
      return "bookie";
    case Role::kBroker:
      return "broker";
  }
  return "?";
}

Cluster::Cluster(ClusterOptions options) : options_(std::move(options)) {}

Cluster::~Cluster() {
  for (auto* nodes : {&brokers_, &bookies_, &zookeepers_}) {
    for (auto& n : *nodes) {
      if (n.process.pid <= 0) continue;
      ::kill(n.process.pid, SIGKILL);
      ::kill(n.process.pid, SIGCONT);
      int status = 0;
      ::waitpid(n.process.pid, &status, 0);
      n.process.pid = -1;
    }
  }
  relays_.clear();
}

Cluster::Node& Cluster::node(Role role, int i) {
  auto& nodes = role == Role::kZooKeeper ? zookeepers_
                : role == Role::kBookie  ? bookies_
                                         : brokers_;
  return nodes.at(static_cast<size_t>(i));
}

const Cluster::Node& Cluster::node(Role role, int i) const {
  return const_cast<Cluster*>(this)->node(role, i);
}

int Cluster::count(Role role) const {
  const auto& nodes = role == Role::kZooKeeper ? zookeepers_
                      : role == Role::kBookie  ? bookies_
                                               : brokers_;
  return static_cast<int>(nodes.size());
}

std::string Cluster::name(Role role, int i) const {
  return node(role, i).process.name;
}
pid_t Cluster::pid(Role role, int i) const {
  return node(role, i).process.pid;
}
int Cluster::port(Role role, int i) const {
  return node(role, i).port;
}
std::string Cluster::log_path(Role role, int i) const {
  return node(role, i).process.log;
}
std::string Cluster::bookie_dir(int i) const {
  return node(Role::kBookie, i).process.dir;
}

bool Cluster::running(Role role, int i) const {
  const Node& n = node(role, i);
  return n.process.pid > 0 && alive(n.process.pid);
}

Result<std::unique_ptr<Cluster>> Cluster::start(ClusterOptions options,
                                                std::function<void(const std::string&)> progress) {
  auto c = std::make_unique<Cluster>(options);
  c->binary_ = self_binary();
  const bool stretched = !options.regions.empty();
  const int regions = stretched ? static_cast<int>(options.regions.size()) : 1;
  // Ports first: every command line names them.
  std::vector<std::pair<int, int>> quorum;
  for (int k = 0; k < options.zookeepers; ++k) {
    c->zookeeper_ports_.push_back(c->fresh_port());
    if (options.zookeepers > 1) quorum.emplace_back(c->fresh_port(), c->fresh_port());
  }
  const std::vector<int>& zk_ports = c->zookeeper_ports_;
  const std::string direct_url = fmt::format("zk:{}/magnetar", join_hosts(zk_ports));
  for (int k = 0; k < options.zookeepers; ++k) {
    Node n;
    n.process = Launched{fmt::format("zookeeper-{}", k), -1,
                         fmt::format("{}/zookeeper-{}", options.dir, k), ""};
    n.process.log = n.process.dir + "/zookeeper.log";
    n.port = zk_ports[static_cast<size_t>(k)];
    ZooKeeperSpec spec;
    spec.dir = n.process.dir;
    spec.client_port = n.port;
    spec.tick_ms = options.zookeeper_tick_ms;
    if (options.zookeepers > 1) {
      spec.my_id = k + 1;
      spec.quorum = quorum;
    }
    MAGNETAR_ASSIGN_OR_RETURN(n.command, prepare_zookeeper(spec));
    c->zookeepers_.push_back(std::move(n));
  }
  for (int r = 0; r < regions; ++r) {
    for (int j = 0; j < options.bookies; ++j) {
      const int i = static_cast<int>(c->bookies_.size());
      MAGNETAR_ASSIGN_OR_RETURN(Node n, c->bookie_node(i, stretched ? r : -1, c->fresh_port()));
      c->bookies_.push_back(std::move(n));
    }
    // Room for one replacement bookie per region, reached through the relays like the rest.
    if (stretched) c->spare_ports_.push_back(c->fresh_port());
  }
  for (int r = 0; r < regions; ++r) {
    for (int j = 0; j < options.brokers; ++j) {
      const int i = static_cast<int>(c->brokers_.size());
      Node n;
      n.process = Launched{fmt::format("broker-{}", i), -1,
                           fmt::format("{}/broker-{}", options.dir, i), ""};
      n.process.log = n.process.dir + "/broker.log";
      n.port = c->fresh_port();
      n.web_port = c->fresh_port();
      n.region = stretched ? r : -1;
      // The broker's relays: its two ports, then one per ZooKeeper server (a region's link
      // when stretched).
      std::vector<std::unique_ptr<net::FaultRelay>> relays;
      for (int port : {n.port, n.web_port}) {
        net::FaultRelayOptions o;
        o.listen_port = port;
        o.target_address = kBrokerBindAddress;
        o.target_port = port;
        MAGNETAR_ASSIGN_OR_RETURN(auto relay, net::FaultRelay::start(o));
        relays.push_back(std::move(relay));
      }
      std::vector<int> zk_relay_ports;
      for (int zk_port : zk_ports) {
        if (stretched) {
          MAGNETAR_ASSIGN_OR_RETURN(int port, c->region_link(r, -1, zk_port));
          zk_relay_ports.push_back(port);
          continue;
        }
        net::FaultRelayOptions o;
        o.target_port = zk_port;
        MAGNETAR_ASSIGN_OR_RETURN(auto relay, net::FaultRelay::start(o));
        zk_relay_ports.push_back(relay->port());
        relays.push_back(std::move(relay));
      }
      c->relays_.push_back(std::move(relays));
      BrokerSpec spec;
      spec.metadata_url = fmt::format("zk:{}/magnetar", join_hosts(zk_relay_ports));
      spec.cluster_name = kClusterName;
      spec.bind_address = kBrokerBindAddress;
      spec.service_port = n.port;
      spec.web_port = n.web_port;
      spec.ensemble = options.ensemble;
      spec.settings = {
          fmt::format("metadataStoreSessionTimeoutMillis={}", options.session_timeout_ms),
          "brokerDeduplicationEnabled=true", "loadBalancerEnabled=false",
          // Consumed ledgers stay: the checker reads every topic back from its start.
          "defaultRetentionTimeInMinutes=-1", "defaultRetentionSizeInMB=-1"};
      if (stretched) {
        // Bookies of other regions (and their spare ports) through the relays between
        // regions.
        std::vector<std::pair<int, int>> remote;  // region, bookie port
        for (const Node& b : c->bookies_) remote.emplace_back(b.region, b.port);
        for (size_t q = 0; q < c->spare_ports_.size(); ++q) {
          remote.emplace_back(static_cast<int>(q), c->spare_ports_[q]);
        }
        std::string overrides;
        for (const auto& [region, port] : remote) {
          if (region == r) continue;
          MAGNETAR_ASSIGN_OR_RETURN(int relay, c->region_link(r, region, port));
          overrides += fmt::format("{}127.0.0.1:{}=127.0.0.1:{}", overrides.empty() ? "" : ",",
                                   port, relay);
        }
        spec.settings.push_back("bookkeeperClientRegionawarePolicyEnabled=true");
        spec.settings.push_back("bookkeeperClientBookieAddressOverrides=" + overrides);
      }
      spec.settings.insert(spec.settings.end(), options.broker_settings.begin(),
                           options.broker_settings.end());
      n.command = broker_command(c->binary_, spec);
      c->brokers_.push_back(std::move(n));
    }
  }
  // ZooKeeper servers together (an ensemble serves once a quorum runs), then the rest in order.
  for (int k = 0; k < options.zookeepers; ++k) {
    Node& n = c->zookeepers_[static_cast<size_t>(k)];
    std::error_code ec;
    fs::create_directories(n.process.dir, ec);
    MAGNETAR_ASSIGN_OR_RETURN(n.process.pid, launch(n.command, n.process.dir, n.process.log,
                                                    ChildLifetime::kDiesWithParent));
  }
  for (int k = 0; k < options.zookeepers; ++k) {
    MAGNETAR_TRY(c->start_node(Role::kZooKeeper, k, {}));
    progress(fmt::format("zookeeper-{} 127.0.0.1:{}", k, zk_ports[static_cast<size_t>(k)]));
  }
  MAGNETAR_TRY(wait_for_metadata_store(direct_url, c->zookeepers_[0].process, 60s));
  for (int i = 0; i < c->count(Role::kBookie); ++i) {
    if (stretched) MAGNETAR_TRY(c->set_rack(i));
    MAGNETAR_TRY(c->start_node(Role::kBookie, i, {}));
    const Node& n = c->bookies_[static_cast<size_t>(i)];
    progress(fmt::format("bookie-{}    127.0.0.1:{}{}", i, n.port,
                         stretched ? " in region " + options.regions[static_cast<size_t>(n.region)]
                                   : ""));
  }
  for (int i = 0; i < c->count(Role::kBroker); ++i) {
    MAGNETAR_TRY(c->start_node(Role::kBroker, i, {}));
    const Node& n = c->brokers_[static_cast<size_t>(i)];
    progress(fmt::format("broker-{}    pulsar://127.0.0.1:{} http://127.0.0.1:{} (relays to {}){}",
                         i, n.port, n.web_port, kBrokerBindAddress,
                         stretched ? " in region " + options.regions[static_cast<size_t>(n.region)]
                                   : ""));
  }
  return c;
}

int Cluster::fresh_port() {
  for (;;) {
    auto picked = pick_free_ports(1);
    if (!picked.ok()) return 0;
    if (taken_ports_.insert(picked->front()).second) return picked->front();
  }
}

Result<Cluster::Node> Cluster::bookie_node(int i, int region, int port) {
  Node n;
  n.process =
      Launched{fmt::format("bookie-{}", i), -1, fmt::format("{}/bookie-{}", options_.dir, i), ""};
  n.process.log = n.process.dir + "/bookie.log";
  n.port = port;
  n.region = region;
  std::vector<int> zk_ports = zookeeper_ports_;
  if (region >= 0) {
    for (int& port : zk_ports) {
      MAGNETAR_ASSIGN_OR_RETURN(port, region_link(region, -1, port));
    }
  }
  std::vector<std::string> settings = {
      fmt::format("metadataStoreSessionTimeoutMillis={}", options_.session_timeout_ms),
      "readOnlyModeEnabled=true", "diskCheckInterval=500"};
  settings.insert(settings.end(), options_.bookie_settings.begin(), options_.bookie_settings.end());
  n.command = bookie_command(
      binary_, BookieSpec{n.process.dir, n.port,
                          fmt::format("zk:{}/magnetar", join_hosts(zk_ports)), settings});
  return n;
}

Result<int> Cluster::region_link(int from, int to, int target_port) {
  net::FaultRelayOptions o;
  o.target_port = target_port;
  MAGNETAR_ASSIGN_OR_RETURN(auto relay, net::FaultRelay::start(o));
  const int port = relay->port();
  links_.push_back(Link{from, to, std::move(relay)});
  return port;
}

Status Cluster::set_rack(int i) {
  const Node& n = node(Role::kBookie, i);
  const std::string rack = fmt::format("/{}/rack-{}", options_.regions.at(static_cast<size_t>(n.region)), i);
  const std::string url = fmt::format("zk:{}/magnetar", join_hosts(zookeeper_ports_));
  return run_sync<Status>([&]() -> Task<Status> {
    metadata::StoreOptions o;
    o.operation_timeout = 10s;
    auto store = co_await metadata::open_store(url, o);
    if (!store.ok()) co_return store.status();
    Status st = co_await ledger::set_bookie_location(**store, bookie_id(i), rack);
    (void)co_await (*store)->close();
    co_return st;
  });
}

// Launches the node (unless a ZooKeeper server already launched by start()) and waits until
// it serves.
Status Cluster::start_node(Role role, int i, const std::vector<std::string>& extra) {
  Node& n = node(role, i);
  std::error_code ec;
  fs::create_directories(n.process.dir, ec);
  const size_t offset = fs::exists(n.process.log, ec) ? fs::file_size(n.process.log, ec) : 0;
  if (n.process.pid <= 0 || !alive(n.process.pid)) {
    std::vector<std::string> command = n.command;
    for (const auto& s : extra) {
      command.push_back("--set");
      command.push_back(s);
    }
    MAGNETAR_ASSIGN_OR_RETURN(n.process.pid, launch(command, n.process.dir, n.process.log,
                                                    ChildLifetime::kDiesWithParent));
    n.paused = false;
  }
  std::string text;
  switch (role) {
    case Role::kZooKeeper: {
      const auto deadline = Clock::now() + 60s;
      while (true) {
        auto answer = zookeeper_four_letter_word(n.port, "srvr", 1s);
        if (answer.ok() && answer->find("Mode: ") != std::string::npos) return Status::OK();
        if (!alive(n.process.pid) || Clock::now() > deadline) {
          return Status(Errc::kUnavailable,
                        fmt::format("{} does not serve; last lines of {}:\n{}", n.process.name,
                                    n.process.log, last_lines(read_text(n.process.log), 15)));
        }
        std::this_thread::sleep_for(200ms);
      }
    }
    case Role::kBookie:
      return wait_for_line(n.process, std::regex(kBookieReadyPattern), 60s, &text, offset).status();
    case Role::kBroker:
      return wait_for_line(n.process, std::regex(kBrokerReadyPattern), 60s, &text, offset).status();
  }
  return Status::OK();
}

void Cluster::kill(Role role, int i) {
  Node& n = node(role, i);
  if (n.process.pid <= 0) return;
  ::kill(n.process.pid, SIGKILL);
  int status = 0;
  ::waitpid(n.process.pid, &status, 0);
  n.process.pid = -1;
  n.paused = false;
}

Status Cluster::restart(Role role, int i, const std::vector<std::string>& extra) {
  if (running(role, i)) kill(role, i);
  return start_node(role, i, extra);
}

Status Cluster::pause(Role role, int i) {
  Node& n = node(role, i);
  if (n.process.pid <= 0 || ::kill(n.process.pid, SIGSTOP) != 0) {
    return Status(Errc::kUnavailable, fmt::format("{} is not running", n.process.name));
  }
  // SIGSTOP is asynchronous: wait until the stop is reported.
  int status = 0;
  const pid_t r = ::waitpid(n.process.pid, &status, WUNTRACED);
  if (r != n.process.pid || !WIFSTOPPED(status)) {
    n.process.pid = -1;
    return Status(Errc::kUnavailable, fmt::format("{} exited instead of stopping", n.process.name));
  }
  n.paused = true;
  return Status::OK();
}

void Cluster::resume(Role role, int i) {
  Node& n = node(role, i);
  if (n.process.pid > 0) ::kill(n.process.pid, SIGCONT);
  n.paused = false;
}

void Cluster::cut_broker(int i) {
  for (auto& r : relays_.at(static_cast<size_t>(i))) r->cut();
}

void Cluster::heal_broker(int i) {
  for (auto& r : relays_.at(static_cast<size_t>(i))) r->heal();
}

std::string Cluster::service_url() const {
  std::vector<int> ports;
  for (const auto& b : brokers_) ports.push_back(b.port);
  return "pulsar://" + join_hosts(ports);
}

std::string Cluster::web_url(int broker) const {
  return fmt::format("http://127.0.0.1:{}", node(Role::kBroker, broker).web_port);
}

int Cluster::broker_of(const std::string& url) const {
  for (size_t i = 0; i < brokers_.size(); ++i) {
    if (url == fmt::format("pulsar://127.0.0.1:{}", brokers_[i].port)) return static_cast<int>(i);
  }
  return -1;
}

Result<int> Cluster::zookeeper_leader() const {
  for (size_t k = 0; k < zookeepers_.size(); ++k) {
    auto answer = zookeeper_four_letter_word(zookeepers_[k].port, "srvr", 1s);
    if (answer.ok() && (answer->find("Mode: leader") != std::string::npos ||
                        answer->find("Mode: standalone") != std::string::npos)) {
      return static_cast<int>(k);
    }
  }
  return Status(Errc::kUnavailable, "no ZooKeeper server says it leads");
}

int Cluster::region_of(Role role, int i) const {
  return node(role, i).region;
}

std::string Cluster::bookie_id(int i) const {
  return fmt::format("127.0.0.1:{}", node(Role::kBookie, i).port);
}

void Cluster::set_region_rtt(std::chrono::milliseconds rtt) {
  for (auto& link : links_) link.relay->set_delay(rtt / 2);
}

void Cluster::cut_region(int region) {
  for (auto& link : links_) {
    if (link.from == region || link.to == region) link.relay->cut();
  }
  for (size_t i = 0; i < brokers_.size(); ++i) {
    if (brokers_[i].region == region) cut_broker(static_cast<int>(i));
  }
}

void Cluster::heal_region(int region) {
  for (auto& link : links_) {
    if (link.from == region || link.to == region) link.relay->heal();
  }
  for (size_t i = 0; i < brokers_.size(); ++i) {
    if (brokers_[i].region == region) heal_broker(static_cast<int>(i));
  }
}

Result<int> Cluster::add_bookie(int region) {
  if (region < 0 || region >= static_cast<int>(options_.regions.size())) {
    return Status(Errc::kInvalidArgument, fmt::format("no region {}", region));
  }
  const int i = count(Role::kBookie);
  // The region's spare port (relayed from the other regions) the first time, then a direct one.
  int& spare = spare_ports_.at(static_cast<size_t>(region));
  const int port = spare > 0 ? spare : fresh_port();
  spare = 0;
  MAGNETAR_ASSIGN_OR_RETURN(Node n, bookie_node(i, region, port));
  bookies_.push_back(std::move(n));
  MAGNETAR_TRY(set_rack(i));
  MAGNETAR_TRY(start_node(Role::kBookie, i, {}));
  return i;
}

Status Cluster::check_running() const {
  std::string dead;
  for (Role role : {Role::kZooKeeper, Role::kBookie, Role::kBroker}) {
    for (int i = 0; i < count(role); ++i) {
      const Node& n = node(role, i);
      if (!running(role, i)) {
        dead += fmt::format("\n{} is not running; last lines of {}:\n{}", n.process.name,
                            n.process.log, last_lines(read_text(n.process.log), 10));
      }
    }
  }
  if (dead.empty()) return Status::OK();
  return Status(Errc::kUnavailable, "processes gone:" + dead);
}

}  // namespace magnetar::tools::chaos
