// `magnetar proxy` in front of a real cluster: ZooKeeper, three bookies, two `magnetar broker`
// and two `magnetar proxy` processes on 127.0.0.1. Clients are our client library given only
// proxy URLs; the brokers are never dialled by them.

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "broker_fixture.h"
#include "magnetar/client.h"
#include "security_support.h"
#include "testing/eventually.h"
#include "testing/tls_certs.h"

namespace magnetar::testing {
namespace {

struct ProxyChild {
  pid_t pid = -1;
  std::string log;
  int port = 0, web_port = 0;
  std::string url() const { return fmt::format("pulsar://127.0.0.1:{}", port); }
};

class ProxyClusterTest : public BrokerClusterFixture {
 protected:
  void TearDown() override {
    for (auto& p : proxies_) {
      if (p.pid <= 0) continue;
      if (HasFailure()) {
        std::fprintf(stderr, "--- proxy on %d, last lines of %s ---\n%s\n", p.port, p.log.c_str(),
                     tail(read_file(p.log), 30).c_str());
      }
      ::kill(p.pid, SIGKILL);
      (void)reap_child(p.pid, true);
    }
    BrokerClusterFixture::TearDown();
  }

  ProxyChild& start_proxy(const Settings& extra = {}) {
    ProxyChild p;
    p.log = (root_ / fmt::format("proxy-{}.log", proxies_.size())).string();
    std::vector<std::string> args = {MAGNETAR_BINARY, "proxy", "--metadata-store", url_};
    Settings all = {{"clusterName", "test"},
                    {"bindAddress", "127.0.0.1"},
                    {"servicePort", "0"},
                    {"webServicePort", "0"},
                    {"numIOThreads", "2"},
                    // Brokers listen on ports picked at start, not 6650/6651.
                    {"brokerProxyAllowedTargetPorts", "*"},
                    {"brokerProxyAllowedIPAddresses", "127.0.0.0/8"},
                    {"checkActiveBrokers", "true"}};
    all.insert(all.end(), extra.begin(), extra.end());
    for (const auto& [k, v] : all) {
      args.push_back("--set");
      args.push_back(k + "=" + v);
    }
    auto pid = spawn_child(args, p.log);
    EXPECT_TRUE(pid.ok()) << pid.status().to_string();
    p.pid = pid.ok() ? *pid : -1;
    const std::regex ready(
        R"(service URL:\s+pulsar://127\.0\.0\.1:(\d+)\s+web service URL: http://127\.0\.0\.1:(\d+))");
    const std::regex tls_ready(R"(service URL TLS: pulsar\+ssl://127\.0\.0\.1:(\d+))");
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::smatch m;
      const std::string text = read_file(p.log);
      if (std::regex_search(text, m, ready)) {
        p.port = std::stoi(m[1]);
        p.web_port = std::stoi(m[2]);
        break;
      }
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_GT(p.port, 0) << "proxy not ready; log:\n" << read_file(p.log);
    std::smatch t;
    const std::string text = read_file(p.log);
    if (std::regex_search(text, t, tls_ready)) tls_ports_[proxies_.size()] = std::stoi(t[1]);
    proxies_.push_back(p);
    return proxies_.back();
  }

  static client::ClientOptions options() {
    client::ClientOptions o;
    o.operation_timeout = 30s;
    o.initial_backoff = 50ms;
    o.max_backoff = 1s;
    return o;
  }

  // Two topics of public/default owned by different brokers (looked up through the brokers).
  std::pair<std::string, std::string> topics_on_both_brokers() {
    std::string on[2];
    for (int i = 0; i < 200 && (on[0].empty() || on[1].empty()); ++i) {
      const std::string topic = fmt::format("persistent://public/default/spread-{}", i);
      int redirects = 0;
      const BrokerChild* owner = broker_by_url(resolve(brokers_[0], topic, &redirects));
      if (owner == nullptr) continue;
      const int index = owner == &brokers_[0] ? 0 : 1;
      if (on[index].empty()) on[index] = topic;
    }
    EXPECT_FALSE(on[0].empty() || on[1].empty()) << "every topic landed on one broker";
    return {on[0], on[1]};
  }

