// The client library over TLS (pulsar+ssl://) against the in-process broker's TLS port:
// produce and consume, which certificates the client accepts, mutual TLS, and the plain
// port next to it. Certificates are made at test time (testing/tls_certs.h).

#include "net/tls.h"

#include <fmt/format.h>

#include <filesystem>

#include "client/tests/client_test_support.h"
#include "testing/tls_suite.h"

namespace magnetar::client::test {
namespace {

class TlsClientTest : public ClientTest, protected testing::TlsSuiteCerts {
 protected:
  static void SetUpTestSuite() { make_suite_certs("client-tls"); }
  static void TearDownTestSuite() { remove_suite_certs(); }

  // The fixture's broker again, with a TLS port as well.
  void SetUp() override { restart_with_tls(); }

  void restart_with_tls(const std::function<void(broker::BrokerConfig&)>& more = {}) {
    if (broker_) {
      broker_->stop();
      broker_.reset();
    }
    start_broker([&](broker::BrokerConfig& c) {
      c.broker_service_port_tls = 0;
      c.tls.certificate_file_path = certs_->server_cert;
      c.tls.key_file_path = certs_->server_key;
      if (more) more(c);
    });
  }

  std::string tls_url() const {
    return fmt::format("pulsar+ssl://127.0.0.1:{}", broker_->tls_port());
  }

  ClientOptions tls_options() const {
    ClientOptions o = fast_options();
    o.tls_trust_certs_file_path = certs_->ca_cert;
    return o;
  }

  // Options for a client expected to fail: a short operation timeout.
  ClientOptions failing(ClientOptions o) const {
    o.operation_timeout = std::chrono::milliseconds(1500);
    return o;
  }

  static Client make_client(const std::string& url, const ClientOptions& o) {
    auto c = Client::create(url, o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return std::move(c).value();
  }

  // Creates a producer and sends one message; the error of whichever failed.
  static Status produce_one(Client& c, const std::string& topic) {
    auto p = c.create_producer(topic);
    if (!p.ok()) return p.status();
    auto id = p->send(Message("one"));
    return id.ok() ? Status::OK() : id.status();
  }
};

bool contains(const Status& st, std::string_view part) {
  return st.message().find(part) != std::string::npos;
}

TEST_F(TlsClientTest, ProduceAndConsumeOverTlsNextToThePlainPort) {
  ClientOptions o = tls_options();
  o.tls_validate_hostname = true;  // the server certificate names 127.0.0.1
  Client tls = make_client(tls_url(), o);
  auto consumer = tls.subscribe(topic(), "sub");
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  auto producer = tls.create_producer(topic());
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  // The lookup named the broker's TLS URL, which is the service URL: one connection, over
  // TLS. (Had the client followed the plain brokerServiceUrl, there would be two.)
  EXPECT_EQ(broker_->connection_count(), 1);
  std::string big(200 * 1024, 'x');  // several TLS records
  for (int i = 0; i < 20; ++i) {
    Message m(i == 10 ? big : "tls-" + std::to_string(i));
    auto id = producer->send(m);
    ASSERT_TRUE(id.ok()) << id.status().to_string();
  }
  auto got = receive_n(*consumer, 20);
  ASSERT_EQ(got.size(), 20u);
  EXPECT_EQ(got[0].data(), "tls-0");
  EXPECT_EQ(got[10].data(), big);
  EXPECT_EQ(got[19].data(), "tls-19");

  // The plain port works alongside, on the same topic.
  Producer plain = ClientTest::producer(topic());
  ASSERT_TRUE(plain.send(Message("plain")).ok());
  auto m = consumer->receive(std::chrono::seconds(5));
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->data(), "plain");
  EXPECT_TRUE(tls.close().ok());
}

TEST_F(TlsClientTest, HttpsServiceUrlLooksUpOverHttpsAndConnectsOverTls) {
  net::TlsOptions server;
  server.certificate_file = certs_->server_cert;
  server.private_key_file = certs_->server_key;
  auto web_tls = net::TlsContext::create(net::TlsRole::kServer, server);
  ASSERT_TRUE(web_tls.ok()) << web_tls.status().to_string();
  const std::string https_url = serve_http(*web_tls);
  ASSERT_EQ(https_url.rfind("https://", 0), 0u) << https_url;

  ClientOptions o = tls_options();
  o.tls_validate_hostname = true;
  Client tls = make_client(https_url, o);
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto consumer = tls.subscribe(topic(), "sub", co);
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  auto producer = tls.create_producer(topic());
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  // The lookups named brokerUrlTls: the only connection is to the TLS port.
  EXPECT_EQ(broker_->connection_count(), 1);
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(producer->send(Message("https-" + std::to_string(i))).ok());
  auto got = receive_n(*consumer, 5);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].data(), "https-0");
  EXPECT_EQ(got[4].data(), "https-4");
  EXPECT_TRUE(tls.close().ok());

