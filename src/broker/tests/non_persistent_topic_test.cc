// Non-persistent topics over the wire: every subscription kind, messages dropped for
// consumers without permits (and counted), nothing stored, partitions, readers, and the
// consumer commands that mean nothing without storage.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "broker/service/non_persistent_topic.h"
#include "broker/service/topic_registry.h"
#include "broker/tests/broker_test_fixture.h"

namespace magnetar::broker::test {
namespace {

using wire::CommandSubscribe;

constexpr std::chrono::milliseconds kQuiet{300};

class NonPersistentTopicTest : public BrokerTest {
 protected:
  // Runs `work` on the broker's first loop and waits for its result.
  template <typename T, typename F>
  T on_broker(F work) {
    return asio::co_spawn(broker_->executor(), std::move(work), asio::use_future).get();
  }

  // The topic's stats after a stats period of one second ends now (rates over it); null when
  // the topic is not loaded.
  nlohmann::json stats_of(const std::string& topic) {
    TopicRegistry* registry = &broker_->topics();
    const auto name = protocol::TopicName::parse(topic).value();
    return on_broker<nlohmann::json>([registry, name]() -> Task<nlohmann::json> {
      auto t = co_await registry->get_non_persistent_topic(name, false);
      if (!t.ok()) co_return nlohmann::json();
      auto read = [t = *t]() -> Task<nlohmann::json> {
        t->update_rates(1.0);
        co_return t->stats();
      };
      co_return *co_await run_on<nlohmann::json>((*t)->executor(), std::move(read));
    });
  }

  // Every MESSAGE that arrives within `quiet` of the previous one: payload by consumer id.
  std::multimap<uint64_t, std::string> drain(PulsarTestClient& c,
                                             std::chrono::milliseconds quiet = kQuiet) {
    std::multimap<uint64_t, std::string> out;
    while (true) {
      auto m = c.receive_message(quiet);
      if (!m.ok()) return out;
      out.emplace(m->consumer_id, m->payload.to_string());
    }
  }
};

TEST_F(NonPersistentTopicTest, ExclusiveConsumerGetsWhatIsPublishedWithIdZeroZero) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->flow(1, 100).ok());
  auto ids = produce(*c, topic, 3);
  ASSERT_EQ(ids.size(), 3u);
  for (const auto& id : ids) {
    // As Pulsar's NonPersistentTopic: every receipt says 0:0.
    EXPECT_EQ(id.ledgerid(), 0u);
    EXPECT_EQ(id.entryid(), 0u);
  }
  for (int i = 0; i < 3; ++i) {
    auto m = c->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "msg-" + std::to_string(i));
    EXPECT_EQ(m->id.ledgerid(), 0u);
    EXPECT_EQ(m->id.entryid(), 0u);
  }
  // A second exclusive consumer is refused.
  auto other = client();
  EXPECT_FALSE(other->subscribe(topic, "sub", CommandSubscribe::Exclusive, 2).ok());
}

TEST_F(NonPersistentTopicTest, NothingIsStored) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  produce(*c, topic, 5);
  EXPECT_EQ(drain(*c).size(), 5u);
  // No managed ledger, no cursor: nothing under /managed-ledgers for the namespace's
  // non-persistent topics.
  for (const std::string path : {"/managed-ledgers/public/default/non-persistent",
                                 "/managed-ledgers/public/default/persistent"}) {
    auto exists = cluster_.await(store_->exists(path));
    ASSERT_TRUE(exists.ok());
    EXPECT_FALSE(*exists) << path;
  }
}

TEST_F(NonPersistentTopicTest, MessagesForConsumersWithoutPermitsAreDroppedAndCounted) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "with-permits", CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->subscribe(topic, "without", CommandSubscribe::Exclusive, 2).ok());
  ASSERT_TRUE(c->flow(1, 2).ok());
  auto ids = produce(*c, topic, 5);
  EXPECT_EQ(ids.size(), 5u);  // every send succeeds
  auto got = drain(*c);
  EXPECT_EQ(got.count(1), 2u);  // its two permits
  EXPECT_EQ(got.count(2), 0u);
  // Permits given later bring nothing back: nothing was kept.
  ASSERT_TRUE(c->flow(2, 10).ok());
  EXPECT_TRUE(drain(*c).empty());

  const auto stats = stats_of(topic);
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(stats["msgInCounter"], 5);
  EXPECT_EQ(stats["msgOutCounter"], 2);
  EXPECT_EQ(stats["subscriptions"]["with-permits"]["msgDropCounter"], 3);
  EXPECT_EQ(stats["subscriptions"]["without"]["msgDropCounter"], 5);
  EXPECT_DOUBLE_EQ(stats["subscriptions"]["without"]["msgDropRate"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(stats["subscriptions"]["with-permits"]["msgDropRate"].get<double>(), 3.0);
  EXPECT_EQ(stats["subscriptions"]["without"]["type"], "Exclusive");
  EXPECT_EQ(stats["subscriptions"]["without"]["msgBacklog"], 0);
  ASSERT_EQ(stats["publishers"].size(), 1u);
  EXPECT_TRUE(stats["publishers"][0].contains("msgDropRate"));
  EXPECT_TRUE(stats.contains("msgDropRate"));
}

TEST_F(NonPersistentTopicTest, SubscriptionWithoutConsumersDropsEverything) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->close_consumer(1).ok());
  produce(*c, topic, 3);
  // The subscription is still there (durable, in memory); it dropped all three.
  const auto stats = stats_of(topic);
  EXPECT_EQ(stats["subscriptions"]["sub"]["msgDropCounter"], 3);
  EXPECT_EQ(stats["subscriptions"]["sub"]["consumers"].size(), 0u);
}

