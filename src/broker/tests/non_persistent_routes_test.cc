// The admin API of non-persistent topics: /admin/v2/non-persistent/{tenant}/{namespace}[/...]
// (list, create, delete, stats, unload, partitions and partitioned-stats) and their metrics.

#include <thread>

#include "broker/tests/broker_routes_fixture.h"

namespace magnetar::broker::routes_test {
namespace {

using namespace std::chrono_literals;
using wire::CommandSubscribe;

const std::string kNonPersistent = "/admin/v2/non-persistent/public/default";

class NonPersistentRoutesTest : public BrokerRoutesTest {
 protected:
  void configure(BrokerConfig& c) override { c.stats_update_frequency_seconds = 0.2; }

  // Polls the topic's stats (at most 10 s) until `pred` holds; the last stats otherwise.
  Json stats_when(const std::string& topic, const std::function<bool(const Json&)>& pred) {
    Json j;
    for (int i = 0; i < 400; ++i) {
      j = get(kNonPersistent + "/" + topic + "/stats").json();
      if (j.is_object() && pred(j)) return j;
      std::this_thread::sleep_for(25ms);
    }
    return j;
  }
};

TEST_F(NonPersistentRoutesTest, StatsShowRatesAndDrops) {
  const std::string topic = "non-persistent://public/default/rates";
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->subscribe(topic, "fast", CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->subscribe(topic, "slow", CommandSubscribe::Exclusive, 2).ok());
  ASSERT_TRUE(c->flow(1, 1000).ok());  // "slow" never asks: it drops everything
  EXPECT_EQ(produce(*c, topic, 40).size(), 40u);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(c->receive_message(5s).ok()) << i;

  const Json j = stats_when("rates", [](const Json& s) {
    return s.value("msgRateIn", 0.0) > 0 &&
           s["subscriptions"]["slow"].value("msgDropRate", 0.0) > 0;
  });
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_GT(j["msgRateIn"].get<double>(), 0);
  EXPECT_GT(j["msgThroughputIn"].get<double>(), 0);
  EXPECT_EQ(j["msgInCounter"], 40);
  EXPECT_EQ(j["msgOutCounter"], 40);
  EXPECT_TRUE(j.contains("msgDropRate"));
  EXPECT_TRUE(j.contains("msgRateOut"));
  EXPECT_TRUE(j.contains("msgThroughputOut"));
  ASSERT_EQ(j["publishers"].size(), 1u);
  EXPECT_TRUE(j["publishers"][0].contains("msgDropRate"));
  EXPECT_EQ(j["subscriptions"]["slow"]["type"], "Exclusive");
  EXPECT_EQ(j["subscriptions"]["fast"]["type"], "Shared");
  EXPECT_EQ(j["subscriptions"]["fast"]["consumers"].size(), 1u);
  EXPECT_EQ(j["subscriptions"]["slow"]["msgDropCounter"], 40);
  EXPECT_EQ(j["subscriptions"]["fast"]["msgDropCounter"], 0);
  EXPECT_DOUBLE_EQ(j["subscriptions"]["fast"]["msgDropRate"].get<double>(), 0.0);

  // The topic's gauges and counters at /metrics, as a persistent topic's.
  const std::string metrics = get("/metrics").body;
  EXPECT_NE(metrics.find(R"(pulsar_in_messages_total{cluster="test",namespace="public/default",)"
                         R"(topic="non-persistent://public/default/rates"} 40)"),
            std::string::npos);
  EXPECT_NE(metrics.find(R"(pulsar_subscriptions_count{cluster="test",namespace="public/default",)"
                         R"(topic="non-persistent://public/default/rates"} 2)"),
            std::string::npos);
}

TEST_F(NonPersistentRoutesTest, CreateListStatsUnloadDelete) {
  // Not loaded: no stats, nothing listed.
  EXPECT_EQ(get(kNonPersistent + "/made/stats").status, 404);
  EXPECT_EQ(get(kNonPersistent).json(), Json::array());
  // Creating loads it in memory on its owner.
  EXPECT_EQ(put(kNonPersistent + "/made").status, 204);
  EXPECT_EQ(put(kNonPersistent + "/made").status, 409);
  EXPECT_EQ(get(kNonPersistent).json(), Json::array({"non-persistent://public/default/made"}));
  EXPECT_EQ(get(kNonPersistent + "/made/stats").status, 200);
  // Nothing of it in the persistent list, nor in the store.
  EXPECT_EQ(get(kTopics).json(), Json::array());
  // The namespace's topic list by mode (what HTTP pattern subscriptions ask).
  const std::string listed = "/admin/v2/namespaces/public/default/topics";
  EXPECT_EQ(get(listed).json(), Json::array());
  EXPECT_EQ(get(listed + "?mode=NON_PERSISTENT").json(),
            Json::array({"non-persistent://public/default/made"}));
  EXPECT_EQ(get(listed + "?mode=ALL").json(),
            Json::array({"non-persistent://public/default/made"}));
  // Unloading forgets it.
  EXPECT_EQ(put(kNonPersistent + "/made/unload").status, 204);
  EXPECT_EQ(get(kNonPersistent + "/made/stats").status, 404);
  EXPECT_EQ(get(kNonPersistent).json(), Json::array());

  // In use: deleting needs force.
  const std::string topic = "non-persistent://public/default/used";
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 1).ok());
  EXPECT_EQ(del(kNonPersistent + "/used").status, 412);
  EXPECT_EQ(call("DELETE", kNonPersistent + "/used?force=true").status, 204);
  EXPECT_TRUE(c->receive(wire::BaseCommand::CLOSE_CONSUMER, 5s).ok());
  EXPECT_EQ(del(kNonPersistent + "/used").status, 404);
  // An unknown namespace.
  EXPECT_EQ(get("/admin/v2/non-persistent/public/nowhere").status, 404);
  EXPECT_EQ(put("/admin/v2/non-persistent/public/nowhere/t").status, 404);
}

TEST_F(NonPersistentRoutesTest, PartitionedTopicsAndTheirStats) {
  EXPECT_EQ(put(kNonPersistent + "/parted/partitions", "2").status, 204);
  EXPECT_EQ(get(kNonPersistent + "/parted/partitions").json()["partitions"], 2);
  // Every partition is listed, used or not.
  EXPECT_EQ(get(kNonPersistent).json(),
            Json::array({"non-persistent://public/default/parted-partition-0",
                         "non-persistent://public/default/parted-partition-1"}));
  auto c = client();
  ASSERT_TRUE(c);
  for (int i = 0; i < 2; ++i) {
    const std::string partition =
        "non-persistent://public/default/parted-partition-" + std::to_string(i);
    ASSERT_TRUE(c->subscribe(partition, "sub", CommandSubscribe::Shared, i + 1).ok());
    ASSERT_TRUE(c->flow(i + 1, 100).ok());
    EXPECT_EQ(produce(*c, partition, 3, i + 1).size(), 3u);
  }
  const Json j = get(kNonPersistent + "/parted/partitioned-stats?perPartition=true").json();
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j["metadata"]["partitions"], 2);
  EXPECT_EQ(j["msgInCounter"], 6);
  EXPECT_EQ(j["partitions"].size(), 2u);
}

}  // namespace
}  // namespace magnetar::broker::routes_test
