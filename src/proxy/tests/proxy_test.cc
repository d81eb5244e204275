// The proxy in front of an in-process broker (static discovery): our client through it,
// what the proxy answers itself, the open-relay guard, bad input and connection limits.

#include "proxy/proxy_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <thread>

#include "client/tests/client_test_support.h"
#include "http/http_client.h"
#include "protocol/frame.h"
#include "testing/pulsar_test_client.h"

namespace magnetar::proxy {
namespace {

using client::test::ClientTest;
using testing::PulsarTestClient;
using namespace std::chrono_literals;

// A plain TCP connection to 127.0.0.1:port (-1 on failure).
int raw_connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Whether the peer closed `fd` within its receive timeout (EOF or reset).
bool closed_by_peer(int fd) {
  char buf[256];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n == 0) return true;
    if (n < 0) return errno == ECONNRESET;
  }
}

class ProxyTest : public ClientTest {
 protected:
  ~ProxyTest() override {
    proxy_client_.reset();
    if (proxy_) proxy_->stop();
  }

  ProxyConfig proxy_config() {
    ProxyConfig c;
    c.bind_address = "127.0.0.1";
    c.service_port = 0;
    c.web_service_port = 0;
    c.num_io_threads = 2;
    c.cluster_name = "test";
    c.broker_service_url = url();
    c.broker_web_service_url = web_url_;
    c.broker_proxy_allowed_target_ports = "*";
    c.broker_proxy_connect_timeout_ms = 2000;
    return c;
  }

  void start_proxy(const std::function<void(ProxyConfig&)>& tweak = {}) {
    if (web_url_.empty()) web_url_ = serve_http();
    ProxyConfig c = proxy_config();
    if (tweak) tweak(c);
    auto p = ProxyServer::start(c, nullptr);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    proxy_ = std::move(p).value();
  }

  std::string proxy_url() const { return fmt::format("pulsar://127.0.0.1:{}", proxy_->port()); }

  client::Client& proxied() {
    if (!proxy_client_) {
      auto c = client::Client::create(proxy_url(), fast_options());
      EXPECT_TRUE(c.ok()) << c.status().to_string();
      proxy_client_ = std::make_unique<client::Client>(std::move(c).value());
    }
    return *proxy_client_;
  }

  std::unique_ptr<PulsarTestClient> raw(bool handshake = true) {
    PulsarTestClient::Options o;
    o.port = proxy_->port();
    o.handshake = handshake;
    auto c = PulsarTestClient::connect(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  std::string web_url_;
  std::unique_ptr<ProxyServer> proxy_;
  std::unique_ptr<client::Client> proxy_client_;
};

TEST_F(ProxyTest, LookupsAreAnsweredAsConnectThroughTheProxy) {
  start_proxy();
  auto c = raw();
  ASSERT_TRUE(c);
  EXPECT_NE(c->connected().server_version().find("magnetar-proxy"), std::string::npos);
  auto r = c->lookup(topic());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->response(), wire::CommandLookupTopicResponse::Connect);
  EXPECT_TRUE(r->proxy_through_service_url());
  EXPECT_TRUE(r->authoritative());
  EXPECT_EQ(r->brokerserviceurl(), url());
  EXPECT_EQ(r->brokerserviceurltls(), url());
  auto partitions = c->partitioned_metadata(topic());
  ASSERT_TRUE(partitions.ok()) << partitions.status().to_string();
  EXPECT_EQ(partitions->partitions(), 0u);
}

TEST_F(ProxyTest, ProducersAndConsumersWorkThroughTheProxy) {
  start_proxy();
  auto consumer = proxied().subscribe(topic(), "sub");
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  auto producer = proxied().create_producer(topic(), client::test::unbatched());
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  send_n(*producer, 50);
  auto got = receive_n(*consumer, 50);
  ASSERT_EQ(got.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(got[static_cast<size_t>(i)].data(), "msg-" + std::to_string(i));
  // The broker saw the client through the proxy: its connections count in the proxy.
  EXPECT_GE(proxy_->connections(), 2);
}

TEST_F(ProxyTest, ATargetOutsideTheAllowListIsRefused) {
  start_proxy([](ProxyConfig& c) { c.broker_proxy_allowed_target_ports = "6650,6651"; });
  auto c = raw(false);
  ASSERT_TRUE(c);
  auto connect = c->connect_command();
  connect.mutable_connect()->set_proxy_to_broker_url("evil:22");
  ASSERT_TRUE(c->send(connect).ok());
  auto e = c->receive(wire::BaseCommand::ERROR);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->command.error().error(), wire::ServiceNotReady);
  EXPECT_EQ(e->command.error().message(), "Target broker cannot be validated.");
  EXPECT_TRUE(c->closed_by_peer());
  // The broker's own port is refused too when not listed.
  auto d = raw(false);
  auto again = d->connect_command();
  again.mutable_connect()->set_proxy_to_broker_url(fmt::format("127.0.0.1:{}", broker_->port()));
  ASSERT_TRUE(d->send(again).ok());
  auto e2 = d->receive(wire::BaseCommand::ERROR);
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(e2->command.error().message(), "Target broker cannot be validated.");
}

TEST_F(ProxyTest, AnAddressOutsideTheAllowListIsRefusedAfterResolving) {
  start_proxy([](ProxyConfig& c) { c.broker_proxy_allowed_ip_addresses = "10.0.0.0/8"; });
  auto c = raw(false);
  auto connect = c->connect_command();
  connect.mutable_connect()->set_proxy_to_broker_url(fmt::format("localhost:{}", broker_->port()));
  ASSERT_TRUE(c->send(connect).ok());
  auto e = c->receive(wire::BaseCommand::ERROR);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->command.error().message(), "Target broker cannot be validated.");
}