  std::vector<ProxyChild> proxies_;
  std::map<size_t, int> tls_ports_;
};

// Every acknowledged payload arrives: sends `count` messages through `producer` (one every
// `pace`), runs `during` once `count / 3` were sent, and receives through `consumer`.
void produce_consume_through(client::Producer& producer, client::Consumer& consumer, int count,
                             std::chrono::milliseconds pace, const std::function<void()>& during) {
  std::mutex mu;
  std::set<std::string> acked;
  std::atomic<int> failed{0};
  std::atomic<bool> done{false};
  std::thread sender([&] {
    for (int i = 0; i < count; ++i) {
      if (i == count / 3 && during) during();
      std::string payload = fmt::format("m{}", i);
      producer.send_async(client::Message(payload), [&, payload](Result<client::MessageId> r) {
        if (r.ok()) {
          std::lock_guard lock(mu);
          acked.insert(payload);
        } else {
          ++failed;
        }
      });
      std::this_thread::sleep_for(pace);
    }
    (void)producer.flush();
    done = true;
  });
  struct Joiner {
    std::thread& t;
    ~Joiner() {
      if (t.joinable()) t.join();
    }
  } joiner{sender};
  std::set<std::string> received;
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto m = consumer.receive(200ms);
    if (m.ok()) {
      received.insert(m->payload());
      EXPECT_TRUE(consumer.acknowledge(*m).ok());
      continue;
    }
    if (!done) continue;
    std::lock_guard lock(mu);
    if (std::includes(received.begin(), received.end(), acked.begin(), acked.end())) break;
  }
  if (sender.joinable()) sender.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(failed.load(), 0) << "sends failed instead of being retried";
  EXPECT_EQ(acked.size(), static_cast<size_t>(count));
  std::vector<std::string> lost;
  std::set_difference(acked.begin(), acked.end(), received.begin(), received.end(),
                      std::back_inserter(lost));
  EXPECT_TRUE(lost.empty()) << lost.size() << " acknowledged messages never arrived, e.g. "
                            << (lost.empty() ? "" : lost.front());
}

TEST_F(ProxyClusterTest, TwoProxiesServeTopicsOfEitherBrokerAndAKilledOwnerLosesNothing) {
  start_broker();
  start_broker();
  wait_for_registered_brokers(2);
  const ProxyChild& p1 = start_proxy();
  const ProxyChild& p2 = start_proxy();
  ASSERT_FALSE(HasFailure());
  auto [on_first, on_second] = topics_on_both_brokers();
  ASSERT_FALSE(HasFailure());
  auto via_p1 = client::Client::create(p1.url(), options());
  auto via_p2 = client::Client::create(p2.url(), options());
  ASSERT_TRUE(via_p1.ok() && via_p2.ok());
  // Produced through one proxy, consumed through the other, on either broker.
  for (const std::string& topic : {on_first, on_second}) {
    auto consumer = via_p2->subscribe(topic, "sub");
    ASSERT_TRUE(consumer.ok()) << topic << ": " << consumer.status().to_string();
    auto producer = via_p1->create_producer(topic);
    ASSERT_TRUE(producer.ok()) << topic << ": " << producer.status().to_string();
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(producer->send(client::Message("x")).ok());
    for (int i = 0; i < 20; ++i) {
      auto m = consumer->receive(10s);
      ASSERT_TRUE(m.ok()) << topic << " message " << i << ": " << m.status().to_string();
      ASSERT_TRUE(consumer->acknowledge(*m).ok());
    }
  }
  // The admin API through a proxy: redirects between brokers followed by the proxy.
  for (const std::string& topic : {on_first, on_second}) {
    const std::string path = "/admin/v2/persistent/public/default/" + topic.substr(topic.rfind('/') + 1) + "/stats";
    auto [code, body] = http(p1.web_port, "GET", path);
    EXPECT_EQ(code, 200) << path << ": " << body;
    EXPECT_NE(body.find("\"sub\""), std::string::npos) << body;
  }
  auto [mcode, metrics] = http(p1.web_port, "GET", "/metrics");
  EXPECT_EQ(mcode, 200);
  EXPECT_NE(metrics.find("pulsar_proxy_binary_bytes"), std::string::npos);

  // The owner of a topic is SIGKILLed under load: clients of the proxies resume on the
  // survivor once it takes the bundle, and every acknowledged message arrives.
  const std::string topic = "persistent://public/default/proxied-under-load";
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  auto consumer = via_p2->subscribe(topic, "durable", co);
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  client::ProducerOptions po;
  po.batching_enabled = false;
  // The 1,000 sends after the kill wait out the takeover (the 4 s session and the lookup's
  // backoff): with the default queue of 1,000 and one send still unacknowledged at the kill,
  // the last of them found the queue full once. They wait for room instead.
  po.block_if_queue_full = true;
  auto producer = via_p1->create_producer(topic, po);
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  int redirects = 0;
  BrokerChild* owner = const_cast<BrokerChild*>(broker_by_url(resolve(brokers_[0], topic, &redirects)));
  ASSERT_NE(owner, nullptr);
  const auto killed_at = std::make_shared<std::chrono::steady_clock::time_point>();
  produce_consume_through(*producer, *consumer, 1500, 2ms, [&] {
    ::kill(owner->pid, SIGKILL);
    (void)reap_child(owner->pid, true);
    owner->pid = -1;
    *killed_at = std::chrono::steady_clock::now();
  });
  EXPECT_TRUE(producer->connected());
  EXPECT_TRUE(consumer->connected());
  (void)via_p1->close();
  (void)via_p2->close();
}

TEST_F(ProxyClusterTest, AClientNamingBothProxiesSurvivesOneOfThem) {
  start_broker();
  start_broker();
  wait_for_registered_brokers(2);
  start_proxy();
  start_proxy();
  ASSERT_FALSE(HasFailure());
  const std::string both =
      fmt::format("pulsar://127.0.0.1:{},127.0.0.1:{}", proxies_[0].port, proxies_[1].port);
  auto c = client::Client::create(both, options());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string topic = "persistent://public/default/two-proxies";
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  auto consumer = c->subscribe(topic, "durable", co);
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  client::ProducerOptions po;
  po.batching_enabled = false;
  auto producer = c->create_producer(topic, po);
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  // The proxy that splices the data (the one that relayed more bytes) goes away mid-run.
  auto relayed = [](const ProxyChild& p) {
    auto [code, body] = http(p.web_port, "GET", "/metrics");
    std::smatch m;
    static const std::regex bytes(R"(pulsar_proxy_binary_bytes\{cluster="test"\} ([0-9.e+]+))");
    return code == 200 && std::regex_search(body, m, bytes) ? std::stod(m[1]) : 0.0;
  };
  int killed = -1;
  produce_consume_through(*producer, *consumer, 1000, 2ms, [&] {
    killed = relayed(proxies_[0]) >= relayed(proxies_[1]) ? 0 : 1;
    ::kill(proxies_[static_cast<size_t>(killed)].pid, SIGKILL);
    (void)reap_child(proxies_[static_cast<size_t>(killed)].pid, true);
    proxies_[static_cast<size_t>(killed)].pid = -1;
  });
  ASSERT_GE(killed, 0);
  // The survivor carries them now.
  EXPECT_GT(relayed(proxies_[static_cast<size_t>(1 - killed)]), 0.0);
  (void)c->close();
}

TEST_F(ProxyClusterTest, TheClientsRoleIsWhatBrokersAuthorizeOverTlsOnBothHops) {
  Keys keys(root_);
  std::filesystem::create_directories(root_ / "certs");
  auto certs = make_test_certs((root_ / "certs").string());
  ASSERT_TRUE(certs.ok()) << certs.status().to_string();
  // Brokers: tokens, authorization, the proxy's role trusted to name its clients; TLS ports.
  Settings broker = keys.settings();
  broker.push_back({"superUserRoles", "root,proxy"});
  broker.push_back({"proxyRoles", "proxy"});
  broker.push_back({"brokerClientAuthenticationPlugin", "token"});
  broker.push_back({"brokerClientAuthenticationParameters", "token:" + keys.token("root")});
  broker.push_back({"brokerServicePortTls", "0"});
  broker.push_back({"tlsCertificateFilePath", certs->server_cert});
  broker.push_back({"tlsKeyFilePath", certs->server_key});
  start_broker(broker);
  start_broker(broker);
  wait_for_registered_brokers(2);
  // Proxies: clients authenticated with tokens, TLS to clients and to brokers, their own
  // token towards brokers.
  Settings proxy = {{"authenticationEnabled", "true"},
                    {"authenticationProviders",
                     "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"},
                    {"tokenSecretKey", "file://" + keys.key_file},
                    {"brokerClientAuthenticationPlugin", "token"},
                    {"brokerClientAuthenticationParameters", "token:" + keys.token("proxy")},
                    {"servicePortTls", "0"},
                    {"tlsCertificateFilePath", certs->server_cert},
                    {"tlsKeyFilePath", certs->server_key},
                    {"tlsEnabledWithBroker", "true"},
                    {"brokerClientTrustCertsFilePath", certs->ca_cert}};
  start_proxy(proxy);
  ASSERT_FALSE(HasFailure());
  ASSERT_EQ(tls_ports_.count(0), 1u) << "the proxy announced no TLS port";
  const std::string tls_url = fmt::format("pulsar+ssl://127.0.0.1:{}", tls_ports_[0]);
  // app may produce and consume on public/default; other has no grant.
  auto [gcode, gbody] = call(brokers_[0].web_port, keys.token("root"), "POST",
                             "/admin/v2/namespaces/public/default/permissions/app",
                             R"(["produce","consume"])");
  ASSERT_EQ(gcode, 204) << gbody;
  auto with = [&](const std::string& role) {
    client::ClientOptions o = options();
    o.operation_timeout = 8s;
    o.tls_trust_certs_file_path = certs->ca_cert;
    o.authentication = client::AuthToken::create(keys.token(role));
    return client::Client::create(tls_url, o);
  };
  const std::string topic = "persistent://public/default/proxied-roles";
  auto app = with("app");
  ASSERT_TRUE(app.ok()) << app.status().to_string();
  auto consumer = app->subscribe(topic, "app-sub");
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  auto producer = app->create_producer(topic);
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  ASSERT_TRUE(producer->send(client::Message("hello")).ok());
  auto m = consumer->receive(10s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload(), "hello");
  // The proxy is a super user, yet the brokers refuse a client the namespace does not grant.
  auto other = with("other");
  ASSERT_TRUE(other.ok());
  auto refused = other->create_producer(topic);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(client::server_error_of(refused.status()), client::ServerError::kAuthorizationError)
      << refused.status().to_string();
  // A token signed with another key is refused by the proxy itself.
  client::ClientOptions forged = options();
  forged.operation_timeout = 5s;
  forged.tls_trust_certs_file_path = certs->ca_cert;
  forged.authentication = client::AuthToken::create(pulsar_tool_token("another key", "app"));
  auto bad = client::Client::create(tls_url, forged);
  ASSERT_TRUE(bad.ok());
  auto denied = bad->create_producer(topic);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(client::server_error_of(denied.status()), client::ServerError::kAuthenticationError)
      << denied.status().to_string();
  // A data connection to something that is not a registered broker (ZooKeeper's port).
  PulsarTestClient::Options ro;
  ro.port = proxies_[0].port;
  ro.handshake = false;
  auto raw = PulsarTestClient::connect(ro);
  ASSERT_TRUE(raw.ok());
  auto connect = (*raw)->connect_command();
  connect.mutable_connect()->set_auth_method_name("token");
  connect.mutable_connect()->set_auth_data(keys.token("app"));
  connect.mutable_connect()->set_proxy_to_broker_url(url_.substr(3, url_.find('/') - 3));
  ASSERT_TRUE((*raw)->send(connect).ok());
  auto e = (*raw)->receive(wire::BaseCommand::ERROR);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(e->command.error().message(), "Target broker isn't available.");
  (void)app->close();
  (void)other->close();
  (void)bad->close();
}

}  // namespace
}  // namespace magnetar::testing
