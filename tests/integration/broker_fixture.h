#pragma once
// The fixture of cluster-mode tests: ClusterFixture's ZooKeeper and bookies plus
// `magnetar broker` processes on 127.0.0.1 (ports picked by each broker and read from its
// log), a raw HTTP helper for their web ports, and lookups followed as a client does.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_fixture.h"
#include "testing/child_process.h"
#include "testing/pulsar_test_client.h"

namespace magnetar::testing {

// One `magnetar broker` child; ports are picked by the broker and read from its log.
struct BrokerChild {
  pid_t pid = -1;
  std::string log;
  int port = 0, web_port = 0;
  std::string url() const { return fmt::format("pulsar://127.0.0.1:{}", port); }
  std::string id() const { return fmt::format("127.0.0.1:{}", web_port); }
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A minimal HTTP/1.1 exchange (Connection: close): status code and body.
inline std::pair<int, std::string> http(int port, const std::string& method, const std::string& target,
                                  const std::string& body = {}) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return {0, "connect failed"};
  }
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = fmt::format(
      "{} {} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: "
      "application/json\r\nContent-Length: {}\r\n\r\n{}",
      method, target, body.size(), body);
  (void)::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) response.append(buf, static_cast<size_t>(n));
  ::close(fd);
  if (response.size() < 12) return {0, response};
  const int status = std::atoi(response.substr(9, 3).c_str());
  const size_t split = response.find("\r\n\r\n");
  return {status, split == std::string::npos ? "" : response.substr(split + 4)};
}

class BrokerClusterFixture : public ClusterFixture {
 public:
  void SetUp() override {
    ClusterFixture::SetUp();
    if (HasFatalFailure()) return;
    start_bookies(3);
  }

  void TearDown() override {
    for (auto& b : brokers_) {
      if (b.pid > 0) {
        if (HasFailure()) {
          std::fprintf(stderr, "--- broker %s, last lines of %s ---\n%s\n", b.id().c_str(),
                       b.log.c_str(), tail(read_file(b.log), 30).c_str());
        }
        ::kill(b.pid, SIGKILL);
        (void)reap_child(b.pid, true);
      }
    }
    ClusterFixture::TearDown();
  }

  static std::string tail(const std::string& text, int lines) {
    size_t pos = text.size();
    for (int i = 0; i <= lines && pos != std::string::npos && pos > 0; ++i) {
      pos = text.rfind('\n', pos - 1);
    }
    return pos == std::string::npos ? text : text.substr(pos + 1);
  }

  BrokerChild& start_broker(const Settings& extra = {}) {
    BrokerChild b;
    b.log = (root_ / fmt::format("broker-{}.log", brokers_.size())).string();
    std::vector<std::string> args = {MAGNETAR_BINARY, "broker"};
    const Settings settings = {{"metadataStoreUrl", url_},
                               {"clusterName", "test"},
                               {"bindAddress", "127.0.0.1"},
                               {"advertisedAddress", "127.0.0.1"},
                               {"brokerServicePort", "0"},
                               {"webServicePort", "0"},
                               {"numIOThreads", "2"},
                               {"metadataStoreSessionTimeoutMillis", "4000"},
                               {"managedLedgerDefaultEnsembleSize", "2"},
                               {"managedLedgerDefaultWriteQuorum", "2"},
                               {"managedLedgerDefaultAckQuorum", "2"},
                               {"loadBalancerReportUpdateMinIntervalMillis", "500"},
                               {"defaultNumberOfNamespaceBundles", "16"}};
    Settings all = settings;
    all.insert(all.end(), extra.begin(), extra.end());
    for (const auto& [k, v] : all) {
      args.push_back("--set");
      args.push_back(k + "=" + v);
    }
    auto pid = spawn_child(args, b.log);
    EXPECT_TRUE(pid.ok()) << pid.status().to_string();
    b.pid = pid.ok() ? *pid : -1;
    const std::regex ready(R"(service URL:\s+pulsar://127\.0\.0\.1:(\d+)\s+web service URL: http://127\.0\.0\.1:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = read_file(b.log);
      if (std::regex_search(text, m, ready)) {
        b.port = std::stoi(m[1]);
        b.web_port = std::stoi(m[2]);
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_GT(b.port, 0) << "broker not ready; log:\n" << read_file(b.log);
    brokers_.push_back(b);
    return brokers_.back();
  }

  std::unique_ptr<PulsarTestClient> connect(const BrokerChild& b) {
    PulsarTestClient::Options o;
    o.port = b.port;
    auto c = PulsarTestClient::connect(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Until `n` brokers are registered with the load manager (at most 10 s).
  void wait_for_registered_brokers(size_t n) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      auto ids = await(store_->children("/loadbalance/brokers"));
      if (ids.ok() && ids->size() == n) return;
      run_for(std::chrono::milliseconds(100));
    }
  }

  const BrokerChild* broker_by_url(const std::string& url) const {
    for (const auto& b : brokers_) {
      if (b.url() == url && b.pid > 0) return &b;
    }
    return nullptr;
  }

  // Follows lookups from `start` as a Pulsar client does; returns the owner's URL. As a client
  // does, a lookup answered ServiceNotReady (the bundle is being unloaded or split) is asked
  // again a little later, for up to 10 s.
  std::string resolve(const BrokerChild& start, const std::string& topic, int* redirects) {
    const BrokerChild* at = &start;
    bool authoritative = false;
    int not_ready = 0;
    for (int hop = 0; hop < 8; ++hop) {
      auto c = connect(*at);
      if (!c) return {};
      auto r = c->lookup(topic, authoritative);
      if (!r.ok() && server_error_of(r.status()) == wire::ServiceNotReady && ++not_ready < 50) {
        run_for(std::chrono::milliseconds(200));
        --hop;
        continue;
      }
      if (!r.ok()) {
        ADD_FAILURE() << "lookup " << topic << ": " << r.status().to_string();
        return {};
      }
      if (r->response() == wire::CommandLookupTopicResponse::Connect) {
        return r->brokerserviceurl();
      }
      ++*redirects;
      authoritative = r->authoritative();
      at = broker_by_url(r->brokerserviceurl());
      if (at == nullptr) {
        ADD_FAILURE() << "redirect to unknown broker " << r->brokerserviceurl();
        return {};
      }
    }
    ADD_FAILURE() << "too many redirects for " << topic;
    return {};
  }

  std::vector<BrokerChild> brokers_;
};

}  // namespace magnetar::testing
