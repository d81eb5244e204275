// Delayed message delivery (PIP-26) end to end: a broker and a bookie in this process, a
// raw protocol client sending messages whose metadata carries deliver_at_time.

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "broker/service/producer.h"  // wall_clock_ms
#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"
#include "broker/tests/broker_test_fixture.h"
#include "protocol/batch.h"

namespace magnetar::broker::test {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

int64_t now_ms() { return wall_clock_ms(); }

class DelayedDeliveryTest : public BrokerTest {
 protected:
  // The broker again with these delayed-delivery settings (strict: never a tick early, so
  // that "not before its time" is exact).
  void restart(const std::function<void(BrokerConfig&)>& tweak = {}) {
    broker_->stop();
    broker_.reset();
    start_broker([&](BrokerConfig& c) {
      c.delayed_delivery_tick_time_millis = 50;
      c.is_delayed_delivery_deliver_at_time_strict = true;
      if (tweak) tweak(c);
    });
  }

  // A client with consumer 1 of subscription `sub` (10 permits) and producer 1 on `topic`.
  std::unique_ptr<PulsarTestClient> consumer_and_producer(const std::string& topic,
                                                          const std::string& sub,
                                                          wire::CommandSubscribe::SubType type) {
    auto c = client();
    EXPECT_TRUE(c->subscribe(topic, sub, type, 1).ok());
    EXPECT_TRUE(c->flow(1, 10).ok());
    EXPECT_TRUE(c->create_producer(topic, 1).ok());
    return c;
  }

  // Sends "payload" to be delivered at `deliver_at` (ms since the epoch); its receipt.
  Result<wire::CommandSendReceipt> send_at(PulsarTestClient& c, uint64_t producer_id,
                                           uint64_t sequence_id, const std::string& payload,
                                           int64_t deliver_at, const std::string& key = "") {
    wire::MessageMetadata md;
    md.set_deliver_at_time(deliver_at);
    if (!key.empty()) md.set_partition_key(key);
    return c.send_message(producer_id, sequence_id, payload, &md);
  }

  // The subscription's stats as the admin API shows them (null when not loaded).
  Json subscription_stats(const std::string& topic, const std::string& sub) {
    auto& topics = broker_->topics();
    std::promise<Json> stats;
    asio::post(topics.topic_executor(topic), [&] {
      auto t = topics.loaded_topic(topic);
      auto s = t ? t->find_subscription(sub) : nullptr;
      stats.set_value(s ? s->stats() : Json());
    });
    return stats.get_future().get();
  }

  // Waits until msgDelayed of the subscription is `n`.
  bool until_delayed(const std::string& topic, const std::string& sub, int64_t n) {
    for (auto deadline = std::chrono::steady_clock::now() + 5s;
         std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(10ms)) {
      const Json s = subscription_stats(topic, sub);
      if (s.is_object() && s.value("msgDelayed", int64_t{-1}) == n) return true;
    }
    return false;
  }
};

TEST_F(DelayedDeliveryTest, SharedHoldsAMessageUntilItIsDue) {
  restart();
  const std::string topic = "persistent://public/default/delayed-shared";
  auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
  const int64_t due = now_ms() + 1500;
  ASSERT_TRUE(send_at(*c, 1, 0, "later", due).ok());
  ASSERT_TRUE(c->send_message(1, 1, "now").ok());
  auto first = c->receive_message();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->payload.to_string(), "now");
  EXPECT_TRUE(until_delayed(topic, "s", 1));
  auto second = c->receive_message(3000ms);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_GE(now_ms(), due);
  EXPECT_EQ(second->payload.to_string(), "later");
  EXPECT_EQ(second->redelivery_count, 0u);
  EXPECT_EQ(subscription_stats(topic, "s")["msgDelayed"], 0);
}

