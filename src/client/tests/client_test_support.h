#pragma once
// A broker and a bookie in this process over a memory: metadata store (as the broker tests
// build them), optionally the broker's HTTP routes on a web port (serve_http), and helpers
// for driving the client library against it.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "broker/admin/admin_resources.h"
#include "broker/broker.h"
#include "http/http_server.h"
#include "ledger/tests/ledger_test_support.h"
#include "magnetar/client.h"
#include "testing/test_name.h"

namespace magnetar::client::test {

// A port nobody listens on: bound, then closed.
inline int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A listening TCP socket on 127.0.0.1 on a port the kernel picks (SO_REUSEADDR): its
// descriptor; the port in `port`.
inline int listen_on_loopback(int backlog, int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(fd, backlog);
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return fd;
}

using namespace std::chrono_literals;

using magnetar::testing::test_name;

// Producers whose every send is its own entry (message ids without a batch index).
inline ProducerOptions unbatched() {
  ProducerOptions o;
  o.batching_enabled = false;
  return o;
}

class ClientTest : public ::testing::Test {
 protected:
  ClientTest() : cluster_(test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
    auto made = cluster_.await(store_->put_recursive("/admin/policies/public/default", "{}"));
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    start_broker();
  }
  ~ClientTest() override {
    if (client_) (void)client_->close();
    if (web_) web_->stop();
    if (broker_) broker_->stop();
  }

  // A broker of these tests: on 127.0.0.1, one bookie's quorums, a small cache.
  static broker::BrokerConfig test_broker_config(int port = 0) {
    broker::BrokerConfig c;
    c.broker_service_port = port;
    c.bind_address = "127.0.0.1";
    c.num_io_threads = 2;
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    c.managed_ledger.mark_delete_rate_limit = 0;
    c.managed_ledger_factory.cache_size_mb = 16;
    return c;
  }

  void start_broker(const std::function<void(broker::BrokerConfig&)>& tweak = {}, int port = 0) {
    broker::BrokerConfig c = test_broker_config(port);
    if (tweak) tweak(c);
    auto b = broker::Broker::start(c, metadata::MetadataStores{store_, store_});
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    broker_ = std::move(b).value();
  }

  std::string url() const { return "pulsar://127.0.0.1:" + std::to_string(broker_->port()); }

  // Serves the broker's HTTP routes (lookup, partitioned metadata, admin resources such as a
  // namespace's topics) on a web port of 127.0.0.1, as BrokerServer does; returns its
  // http:// URL. The routes use the current broker_: call again after start_broker().
  // With a server TLS context, they are served over HTTPS too and the https:// URL returned.
  std::string serve_http(std::shared_ptr<net::TlsContext> tls = nullptr) {
    if (web_) web_->stop();
    http::ServerOptions o;
    o.address = "127.0.0.1";
    o.port = 0;
    o.tls = tls;
    auto web = http::HttpServer::start(o, log::Logger("web"));
    EXPECT_TRUE(web.ok()) << web.status().to_string();
    if (!web.ok()) return "";
    web_ = std::move(web).value();
    broker::add_admin_routes(*web_, metadata::MetadataStores{store_, store_},
                             broker::AdminResourcesOptions{}, broker_->services(), nullptr);
    if (tls) return "https://127.0.0.1:" + std::to_string(web_->tls_port());
    return "http://127.0.0.1:" + std::to_string(web_->port());
  }

  ClientOptions fast_options() const {
    ClientOptions o;
    o.operation_timeout = 10s;
    o.initial_backoff = 50ms;
    o.max_backoff = 1s;
    return o;
  }

  Client& client() {
    if (!client_) {
      auto c = Client::create(url(), fast_options());
      EXPECT_TRUE(c.ok()) << c.status().to_string();
      client_ = std::make_unique<Client>(std::move(c).value());
    }
    return *client_;
  }

  std::string topic(const std::string& suffix = "") {
    return "persistent://public/default/" + test_name() + suffix;
  }

  void make_partitioned(const std::string& local_name, int partitions) {
    auto made = cluster_.await(
        store_->put_recursive("/admin/partitioned-topics/public/default/persistent/" + local_name,
                              "{\"partitions\":" + std::to_string(partitions) + "}"));
    ASSERT_TRUE(made.ok()) << made.status().to_string();
  }

  Producer producer(const std::string& t, ProducerOptions o = {}) {
    auto p = client().create_producer(t, std::move(o));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? std::move(p).value() : Producer();
  }

  Consumer consumer(const std::string& t, const std::string& sub, ConsumerOptions o = {}) {
    auto c = client().subscribe(t, sub, std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : Consumer();
  }

  // Sends "<prefix><i>" for i in [0, n) and returns the ids.
  std::vector<MessageId> send_n(Producer& p, int n, const std::string& prefix = "msg-") {
    std::vector<MessageId> ids;
    for (int i = 0; i < n; ++i) {
      auto id = p.send(Message(prefix + std::to_string(i)));
      EXPECT_TRUE(id.ok()) << id.status().to_string();
      if (id.ok()) ids.push_back(*id);
    }
    return ids;
  }

  // Receives n messages (each within `timeout`), acknowledging them when `ack`.
  std::vector<Message> receive_n(Consumer& c, int n, bool ack = true,
                                 std::chrono::milliseconds timeout = 5s) {
    std::vector<Message> out;
    for (int i = 0; i < n; ++i) {
      auto m = c.receive(timeout);
      EXPECT_TRUE(m.ok()) << "message " << i << ": " << m.status().to_string();
      if (!m.ok()) break;
      if (ack) {
        EXPECT_TRUE(c.acknowledge(*m).ok());
      }
      out.push_back(std::move(m).value());
    }
    return out;
  }

  ledger::test::Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<broker::Broker> broker_;
  std::unique_ptr<http::HttpServer> web_;  // after serve_http()
  std::unique_ptr<Client> client_;
};

}  // namespace magnetar::client::test
