// The broker's TLS listeners: the Pulsar protocol on brokerServicePortTls and the web routes
// on webServicePortTls, next to the plain ports. A whole BrokerServer and an in-process
// bookie over a memory: store; certificates made at test time (testing/tls_certs.h); TLS
// clients built from net::tls_stream so every byte on the wire is under the test's control.

#include "net/tls.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/broker.h"
#include "broker/broker_server.h"
#include "broker/config/broker_config.h"
#include "ledger/tests/ledger_test_support.h"
#include "net/stream.h"
#include "protocol/frame.h"
#include "testing/pulsar_test_client.h"
#include "testing/tls_suite.h"
#include "testing/test_name.h"

namespace magnetar::broker {
namespace {

using namespace std::chrono_literals;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;
using ledger::test::Cluster;

using magnetar::testing::test_name;

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

wire::BaseCommand connect_command() {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::CONNECT);
  c.mutable_connect()->set_client_version("tls-test");
  c.mutable_connect()->set_protocol_version(21);
  return c;
}

wire::BaseCommand lookup_command(const std::string& topic, uint64_t request_id) {
  wire::BaseCommand c;
  c.set_type(wire::BaseCommand::LOOKUP);
  c.mutable_lookuptopic()->set_topic(topic);
  c.mutable_lookuptopic()->set_request_id(request_id);
  return c;
}

// What a TLS connection got: the handshake's outcome, then the frames or bytes read.
struct Exchange {
  Status status;
  std::vector<wire::BaseCommand> frames;
  std::string bytes;  // raw (HTTP)
};

// Connects over TLS to 127.0.0.1:`port`, writes `out`, and reads until `frames` Pulsar
// frames arrived (frames > 0) or the server closed the connection (frames == 0), for at
// most 5 s.
Exchange tls_exchange(int port, std::shared_ptr<net::TlsContext> ctx, std::string out,
                      size_t frames) {
  return run_sync<Exchange>([=]() -> Task<Exchange> {
    Exchange x;
    auto ex = co_await asio::this_coro::executor;
    tcp::socket socket(ex);
    boost::system::error_code ec;
    const tcp::endpoint to(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port));
    co_await socket.async_connect(to, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      x.status = Status(Errc::kUnavailable, ec.message());
      co_return x;
    }
    std::unique_ptr<net::Stream> stream = net::tls_stream(std::move(socket), ctx);
    x.status = co_await stream->handshake("127.0.0.1", Clock::now() + 5s);
    if (!x.status.ok()) co_return x;
    std::vector<asio::const_buffer> buffers{asio::buffer(out)};
    co_await stream->write(buffers, ec);
    asio::steady_timer limit(ex);
    limit.expires_after(5s);
    net::Stream* raw = stream.get();
    limit.async_wait([raw](boost::system::error_code e) {
      if (!e) raw->close();
    });
    protocol::FrameDecoder decoder;
    std::vector<char> buf(64 * 1024);
    while (frames == 0 || x.frames.size() < frames) {
      const size_t n = co_await stream->read_some(asio::buffer(buf), ec);
      if (ec) {
        x.status = Status(Errc::kUnavailable, net::describe_error(ec));
        break;
      }
      x.bytes.append(buf.data(), n);
      decoder.feed(Buffer::copy_of(buf.data(), n));
      while (frames > 0) {
        auto f = decoder.next();
        if (!f.ok() || !f->has_value()) break;
        x.frames.push_back((**f).command);
      }
    }
    limit.cancel();
    co_return x;
  });
}

std::string frame_bytes(const wire::BaseCommand& c) {
  Buffer b = protocol::encode_command(c);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// A plain TCP connection that writes `out` (maybe nothing) and waits for the server to close
// it: how long that took, or nullopt when it was still open after `wait`.
std::optional<std::chrono::milliseconds> time_until_closed(int port, const std::string& out,
                                                           std::chrono::seconds wait) {
  asio::io_context io;
  tcp::socket s(io);
  boost::system::error_code ec;
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)), ec);
  if (ec) return std::nullopt;
  if (!out.empty()) asio::write(s, asio::buffer(out), ec);
  timeval tv{static_cast<time_t>(wait.count()), 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto start = Clock::now();
  char buf[4096];
  while (true) {
    const ssize_t n = ::recv(s.native_handle(), buf, sizeof(buf), 0);
    if (n > 0) continue;  // a TLS alert, maybe
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  }
}

