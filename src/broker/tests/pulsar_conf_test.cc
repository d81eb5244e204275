// Pulsar's and BookKeeper's shipped configuration files load into our servers' schemas:
// every key is accepted, the keys we act on take the file's values, the others are listed
// once, deprecated names (zookeeperServers, zkServers, journalDirectory) are understood, and a
// key that is neither ours nor Pulsar's is an error naming it.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bookie/bookie_config.h"
#include "broker/config/broker_config.h"
#include "common/config.h"

#ifndef MAGNETAR_PULSAR_CONF_DIR
#error "src/broker/CMakeLists.txt passes MAGNETAR_PULSAR_CONF_DIR, the test data directory"
#endif

namespace magnetar::broker {
namespace {

const std::string kDir = MAGNETAR_PULSAR_CONF_DIR;

bool lists(const ConfigSchema& s, const std::string& key) {
  return std::find(s.ignored().begin(), s.ignored().end(), key) != s.ignored().end();
}

TEST(PulsarConfTest, PulsarsBrokerConfLoadsIntoTheBrokerSchema) {
  BrokerConfig c;
  ConfigSchema s("broker");
  bind_broker_config(s, &c);
  Status st = s.load_file(kDir + "/broker.conf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  // Keys we act on take the shipped values.
  EXPECT_EQ(c.broker_service_port, 6650);
  EXPECT_EQ(c.web_service_port, 8080);
  EXPECT_EQ(c.bind_address, "0.0.0.0");
  EXPECT_EQ(c.managed_ledger.ensemble_size, 2);
  EXPECT_EQ(c.stats_update_frequency_seconds, 60);
  EXPECT_EQ(c.advertised_address, "127.0.0.1");  // shipped empty: our default stays
  EXPECT_TRUE(c.cluster_name.empty() || c.cluster_name == BrokerConfig{}.cluster_name);
  // The others are listed once, and only those given a value.
  EXPECT_TRUE(lists(s, "loadManagerClassName"));
  EXPECT_TRUE(lists(s, "bookkeeper_tlsHostnameVerificationEnabled"));  // a pass-through prefix
  EXPECT_FALSE(lists(s, "brokerServicePort"));
  EXPECT_FALSE(lists(s, "zookeeperServers"));  // shipped empty
  EXPECT_GT(s.ignored().size(), 100u);
  EXPECT_NE(s.ignored_warning().find("accepted but not acted on by the broker"),
            std::string::npos);
  std::vector<std::string> sorted = s.ignored();
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

TEST(PulsarConfTest, PulsarsStandaloneConfLoadsIntoTheStandaloneSchema) {
  BrokerConfig c;
  bookie::BookieConfig b;
  ConfigSchema s("standalone");
  bind_broker_config(s, &c);
  s.bind("bookiePort", &b.bookie_port, "Port of the embedded bookie");
  bookie::bind_bookie_storage_config(s, &b);
  Status st = s.load_file(kDir + "/standalone.conf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(c.cluster_name, "standalone");
  EXPECT_EQ(c.managed_ledger.ensemble_size, 1);
  EXPECT_TRUE(lists(s, "allowLoopback"));
  EXPECT_TRUE(lists(s, "statusFilePath"));  // a path that need not exist
}

TEST(PulsarConfTest, BookKeepersConfLoadsIntoTheBookieSchema) {
  bookie::BookieConfig b;
  ConfigSchema s("bookie");
  bookie::bind_bookie_config(s, &b);
  Status st = s.load_file(kDir + "/bookkeeper.conf");
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(b.bookie_port, 3181);
  EXPECT_EQ(b.journal_directories, std::vector<std::string>{"data/bookkeeper/journal"});
  EXPECT_EQ(b.ledger_directories, std::vector<std::string>{"data/bookkeeper/ledgers"});
  EXPECT_EQ(b.metadata.metadata_store_url, "zk:localhost:2181");
  EXPECT_EQ(s.source_of("metadataStoreUrl").find("(as zkServers)") != std::string::npos, true)
      << s.source_of("metadataStoreUrl");
  EXPECT_TRUE(lists(s, "allowLoopback"));
}

TEST(PulsarConfTest, DeprecatedNamesNeverOverrideTheCurrentOnes) {
  BrokerConfig c;
  ConfigSchema s("broker");
  bind_broker_config(s, &c);
  ASSERT_TRUE(s.load_text("metadataStoreUrl=zk:a:2181\nzookeeperServers=b:2181\n", "t").ok());
  EXPECT_EQ(c.metadata.metadata_store_url, "zk:a:2181");
  BrokerConfig d;
  ConfigSchema t("broker");
  bind_broker_config(t, &d);
  ASSERT_TRUE(t.load_text("zookeeperServers=b:2181,c:2181\nconfigurationStoreServers=g:2184\n", "t")
                  .ok());
  EXPECT_EQ(d.metadata.metadata_store_url, "zk:b:2181,c:2181");
  EXPECT_EQ(d.metadata.configuration_metadata_store_url, "zk:g:2184");

  bookie::BookieConfig b;
  ConfigSchema u("bookie");
  bookie::bind_bookie_config(u, &b);
  ASSERT_TRUE(u.load_text("metadataServiceUri=metadata-store:zk:z1:2181/ledgers\n", "t").ok());
  EXPECT_EQ(b.metadata.metadata_store_url, "zk:z1:2181");
  bookie::BookieConfig b2;
  ConfigSchema v("bookie");
  bookie::bind_bookie_config(v, &b2);
  ASSERT_TRUE(v.load_text("metadataServiceUri=zk+hierarchical://z1:2181;z2:2181/ledgers\n", "t")
                  .ok());
  EXPECT_EQ(b2.metadata.metadata_store_url, "zk:z1:2181;z2:2181");
}

TEST(PulsarConfTest, AKeyNeitherOursNorPulsarsIsAnErrorNamingIt) {
  BrokerConfig c;
  ConfigSchema s("broker");
  bind_broker_config(s, &c);
  Status st = s.load_text("brokerServicePort=6650\nbrokerServcePort=6651\n", "my.conf");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("'brokerServcePort' at my.conf:2"), std::string::npos)
      << st.message();
  Status flag = s.apply_flag("noSuchKey", "1");
  ASSERT_FALSE(flag.ok());
  EXPECT_NE(flag.message().find("'noSuchKey'"), std::string::npos);
  // A Pulsar key we do not act on is fine on the command line too, and listed.
  ASSERT_TRUE(s.apply_flag("loadManagerClassName", "x").ok());
  EXPECT_TRUE(lists(s, "loadManagerClassName"));
  // A bad value of a key we act on is still an error.
  EXPECT_FALSE(s.load_text("brokerServicePort=abc\n", "t").ok());
}

}  // namespace
}  // namespace magnetar::broker
