// `magnetar cluster up|down`: a whole local cluster for development and tests, every process
// on 127.0.0.1 and all state under one directory:
//
//   DIR/zookeeper/    zoo.cfg, data/, zookeeper.log   (Debian's ZooKeeper, one server)
//   DIR/etcd/         data/, etcd.log                 (with --metadata etcd: Debian's etcd, one
//                                                      member, instead of ZooKeeper)
//   DIR/bookie-N/     journal/, ledgers/, bookie.log
//   DIR/broker-N/     broker.log
//   DIR/proxy-N/      proxy.log                       (with --proxies N)
//   DIR/cluster.json  {"processes": [{"name", "pid", "dir"}], "brokers": [{"serviceUrl",
//                     "webServiceUrl"}], ["proxies": [{"serviceUrl", "webServiceUrl"}],]
//                     "metadataStoreUrl", "layout": {"name", "metadata",
//                     "zookeeperPort" or "etcdPorts": [client, peer], "bookiePorts",
//                     "brokerPorts": [[service, web]], ["proxyPorts": [[service, web]],]
//                     "configurationStore"}}
//                     (the proxy keys only with proxies: a file without them has none)
//
// `up` on a directory that held a cluster restarts that cluster over its data, on its
// recorded ports (a bookie's identity is its address and port), or refuses when asked for
// another shape; it fails, stopping what it started, when any process is gone by the end. The
// first `up` in a directory picks free ports; when one was taken between the pick and its
// process's bind, it stops everything, removes what it created and starts again on other ports
// (three tries).
// `up` starts ZooKeeper (or etcd), the bookies, the brokers, then the proxies (`magnetar
// proxy`, brokers found in the cluster's metadata store, data connections allowed to the
// brokers' service ports only), each in its own session (they outlive the command), and
// returns once every bookie is registered and every broker and proxy serves; it prints each
// broker's and proxy's URLs and records the cluster (its ClusterData: the first broker's web
// URL, every broker's service URL) in the configuration store. That store is the cluster's own
// ZooKeeper, or with `--configuration-store URL` one shared by several clusters
// (geo-replication): start it with `up --brokers 0 --bookies 0` (ZooKeeper alone), then each
// cluster with `--name` and that store's URL; docs/geo-replication.md. `down` stops exactly the
// processes listed in cluster.json — a pid is only signalled while its working directory is
// still the one recorded — proxies, then brokers, with SIGTERM and SIGKILL after a grace
// period, and keeps the layout for the next `up`.

#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <thread>

#include "common/asio.h"
#include "common/logging.h"
#include "common/ports.h"
#include "metadata/metadata_store.h"
#include "metadata/zookeeper_distribution.h"
#include "tools/commands.h"
#include "tools/local_cluster.h"
#include "tools/processes.h"

namespace magnetar::tools {

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// What a restart needs to bring the same cluster back.
struct Layout {
  std::string name;
  std::string metadata = "zookeeper";  // or "etcd"
  int zookeeper_port = 0;  // the metadata store's client port (ZooKeeper's or etcd's)
  int etcd_peer_port = 0;
  std::vector<int> bookie_ports;
  std::vector<std::pair<int, int>> broker_ports;  // service, web
  std::vector<std::pair<int, int>> proxy_ports;   // service, web; none in older files
  std::string configuration_store;

  Json to_json() const {
    Json brokers = Json::array();
    for (const auto& [service, web] : broker_ports) brokers.push_back({service, web});
    Json proxies = Json::array();
    for (const auto& [service, web] : proxy_ports) proxies.push_back({service, web});
    Json out = {{"name", name}, {"metadata", metadata}};
    if (metadata == "etcd") {
      out["etcdPorts"] = {zookeeper_port, etcd_peer_port};
    } else {
      out["zookeeperPort"] = zookeeper_port;
    }
    out.update(Json{
            {"bookiePorts", bookie_ports},
            {"brokerPorts", brokers},
            {"configurationStore", configuration_store}});
    if (!proxy_ports.empty()) out["proxyPorts"] = proxies;
    return out;
  }