class BrokerTlsTest : public ::testing::Test, protected testing::TlsSuiteCerts {
 protected:
  static void SetUpTestSuite() { make_suite_certs("broker-tls"); }
  static void TearDownTestSuite() { remove_suite_certs(); }

  BrokerTlsTest() : cluster_(test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
    auto made = cluster_.await(store_->put_recursive("/admin/policies/public/default", "{}"));
    EXPECT_TRUE(made.ok()) << made.status().to_string();
  }
  ~BrokerTlsTest() override {
    if (server_) server_->stop();
  }

  BrokerConfig config() const {
    BrokerConfig c;
    c.bind_address = "127.0.0.1";
    c.broker_service_port = 0;
    c.web_service_port = 0;
    c.broker_service_port_tls = 0;
    c.web_service_port_tls = 0;
    c.tls.certificate_file_path = certs_->server_cert;
    c.tls.key_file_path = certs_->server_key;
    c.tls.handshake_timeout_millis = 500;
    c.num_io_threads = 2;
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    c.managed_ledger_factory.cache_size_mb = 16;
    return c;
  }

  void start(const std::function<void(BrokerConfig&)>& tweak = {}) {
    BrokerConfig c = config();
    if (tweak) tweak(c);
    auto s = BrokerServer::start(c, metadata::MetadataStores{store_, store_}, false);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }

