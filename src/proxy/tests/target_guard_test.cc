// The open-relay guard (target_guard.h) and proxy.conf (proxy_config.h).

#include <gtest/gtest.h>

#include <string>

#include "common/config.h"
#include "proxy/proxy_config.h"
#include "proxy/target_guard.h"

namespace magnetar::proxy {
namespace {

using boost::asio::ip::make_address;

TEST(TargetGuardTest, TargetsAreHostAndPortOnly) {
  auto t = parse_target("broker-1.example:6650");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->host, "broker-1.example");
  EXPECT_EQ(t->port, 6650);
  EXPECT_EQ(t->to_string(), "broker-1.example:6650");
  // Older clients sent the URL with its scheme.
  auto with_scheme = parse_target("pulsar+ssl://10.0.0.1:6651");
  ASSERT_TRUE(with_scheme.ok());
  EXPECT_EQ(with_scheme->to_string(), "10.0.0.1:6651");
  auto v6 = parse_target("[::1]:6650");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->to_string(), "[::1]:6650");
  for (const char* bad : {"", "host", "host:", ":6650", "host:0", "host:65536", "host:66x",
                          "user@host:6650", "host:6650/x?y", "a b:6650", "host\n:6650",
                          "[::1]6650", "http://host/path:1", "[a/b]:6650", "[]:6650", "a]b:6650"}) {
    EXPECT_FALSE(parse_target(bad).ok()) << bad;
  }
  EXPECT_FALSE(parse_target(std::string(400, 'a') + ":6650").ok());
}

TEST(TargetGuardTest, PortsHostsAndAddressesMustAllBeAllowed) {
  auto g = TargetGuard::create("*.brokers.internal,127.0.0.1", "127.0.0.0/8,10.1.2.3", "6650,6651,7000-7010");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(g->name_allowed(*parse_target("b1.brokers.internal:6650")));
  EXPECT_TRUE(g->name_allowed(*parse_target("B2.Brokers.Internal:7005")));
  EXPECT_TRUE(g->name_allowed(*parse_target("127.0.0.1:6651")));
  EXPECT_FALSE(g->name_allowed(*parse_target("b1.brokers.internal:22")));
  EXPECT_FALSE(g->name_allowed(*parse_target("evil.example:6650")));
  EXPECT_FALSE(g->name_allowed(*parse_target("brokers.internal.evil:6650")));
  EXPECT_TRUE(g->address_allowed(make_address("127.0.0.53")));
  EXPECT_TRUE(g->address_allowed(make_address("10.1.2.3")));
  EXPECT_TRUE(g->address_allowed(make_address("::ffff:127.0.0.1")));
  EXPECT_FALSE(g->address_allowed(make_address("10.1.2.4")));
  EXPECT_FALSE(g->address_allowed(make_address("::1")));
  auto open = TargetGuard::create("*", "*", "*");
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->name_allowed(*parse_target("anything:1")));
  EXPECT_TRUE(open->address_allowed(make_address("fd00::1")));
  // Pulsar's defaults: brokers' ports only.
  auto defaults = TargetGuard::create("*", "*", "6650,6651");
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->name_allowed(*parse_target("evil:22")));
}

TEST(TargetGuardTest, BadAllowListsAreRefusedNamingTheItem) {
  auto ports = parse_port_list("6650,x");
  ASSERT_FALSE(ports.ok());
  EXPECT_NE(ports.status().message().find("'x'"), std::string::npos);
  EXPECT_FALSE(parse_port_list("7000-6000").ok());
  EXPECT_FALSE(parse_port_list("0").ok());
  auto ips = parse_ip_patterns("10.0.0.0/33");
  ASSERT_FALSE(ips.ok());
  EXPECT_NE(ips.status().message().find("10.0.0.0/33"), std::string::npos);
  EXPECT_FALSE(parse_ip_patterns("not-an-ip").ok());
  EXPECT_TRUE(parse_ip_patterns("fd00::/8, 127.0.0.1").ok());
}