  std::string metadata_url() const {
    if (metadata == "etcd") {
      return fmt::format("etcd:http://127.0.0.1:{}/magnetar", zookeeper_port);
    }
    return fmt::format("zk:127.0.0.1:{}/magnetar", zookeeper_port);
  }
};

std::optional<Layout> read_layout(const std::string& data) {
  auto j = Json::parse(read_text(data + "/cluster.json"), nullptr, false);
  if (!j.is_object() || !j.contains("layout") || !j["layout"].is_object()) return std::nullopt;
  const Json& l = j["layout"];
  Layout out;
  out.name = l.value("name", "");
  out.metadata = l.value("metadata", "zookeeper");
  out.zookeeper_port = l.value("zookeeperPort", 0);
  if (out.metadata == "etcd") {
    const Json ports = l.value("etcdPorts", Json::array());
    if (ports.size() == 2 && ports[0].is_number_integer() && ports[1].is_number_integer()) {
      out.zookeeper_port = ports[0].get<int>();
      out.etcd_peer_port = ports[1].get<int>();
    }
  }
  out.configuration_store = l.value("configurationStore", "");
  for (const auto& p : l.value("bookiePorts", Json::array())) {
    if (p.is_number_integer()) out.bookie_ports.push_back(p.get<int>());
  }
  auto read_pairs = [&l](const char* key, std::vector<std::pair<int, int>>* pairs) {
    for (const auto& p : l.value(key, Json::array())) {
      if (p.is_array() && p.size() == 2 && p[0].is_number_integer() && p[1].is_number_integer()) {
        pairs->emplace_back(p[0].get<int>(), p[1].get<int>());
      }
    }
  };
  read_pairs("brokerPorts", &out.broker_ports);
  read_pairs("proxyPorts", &out.proxy_ports);
  if (out.zookeeper_port <= 0) return std::nullopt;
  return out;
}

// `proxies` is written only when the layout has proxies.
void write_state(const std::string& data, const std::vector<Launched>& processes,
                 const Json& brokers, const Json& proxies, const std::string& metadata_url,
                 const Layout& layout) {
  Json procs = Json::array();
  for (const auto& p : processes) {
    procs.push_back({{"name", p.name}, {"pid", p.pid}, {"dir", p.dir}});
  }
  Json state = {{"processes", procs},
                {"brokers", brokers},
                {"metadataStoreUrl", metadata_url},
                {"layout", layout.to_json()}};
  if (!layout.proxy_ports.empty()) state["proxies"] = proxies;
  std::ofstream out(data + "/cluster.json");
  out << state.dump(2) << "\n";
}

std::vector<Launched> read_state(const std::string& data) {
  std::vector<Launched> out;
  auto j = Json::parse(read_text(data + "/cluster.json"), nullptr, false);
  if (!j.is_object() || !j.contains("processes")) return out;
  for (const auto& p : j["processes"]) {
    out.push_back(Launched{p.value("name", ""), p.value("pid", -1), p.value("dir", ""), ""});
  }
  return out;
}

// Stops what an `up` started, newest first; `message` is the `up`'s failure.
Status stop_started(std::vector<Launched>& started, std::string message) {
  for (auto it = started.rbegin(); it != started.rend(); ++it) stop_process(*it);
  return Status(Errc::kIoError, std::move(message));
}

// Free ports for every process of a cluster of `args`' shape, all different.
Result<Layout> fresh_layout(const ClusterArgs& args) {
  Layout layout;
  layout.name = args.cluster_name;
  layout.metadata = args.metadata;
  layout.configuration_store = args.configuration_store;
  const int needed =
      1 + (layout.metadata == "etcd" ? 1 : 0) + args.bookies + 2 * args.brokers + 2 * args.proxies;
  MAGNETAR_ASSIGN_OR_RETURN(const std::vector<int> ports, pick_free_ports(needed));
  size_t next = 0;
  auto port = [&ports, &next]() { return ports[next++]; };
  layout.zookeeper_port = port();
  if (layout.metadata == "etcd") layout.etcd_peer_port = port();
  for (int i = 0; i < args.bookies; ++i) layout.bookie_ports.push_back(port());
  for (int i = 0; i < args.brokers; ++i) {
    const int service = port();
    layout.broker_ports.emplace_back(service, port());
  }
  for (int i = 0; i < args.proxies; ++i) {
    const int service = port();
    layout.proxy_ports.emplace_back(service, port());
  }
  return layout;
}

// The directories a cluster's processes write under `data`, each with its log.
std::vector<std::pair<std::string, std::string>> process_dirs(const std::string& data) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back(data + "/zookeeper", data + "/zookeeper/zookeeper.log");
  out.emplace_back(data + "/etcd", data + "/etcd/etcd.log");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(data, ec)) {
    const std::string name = e.path().filename().string();
    for (const char* role : {"bookie", "broker", "proxy"}) {
      const std::string prefix = std::string(role) + "-";
      if (name.starts_with(prefix) && name.size() > prefix.size() &&
          name.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
        out.emplace_back(e.path().string(), e.path().string() + "/" + role + ".log");
      }
    }
  }
  return out;
}