  // Without the CA the HTTPS lookup fails, naming the certificate problem.
  Client untrusted = make_client(https_url, failing(fast_options()));
  auto refused = untrusted.create_producer(topic());
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.status(), "certificate verify failed"))
      << refused.status().to_string();
  EXPECT_TRUE(untrusted.close().ok());
}

TEST_F(TlsClientTest, UntrustedServerCertificateIsRejectedUnlessInsecure) {
  ClientOptions o = failing(tls_options());
  o.tls_trust_certs_file_path = certs_->other_ca_cert;  // not the CA of the broker's cert
  Client strict = make_client(tls_url(), o);
  Status st = produce_one(strict, topic());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st, "certificate verify failed")) << st.to_string();
  EXPECT_TRUE(contains(st, tls_url())) << st.to_string();
  (void)strict.close();

  o = tls_options();
  o.tls_trust_certs_file_path = certs_->other_ca_cert;
  o.tls_allow_insecure_connection = true;
  Client insecure = make_client(tls_url(), o);
  st = produce_one(insecure, topic());
  EXPECT_TRUE(st.ok()) << st.to_string();
  (void)insecure.close();
}

TEST_F(TlsClientTest, HostNameValidationChecksTheCertificatesNames) {
  restart_with_tls([](broker::BrokerConfig& c) {
    c.tls.certificate_file_path = certs_->wrong_host_cert;
    c.tls.key_file_path = certs_->wrong_host_key;
  });
  ClientOptions o = failing(tls_options());
  o.tls_validate_hostname = true;
  Client strict = make_client(tls_url(), o);
  Status st = produce_one(strict, topic());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st, "mismatch")) << st.to_string();
  (void)strict.close();
  // Not validating host names (the default), the same certificate is fine: its CA is trusted.
  Client lenient = make_client(tls_url(), tls_options());
  st = produce_one(lenient, topic());
  EXPECT_TRUE(st.ok()) << st.to_string();
  (void)lenient.close();
}

TEST_F(TlsClientTest, MutualTlsRefusesClientsWithoutATrustedCertificate) {
  restart_with_tls([](broker::BrokerConfig& c) {
    c.tls.trust_certs_file_path = certs_->ca_cert;
    c.tls.require_trusted_client_cert_on_connect = true;
  });
  Client anonymous = make_client(tls_url(), failing(tls_options()));
  Status st = produce_one(anonymous, topic());
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st, "certificate")) << st.to_string();
  (void)anonymous.close();

  ClientOptions o = failing(tls_options());
  o.tls_certificate_file_path = certs_->untrusted_client_cert;
  o.tls_private_key_file_path = certs_->untrusted_client_key;
  Client untrusted = make_client(tls_url(), o);
  st = produce_one(untrusted, topic());
  EXPECT_FALSE(st.ok());
  (void)untrusted.close();

  o = tls_options();
  o.tls_certificate_file_path = certs_->client_cert;
  o.tls_private_key_file_path = certs_->client_key;
  Client trusted = make_client(tls_url(), o);
  st = produce_one(trusted, topic());
  EXPECT_TRUE(st.ok()) << st.to_string();
  auto consumer = trusted.subscribe(topic(), "s");
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  (void)trusted.close();
}