  static std::shared_ptr<net::TlsContext> client_context(const std::string& cert = "",
                                                         const std::string& key = "") {
    net::TlsOptions o;
    o.trust_certs_file = certs_->ca_cert;
    o.certificate_file = cert;
    o.private_key_file = key;
    auto c = net::TlsContext::create(net::TlsRole::kClient, o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? *c : nullptr;
  }

  // CONNECT then PING over TLS: OK when CONNECTED and PONG came back.
  Status tls_ping(std::shared_ptr<net::TlsContext> ctx) {
    wire::BaseCommand ping;
    ping.set_type(wire::BaseCommand::PING);
    ping.mutable_ping();
    auto x = tls_exchange(server_->tls_port(), ctx,
                          frame_bytes(connect_command()) + frame_bytes(ping), 2);
    if (x.frames.size() < 2) {
      return x.status.ok() ? Status(Errc::kInternal, "too few frames") : x.status;
    }
    if (x.frames[0].type() != wire::BaseCommand::CONNECTED ||
        x.frames[1].type() != wire::BaseCommand::PONG) {
      return Status(Errc::kInternal, "unexpected frames");
    }
    return Status::OK();
  }

  Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<BrokerServer> server_;
};

TEST_F(BrokerTlsTest, ThePulsarProtocolOverTlsAndLookupsNameTheTlsUrl) {
  start();
  ASSERT_GT(server_->tls_port(), 0);
  ASSERT_NE(server_->tls_port(), server_->port());
  const std::string tls_url = fmt::format("pulsar+ssl://127.0.0.1:{}", server_->tls_port());
  const std::string plain_url = fmt::format("pulsar://127.0.0.1:{}", server_->port());

  auto x = tls_exchange(server_->tls_port(), client_context(),
                        frame_bytes(connect_command()) + frame_bytes(lookup_command("t", 7)), 2);
  ASSERT_EQ(x.frames.size(), 2u) << x.status.to_string();
  EXPECT_EQ(x.frames[0].type(), wire::BaseCommand::CONNECTED);
  ASSERT_EQ(x.frames[1].type(), wire::BaseCommand::LOOKUP_RESPONSE);
  const auto& r = x.frames[1].lookuptopicresponse();
  EXPECT_EQ(r.response(), wire::CommandLookupTopicResponse::Connect);
  EXPECT_EQ(r.brokerserviceurl(), plain_url);
  EXPECT_EQ(r.brokerserviceurltls(), tls_url);

  // The plain port, alongside: the same answer.
  testing::PulsarTestClient::Options o;
  o.port = server_->port();
  auto plain = testing::PulsarTestClient::connect(o);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_TRUE((*plain)->ping().ok());
  auto looked = (*plain)->lookup("persistent://public/default/t");
  ASSERT_TRUE(looked.ok()) << looked.status().to_string();
  EXPECT_EQ(looked->brokerserviceurltls(), tls_url);
}

TEST_F(BrokerTlsTest, WithoutTlsPortsLookupsNameNoTlsUrl) {
  start([](BrokerConfig& c) {
    c.broker_service_port_tls.reset();
    c.web_service_port_tls.reset();
  });
  EXPECT_EQ(server_->tls_port(), 0);
  EXPECT_EQ(server_->web_tls_port(), 0);
  testing::PulsarTestClient::Options o;
  o.port = server_->port();
  auto plain = testing::PulsarTestClient::connect(o);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  auto looked = (*plain)->lookup("persistent://public/default/t");
  ASSERT_TRUE(looked.ok()) << looked.status().to_string();
  EXPECT_FALSE(looked->has_brokerserviceurltls());
}

TEST_F(BrokerTlsTest, PlainTextAndStalledClientsAreDroppedWhileOthersCarryOn) {
  start();
  const int port = server_->tls_port();
  // A stalled client: connected, silent. Dropped after tlsHandshakeTimeoutMillis (500 ms)...
  std::optional<std::chrono::milliseconds> stalled;
  std::thread staller([&] { stalled = time_until_closed(port, "", 10s); });
  // ...while other TLS clients are served meanwhile.
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(tls_ping(client_context()).ok());
  staller.join();
  ASSERT_TRUE(stalled.has_value()) << "a silent client was never dropped";
  EXPECT_GE(stalled->count(), 300);
  EXPECT_LT(stalled->count(), 5000);

  // Plain-text Pulsar (a CONNECT frame) on the TLS port: dropped at once, never answered.
  auto plain_text = time_until_closed(port, frame_bytes(connect_command()), 10s);
  ASSERT_TRUE(plain_text.has_value()) << "a plain-text client was never dropped";
  EXPECT_LT(plain_text->count(), 5000);
  // Garbage too.
  auto garbage = time_until_closed(port, std::string(3000, '\xff'), 10s);
  ASSERT_TRUE(garbage.has_value());

  // Both ports still serve.
  EXPECT_TRUE(tls_ping(client_context()).ok());
  testing::PulsarTestClient::Options o;
  o.port = server_->port();
  auto plain = testing::PulsarTestClient::connect(o);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_TRUE((*plain)->ping().ok());
  // A TLS client on the plain port gets nowhere either (the broker reads a lying length).
  auto x = tls_exchange(server_->port(), client_context(), frame_bytes(connect_command()), 1);
  EXPECT_FALSE(x.status.ok());
  EXPECT_TRUE(x.frames.empty());
}

TEST_F(BrokerTlsTest, MutualTlsRequiresATrustedClientCertificate) {
  start([](BrokerConfig& c) {
    c.tls.trust_certs_file_path = certs_->ca_cert;
    c.tls.require_trusted_client_cert_on_connect = true;
  });
  Status none = tls_ping(client_context());
  EXPECT_FALSE(none.ok());
  Status untrusted =
      tls_ping(client_context(certs_->untrusted_client_cert, certs_->untrusted_client_key));
  EXPECT_FALSE(untrusted.ok());
  Status trusted = tls_ping(client_context(certs_->client_cert, certs_->client_key));
  EXPECT_TRUE(trusted.ok()) << trusted.to_string();
}

TEST_F(BrokerTlsTest, AllowInsecureAcceptsAnyClientCertificate) {
  start([](BrokerConfig& c) {
    c.tls.trust_certs_file_path = certs_->ca_cert;
    c.tls.require_trusted_client_cert_on_connect = true;
    c.tls.allow_insecure_connection = true;
  });
  Status untrusted =
      tls_ping(client_context(certs_->untrusted_client_cert, certs_->untrusted_client_key));
  EXPECT_TRUE(untrusted.ok()) << untrusted.to_string();
  // Still required: a client with no certificate at all is refused.
  EXPECT_FALSE(tls_ping(client_context()).ok());
}

TEST_F(BrokerTlsTest, BadTlsFilesStopTheStartNamingTheFile) {
  const std::string missing = *dir_ + "/missing.pem";
  struct Case {
    std::function<void(BrokerConfig&)> tweak;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[&](BrokerConfig& c) { c.tls.certificate_file_path = missing; }, missing},
      {[&](BrokerConfig& c) { c.tls.key_file_path = missing; }, missing},
      {[&](BrokerConfig& c) { c.tls.key_file_path = certs_->client_key; }, "does not match"},
      {[&](BrokerConfig& c) { c.tls.trust_certs_file_path = missing; }, missing},
      {[&](BrokerConfig& c) { c.tls.certificate_file_path.clear(); }, "certificate"},
      {[&](BrokerConfig& c) { c.tls.protocols = {"TLSv9"}; }, "TLSv9"},
  };
  for (const Case& k : cases) {
    for (bool web : {false, true}) {
      BrokerConfig c = config();
      // One TLS port at a time, so the message must name that one.
      if (web) {
        c.broker_service_port_tls.reset();
      } else {
        c.web_service_port_tls.reset();
      }
      k.tweak(c);
      auto s = BrokerServer::start(c, metadata::MetadataStores{store_, store_}, false);
      ASSERT_FALSE(s.ok()) << k.expected;
      EXPECT_TRUE(contains(s.status().message(), k.expected)) << s.status().to_string();
      EXPECT_TRUE(
          contains(s.status().message(), web ? "webServicePortTls" : "brokerServicePortTls"))
          << s.status().to_string();
    }
  }
  // Broker alone (no web server): the same, and it does not hang on the way out.
  BrokerConfig c = config();
  c.tls.certificate_file_path = missing;
  auto b = Broker::start(c, metadata::MetadataStores{store_, store_});
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.status().message(), missing)) << b.status().to_string();
}