TEST_F(DelayedDeliveryTest, DueMessagesGoOutInPositionOrder) {
  // Pulsar's defaults (not strict, one-second tick): at the first wake-up every message due
  // within the tick goes out, by position, whatever their delivery times' order.
  restart([](BrokerConfig& c) {
    c.delayed_delivery_tick_time_millis = 1000;
    c.is_delayed_delivery_deliver_at_time_strict = false;
  });
  const std::string topic = "persistent://public/default/delayed-order";
  auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
  const int64_t base = now_ms() + 1500;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(send_at(*c, 1, i, "m" + std::to_string(i), base + 300 - 100 * i).ok());
  }
  EXPECT_FALSE(c->receive_message(800ms).ok());  // nothing before the first wake-up
  for (int i = 0; i < 4; ++i) {
    auto m = c->receive_message(3000ms);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "m" + std::to_string(i));
  }
}

TEST_F(DelayedDeliveryTest, ExclusiveAndFailoverIgnoreTheDelay) {
  restart();
  const std::string topic = "persistent://public/default/delayed-exclusive";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "x", wire::CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->subscribe(topic, "f", wire::CommandSubscribe::Failover, 2).ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  ASSERT_TRUE(c->flow(2, 10).ok());
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  ASSERT_TRUE(send_at(*c, 1, 0, "in a minute", now_ms() + 60000).ok());
  for (int i = 0; i < 2; ++i) {
    auto m = c->receive_message(2000ms);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "in a minute");
  }
}

TEST_F(DelayedDeliveryTest, KeySharedHoldsAMessageUntilItIsDue) {
  restart();
  const std::string topic = "persistent://public/default/delayed-key-shared";
  auto c = consumer_and_producer(topic, "k", wire::CommandSubscribe::Key_Shared);
  const int64_t due = now_ms() + 1200;
  ASSERT_TRUE(send_at(*c, 1, 0, "later", due, "key-a").ok());
  ASSERT_TRUE(c->send_message(1, 1, "now").ok());
  auto first = c->receive_message();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->payload.to_string(), "now");
  auto second = c->receive_message(3000ms);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_GE(now_ms(), due);
  EXPECT_EQ(second->payload.to_string(), "later");
  EXPECT_EQ(second->metadata.partition_key(), "key-a");
}

TEST_F(DelayedDeliveryTest, ABatchIsHeldWhole) {
  restart();
  const std::string topic = "persistent://public/default/delayed-batch";
  auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
  protocol::BatchBuilder batch;
  for (int i = 0; i < 3; ++i) {
    wire::SingleMessageMetadata single;
    single.set_sequence_id(i);
    batch.add(std::move(single), "b" + std::to_string(i));
  }
  const int64_t due = now_ms() + 1000;
  wire::MessageMetadata md;
  md.set_producer_name("batcher");
  md.set_sequence_id(0);
  md.set_publish_time(static_cast<uint64_t>(now_ms()));
  md.set_num_messages_in_batch(3);
  md.set_highest_sequence_id(2);
  md.set_deliver_at_time(due);
  wire::BaseCommand send;
  send.set_type(wire::BaseCommand::SEND);
  send.mutable_send()->set_producer_id(1);
  send.mutable_send()->set_sequence_id(0);
  send.mutable_send()->set_num_messages(3);
  send.mutable_send()->set_highest_sequence_id(2);
  ASSERT_TRUE(c->send_payload(send, md, BufferChain(batch.finish())).ok());
  ASSERT_TRUE(c->send_receipt(1, 0).ok());
  auto m = c->receive_message(3000ms);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_GE(now_ms(), due);
  auto messages = m->unpack();
  ASSERT_TRUE(messages.ok());
  EXPECT_EQ(messages->size(), 3u);
}