// Certificate authentication (AuthenticationProviderTls / AuthTls): the role is the client
// certificate's CN, authorized like any other role.
TEST_F(TlsClientTest, TheClientCertificatesCommonNameIsTheRole) {
  restart_with_tls([](broker::BrokerConfig& c) {
    c.tls.trust_certs_file_path = certs_->ca_cert;
    c.authentication.enabled = true;
    c.authentication.providers = {
        "org.apache.pulsar.broker.authentication.AuthenticationProviderTls"};
    c.authorization_enabled = true;
  });
  // The test client's certificate says CN=magnetar-test-client: grant that role produce.
  auto granted = cluster_.await(
      store_->put("/admin/policies/public/default",
                  R"({"auth_policies":{"namespace_auth":{"magnetar-test-client":["produce"]}}})"));
  ASSERT_TRUE(granted.ok()) << granted.status().to_string();
  auto params = create_authentication(
      "org.apache.pulsar.client.impl.auth.AuthenticationTls",
      fmt::format("tlsCertFile:{},tlsKeyFile:{}", certs_->client_cert, certs_->client_key));
  ASSERT_TRUE(params.ok()) << params.status().to_string();
  ClientOptions o = tls_options();
  o.authentication = *params;
  Client trusted = make_client(tls_url(), o);
  EXPECT_TRUE(produce_one(trusted, topic()).ok());
  // Produce only: subscribing is refused by authorization, not authentication.
  auto refused = trusted.subscribe(topic(), "s");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(contains(refused.status(), "Client is not authorized to subscribe"))
      << refused.status().to_string();
  (void)trusted.close();

  // "tls" without a certificate, or over the plain port: refused at CONNECT.
  ClientOptions none = failing(tls_options());
  none.authentication = AuthTls::create("", "");
  EXPECT_FALSE(make_client(tls_url(), none).create_producer(topic()).ok());
  ClientOptions plain = failing(fast_options());
  plain.authentication = *params;
  EXPECT_FALSE(make_client(url(), plain).create_producer(topic()).ok());
  // A certificate of another CA does not even get through the handshake.
  ClientOptions other = failing(tls_options());
  other.authentication =
      AuthTls::create(certs_->untrusted_client_cert, certs_->untrusted_client_key);
  EXPECT_FALSE(make_client(tls_url(), other).create_producer(topic()).ok());
  EXPECT_FALSE(AuthTls::from_params("tlsCertFile:/c.pem").ok());
  EXPECT_TRUE(AuthTls::from_params(R"({"tlsCertFile":"/c.pem","tlsKeyFile":"/k.pem"})").ok());
}

TEST_F(TlsClientTest, BadTlsOptionsFailClientCreation) {
  ClientOptions o = tls_options();
  o.tls_trust_certs_file_path = *dir_ + "/no-such-ca.pem";
  auto c = Client::create(tls_url(), o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(client_error_of(c.status()), ClientError::kInvalidConfiguration);
  EXPECT_TRUE(contains(c.status(), "no-such-ca.pem")) << c.status().to_string();

  o = tls_options();
  o.tls_certificate_file_path = certs_->client_cert;  // without its key
  c = Client::create(tls_url(), o);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(client_error_of(c.status()), ClientError::kInvalidConfiguration);

  // Other schemes are still refused; the TLS options do not matter for pulsar://.
  EXPECT_FALSE(Client::create("pulsar+tls://127.0.0.1:1", tls_options()).ok());
  o.tls_trust_certs_file_path = *dir_ + "/no-such-ca.pem";
  EXPECT_TRUE(Client::create(url(), o).ok());
  // Several hosts keep the scheme.
  EXPECT_TRUE(Client::create("pulsar+ssl://127.0.0.1:1,127.0.0.1:2", tls_options()).ok());
}

TEST_F(TlsClientTest, TlsClientOnThePlainPortFails) {
  Client wrong = make_client(fmt::format("pulsar+ssl://127.0.0.1:{}", broker_->port()),
                             failing(tls_options()));
  Status st = produce_one(wrong, topic());
  EXPECT_FALSE(st.ok());
  (void)wrong.close();
  // And the broker keeps serving both ports.
  Client tls = make_client(tls_url(), tls_options());
  EXPECT_TRUE(produce_one(tls, topic()).ok());
  EXPECT_TRUE(produce_one(client(), topic()).ok());
  (void)tls.close();
}

}  // namespace
}  // namespace magnetar::client::test