// The first process log under `data` that says a port was taken: "<dir name>: <its line>"; ""
// when none says so.
std::string port_taken_in_logs(const std::string& data) {
  for (const auto& [dir, log] : process_dirs(data)) {
    const std::string line = port_taken_line(read_text(log));
    if (!line.empty()) return fs::path(dir).filename().string() + ": " + line;
  }
  return "";
}

// Starts Debian's ZooKeeper (one server) for the cluster; recorded in `started`.
Result<pid_t> launch_zookeeper(const std::string& data, const Layout& layout,
                               std::vector<Launched>& started) {
  Launched zk{"zookeeper", -1, data + "/zookeeper", data + "/zookeeper/zookeeper.log"};
  ZooKeeperSpec spec;
  spec.dir = zk.dir;
  spec.client_port = layout.zookeeper_port;
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<std::string> command, prepare_zookeeper(spec));
  MAGNETAR_ASSIGN_OR_RETURN(zk.pid, launch(command, zk.dir, zk.log));
  started.push_back(zk);
  return zk.pid;
}

// Starts Debian's etcd (one member) for the cluster; recorded in `started`. Over an existing
// data directory etcd ignores the initial-cluster flags and comes back as it was.
Result<pid_t> launch_etcd(const std::string& data, const Layout& layout,
                          std::vector<Launched>& started) {
  constexpr const char* kBinary = "/usr/bin/etcd";
  if (::access(kBinary, X_OK) != 0) {
    return Status(Errc::kNotFound, fmt::format("{} not found: install Debian's etcd-server "
                                               "(scripts/install-deps.sh does)",
                                               kBinary));
  }
  Launched etcd{"etcd", -1, data + "/etcd", data + "/etcd/etcd.log"};
  std::error_code ec;
  fs::create_directories(etcd.dir, ec);
  const std::string client = fmt::format("http://127.0.0.1:{}", layout.zookeeper_port);
  const std::string peer = fmt::format("http://127.0.0.1:{}", layout.etcd_peer_port);
  std::vector<std::string> argv = {kBinary,
                                   "--name", "magnetar",
                                   "--data-dir", etcd.dir + "/data",
                                   "--listen-client-urls", client,
                                   "--advertise-client-urls", client,
                                   "--listen-peer-urls", peer,
                                   "--initial-advertise-peer-urls", peer,
                                   "--initial-cluster", "magnetar=" + peer,
                                   "--initial-cluster-state", "new",
                                   "--logger", "zap",
                                   "--log-level", "warn"};
  MAGNETAR_ASSIGN_OR_RETURN(etcd.pid, launch(argv, etcd.dir, etcd.log));
  started.push_back(etcd);
  return etcd.pid;
}