TEST_F(DelayedDeliveryTest, HeldMessagesAreTrackedAgainAfterABrokerRestart) {
  restart();
  const std::string topic = "persistent://public/default/delayed-restart";
  const int64_t due = now_ms() + 4000;
  {
    auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
    ASSERT_TRUE(send_at(*c, 1, 0, "later", due).ok());
    auto now = c->send_message(1, 1, "now");
    ASSERT_TRUE(now.ok());
    auto m = c->receive_message();
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(c->ack(1, {id_of(m->id)}, false, c->next_request_id()).ok());
    ASSERT_TRUE(until_delayed(topic, "s", 1));
    EXPECT_EQ(subscription_stats(topic, "s")["msgBacklog"], 1);  // a delayed message is backlog
  }
  restart();  // nothing of the tracker is stored: the cursor reads it again
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "s", wire::CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  ASSERT_TRUE(until_delayed(topic, "s", 1));
  EXPECT_EQ(subscription_stats(topic, "s")["msgBacklog"], 1);
  EXPECT_FALSE(c->receive_message(std::chrono::milliseconds(
                                      std::max<int64_t>(0, due - now_ms() - 300)))
                   .ok());  // still held
  auto m = c->receive_message(3000ms);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_GE(now_ms(), due);
  EXPECT_EQ(m->payload.to_string(), "later");
}

TEST_F(DelayedDeliveryTest, DisabledDeliversAtOnce) {
  restart([](BrokerConfig& c) { c.delayed_delivery_enabled = false; });
  const std::string topic = "persistent://public/default/delayed-off";
  auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
  ASSERT_TRUE(send_at(*c, 1, 0, "in a minute", now_ms() + 60000).ok());
  auto m = c->receive_message(2000ms);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(subscription_stats(topic, "s")["msgDelayed"], 0);
}

TEST_F(DelayedDeliveryTest, TheNamespacePolicyOverridesTheBroker) {
  // delayed_delivery_policies turns it off for the namespace's topics.
  auto put = cluster_.await(store_->put(
      "/admin/policies/public/default",
      R"({"delayed_delivery_policies":{"active":false,"tickTime":1000,"maxDeliveryDelayInMillis":0}})"));
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  restart();
  const std::string topic = "persistent://public/default/delayed-policy";
  auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
  ASSERT_TRUE(send_at(*c, 1, 0, "in a minute", now_ms() + 60000).ok());
  EXPECT_TRUE(c->receive_message(2000ms).ok());
}

TEST_F(DelayedDeliveryTest, ADelayOverTheMaximumIsRefused) {
  restart([](BrokerConfig& c) { c.delayed_delivery_max_delay_in_millis = 10000; });
  const std::string topic = "persistent://public/default/delayed-max";
  auto c = client();
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  const int64_t now = now_ms();
  wire::MessageMetadata md;
  md.set_publish_time(static_cast<uint64_t>(now));
  md.set_deliver_at_time(now + 10001);
  auto refused = c->send_message(1, 0, "too late", &md);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(magnetar::testing::server_error_of(refused.status()), wire::NotAllowedError)
      << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("Exceeds max allowed delivery delay of 10000"),
            std::string::npos)
      << refused.status().message();
  md.set_deliver_at_time(now + 10000);
  EXPECT_TRUE(c->send_message(1, 1, "just in time", &md).ok());
}

TEST_F(DelayedDeliveryTest, AcknowledgedDelayedMessagesAreHeldNoMoreAndNacksComeBackAtOnce) {
  restart();
  const std::string topic = "persistent://public/default/delayed-ack";
  auto c = consumer_and_producer(topic, "s", wire::CommandSubscribe::Shared);
  auto far = send_at(*c, 1, 0, "far", now_ms() + 60000);
  ASSERT_TRUE(far.ok());
  const int64_t due = now_ms() + 800;
  ASSERT_TRUE(send_at(*c, 1, 1, "soon", due).ok());
  ASSERT_TRUE(until_delayed(topic, "s", 2));
  // Acknowledged by its id before it was ever delivered: no longer held.
  ASSERT_TRUE(c->ack(1, {id_of(far->message_id())}, false, c->next_request_id()).ok());
  ASSERT_TRUE(until_delayed(topic, "s", 1));
  auto m = c->receive_message(3000ms);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload.to_string(), "soon");
  // A redelivery of a delivered delayed message is immediate.
  ASSERT_TRUE(c->redeliver_unacknowledged(1, {id_of(m->id)}).ok());
  auto again = c->receive_message(1000ms);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->payload.to_string(), "soon");
  EXPECT_EQ(again->redelivery_count, 1u);
}

}  // namespace
}  // namespace magnetar::broker::test
