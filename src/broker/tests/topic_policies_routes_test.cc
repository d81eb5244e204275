// Topic-level policies (/admin/v2/persistent/<t>/<policy>): set, read, applied, validated and
// taken by the loaded topic; the broker's inactive topic GC; a namespace's schema auto-update
// and validation-enforced policies as producers meet them.

#include <thread>

#include "broker/tests/broker_routes_fixture.h"
#include "testing/eventually.h"

namespace magnetar::broker::routes_test {
namespace {

using magnetar::testing::eventually;

TEST_F(BrokerRoutesTest, TopicPoliciesAreSetReadAppliedAndValidated) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/tp", 1);
  const std::string t = kTopics + "/tp";

  // messageTTL takes its value as ?messageTTL= (pulsar-admin's route), not a body.
  EXPECT_EQ(get(t + "/messageTTL").status, 204);  // unset: null
  ASSERT_EQ(post(t + "/messageTTL?messageTTL=30").status, 204);
  EXPECT_EQ(get(t + "/messageTTL").json(), 30);
  EXPECT_ERROR(post(t + "/messageTTL?messageTTL=x"), 400);
  // Unset at the topic: ?applied gives the namespace's, else the broker's.
  ASSERT_EQ(del(t + "/messageTTL").status, 204);
  EXPECT_EQ(get(t + "/messageTTL?applied=true").json(), 0);
  ASSERT_EQ(post(kNamespace + "/messageTTL", "100").status, 204);
  EXPECT_EQ(get(t + "/messageTTL?applied=true").json(), 100);
  ASSERT_EQ(post(t + "/messageTTL?messageTTL=7").status, 204);
  EXPECT_EQ(get(t + "/messageTTL?applied=true").json(), 7);

  // Persistence: Pulsar's checks and texts.
  Reply six = post(t + "/persistence", R"({"bookkeeperEnsemble":6,"bookkeeperWriteQuorum":1,
                                          "bookkeeperAckQuorum":1})");
  EXPECT_EQ(six.status, 400);
  EXPECT_EQ(six.reason(), "Bookkeeper-Ensemble must be <= 5 and > 0.");
  Reply order = post(t + "/persistence", R"({"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":2,
                                            "bookkeeperAckQuorum":1})");
  EXPECT_EQ(order.status, 400);
  EXPECT_EQ(order.reason(), "Bookkeeper Ensemble (1) >= WriteQuorum (2) >= AckQuorum (1)");
  ASSERT_EQ(post(t + "/persistence", R"({"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":1,
                                         "bookkeeperAckQuorum":1})")
                .status,
            204);
  EXPECT_EQ(get(t + "/persistence").json()["bookkeeperEnsemble"], 1);

  // Counts: negative is a 412 with Pulsar's text; garbage a 400.
  Reply negative = post(t + "/maxProducers", "-1");
  EXPECT_EQ(negative.status, 412);
  EXPECT_EQ(negative.reason(), "maxProducers must be 0 or more");
  EXPECT_ERROR(post(t + "/maxConsumers", "\"many\""), 400);
  EXPECT_EQ(post(t + "/deduplicationSnapshotInterval", "-5").reason(),
            "interval must be 0 or more");

  // Global (config store) and local policies are separate levels; local wins.
  ASSERT_EQ(post(t + "/maxConsumers?isGlobal=true", "4").status, 204);
  EXPECT_EQ(get(t + "/maxConsumers?isGlobal=true").json(), 4);
  EXPECT_EQ(get(t + "/maxConsumers").status, 204);
  EXPECT_EQ(get(t + "/maxConsumers?applied=true").json(), 4);

  // Unknown topics and partitions are refused.
  Reply missing = post(kTopics + "/nothing-here/messageTTL?messageTTL=5");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.reason(), "Topic not found");
  ASSERT_EQ(put(kTopics + "/parted/partitions", "2").status, 204);
  Reply partition = post(kTopics + "/parted-partition-0/messageTTL?messageTTL=5");
  EXPECT_EQ(partition.status, 412);
  EXPECT_EQ(partition.reason(), "Not allowed to set/get topic policy for a partition");
  EXPECT_EQ(post(kTopics + "/parted/messageTTL?messageTTL=5").status, 204);
}

TEST_F(BrokerRoutesTest, ATopicPolicyReachesTheLoadedTopic) {
  const std::string topic = "persistent://public/default/limited";
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  ASSERT_EQ(post(kTopics + "/limited/maxProducers", "1").status, 204);
  // The loaded topic hears of it through the metadata store's notification, without an unload.
  uint64_t next_id = 2;
  Status refused;
  ASSERT_TRUE(eventually([&] {
    auto p = c->create_producer(topic, next_id++);
    if (p.ok()) return false;
    refused = p.status();
    return true;
  }));
  EXPECT_EQ(testing::server_error_of(refused), wire::ProducerBusy);
  EXPECT_NE(refused.message().find("reached max producers limit"), std::string::npos)
      << refused.to_string();
  ASSERT_EQ(del(kTopics + "/limited/maxProducers").status, 204);
  EXPECT_TRUE(eventually([&] { return c->create_producer(topic, next_id++).ok(); }));
}