// Starts every process of `layout` in `data` and records the cluster; on failure stops what
// it started and says why.
Status bring_up(const ClusterArgs& args, const std::string& data, const Layout& layout) {
  std::error_code ec;
  const std::string metadata_url = layout.metadata_url();
  write_state(data, {}, Json::array(), Json::array(), metadata_url, layout);
  std::vector<Launched> started;
  // 1. The metadata store: ZooKeeper, or etcd.
  auto store_pid = layout.metadata == "etcd" ? launch_etcd(data, layout, started)
                                             : launch_zookeeper(data, layout, started);
  if (!store_pid.ok()) return stop_started(started, store_pid.status().message());
  const Launched zk = started.back();
  // Ready when a session opens (the chroot is created on the way).
  if (Status st = wait_for_metadata_store(metadata_url, zk, 60s); !st.ok()) {
    return stop_started(started, st.message());
  }
  std::printf("%-10s 127.0.0.1:%d\n", zk.name.c_str(), layout.zookeeper_port);
  std::fflush(stdout);
  const std::string binary = self_binary();
  // 2. Bookies.
  for (int i = 0; i < args.bookies; ++i) {
    Launched b{fmt::format("bookie-{}", i), -1, fmt::format("{}/bookie-{}", data, i), ""};
    b.log = b.dir + "/bookie.log";
    fs::create_directories(b.dir, ec);
    const int port = layout.bookie_ports[static_cast<size_t>(i)];
    const std::vector<std::string> argv =
        bookie_command(binary, BookieSpec{b.dir, port, metadata_url, {}});
    auto pid = launch(argv, b.dir, b.log);
    if (!pid.ok()) return stop_started(started, pid.status().message());
    b.pid = *pid;
    started.push_back(b);
    std::string text;
    auto ready = wait_for_line(b, std::regex(kBookieReadyPattern), 60s, &text);
    if (!ready.ok()) return stop_started(started, ready.status().message());
    std::printf("bookie     127.0.0.1:%d\n", port);
    std::fflush(stdout);
  }
  // 3. Brokers.
  const int ensemble = std::min(args.bookies, 2);
  Json brokers = Json::array();
  for (int i = 0; i < args.brokers; ++i) {
    Launched b{fmt::format("broker-{}", i), -1, fmt::format("{}/broker-{}", data, i), ""};
    b.log = b.dir + "/broker.log";
    fs::create_directories(b.dir, ec);
    BrokerSpec spec;
    spec.metadata_url = metadata_url;
    spec.cluster_name = args.cluster_name;
    spec.service_port = layout.broker_ports[static_cast<size_t>(i)].first;
    spec.web_port = layout.broker_ports[static_cast<size_t>(i)].second;
    spec.ensemble = ensemble;
    if (!args.configuration_store.empty()) {
      spec.settings.push_back("configurationMetadataStoreUrl=" + args.configuration_store);
    }
    // Later settings win.
    spec.settings.insert(spec.settings.end(), args.broker_settings.begin(),
                         args.broker_settings.end());
    const std::vector<std::string> argv = broker_command(binary, spec);
    auto pid = launch(argv, b.dir, b.log);
    if (!pid.ok()) return stop_started(started, pid.status().message());
    b.pid = *pid;
    started.push_back(b);
    std::string text;
    auto ready = wait_for_line(b, std::regex(kBrokerReadyPattern), 60s, &text);
    if (!ready.ok()) return stop_started(started, ready.status().message());
    const std::string service = (*ready)[1], web = (*ready)[2];
    brokers.push_back({{"serviceUrl", service}, {"webServiceUrl", web}});
    std::printf("broker     %s %s\n", service.c_str(), web.c_str());
    std::fflush(stdout);
  }
  // 4. The cluster's ClusterData, with the URLs the brokers actually serve (they ask for free
  // ports, so what each broker registered for itself at start may not be them).
  if (!brokers.empty()) {
    std::string service_url = "pulsar://";
    for (size_t i = 0; i < brokers.size(); ++i) {
      const std::string url = brokers[i]["serviceUrl"];
      service_url += (i ? "," : "") + url.substr(std::string("pulsar://").size());
    }
    const Json cluster = {{"serviceUrl", brokers[0]["webServiceUrl"]},
                          {"brokerServiceUrl", service_url}};
    const std::string store_url =
        args.configuration_store.empty() ? metadata_url : args.configuration_store;
    Status st = run_sync<Status>([&]() -> Task<Status> {
      auto store = co_await metadata::open_store(store_url);
      if (!store.ok()) co_return store.status();
      auto put = co_await (*store)->put_recursive("/admin/clusters/" + args.cluster_name,
                                                  cluster.dump());
      (void)co_await (*store)->close();
      co_return put.status();
    });
    if (!st.ok()) {
      return stop_started(started,
                          fmt::format("cannot record cluster {} in the configuration store: {}",
                                      args.cluster_name, st.to_string()));
    }
    std::printf("cluster    %s %s %s\n", args.cluster_name.c_str(), service_url.c_str(),
                cluster["serviceUrl"].get<std::string>().c_str());
  }
  // 5. Proxies, in front of the brokers: they find them in the cluster's metadata store and
  // dial only the brokers' service ports on loopback, and only registered brokers.
  Json proxies = Json::array();
  std::string target_ports;
  for (const auto& [service, web] : layout.broker_ports) {
    target_ports += (target_ports.empty() ? "" : ",") + std::to_string(service);
  }
  for (int i = 0; i < args.proxies; ++i) {
    Launched p{fmt::format("proxy-{}", i), -1, fmt::format("{}/proxy-{}", data, i), ""};
    p.log = p.dir + "/proxy.log";
    fs::create_directories(p.dir, ec);
    std::vector<std::string> argv = {binary, "proxy", "--metadata-store", metadata_url};
    for (const std::string& s : std::vector<std::string>{
             std::string("bindAddress=127.0.0.1"), std::string("advertisedAddress=127.0.0.1"),
             fmt::format("clusterName={}", args.cluster_name),
             fmt::format("servicePort={}", layout.proxy_ports[static_cast<size_t>(i)].first),
             fmt::format("webServicePort={}", layout.proxy_ports[static_cast<size_t>(i)].second),
             fmt::format("brokerProxyAllowedTargetPorts={}", target_ports),
             std::string("brokerProxyAllowedIPAddresses=127.0.0.0/8"),
             std::string("checkActiveBrokers=true")}) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    auto pid = launch(argv, p.dir, p.log);
    if (!pid.ok()) return stop_started(started, pid.status().message());
    p.pid = *pid;
    started.push_back(p);
    std::string text;
    auto ready = wait_for_line(
        p, std::regex(kBrokerReadyPattern), 60s, &text);
    if (!ready.ok()) return stop_started(started, ready.status().message());
    const std::string service = (*ready)[1], web = (*ready)[2];
    proxies.push_back({{"serviceUrl", service}, {"webServiceUrl", web}});
    std::printf("proxy      %s %s\n", service.c_str(), web.c_str());
    std::fflush(stdout);
  }
  // Every process still runs: one that started and then died (its port taken, its disk full)
  // fails the whole `up`.
  std::this_thread::sleep_for(500ms);
  for (const auto& p : started) {
    if (!alive(p.pid)) {
      return stop_started(started, fmt::format("{} exited after it started; last lines of {}:\n{}",
                                               p.name, p.log, last_lines(read_text(p.log), 15)));
    }
  }
  write_state(data, started, brokers, proxies, metadata_url, layout);
  std::printf("metadata store %s\n", metadata_url.c_str());
  const std::string proxy_count =
      args.proxies > 0
          ? fmt::format(", {} {}", args.proxies, args.proxies == 1 ? "proxy" : "proxies")
          : "";
  std::printf("cluster up: %d broker(s), %d bookie(s)%s; stop it with `magnetar cluster down "
              "--data %s`\n",
              args.brokers, args.bookies, proxy_count.c_str(), data.c_str());
  return Status::OK();
}

}  // namespace

