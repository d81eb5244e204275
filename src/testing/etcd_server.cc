#include "testing/etcd_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <thread>

#include "common/logging.h"
#include "common/ports.h"
#include "testing/child_process.h"

namespace magnetar::testing {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kHost = "127.0.0.1";
constexpr milliseconds kStopGrace{10000};
constexpr milliseconds kPollInterval{100};
constexpr int kLogTailLines = 30;

const log::Logger& logger() {
  static const log::Logger l("etcd-fixture");
  return l;
}

// One HTTP/1.0 GET to 127.0.0.1:port; the whole answer, or "" on any failure.
std::string http_get(int port, const std::string& target, milliseconds timeout) {
  ScopedFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (s.get() < 0) return {};
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(s.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  std::string request = fmt::format("GET {} HTTP/1.0\r\nHost: {}:{}\r\n\r\n", target, kHost, port);
  if (::send(s.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    return {};
  }
  std::string answer;
  char buf[4096];
  while (answer.size() < 64 * 1024) {
    ssize_t n = ::recv(s.get(), buf, sizeof buf, 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  return answer;
}

}  // namespace

EtcdServer::EtcdServer(Key, EtcdOptions options, std::string dir, std::string name, int client_port,
                       int peer_port, int metrics_port, std::string initial_cluster)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      name_(std::move(name)),
      client_port_(client_port),
      peer_port_(peer_port),
      metrics_port_(metrics_port),
      initial_cluster_(std::move(initial_cluster)) {}

EtcdServer::~EtcdServer() {
  kill();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

Result<std::unique_ptr<EtcdServer>> EtcdServer::prepare(const EtcdOptions& options,
                                                        std::string name, int client_port,
                                                        int peer_port, int metrics_port,
                                                        std::string initial_cluster) {
  if (::access(options.binary.c_str(), X_OK) != 0) {
    return Status(Errc::kNotFound, fmt::format("etcd binary {}: {} (Debian package etcd-server; "
                                               "scripts/install-deps.sh installs it)",
                                               options.binary, errno_text(errno)));
  }
  MAGNETAR_ASSIGN_OR_RETURN(std::string dir, make_temp_dir("magnetar-etcd-"));
  return std::make_unique<EtcdServer>(Key(), options, std::move(dir), std::move(name), client_port,
                                      peer_port, metrics_port, std::move(initial_cluster));
}

Result<std::unique_ptr<EtcdServer>> EtcdServer::start(EtcdOptions options) {
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<int> ports, pick_free_ports(3));
  std::string cluster = fmt::format("m0=http://{}:{}", kHost, ports[1]);
  const int metrics = options.tls_cert_file.empty() ? ports[0] : ports[2];
  MAGNETAR_ASSIGN_OR_RETURN(
      auto server, prepare(options, "m0", ports[0], ports[1], metrics, std::move(cluster)));
  MAGNETAR_TRY(server->spawn(/*first_start=*/true));
  MAGNETAR_TRY(server->wait_until_serving(options.start_timeout));
  return server;
}

Status EtcdServer::spawn(bool first_start) {
  MAGNETAR_ASSERT(pid_ < 0, "spawning an etcd member that is running");
  std::string client = endpoint();
  std::string peer = fmt::format("http://{}:{}", kHost, peer_port_);
  std::vector<std::string> args = {
      options_.binary,
      "--name",
      name_,
      "--data-dir",
      dir_ + "/data",
      "--listen-client-urls",
      client,
      "--advertise-client-urls",
      client,
      "--listen-peer-urls",
      peer,
      "--initial-advertise-peer-urls",
      peer,
      "--initial-cluster",
      initial_cluster_,
      "--initial-cluster-state",
      first_start ? "new" : "existing",
      "--initial-cluster-token",
      "magnetar-test",
      "--heartbeat-interval",
      std::to_string(options_.heartbeat_ms),
      "--election-timeout",
      std::to_string(options_.election_ms),
      "--logger",
      "zap",
      "--log-level",
      "warn",
  };
  if (!options_.tls_cert_file.empty()) {
    for (std::string arg : {std::string("--cert-file"), options_.tls_cert_file,
                            std::string("--key-file"), options_.tls_key_file,
                            std::string("--listen-metrics-urls"),
                            fmt::format("http://{}:{}", kHost, metrics_port_)}) {
      args.push_back(std::move(arg));
    }
    if (!options_.tls_client_ca_file.empty()) {
      args.push_back("--trusted-ca-file");
      args.push_back(options_.tls_client_ca_file);
      args.push_back("--client-cert-auth");
    }
  }
  auto pid = spawn_child(std::move(args), dir_ + "/etcd.log", dir_);
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  paused_ = false;
  return Status::OK();
}

std::string EtcdServer::endpoint() const {
  return fmt::format("{}://{}:{}", options_.tls_cert_file.empty() ? "http" : "https", kHost,
                     client_port_);
}

std::string EtcdServer::url() const {
  return "etcd:" + endpoint();
}

bool EtcdServer::running() const {
  if (pid_ < 0) return false;
  if (reap_child(pid_, false).has_value()) {
    pid_ = -1;
    return false;
  }
  return true;
}

std::string EtcdServer::log_tail(int lines) const {
  return file_tail(dir_ + "/etcd.log", lines);
}

bool EtcdServer::healthy(milliseconds timeout) const {
  std::string answer = http_get(metrics_port_, "/health", timeout);
  return answer.find("\"health\":\"true\"") != std::string::npos;
}

Status EtcdServer::wait_until_serving(milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (true) {
    if (!running()) {
      return Status(Errc::kUnavailable,
                    fmt::format("etcd {} exited; last {} lines of {}/etcd.log:\n{}", name_,
                                kLogTailLines, dir_, log_tail(kLogTailLines)));
    }
    if (healthy()) return Status::OK();
    if (Clock::now() >= deadline) {
      return Status(Errc::kTimeout,
                    fmt::format("etcd {} not healthy within {} ms; last {} lines of its log:\n{}",
                                name_, timeout.count(), kLogTailLines, log_tail(kLogTailLines)));
    }
    std::this_thread::sleep_for(kPollInterval);
  }
}

Status EtcdServer::stop() {
  if (!running()) return Status::OK();
  ::kill(pid_, SIGTERM);
  if (paused_) ::kill(pid_, SIGCONT);
  paused_ = false;
  const auto deadline = Clock::now() + kStopGrace;
  while (running() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(20));
  if (running()) {
    logger().warn("etcd {} ignored SIGTERM for {} ms; killing it", name_, kStopGrace.count());
    kill();
  }
  return Status::OK();
}

Status EtcdServer::restart() {
  MAGNETAR_TRY(stop());
  MAGNETAR_TRY(spawn(/*first_start=*/false));
  return wait_until_serving(options_.start_timeout);
}

void EtcdServer::pause() {
  if (paused_ || !running()) return;
  int exit_status = -1;
  if (pause_child(pid_, &exit_status)) {
    paused_ = true;
  } else {
    pid_ = -1;
  }
}

void EtcdServer::resume() {
  if (!paused_) return;
  paused_ = false;
  if (pid_ >= 0) ::kill(pid_, SIGCONT);
}

void EtcdServer::kill() {
  if (pid_ < 0) return;
  ::kill(pid_, SIGKILL);
  (void)reap_child(pid_, true);
  pid_ = -1;
  paused_ = false;
}

Result<std::unique_ptr<EtcdCluster>> EtcdCluster::start(int members, EtcdOptions options) {
  if (members < 1) return Status(Errc::kInvalidArgument, "an etcd cluster needs a member");
  if (!options.tls_cert_file.empty()) {
    return Status(Errc::kInvalidArgument, "EtcdCluster: TLS only for a single EtcdServer");
  }
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<int> ports, pick_free_ports(2 * members));
  std::string cluster;
  for (int i = 0; i < members; ++i) {
    if (i > 0) cluster += ',';
    cluster += fmt::format("m{}=http://{}:{}", i, kHost, ports[static_cast<size_t>(2 * i + 1)]);
  }
  std::vector<std::unique_ptr<EtcdServer>> servers;
  for (int i = 0; i < members; ++i) {
    MAGNETAR_ASSIGN_OR_RETURN(
        auto server,
        EtcdServer::prepare(options, fmt::format("m{}", i), ports[static_cast<size_t>(2 * i)],
                            ports[static_cast<size_t>(2 * i + 1)],
                            ports[static_cast<size_t>(2 * i)], cluster));
    MAGNETAR_TRY(server->spawn(/*first_start=*/true));
    servers.push_back(std::move(server));
  }
  auto out = std::make_unique<EtcdCluster>(std::move(servers));
  MAGNETAR_TRY(out->wait_until_serving(options.start_timeout));
  return out;
}

std::string EtcdCluster::url() const {
  std::string out = "etcd:http://";
  for (size_t i = 0; i < members_.size(); ++i) {
    if (i > 0) out += ',';
    out += fmt::format("{}:{}", kHost, members_[i]->client_port());
  }
  return out;
}

Status EtcdCluster::wait_until_serving(milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  for (const auto& member : members_) {
    if (!member->running()) continue;
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    MAGNETAR_TRY(member->wait_until_serving(std::max(left, milliseconds(1))));
  }
  return Status::OK();
}

}  // namespace magnetar::testing