TEST_F(BrokerRoutesTest, SchemaAutoUpdateAndValidationPoliciesOfANamespace) {
  const std::string topic = "persistent://public/default/typed";
  auto c = client();
  ASSERT_TRUE(c);
  wire::CommandProducer producer;
  producer.set_topic(topic);
  producer.set_producer_id(1);
  auto* schema = producer.mutable_schema();
  schema->set_name("typed");
  schema->set_type(wire::Schema::Json);
  schema->set_schema_data(R"({"type":"record","name":"R","fields":[]})");
  ASSERT_TRUE(c->create_producer(producer).ok());

  EXPECT_EQ(get(kNamespace + "/isAllowAutoUpdateSchema").json(), true);  // the broker's
  ASSERT_EQ(post(kNamespace + "/isAllowAutoUpdateSchema", "false").status, 204);
  EXPECT_EQ(get(kNamespace + "/isAllowAutoUpdateSchema").json(), false);
  Reply meaningless =
      post(kNamespace + "/isAllowAutoUpdateSchema?allowAutoUpdateSchemaWithReplicator=false",
           "true");
  EXPECT_EQ(meaningless.status, 400);

  // A new version is refused; the registered one is still accepted.
  wire::CommandProducer changed = producer;
  changed.mutable_schema()->set_schema_data(R"({"type":"record","name":"R2","fields":[]})");
  uint64_t next_id = 2;
  Status refused;
  ASSERT_TRUE(eventually([&] {
    changed.set_producer_id(next_id++);
    changed.clear_request_id();
    auto p = c->create_producer(changed);
    if (p.ok()) return false;
    refused = p.status();
    return true;
  }));
  EXPECT_EQ(testing::server_error_of(refused), wire::IncompatibleSchema);
  EXPECT_NE(refused.message().find("schema auto updating is disabled"), std::string::npos)
      << refused.to_string();
  producer.set_producer_id(next_id++);
  producer.clear_request_id();
  EXPECT_TRUE(c->create_producer(producer).ok());

  // Validation enforced: a producer without a schema is refused on a topic that has one.
  EXPECT_EQ(get(kNamespace + "/schemaValidationEnforced").json(), false);
  ASSERT_EQ(post(kNamespace + "/schemaValidationEnforced", "true").status, 204);
  ASSERT_TRUE(eventually([&] { return !c->create_producer(topic, next_id++).ok(); }));
  auto plain = c->create_producer(topic, next_id++);
  ASSERT_FALSE(plain.ok());
  EXPECT_EQ(testing::server_error_of(plain.status()), wire::IncompatibleSchema);
  // ... but not on a topic without one.
  EXPECT_TRUE(c->create_producer("persistent://public/default/untyped", next_id++).ok());
}

class InactiveTopicsTest : public BrokerRoutesTest {
 protected:
  void configure(BrokerConfig& c) override {
    c.broker_delete_inactive_topics_frequency_seconds = 1;
    c.broker_delete_inactive_topics_max_inactive_duration_seconds = 1;
  }

  bool listed(const std::string& topic) {
    Reply r = get(kTopics);
    if (r.status != 200) return false;
    for (const auto& t : r.json()) {
      if (t == "persistent://public/default/" + topic) return true;
    }
    return false;
  }
};

TEST_F(InactiveTopicsTest, TopicsWithoutClientsOrSubscriptionsAreDeleted) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/idle", 3);
  produce(*c, "persistent://public/default/subscribed", 3, 2);
  ASSERT_TRUE(c->subscribe("persistent://public/default/subscribed", "keep",
                           wire::CommandSubscribe::Shared, 1)
                  .ok());
  produce(*c, "persistent://public/default/busy", 1, 3);
  ASSERT_TRUE(c->close_producer(1).ok());
  ASSERT_TRUE(c->close_producer(2).ok());
  ASSERT_TRUE(c->close_consumer(1).ok());  // its subscription stays
  EXPECT_TRUE(listed("idle"));

  EXPECT_TRUE(eventually([&] { return !listed("idle"); })) << "the idle topic is kept";
  // A topic with a connected producer stays, and one with a subscription (the default mode,
  // delete_when_no_subscriptions).
  EXPECT_TRUE(listed("busy"));
  EXPECT_TRUE(listed("subscribed"));
  // The deleted topic's data went with it: a new producer starts an empty topic.
  Reply stats = get(kTopics + "/idle/stats");
  EXPECT_EQ(stats.status, 404) << stats;
  // A namespace policy turns the GC off.
  ASSERT_EQ(post(kNamespace + "/inactiveTopicPolicies",
                 R"({"inactiveTopicDeleteMode":"delete_when_no_subscriptions",
                     "maxInactiveDurationSeconds":1,"deleteWhileInactive":false})")
                .status,
            204);
  produce(*c, "persistent://public/default/kept", 1, 4);
  ASSERT_TRUE(c->close_producer(4).ok());
  std::this_thread::sleep_for(3s);
  EXPECT_TRUE(listed("kept"));
}

}  // namespace
}  // namespace magnetar::broker::routes_test