TEST_F(NonPersistentTopicTest, SharedGoesRoundRobinOverConsumersWithPermits) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 2).ok());
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 3).ok());
  ASSERT_TRUE(c->flow(1, 100).ok());
  ASSERT_TRUE(c->flow(2, 100).ok());  // consumer 3 has no permits: skipped, nothing dropped
  produce(*c, topic, 6);
  auto got = drain(*c);
  EXPECT_EQ(got.count(1), 3u);
  EXPECT_EQ(got.count(2), 3u);
  EXPECT_EQ(got.count(3), 0u);
  EXPECT_EQ(stats_of(topic)["subscriptions"]["sub"]["msgDropCounter"], 0);
  // Another kind may not join while Shared consumers are connected.
  EXPECT_FALSE(c->subscribe(topic, "sub", CommandSubscribe::Exclusive, 4).ok());
}

TEST_F(NonPersistentTopicTest, FailoverDeliversToTheActiveConsumerOnly) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  wire::CommandSubscribe sub;
  sub.set_topic(topic);
  sub.set_subscription("sub");
  sub.set_subtype(CommandSubscribe::Failover);
  for (uint64_t id : {1, 2}) {
    sub.set_consumer_id(id);
    sub.set_consumer_name("consumer-" + std::to_string(id));
    sub.clear_request_id();
    ASSERT_TRUE(c->subscribe(sub).ok());
    ASSERT_TRUE(c->flow(id, 100).ok());
  }
  // consumer-1 sorts first: it is active, and both hear so.
  std::map<uint64_t, bool> active;
  for (int i = 0; i < 2; ++i) {
    auto change = c->receive(wire::BaseCommand::ACTIVE_CONSUMER_CHANGE);
    ASSERT_TRUE(change.ok()) << change.status().to_string();
    active[change->command.active_consumer_change().consumer_id()] =
        change->command.active_consumer_change().is_active();
  }
  EXPECT_TRUE(active[1]);
  EXPECT_FALSE(active[2]);
  produce(*c, topic, 4);
  auto got = drain(*c);
  EXPECT_EQ(got.count(1), 4u);
  EXPECT_EQ(got.count(2), 0u);
  // The active one leaves: the other takes over for what comes next.
  ASSERT_TRUE(c->close_consumer(1).ok());
  ASSERT_TRUE(c->send_message(1, 10, "after").ok());
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->consumer_id, 2u);
}

TEST_F(NonPersistentTopicTest, KeySharedSendsEachKeyToOneConsumer) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  for (uint64_t id : {1, 2}) {
    ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Key_Shared, id).ok());
    ASSERT_TRUE(c->flow(id, 1000).ok());
  }
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  for (int i = 0; i < 60; ++i) {
    wire::MessageMetadata md;
    md.set_partition_key("key-" + std::to_string(i % 12));
    ASSERT_TRUE(c->send_message(1, i, "key-" + std::to_string(i % 12), &md).ok());
  }
  auto got = drain(*c);
  ASSERT_EQ(got.size(), 60u);
  std::map<std::string, std::set<uint64_t>> consumers_of;
  for (const auto& [consumer, key] : got) consumers_of[key].insert(consumer);
  for (const auto& [key, consumers] : consumers_of) EXPECT_EQ(consumers.size(), 1u) << key;
  // Both consumers had keys (12 keys over two halves of the hash space).
  EXPECT_GT(got.count(1), 0u);
  EXPECT_GT(got.count(2), 0u);
}

