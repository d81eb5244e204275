// Consuming through the client library: subscription types, acknowledgements, negative
// acks, ack timeout, dead letters, seek, listeners, batch receive, unsubscribe.

#include <fmt/format.h>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "client/tests/client_test_support.h"

namespace magnetar::client::test {
namespace {

ConsumerOptions earliest(SubscriptionType type = SubscriptionType::kExclusive) {
  ConsumerOptions o;
  o.type = type;
  o.initial_position = InitialPosition::kEarliest;
  return o;
}

TEST_F(ClientTest, ExclusiveRefusesASecondConsumer) {
  auto a = consumer(topic(), "sub");
  auto b = client().subscribe(topic(), "sub");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(server_error_of(b.status()), ServerError::kConsumerBusy);
}

TEST_F(ClientTest, SharedSpreadsMessagesOverConsumers) {
  ConsumerOptions o = earliest(SubscriptionType::kShared);
  o.receiver_queue_size = 5;
  auto a = consumer(topic(), "work", o);
  auto b = consumer(topic(), "work", o);
  auto p = producer(topic(), unbatched());
  send_n(p, 40);
  std::set<std::string> seen;
  int from_a = 0, from_b = 0;
  for (int round = 0; round < 200 && seen.size() < 40; ++round) {
    if (auto m = a.receive(20ms); m.ok()) {
      ++from_a;
      seen.insert(m->payload());
      (void)a.acknowledge(*m);
    }
    if (auto m = b.receive(20ms); m.ok()) {
      ++from_b;
      seen.insert(m->payload());
      (void)b.acknowledge(*m);
    }
  }
  EXPECT_EQ(seen.size(), 40u);
  EXPECT_GT(from_a, 0);
  EXPECT_GT(from_b, 0);
  EXPECT_EQ(from_a + from_b, 40);
}

TEST_F(ClientTest, FailoverDeliversToTheActiveConsumerOnly) {
  ConsumerOptions o = earliest(SubscriptionType::kFailover);
  o.consumer_name = "a";
  auto a = consumer(topic(), "fo", o);
  o.consumer_name = "b";
  auto b = consumer(topic(), "fo", o);
  auto p = producer(topic(), unbatched());
  send_n(p, 5);
  auto got = receive_n(a, 5);
  EXPECT_EQ(got.size(), 5u);
  EXPECT_FALSE(b.receive(200ms).ok());
  EXPECT_TRUE(a.is_active());
  EXPECT_FALSE(b.is_active());
  // The active one leaves: the other takes over.
  ASSERT_TRUE(a.close().ok());
  send_n(p, 3, "after-");
  auto rest = receive_n(b, 3);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[0].payload(), "after-0");
  EXPECT_TRUE(b.is_active());
}

TEST_F(ClientTest, KeySharedKeepsEachKeyOnOneConsumer) {
  ConsumerOptions o = earliest(SubscriptionType::kKeyShared);
  auto a = consumer(topic(), "ks", o);
  auto b = consumer(topic(), "ks", o);
  auto p = producer(topic(), unbatched());
  for (int i = 0; i < 60; ++i) {
    Message m(fmt::format("v{}", i));
    m.set_key("key-" + std::to_string(i % 6));
    ASSERT_TRUE(p.send(m).ok());
  }
  std::map<std::string, std::set<int>> owner;  // key -> consumers that got it
  int total = 0;
  for (int round = 0; round < 300 && total < 60; ++round) {
    Consumer* cs[] = {&a, &b};
    for (int k = 0; k < 2; ++k) {
      if (auto m = cs[k]->receive(10ms); m.ok()) {
        owner[m->key()].insert(k);
        ++total;
        (void)cs[k]->acknowledge(*m);
      }
    }
  }
  EXPECT_EQ(total, 60);
  for (const auto& [key, consumers] : owner) EXPECT_EQ(consumers.size(), 1u) << key;
}

TEST_F(ClientTest, UnacknowledgedMessagesComeBackAfterReconnecting) {
  auto p = producer(topic(), unbatched());
  send_n(p, 6);
  {
    auto c = consumer(topic(), "sub", earliest());
    auto got = receive_n(c, 6, false);
    ASSERT_EQ(got.size(), 6u);
    for (int i : {0, 1, 3}) ASSERT_TRUE(c.acknowledge(got[static_cast<size_t>(i)]).ok());
    ASSERT_TRUE(c.close().ok());
  }
  auto c = consumer(topic(), "sub", earliest());
  auto again = receive_n(c, 3);
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[0].payload(), "msg-2");
  EXPECT_EQ(again[1].payload(), "msg-4");
  EXPECT_EQ(again[2].payload(), "msg-5");
  EXPECT_FALSE(c.receive(200ms).ok());
}