int run_cluster_up(const ClusterArgs& args) {
  log::set_level(log::Level::kWarn);  // the progress lines below are the output
  if ((args.brokers < 1) != (args.bookies < 1) || args.brokers < 0 || args.bookies < 0) {
    std::fprintf(stderr,
                 "error: --brokers and --bookies must both be at least 1 (or both 0: ZooKeeper "
                 "alone)\n");
    return 2;
  }
  if (args.proxies < 0 || (args.proxies > 0 && args.brokers < 1)) {
    std::fprintf(stderr, "error: --proxies needs brokers to front (--brokers at least 1)\n");
    return 2;
  }
  if (!args.configuration_store.empty()) {
    // Reachable before anything starts: a typo is one clear line, not a broker that exits.
    metadata::StoreOptions o;
    o.operation_timeout = 10s;
    auto store = run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
        [&]() { return metadata::open_store(args.configuration_store, o); });
    if (!store.ok()) {
      std::fprintf(stderr, "error: configuration store %s: %s\n", args.configuration_store.c_str(),
                   store.status().to_string().c_str());
      return 1;
    }
    (void)run_sync<Status>([&]() { return (*store)->close(); });
  }
  const std::string data = fs::absolute(args.data).lexically_normal().string();
  std::error_code ec;
  fs::create_directories(data, ec);
  if (ec) {
    std::fprintf(stderr, "error: cannot create %s: %s\n", data.c_str(), ec.message().c_str());
    return 1;
  }
  for (const auto& p : read_state(data)) {
    if (p.pid > 0 && alive(p.pid) && same_process(p.pid, p.dir)) {
      std::fprintf(stderr,
                   "error: a cluster is already running in %s (%s, pid %d); stop it with "
                   "`magnetar cluster down --data %s`\n",
                   data.c_str(), p.name.c_str(), p.pid, data.c_str());
      return 1;
    }
  }
  // A cluster that ran here before comes back as it was.
  const std::optional<Layout> previous = read_layout(data);
  if (previous) {
    const bool same = previous->name == args.cluster_name &&
                      static_cast<int>(previous->bookie_ports.size()) == args.bookies &&
                      static_cast<int>(previous->broker_ports.size()) == args.brokers &&
                      static_cast<int>(previous->proxy_ports.size()) == args.proxies &&
                      previous->configuration_store == args.configuration_store &&
                      previous->metadata == args.metadata;
    if (!same) {
      // Proxies are named only when the directory has some or some are asked for.
      const size_t proxies = previous->proxy_ports.size();
      const bool name_proxies = proxies > 0 || args.proxies > 0;
      const std::string shape =
          name_proxies ? fmt::format("{} broker(s), {} bookie(s) and {} {}",
                                     previous->broker_ports.size(), previous->bookie_ports.size(),
                                     proxies, proxies == 1 ? "proxy" : "proxies")
                       : fmt::format("{} broker(s) and {} bookie(s)", previous->broker_ports.size(),
                                     previous->bookie_ports.size());
      std::fprintf(stderr,
                   "error: %s holds cluster '%s' on %s with %s%s%s; "
                   "restart it with those (--name, --metadata, --brokers, --bookies, %s"
                   "--configuration-store), or use another --data\n",
                   data.c_str(), previous->name.c_str(), previous->metadata.c_str(), shape.c_str(),
                   previous->configuration_store.empty() ? "" : " and configuration store ",
                   previous->configuration_store.c_str(), name_proxies ? "--proxies, " : "");
      return 1;
    }
    std::printf("restarting cluster %s from %s on its recorded ports\n", args.cluster_name.c_str(),
                data.c_str());
  }
  // Every port is chosen (or taken from the last run) and recorded before anything starts, so
  // that a later `up` after a failed one restarts on the same ports: the bookies' cookies and
  // the registrations in ZooKeeper name them.
  std::optional<Layout> layout = previous;
  for (int attempt = 1;; ++attempt) {
    if (!layout) {
      auto fresh = fresh_layout(args);
      if (!fresh.ok()) {
        std::fprintf(stderr, "error: %s\n", fresh.status().to_string().c_str());
        return 1;
      }
      layout = std::move(*fresh);
    }
    const Status st = bring_up(args, data, *layout);
    if (st.ok()) return 0;
    // A first start moves when a port it picked was taken before its process bound it: picking
    // lets each port go, and anyone's next pick can land on it. A restart cannot move.
    const std::string taken = previous ? "" : port_taken_in_logs(data);
    if (taken.empty() || attempt == 3) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      return 1;
    }
    std::printf("%s; starting again on other ports\n", taken.c_str());
    std::fflush(stdout);
    for (const auto& [dir, log] : process_dirs(data)) fs::remove_all(dir, ec);
    fs::remove(data + "/cluster.json", ec);
    layout.reset();
  }
}