TEST(ProxyConfigTest, PulsarsProxyConfStartsOurs) {
  ProxyConfig c;
  ConfigSchema schema("proxy");
  bind_proxy_config(schema, &c);
  // Lines of Pulsar's shipped proxy.conf, the ones we act on and the ones we do not.
  Status st = schema.load_text(
      "metadataStoreUrl=zk:zk1:2181\n"
      "configurationMetadataStoreUrl=\n"
      "brokerServiceURL=\n"
      "servicePort=6650\n"
      "webServicePort=8080\n"
      "brokerProxyAllowedTargetPorts=6650,6651\n"
      "proxyZeroCopyModeEnabled=true\n"
      "webServiceTlsProvider=Conscrypt\n"
      "httpNumThreads=\n"
      "maxConcurrentLookupRequests=50000\n"
      "authenticateMetricsEndpoint=true\n"
      "zooKeeperCacheExpirySeconds=-1\n",
      "proxy.conf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(c.metadata.metadata_store_url, "zk:zk1:2181");
  EXPECT_TRUE(c.validate().ok()) << c.validate().to_string();
  EXPECT_FALSE(schema.ignored_warning().empty());
  // A key nobody knows is still an error naming it.
  EXPECT_FALSE(schema.load_text("brokerServiceUrlTypo=pulsar://x:6650\n", "proxy.conf").ok());
  // The deprecated ZooKeeper names.
  ProxyConfig z;
  ConfigSchema zs("proxy");
  bind_proxy_config(zs, &z);
  ASSERT_TRUE(zs.load_text("zookeeperServers=zk1:2181,zk2:2181\n", "proxy.conf").ok());
  EXPECT_EQ(z.metadata.metadata_store_url, "zk:zk1:2181,zk2:2181");
}

// Every key of the proxy.conf Pulsar ships, with its shipped value, loads (the store URL then
// given as `pulsar proxy --metadata-store` would).
TEST(ProxyConfigTest, EveryKeyOfPulsarsShippedProxyConfLoads) {
  ProxyConfig c;
  ConfigSchema schema("proxy");
  bind_proxy_config(schema, &c);
  Status st = schema.load_file(std::string(MAGNETAR_PULSAR_CONF_DIR) + "/proxy.conf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(schema.apply_flag("metadataStoreUrl", "zk:127.0.0.1:2181").ok());
  EXPECT_TRUE(c.validate().ok()) << c.validate().to_string();
  EXPECT_EQ(c.service_port, 6650);
  EXPECT_EQ(c.web_service_port, 8080);
  EXPECT_EQ(c.broker_proxy_allowed_target_ports, "6650,6651");
  EXPECT_EQ(c.max_concurrent_inbound_connections, 10000);
  EXPECT_EQ(c.max_concurrent_lookup_requests, 50000);
  EXPECT_TRUE(c.authenticate_metrics_endpoint);
  EXPECT_FALSE(c.service_port_tls.has_value());
}

TEST(ProxyConfigTest, ConfigurationsThatCannotWorkNameTheKey) {
  ProxyConfig none;  // neither a store nor brokers
  auto st = none.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("metadataStoreUrl or brokerServiceURL"), std::string::npos);
  ProxyConfig scheme;
  scheme.broker_service_url = "http://b:8080";
  st = scheme.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("brokerServiceURL"), std::string::npos);
  ProxyConfig tls;
  tls.broker_service_url = "pulsar://b:6650";
  tls.service_port_tls = 6651;
  st = tls.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("tlsCertificateFilePath"), std::string::npos);
  ProxyConfig ports;
  ports.broker_service_url = "pulsar://b:6650";
  ports.broker_proxy_allowed_target_ports = "6650,abc";
  st = ports.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("brokerProxyAllowedTargetPorts"), std::string::npos);
  ProxyConfig broker_tls;
  broker_tls.broker_service_url = "pulsar://b:6650";
  broker_tls.tls_enabled_with_broker = true;  // but no brokerServiceURLTLS, and no store
  st = broker_tls.validate();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("brokerServiceURLTLS"), std::string::npos);
}

}  // namespace
}  // namespace magnetar::proxy