TEST_F(ProxyTest, ANonBrokerTargetGetsAnErrorNotAHang) {
  start_proxy();
  // Something that listens but never answers a CONNECT (the proxy's own web port).
  auto c = raw(false);
  auto connect = c->connect_command();
  connect.mutable_connect()->set_proxy_to_broker_url(
      fmt::format("127.0.0.1:{}", client::test::closed_port()));
  ASSERT_TRUE(c->send(connect).ok());
  auto e = c->receive(wire::BaseCommand::ERROR, 5s);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->command.error().error(), wire::ServiceNotReady);
  EXPECT_NE(e->command.error().message().find("Cannot connect to broker"), std::string::npos);
  auto d = raw(false);
  auto to_http = d->connect_command();
  to_http.mutable_connect()->set_proxy_to_broker_url(fmt::format("127.0.0.1:{}", proxy_->web_port()));
  ASSERT_TRUE(d->send(to_http).ok());
  auto e2 = d->receive(wire::BaseCommand::ERROR, 5s);
  ASSERT_TRUE(e2.ok()) << e2.status().to_string();
  EXPECT_EQ(e2->command.error().error(), wire::ServiceNotReady);
}

TEST_F(ProxyTest, GarbageAndLyingLengthsCloseOnlyThatConnection) {
  start_proxy();
  const int garbage = raw_connect(proxy_->port());
  ASSERT_GE(garbage, 0);
  const std::string junk(64, '\x07');
  ASSERT_GT(::send(garbage, junk.data(), junk.size(), MSG_NOSIGNAL), 0);
  EXPECT_TRUE(closed_by_peer(garbage));
  ::close(garbage);
  const int liar = raw_connect(proxy_->port());
  const unsigned char huge[8] = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 4};
  ASSERT_GT(::send(liar, huge, sizeof(huge), MSG_NOSIGNAL), 0);
  EXPECT_TRUE(closed_by_peer(liar));
  ::close(liar);
  // A client whose first command is not CONNECT.
  auto c = raw(false);
  wire::BaseCommand ping;
  ping.set_type(wire::BaseCommand::PING);
  ping.mutable_ping();
  ASSERT_TRUE(c->send(ping).ok());
  EXPECT_TRUE(c->closed_by_peer());
  // Others are served.
  auto ok = raw();
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->lookup(topic()).ok());
}

