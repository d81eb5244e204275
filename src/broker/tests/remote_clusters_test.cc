// How a broker reaches another cluster, from the cluster's ClusterData.

#include "broker/replication/remote_clusters.h"

#include <gtest/gtest.h>

namespace magnetar::broker {
namespace {

TEST(RemoteEndpointTest, BrokerUrlFirstThenServiceUrl) {
  auto both = remote_endpoint(
      "west", R"({"serviceUrl":"http://w:8080","brokerServiceUrl":"pulsar://w:6650"})");
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  EXPECT_EQ(both->service_url, "pulsar://w:6650");
  auto http_only = remote_endpoint("west", R"({"serviceUrl":"http://w:8080"})");
  ASSERT_TRUE(http_only.ok());
  EXPECT_EQ(http_only->service_url, "http://w:8080") << "HTTP lookup, as Pulsar falls back";
}

TEST(RemoteEndpointTest, TlsWhenTheBrokerClientIsToUseIt) {
  auto tls = remote_endpoint("west", R"({"brokerServiceUrl":"pulsar://w:6650",
      "brokerServiceUrlTls":"pulsar+ssl://w:6651","brokerClientTlsEnabled":true,
      "brokerClientTrustCertsFilePath":"/etc/ca.pem","tlsAllowInsecureConnection":false})");
  ASSERT_TRUE(tls.ok()) << tls.status().to_string();
  EXPECT_EQ(tls->service_url, "pulsar+ssl://w:6651");
  EXPECT_EQ(tls->options.tls_trust_certs_file_path, "/etc/ca.pem");
  EXPECT_FALSE(tls->options.tls_allow_insecure_connection);
  auto missing = remote_endpoint(
      "west", R"({"brokerServiceUrl":"pulsar://w:6650","brokerClientTlsEnabled":true})");
  EXPECT_TRUE(missing.status().is(Errc::kInvalidArgument));
  EXPECT_NE(missing.status().message().find("brokerServiceUrlTls"), std::string::npos);
}

TEST(RemoteEndpointTest, UnusableClusterDataNamesTheCluster) {
  for (const char* bad : {"", "[]", "{}", R"({"serviceUrl":7})", "{not json"}) {
    auto r = remote_endpoint("north", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(r.status().is(Errc::kInvalidArgument)) << bad;
    EXPECT_NE(r.status().message().find("north"), std::string::npos) << bad;
  }
}

}  // namespace
}  // namespace magnetar::broker
