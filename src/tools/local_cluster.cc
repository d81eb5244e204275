#include "tools/local_cluster.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/asio.h"
#include "metadata/metadata_store.h"
#include "metadata/zookeeper_distribution.h"

namespace magnetar::tools {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

Result<std::vector<std::string>> prepare_zookeeper(const ZooKeeperSpec& spec) {
  MAGNETAR_ASSIGN_OR_RETURN(std::string classpath, metadata::zookeeper_classpath());
  std::error_code ec;
  fs::create_directories(spec.dir + "/data", ec);
  if (ec) {
    return Status(Errc::kIoError, fmt::format("cannot create {}/data: {}", spec.dir, ec.message()));
  }
  std::ofstream cfg(spec.dir + "/zoo.cfg");
  cfg << fmt::format(
      "tickTime={}\ninitLimit=10\nsyncLimit=5\ndataDir={}/data\nclientPort={}\n"
      "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
      "4lw.commands.whitelist=ruok,srvr,stat\n",
      spec.tick_ms, spec.dir, spec.client_port);
  if (!spec.quorum.empty()) {
    for (size_t i = 0; i < spec.quorum.size(); ++i) {
      cfg << fmt::format("server.{}=127.0.0.1:{}:{}\n", i + 1, spec.quorum[i].first,
                         spec.quorum[i].second);
    }
    std::ofstream(spec.dir + "/data/myid") << spec.my_id << "\n";
  }
  std::ofstream log4j(spec.dir + "/log4j.properties");
  log4j << metadata::zookeeper_log4j_properties();
  if (!cfg || !log4j) {
    return Status(Errc::kIoError, fmt::format("cannot write the configuration in {}", spec.dir));
  }
  return metadata::zookeeper_command("/usr/bin/java", classpath, spec.dir, 4 * 1024 * 1024);
}

namespace {

void add_settings(std::vector<std::string>& argv, const std::vector<std::string>& settings) {
  for (const std::string& s : settings) {
    argv.push_back("--set");
    argv.push_back(s);
  }
}

}  // namespace

std::vector<std::string> bookie_command(const std::string& binary, const BookieSpec& spec) {
  std::vector<std::string> argv = {binary, "bookie"};
  add_settings(argv, {fmt::format("bookiePort={}", spec.port), "advertisedAddress=127.0.0.1",
                      fmt::format("metadataStoreUrl={}", spec.metadata_url),
                      fmt::format("journalDirectories={}/journal", spec.dir),
                      fmt::format("ledgerDirectories={}/ledgers", spec.dir),
                      std::string("httpServerPort=0")});
  add_settings(argv, spec.settings);
  return argv;
}

std::vector<std::string> broker_command(const std::string& binary, const BrokerSpec& spec) {
  std::vector<std::string> argv = {binary, "broker"};
  add_settings(argv, {fmt::format("metadataStoreUrl={}", spec.metadata_url),
                      fmt::format("clusterName={}", spec.cluster_name),
                      fmt::format("bindAddress={}", spec.bind_address),
                      fmt::format("advertisedAddress={}", spec.advertised_address),
                      fmt::format("brokerServicePort={}", spec.service_port),
                      fmt::format("webServicePort={}", spec.web_port),
                      fmt::format("managedLedgerDefaultEnsembleSize={}", spec.ensemble),
                      fmt::format("managedLedgerDefaultWriteQuorum={}", spec.ensemble),
                      fmt::format("managedLedgerDefaultAckQuorum={}", spec.ensemble)});
  add_settings(argv, spec.settings);
  return argv;
}

Status wait_for_metadata_store(const std::string& url, const Launched& process,
                               std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Status last;
  while (true) {
    metadata::StoreOptions o;
    o.operation_timeout = 2s;
    auto store = run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
        [&]() { return metadata::open_store(url, o); });
    if (store.ok()) {
      (void)run_sync<Status>([&]() { return (*store)->close(); });
      return Status::OK();
    }
    last = store.status();
    if (!alive(process.pid) || std::chrono::steady_clock::now() > deadline) {
      return Status(Errc::kUnavailable, fmt::format("{} did not start ({}); last lines of {}:\n{}",
                                                    process.name, last.message(), process.log,
                                                    last_lines(read_text(process.log), 15)));
    }
    std::this_thread::sleep_for(200ms);
  }
}

Result<std::string> zookeeper_four_letter_word(int port, const std::string& word,
                                               std::chrono::milliseconds timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status(Errc::kIoError, fmt::format("socket: {}", std::strerror(errno)));
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string answer;
  Status st;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::send(fd, word.data(), word.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(word.size())) {
    st = Status(Errc::kUnavailable,
                fmt::format("'{}' to 127.0.0.1:{}: {}", word, port, std::strerror(errno)));
  } else {
    char buf[4096];
    while (true) {  // the server closes the connection after its answer
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        answer.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n < 0) {
        st = Status(Errc::kTimeout,
                    fmt::format("'{}' to 127.0.0.1:{}: {}", word, port, std::strerror(errno)));
      }
      break;
    }
  }
  ::close(fd);
  if (!st.ok()) return st;
  return answer;
}

}  // namespace magnetar::tools