TEST_F(ProxyTest, ThousandsOfIdleConnectionsOverTheLimitLeaveClientsServed) {
  // Room for the sockets of both ends in this process.
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = std::min<rlim_t>(files.rlim_max, 8192);
  ::setrlimit(RLIMIT_NOFILE, &files);
  const int kLimit = 100;
  const int kFlood = files.rlim_cur >= 4096 ? 1500 : 400;
  start_proxy([&](ProxyConfig& c) {
    c.max_concurrent_inbound_connections = kLimit;
    c.broker_proxy_connect_timeout_ms = 1500;  // the time a client has to send CONNECT
  });
  // A client that is already connected keeps being served through the flood.
  auto served = raw();
  ASSERT_TRUE(served);
  std::vector<int> idle;
  for (int i = 0; i < kFlood; ++i) {
    const int fd = raw_connect(proxy_->port());
    if (fd >= 0) idle.push_back(fd);
  }
  EXPECT_EQ(static_cast<int>(idle.size()), kFlood);
  for (int i = 0; i < 200 && proxy_->connections() < kLimit; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(proxy_->connections(), kLimit);
  auto during = served->lookup(topic());
  ASSERT_TRUE(during.ok()) << during.status().to_string();
  EXPECT_EQ(during->response(), wire::CommandLookupTopicResponse::Connect);
  // Beyond the limit a connection is closed at once, not after the CONNECT timeout.
  const int extra = raw_connect(proxy_->port());
  ASSERT_GE(extra, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(closed_by_peer(extra));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1000ms);
  ::close(extra);
  // The idle ones never sent CONNECT: every one is closed (at once or after the timeout).
  for (int fd : idle) {
    EXPECT_TRUE(closed_by_peer(fd));
    ::close(fd);
  }
  for (int i = 0; i < 300 && proxy_->connections() > 1; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(proxy_->connections(), 1);  // the served client
  auto c = raw();
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->lookup(topic()).ok());
  EXPECT_TRUE(served->lookup(topic()).ok());
}

TEST_F(ProxyTest, TooManyLookupsInFlightAreRefusedWithPulsarsText) {
  start_proxy([](ProxyConfig& c) { c.max_concurrent_lookup_requests = 1; });
  auto c = raw();
  ASSERT_TRUE(c);
  // Two lookups in one write: the proxy reads both before the first can have been answered,
  // so the second finds the only slot taken (sent one by one, the first could come back in
  // between).
  std::vector<uint64_t> ids;
  std::string both;
  for (int i = 0; i < 2; ++i) {
    wire::BaseCommand l;
    l.set_type(wire::BaseCommand::LOOKUP);
    ids.push_back(c->next_request_id());
    l.mutable_lookuptopic()->set_topic(topic(std::to_string(i)));
    l.mutable_lookuptopic()->set_request_id(ids.back());
    both += std::string(protocol::encode_command(l).view());
  }
  ASSERT_TRUE(c->send_raw(both).ok());
  int refused = 0, answered = 0;
  for (uint64_t id : ids) {
    auto r = c->response(id);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const auto& resp = r->command.lookuptopicresponse();
    if (resp.response() == wire::CommandLookupTopicResponse::Failed) {
      EXPECT_EQ(resp.error(), wire::ServiceNotReady);
      EXPECT_EQ(resp.message(), "Too many concurrent lookup and partitionsMetadata requests");
      ++refused;
    } else {
      ++answered;
    }
  }
  EXPECT_EQ(answered, 1);
  EXPECT_EQ(refused, 1);
}

TEST_F(ProxyTest, AdminAndLookupHttpAreForwardedAndMetricsAreTheProxys) {
  start_proxy();
  http::HttpClient h;
  const std::string base = fmt::format("http://127.0.0.1:{}", proxy_->web_port());
  auto topics = h.send_blocking({"GET", base + "/admin/v2/namespaces/public/default/topics"});
  ASSERT_TRUE(topics.ok()) << topics.status().to_string();
  EXPECT_EQ(topics->status, 200) << topics->body;
  auto lookup = h.send_blocking({"GET", base + "/lookup/v2/topic/persistent/public/default/x"});
  ASSERT_TRUE(lookup.ok());
  EXPECT_EQ(lookup->status, 200) << lookup->body;
  EXPECT_NE(lookup->body.find(url()), std::string::npos) << lookup->body;
  auto missing = h.send_blocking({"GET", base + "/admin/v2/tenants/no-such-tenant"});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  auto status = h.send_blocking({"GET", base + "/status.html"});
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->status, 200);
  EXPECT_EQ(status->body, "OK");
  auto c = raw();
  ASSERT_TRUE(c->lookup(topic()).ok());
  auto metrics = h.send_blocking({"GET", base + "/metrics"});
  ASSERT_TRUE(metrics.ok());
  for (const char* series :
       {"pulsar_proxy_active_connections{cluster=\"test\"}", "pulsar_proxy_new_connections",
        "pulsar_proxy_lookup_requests", "pulsar_proxy_rejected_connections",
        "pulsar_proxy_binary_bytes", "magnetar_proxy_bytes_in_total",
        "magnetar_proxy_bytes_out_total"}) {
    EXPECT_NE(metrics->body.find(series), std::string::npos) << series;
  }
}

// The web console's files come from the proxy itself (the brokers' web servers here have no
// console); its REST calls are forwarded like any other /admin/ request.
TEST_F(ProxyTest, TheWebConsoleIsServedByTheProxyItself) {
  start_proxy();
  http::HttpClient h;
  const std::string base = fmt::format("http://127.0.0.1:{}", proxy_->web_port());
  auto bare = h.send_blocking({"GET", base + "/console"});
  ASSERT_TRUE(bare.ok()) << bare.status().to_string();
  EXPECT_EQ(bare->status, 200);
  EXPECT_EQ(bare->url, base + "/console/");
  auto index = h.send_blocking({"GET", base + "/console/"});
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->header("content-type"), "text/html; charset=utf-8");
  EXPECT_NE(index->header("content-security-policy").find("default-src 'none'"), std::string::npos);
  auto script = h.send_blocking({"GET", base + "/console/main.js"});
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(script->status, 200);
  auto outside = h.send_blocking({"GET", base + "/console/../admin/v2/clusters"});
  ASSERT_TRUE(outside.ok());
  EXPECT_EQ(outside->status, 404);
  auto direct = h.send_blocking({"GET", web_url_ + "/console/"});
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(direct->status, 404);
}

TEST_F(ProxyTest, ABrokerThatGoesAwayClosesTheClientSide) {
  start_proxy();
  auto c = raw(false);
  auto connect = c->connect_command();
  connect.mutable_connect()->set_proxy_to_broker_url(fmt::format("127.0.0.1:{}", broker_->port()));
  ASSERT_TRUE(c->send(connect).ok());
  auto connected = c->receive(wire::BaseCommand::CONNECTED);
  ASSERT_TRUE(connected.ok()) << connected.status().to_string();
  // The broker's own answer, relayed.
  EXPECT_EQ(connected->command.connected().server_version().find("magnetar-proxy"), std::string::npos);
  broker_->stop();
  EXPECT_TRUE(c->closed_by_peer(5s));
}

}  // namespace
}  // namespace magnetar::proxy