TEST_F(ClientTest, CumulativeAckAndItsRestriction) {
  auto p = producer(topic(), unbatched());
  send_n(p, 5);
  {
    auto c = consumer(topic(), "sub", earliest());
    auto got = receive_n(c, 5, false);
    ASSERT_EQ(got.size(), 5u);
    ASSERT_TRUE(c.acknowledge_cumulative(got[2]).ok());
    ASSERT_TRUE(c.close().ok());
  }
  auto c = consumer(topic(), "sub", earliest());
  auto rest = receive_n(c, 2);
  ASSERT_EQ(rest.size(), 2u);
  EXPECT_EQ(rest[0].payload(), "msg-3");
  auto shared = consumer(topic(), "shared-sub", earliest(SubscriptionType::kShared));
  auto m = shared.receive(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(client_error_of(shared.acknowledge_cumulative(*m)),
            ClientError::kCumulativeAckNotAllowed);
}

TEST_F(ClientTest, BatchEntryIsAcknowledgedOnceAllItsMessagesAre) {
  ProducerOptions po;
  po.batching_max_messages = 4;
  po.batching_max_delay = 1000ms;
  auto p = producer(topic(), po);
  for (int i = 0; i < 4; ++i) p.send_async(Message("b" + std::to_string(i)), nullptr);
  ASSERT_TRUE(p.flush().ok());
  {
    auto c = consumer(topic(), "sub", earliest());
    auto got = receive_n(c, 4, false);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].id().batch_size(), 4);
    for (int i : {0, 1, 2}) ASSERT_TRUE(c.acknowledge(got[static_cast<size_t>(i)]).ok());
    ASSERT_TRUE(c.close().ok());
  }
  {
    // The entry was not acknowledged: it comes again.
    auto c = consumer(topic(), "sub", earliest());
    auto got = receive_n(c, 4, true);
    ASSERT_EQ(got.size(), 4u);
    ASSERT_TRUE(c.close().ok());
  }
  auto c = consumer(topic(), "sub", earliest());
  EXPECT_FALSE(c.receive(300ms).ok()) << "all four acknowledged: the entry is gone";
}

TEST_F(ClientTest, NegativeAckRedeliversWithACount) {
  ConsumerOptions o = earliest(SubscriptionType::kShared);
  o.negative_ack_redelivery_delay = 100ms;
  auto c = consumer(topic(), "sub", o);
  auto p = producer(topic(), unbatched());
  send_n(p, 2);
  auto first = receive_n(c, 2, false);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].redelivery_count(), 0u);
  ASSERT_TRUE(c.acknowledge(first[1]).ok());
  c.negative_acknowledge(first[0]);
  auto again = c.receive(5s);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->payload(), "msg-0");
  EXPECT_EQ(again->redelivery_count(), 1u);
  ASSERT_TRUE(c.acknowledge(*again).ok());
  EXPECT_FALSE(c.receive(300ms).ok());
}