int run_cluster_down(const ClusterArgs& args) {
  const std::string data = fs::absolute(args.data).lexically_normal().string();
  if (!fs::exists(data + "/cluster.json")) {
    std::fprintf(stderr, "error: no cluster in %s (no cluster.json)\n", data.c_str());
    return 1;
  }
  auto processes = read_state(data);
  // Proxies first (no client reaches the brokers through them any more), then brokers (they
  // release their bundles), then bookies, then the metadata store.
  std::stable_sort(processes.begin(), processes.end(), [](const Launched& a, const Launched& b) {
    auto rank = [](const std::string& n) {
      return n.starts_with("proxy")    ? 0
             : n.starts_with("broker") ? 1
             : n.starts_with("bookie") ? 2
                                       : 3;
    };
    return rank(a.name) < rank(b.name);
  });
  int stopped = 0;
  for (const auto& p : processes) {
    if (p.pid > 0 && alive(p.pid) && same_process(p.pid, p.dir)) {
      stop_process(p);
      ++stopped;
      std::printf("stopped %s (pid %d)\n", p.name.c_str(), p.pid);
    }
  }
  // The layout stays for the next `up`; no process is recorded any more.
  auto state = Json::parse(read_text(data + "/cluster.json"), nullptr, false);
  if (state.is_object()) {
    state["processes"] = Json::array();
    std::ofstream out(data + "/cluster.json");
    out << state.dump(2) << "\n";
  }
  std::printf("cluster down: %d process(es) stopped\n", stopped);
  return 0;
}

}  // namespace magnetar::tools