TEST_F(BrokerTlsTest, HttpsServesTheWebRoutes) {
  start();
  ASSERT_GT(server_->web_tls_port(), 0);
  auto get = [&](const std::string& target) {
    const std::string request =
        "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    return tls_exchange(server_->web_tls_port(), client_context(), request, 0);
  };
  auto metrics = get("/metrics");
  EXPECT_TRUE(metrics.bytes.rfind("HTTP/1.1 200", 0) == 0) << metrics.bytes.substr(0, 200);
  auto lookup = get("/lookup/v2/topic/persistent/public/default/web-tls");
  ASSERT_TRUE(lookup.bytes.rfind("HTTP/1.1 200", 0) == 0) << lookup.bytes.substr(0, 300);
  const auto body =
      nlohmann::json::parse(lookup.bytes.substr(lookup.bytes.find("\r\n\r\n") + 4), nullptr, false);
  EXPECT_EQ(body.value("brokerUrlTls", ""),
            fmt::format("pulsar+ssl://127.0.0.1:{}", server_->tls_port()));
  EXPECT_EQ(body.value("httpUrlTls", ""),
            fmt::format("https://127.0.0.1:{}", server_->web_tls_port()));
  // Plain HTTP on the HTTPS port: dropped; the HTTPS port keeps serving.
  auto dropped =
      time_until_closed(server_->web_tls_port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", 10s);
  EXPECT_TRUE(dropped.has_value());
  EXPECT_TRUE(get("/metrics").bytes.rfind("HTTP/1.1 200", 0) == 0);
}

// Certificate authentication on both listeners (AuthenticationProviderTls): the client
// certificate's CN is the role over CONNECT's "tls" method and over HTTPS without a header.
TEST_F(BrokerTlsTest, ClientCertificatesAuthenticateTheProtocolAndTheAdminApi) {
  start([](BrokerConfig& c) {
    c.tls.trust_certs_file_path = certs_->ca_cert;
    c.authentication.enabled = true;
    c.authentication.providers = {
        "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"};
    c.authorization_enabled = true;
    c.super_user_roles = {"magnetar-test-client"};  // the test client certificate's CN
  });
  auto with_cert = client_context(certs_->client_cert, certs_->client_key);
  // CONNECT with "tls": CONNECTED; without a certificate: the AuthenticationError.
  wire::BaseCommand connect = connect_command();
  connect.mutable_connect()->set_auth_method_name("tls");
  auto ok = tls_exchange(server_->tls_port(), with_cert, frame_bytes(connect), 1);
  ASSERT_EQ(ok.frames.size(), 1u) << ok.status.to_string();
  EXPECT_EQ(ok.frames[0].type(), wire::BaseCommand::CONNECTED);
  auto refused = tls_exchange(server_->tls_port(), client_context(), frame_bytes(connect), 1);
  ASSERT_EQ(refused.frames.size(), 1u) << refused.status.to_string();
  EXPECT_EQ(refused.frames[0].type(), wire::BaseCommand::ERROR);
  EXPECT_EQ(refused.frames[0].error().error(), wire::AuthenticationError);
  // HTTPS: the certificate is a super user's; without one, 401.
  auto get = [&](std::shared_ptr<net::TlsContext> ctx, const std::string& target) {
    const std::string request =
        "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    return tls_exchange(server_->web_tls_port(), ctx, request, 0).bytes;
  };
  EXPECT_EQ(get(with_cert, "/admin/v2/clusters").rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_EQ(get(client_context(), "/admin/v2/clusters").rfind("HTTP/1.1 401", 0), 0u);
}

}  // namespace
}  // namespace magnetar::broker