TEST_F(ClientTest, AckTimeoutRedelivers) {
  ConsumerOptions o = earliest(SubscriptionType::kShared);
  o.ack_timeout = 300ms;
  auto c = consumer(topic(), "sub", o);
  auto p = producer(topic(), unbatched());
  send_n(p, 1);
  auto m = c.receive(5s);
  ASSERT_TRUE(m.ok());
  auto start = std::chrono::steady_clock::now();
  auto again = c.receive(5s);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  EXPECT_EQ(again->payload(), "msg-0");
  EXPECT_EQ(again->redelivery_count(), 1u);
  ASSERT_TRUE(c.acknowledge(*again).ok());
  EXPECT_FALSE(c.receive(600ms).ok()) << "acknowledged: not redelivered again";
}

TEST_F(ClientTest, ExclusiveRedeliveryRewindsToTheFirstUnacked) {
  auto c = consumer(topic(), "sub", earliest());
  auto p = producer(topic(), unbatched());
  send_n(p, 3);
  auto got = receive_n(c, 3, false);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(c.acknowledge(got[0]).ok());
  c.redeliver_unacknowledged_messages();
  auto again = receive_n(c, 2);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].payload(), "msg-1");
  EXPECT_EQ(again[1].payload(), "msg-2");
}

TEST_F(ClientTest, DeadLetterTopicGetsMessagesPastMaxRedeliveries) {
  const std::string dlq = topic("-dlq");
  auto dead = consumer(dlq, "dlq-sub", earliest());
  ConsumerOptions o = earliest(SubscriptionType::kShared);
  o.negative_ack_redelivery_delay = 50ms;
  o.dead_letter_policy = DeadLetterPolicy{2, dlq};
  auto c = consumer(topic(), "sub", o);
  auto p = producer(topic(), unbatched());
  Message m("poison");
  m.set_key("k");
  ASSERT_TRUE(p.send(m).ok());
  for (uint32_t i = 0; i <= 2; ++i) {
    auto got = c.receive(5s);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->redelivery_count(), i);
    c.negative_acknowledge(*got);
  }
  auto letter = dead.receive(5s);
  ASSERT_TRUE(letter.ok()) << letter.status().to_string();
  EXPECT_EQ(letter->payload(), "poison");
  EXPECT_EQ(letter->key(), "k");
  EXPECT_EQ(letter->property("REAL_TOPIC"), topic());
  EXPECT_FALSE(c.receive(300ms).ok()) << "dead-lettered messages are acknowledged";
}

TEST_F(ClientTest, DefaultDeadLetterTopicName) {
  const std::string dlq = topic() + "-sub-DLQ";
  auto dead = consumer(dlq, "d", earliest());
  ConsumerOptions o = earliest(SubscriptionType::kShared);
  o.negative_ack_redelivery_delay = 50ms;
  o.dead_letter_policy = DeadLetterPolicy{1, ""};
  auto c = consumer(topic(), "sub", o);
  auto p = producer(topic(), unbatched());
  ASSERT_TRUE(p.send(Message("x")).ok());
  for (int i = 0; i < 2; ++i) {
    auto got = c.receive(5s);
    ASSERT_TRUE(got.ok());
    c.negative_acknowledge(*got);
  }
  EXPECT_TRUE(dead.receive(5s).ok());
}

TEST_F(ClientTest, SeekToAMessageIdAndToAPublishTime) {
  auto p = producer(topic(), unbatched());
  auto ids = send_n(p, 5);
  auto c = consumer(topic(), "sub", earliest());
  auto all = receive_n(c, 5);
  ASSERT_EQ(all.size(), 5u);
  ASSERT_TRUE(c.seek(ids[2]).ok());
  auto after = receive_n(c, 3);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].payload(), "msg-2");
  EXPECT_EQ(after[2].payload(), "msg-4");
  ASSERT_TRUE(c.seek(MessageId::earliest()).ok());
  auto again = c.receive(5s);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->payload(), "msg-0");
  ASSERT_TRUE(c.acknowledge(*again).ok());
  // By time: everything published at or after the fourth message's publish time.
  ASSERT_TRUE(c.seek(all[3].publish_time()).ok());
  auto by_time = c.receive(5s);
  ASSERT_TRUE(by_time.ok());
  EXPECT_EQ(by_time->publish_time(), all[3].publish_time());
}

