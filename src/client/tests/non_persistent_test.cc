// The client on non-persistent topics (non-persistent://...): produce and consume, readers
// (which must not take the 0:0 every message carries for a position to start after), and a
// partitioned non-persistent topic.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include "broker/service/topic_registry.h"
#include "client/tests/client_test_support.h"

namespace magnetar::client::test {
namespace {

std::string np_topic(const std::string& name) {
  return "non-persistent://public/default/" + test_name() + "-" + name;
}

TEST_F(ClientTest, NonPersistentTopicProduceAndConsume) {
  const std::string t = np_topic("plain");
  ConsumerOptions o;
  o.type = SubscriptionType::kShared;
  auto c = consumer(t, "sub", o);
  auto p = producer(t, unbatched());
  send_n(p, 5);
  for (int i = 0; i < 5; ++i) {
    auto m = c.receive(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload(), "msg-" + std::to_string(i));
    EXPECT_TRUE(c.acknowledge(*m).ok());
  }
}

// Every message carries 0:0: once one is acknowledged, the next must not be taken for it (they
// were all dropped as already acknowledged; `magnetar chaos --non-persistent` saw it).
TEST_F(ClientTest, NonPersistentMessagesAfterAnAcknowledgementStillArrive) {
  const std::string t = np_topic("after-ack");
  ConsumerOptions o;
  o.type = SubscriptionType::kShared;
  o.ack_grouping_time = 0ms;  // the acknowledgement goes at once
  auto c = consumer(t, "sub", o);
  auto p = producer(t, unbatched());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(p.send(Message("msg-" + std::to_string(i))).ok());
    auto m = c.receive(5s);
    ASSERT_TRUE(m.ok()) << i << ": " << m.status().to_string();
    EXPECT_EQ(m->payload(), "msg-" + std::to_string(i));
    EXPECT_TRUE(c.acknowledge(*m).ok());
  }
}

TEST_F(ClientTest, NonPersistentReaderKeepsReadingAfterItsTopicIsUnloaded) {
  const std::string t = np_topic("reader");
  auto r = client().create_reader(t, MessageId::latest());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto p = producer(t, unbatched());
  send_n(p, 2);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(r->read_next(5s).ok()) << i;
  auto avail = r->has_message_available();
  ASSERT_TRUE(avail.ok()) << avail.status().to_string();
  EXPECT_FALSE(*avail);
  // The topic goes (nothing of it survives); producer and reader come back to a new one.
  broker::TopicRegistry* registry = &broker_->topics();
  auto unloaded = asio::co_spawn(
      broker_->executor(),
      [registry]() -> Task<int> {
        co_return co_await registry->close_topics([](const protocol::TopicName&) { return true; });
      },
      asio::use_future);
  EXPECT_GE(unloaded.get(), 1);
  // Sent until the reader, subscribed again, has one (what goes before it is dropped).
  bool got = false;
  for (int i = 0; i < 100 && !got; ++i) {
    (void)p.send(Message("again-" + std::to_string(i)));
    auto m = r->read_next(100ms);
    got = m.ok() && m->payload().starts_with("again-");
  }
  EXPECT_TRUE(got);
}

TEST_F(ClientTest, NonPersistentPartitionedTopic) {
  const std::string base = "non-persistent://public/default/" + test_name();
  auto made = cluster_.await(store_->put_recursive(
      "/admin/partitioned-topics/public/default/non-persistent/" + test_name(),
      R"({"partitions":3})"));
  ASSERT_TRUE(made.ok());
  auto c = consumer(base, "sub");
  auto p = producer(base, unbatched());
  send_n(p, 9);
  std::set<std::string> got;
  for (int i = 0; i < 9; ++i) {
    auto m = c.receive(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    got.insert(m->payload());
  }
  EXPECT_EQ(got.size(), 9u);
}

}  // namespace
}  // namespace magnetar::client::test