TEST_F(NonPersistentTopicTest, ReaderGetsNewMessagesAndItsSubscriptionGoesWithIt) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  wire::MessageIdData latest;
  latest.set_ledgerid(static_cast<uint64_t>(INT64_MAX));
  latest.set_entryid(static_cast<uint64_t>(INT64_MAX));
  ASSERT_TRUE(c->subscribe(topic, "reader-1", CommandSubscribe::Exclusive, 1,
                           CommandSubscribe::Latest, false, &latest)
                  .ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  produce(*c, topic, 2);
  EXPECT_EQ(drain(*c).count(1), 2u);
  // Nothing was kept, so there is nothing to have: -1:-1.
  auto last = c->get_last_message_id(1);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(static_cast<int64_t>(last->last_message_id().ledgerid()), -1);
  EXPECT_EQ(static_cast<int64_t>(last->last_message_id().entryid()), -1);
  ASSERT_TRUE(c->close_consumer(1).ok());
  const auto stats = stats_of(topic);
  EXPECT_FALSE(stats["subscriptions"].contains("reader-1"));
}

TEST_F(NonPersistentTopicTest, AcksAreAnsweredRedeliveriesIgnoredSeeksRefused) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  produce(*c, topic, 1);
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(c->ack(1, {id_of(m->id)}, false, c->next_request_id()).ok());
  ASSERT_TRUE(c->redeliver_unacknowledged(1).ok());
  EXPECT_FALSE(c->receive_message(kQuiet).ok());  // nothing comes again
  auto sought = c->seek(1, id_of(m->id));
  EXPECT_FALSE(sought.ok());
  EXPECT_NE(sought.to_string().find("not supported"), std::string::npos) << sought.to_string();
  // Still subscribed: new messages arrive.
  ASSERT_TRUE(c->send_message(1, 5, "again").ok());
  EXPECT_TRUE(c->receive_message().ok());
  EXPECT_TRUE(c->unsubscribe(1).ok());
  EXPECT_FALSE(stats_of(topic)["subscriptions"].contains("sub"));
}

TEST_F(NonPersistentTopicTest, PartitionsOfAPartitionedTopic) {
  const std::string base = "non-persistent://public/default/" + test_name();
  auto made = cluster_.await(store_->put_recursive(
      "/admin/partitioned-topics/public/default/non-persistent/" + test_name(),
      R"({"partitions":2})"));
  ASSERT_TRUE(made.ok());
  auto c = client();
  auto meta = c->partitioned_metadata(base);
  ASSERT_TRUE(meta.ok()) << meta.status().to_string();
  EXPECT_EQ(meta->partitions(), 2u);
  for (uint64_t i = 0; i < 2; ++i) {
    const std::string partition = base + "-partition-" + std::to_string(i);
    ASSERT_TRUE(c->subscribe(partition, "sub", CommandSubscribe::Failover, i + 1).ok());
    ASSERT_TRUE(c->flow(i + 1, 10).ok());
    produce(*c, partition, 2, i + 1);
  }
  for (int i = 0; i < 4; ++i) {
    auto m = c->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->id.partition(), static_cast<int>(m->consumer_id) - 1);
  }
}

TEST_F(NonPersistentTopicTest, NothingSurvivesAnUnload) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(stats_of(topic).is_object());
  TopicRegistry* registry = &broker_->topics();
  const int closed = on_broker<int>([registry]() -> Task<int> {
    co_return co_await registry->close_topics([](const protocol::TopicName&) { return true; });
  });
  EXPECT_GE(closed, 1);
  auto close = c->receive(wire::BaseCommand::CLOSE_CONSUMER);
  EXPECT_TRUE(close.ok());
  EXPECT_TRUE(stats_of(topic).is_null());  // not loaded any more
  // Made again on next use, empty.
  ASSERT_TRUE(c->create_producer(topic, 7).ok());
  EXPECT_TRUE(stats_of(topic)["subscriptions"].empty());
}

TEST_F(NonPersistentTopicTest, ProducerRulesApply) {
  const std::string topic = "non-persistent://public/default/" + test_name();
  auto c = client();
  ASSERT_TRUE(c->create_producer(topic, 1, std::string("p1"), wire::Exclusive).ok());
  auto second = c->create_producer(topic, 2, std::string("p2"), wire::Shared);
  EXPECT_FALSE(second.ok());
  auto same_name = client()->create_producer(topic, 3, std::string("p1"));
  EXPECT_FALSE(same_name.ok());
  // Batches pass through whole.
  ASSERT_TRUE(c->subscribe(topic, "sub", CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  ASSERT_TRUE(c->send_batch(1, 100, {"a", "b", "c"}).ok());
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok());
  auto messages = m->unpack();
  ASSERT_TRUE(messages.ok());
  EXPECT_EQ(messages->size(), 3u);
  EXPECT_EQ(stats_of(topic)["subscriptions"]["sub"]["consumers"][0]["availablePermits"], 7);
}

TEST_F(NonPersistentTopicTest, UnknownNamespaceIsRefused) {
  auto c = client();
  auto p = c->create_producer("non-persistent://public/nowhere/t", 1);
  EXPECT_FALSE(p.ok());
  EXPECT_FALSE(
      c->subscribe("non-persistent://public/nowhere/t", "s", CommandSubscribe::Shared, 1).ok());
}

}  // namespace
}  // namespace magnetar::broker::test