TEST_F(ClientTest, MessageListenerGetsEveryMessage) {
  std::mutex mu;
  std::vector<std::string> seen;
  ConsumerOptions o = earliest();
  o.listener = [&](Consumer& c, const Message& m) {
    (void)c.acknowledge(m);
    std::lock_guard lock(mu);
    seen.push_back(m.payload());
  };
  auto c = consumer(topic(), "sub", o);
  EXPECT_EQ(client_error_of(c.receive(10ms).status()), ClientError::kInvalidConfiguration);
  auto p = producer(topic(), unbatched());
  send_n(p, 10);
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(mu);
      if (seen.size() == 10) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(seen.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)], "msg-" + std::to_string(i));
}

TEST_F(ClientTest, BatchReceiveHonoursCountAndTimeout) {
  ConsumerOptions o = earliest();
  o.batch_receive_policy.max_messages = 4;
  o.batch_receive_policy.timeout = 200ms;
  auto c = consumer(topic(), "sub", o);
  auto p = producer(topic(), unbatched());
  send_n(p, 6);
  std::this_thread::sleep_for(200ms);
  auto first = c.batch_receive();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->size(), 4u);
  auto second = c.batch_receive();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->size(), 2u);
  auto empty = c.batch_receive();
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST_F(ClientTest, UnsubscribeRemovesTheSubscription) {
  auto p = producer(topic(), unbatched());
  send_n(p, 2);
  {
    auto c = consumer(topic(), "sub", earliest());
    ASSERT_TRUE(c.receive(5s).ok());
    ASSERT_TRUE(c.unsubscribe().ok());
    EXPECT_FALSE(c.receive(10ms).ok());
  }
  // A new subscription at latest sees nothing old.
  auto c = consumer(topic(), "sub");
  EXPECT_FALSE(c.receive(300ms).ok());
}

TEST_F(ClientTest, ReceiveTimesOutAndCloseWakesReceivers) {
  auto c = consumer(topic(), "sub");
  auto r = c.receive(100ms);
  EXPECT_EQ(client_error_of(r.status()), ClientError::kTimeout);
  auto blocked = std::async(std::launch::async, [&] { return c.receive(); });
  std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(c.close().ok());
  ASSERT_EQ(blocked.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(client_error_of(blocked.get().status()), ClientError::kAlreadyClosed);
}

}  // namespace
}  // namespace magnetar::client::test

namespace magnetar::client::test {
namespace {

// Delayed delivery (PIP-26): Message::set_deliver_after holds the message on a Shared
// subscription until then (the broker's default tick may deliver it up to a second early),
// while an Exclusive subscription of the same topic gets it at once. A batching producer
// sends it outside its batches.
TEST_F(ClientTest, DeliverAfterHoldsAMessageOnSharedSubscriptionsOnly) {
  auto shared = consumer(topic(), "shared", earliest(SubscriptionType::kShared));
  auto exclusive = consumer(topic(), "exclusive", earliest(SubscriptionType::kExclusive));
  auto p = producer(topic());  // batching on
  const auto sent_at = std::chrono::steady_clock::now();
  Message delayed("later");
  delayed.set_deliver_after(2500ms);
  EXPECT_GT(delayed.deliver_at(), 0u);
  std::promise<Status> first;
  p.send_async(std::move(delayed), [&](Result<MessageId> r) { first.set_value(r.status()); });
  ASSERT_TRUE(p.send(Message("now")).ok());
  ASSERT_TRUE(first.get_future().get().ok());
  auto got = receive_n(exclusive, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].payload(), "later");  // in order, at once
  auto m = shared.receive(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload(), "now");
  auto later = shared.receive(5s);
  ASSERT_TRUE(later.ok()) << later.status().to_string();
  EXPECT_EQ(later->payload(), "later");
  EXPECT_GE(std::chrono::steady_clock::now() - sent_at, 1500ms);
}

}  // namespace
}  // namespace magnetar::client::test
