#include "tools/chaos/chaos_cluster.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <regex>
#include <set>
#include <thread>

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
  std::set<int> taken;
  auto fresh_port = [&taken]() {
    int port = free_port();
    while (port != 0 && !taken.insert(port).second) port = free_port();
    return port;
  };
  const std::string binary = self_binary();
  // Ports first: every command line names them.
  std::vector<std::pair<int, int>> quorum;
  std::vector<int> zk_ports;
  for (int k = 0; k < options.zookeepers; ++k) {
    zk_ports.push_back(fresh_port());
    if (options.zookeepers > 1) quorum.emplace_back(fresh_port(), fresh_port());
  }
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
  for (int i = 0; i < options.bookies; ++i) {
    Node n;
    n.process =
        Launched{fmt::format("bookie-{}", i), -1, fmt::format("{}/bookie-{}", options.dir, i), ""};
    n.process.log = n.process.dir + "/bookie.log";
    n.port = fresh_port();
    std::vector<std::string> settings = {
        fmt::format("metadataStoreSessionTimeoutMillis={}", options.session_timeout_ms),
        "readOnlyModeEnabled=true", "diskCheckInterval=500"};
    settings.insert(settings.end(), options.bookie_settings.begin(), options.bookie_settings.end());
    n.command = bookie_command(binary, BookieSpec{n.process.dir, n.port, direct_url, settings});
    c->bookies_.push_back(std::move(n));
  }
  for (int i = 0; i < options.brokers; ++i) {
    Node n;
    n.process =
        Launched{fmt::format("broker-{}", i), -1, fmt::format("{}/broker-{}", options.dir, i), ""};
    n.process.log = n.process.dir + "/broker.log";
    n.port = fresh_port();
    n.web_port = fresh_port();
    // The broker's relays: its two ports, then one per ZooKeeper server.
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
    spec.settings.insert(spec.settings.end(), options.broker_settings.begin(),
                         options.broker_settings.end());
    n.command = broker_command(binary, spec);
    c->brokers_.push_back(std::move(n));
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
  for (int i = 0; i < options.bookies; ++i) {
    MAGNETAR_TRY(c->start_node(Role::kBookie, i, {}));
    progress(fmt::format("bookie-{}    127.0.0.1:{}", i, c->bookies_[static_cast<size_t>(i)].port));
  }
  for (int i = 0; i < options.brokers; ++i) {
    MAGNETAR_TRY(c->start_node(Role::kBroker, i, {}));
    progress(fmt::format("broker-{}    pulsar://127.0.0.1:{} http://127.0.0.1:{} (relays to {})", i,
                         c->brokers_[static_cast<size_t>(i)].port,
                         c->brokers_[static_cast<size_t>(i)].web_port, kBrokerBindAddress));
  }
  return c;
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
