// Producing through the client library: round trips, batching and every codec, message
// fields, sequence ids and names, access modes, pending-queue limits.

#include <fmt/format.h>
#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "client/tests/client_test_support.h"

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, SendThenReceiveInOrderWithoutBatching) {
  ProducerOptions po;
  po.batching_enabled = false;
  auto p = producer(topic(), po);
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = consumer(topic(), "sub", co);
  auto ids = send_n(p, 10);
  ASSERT_EQ(ids.size(), 10u);
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]);
  EXPECT_EQ(ids[0].batch_index(), -1);
  auto got = receive_n(c, 10);
  ASSERT_EQ(got.size(), 10u);
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(got[static_cast<size_t>(i)].payload(), "msg-" + std::to_string(i));
    EXPECT_EQ(got[static_cast<size_t>(i)].id(), ids[static_cast<size_t>(i)]);
    EXPECT_EQ(got[static_cast<size_t>(i)].topic(), topic());
  }
  EXPECT_FALSE(c.receive(200ms).ok());
  EXPECT_TRUE(p.close().ok());
  EXPECT_TRUE(c.close().ok());
  EXPECT_FALSE(p.send(Message("late")).ok());
}

TEST_F(ClientTest, BatchingWithEveryCompressionCodec) {
  const CompressionType codecs[] = {CompressionType::kNone, CompressionType::kLz4,
                                    CompressionType::kZlib, CompressionType::kZstd,
                                    CompressionType::kSnappy};
  for (auto codec : codecs) {
    const std::string t = topic("-" + std::to_string(static_cast<int>(codec)));
    ConsumerOptions co;
    co.initial_position = InitialPosition::kEarliest;
    auto c = consumer(t, "sub", co);
    ProducerOptions po;
    po.compression = codec;
    po.batching_max_messages = 20;
    po.batching_max_delay = 1000ms;  // batches close by count
    auto p = producer(t, po);
    std::vector<std::future<Result<MessageId>>> sent;
    for (int i = 0; i < 60; ++i) {
      auto promise = std::make_shared<std::promise<Result<MessageId>>>();
      sent.push_back(promise->get_future());
      p.send_async(Message(std::string(100, 'a' + static_cast<char>(i % 26)) + std::to_string(i)),
                   [promise](Result<MessageId> r) { promise->set_value(std::move(r)); });
    }
    ASSERT_TRUE(p.flush().ok());
    std::set<std::pair<int64_t, int64_t>> entries;
    for (auto& f : sent) {
      auto id = f.get();
      ASSERT_TRUE(id.ok()) << id.status().to_string();
      EXPECT_GE(id->batch_index(), 0);
      EXPECT_EQ(id->batch_size(), 20);
      entries.insert({id->ledger_id(), id->entry_id()});
    }
    EXPECT_EQ(entries.size(), 3u) << "60 messages in batches of 20";
    auto got = receive_n(c, 60);
    ASSERT_EQ(got.size(), 60u);
    for (int i = 0; i < 60; ++i) {
      EXPECT_EQ(got[static_cast<size_t>(i)].payload(),
                std::string(100, 'a' + static_cast<char>(i % 26)) + std::to_string(i));
      EXPECT_EQ(got[static_cast<size_t>(i)].id().batch_index(), i % 20);
    }
  }
}

TEST_F(ClientTest, BatchClosesAfterTheDelay) {
  ProducerOptions po;
  po.batching_max_delay = 50ms;
  auto p = producer(topic(), po);
  auto start = std::chrono::steady_clock::now();
  auto id = p.send(Message("one"));  // waits for the batch timer, then the receipt
  ASSERT_TRUE(id.ok()) << id.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  EXPECT_EQ(id->batch_index(), 0);
}

TEST_F(ClientTest, KeysPropertiesAndEventTimeSurviveBatchedAndSingle) {
  for (bool batching : {true, false}) {
    const std::string t = topic(batching ? "-batched" : "-single");
    ConsumerOptions co;
    co.initial_position = InitialPosition::kEarliest;
    auto c = consumer(t, "sub", co);
    ProducerOptions po;
    po.batching_enabled = batching;
    po.producer_name = "named-producer-" + std::string(batching ? "b" : "s");
    auto p = producer(t, po);
    EXPECT_EQ(p.name(), po.producer_name);
    Message m("payload");
    m.set_key("the-key").set_ordering_key("order").set_property("a", "1").set_property("b", "2");
    m.set_event_time(1234567);
    auto id = p.send(m);
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    auto got = c.receive(5s);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->payload(), "payload");
    EXPECT_TRUE(got->has_key());
    EXPECT_EQ(got->key(), "the-key");
    EXPECT_EQ(got->ordering_key(), "order");
    EXPECT_EQ(got->property("a"), "1");
    EXPECT_EQ(got->property("b"), "2");
    EXPECT_EQ(got->event_time(), 1234567u);
    EXPECT_GT(got->publish_time(), 0u);
    EXPECT_EQ(got->producer_name(), po.producer_name);
    EXPECT_EQ(got->sequence_id(), 0);
    // No key: none comes back.
    ASSERT_TRUE(p.send(Message("plain")).ok());
    auto plain = c.receive(5s);
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->has_key());
    EXPECT_EQ(plain->sequence_id(), 1);
    EXPECT_EQ(p.last_sequence_id(), 1);
  }
}

TEST_F(ClientTest, ReplicateToIsCarriedInTheMetadata) {
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = consumer(topic(), "sub", co);
  auto p = producer(topic());
  Message m("geo");
  m.set_replicate_to({"us-west", "us-east"});
  ASSERT_TRUE(p.send(m).ok());
  auto got = c.receive(5s);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->replicate_to(), (std::vector<std::string>{"us-west", "us-east"}));
}

TEST_F(ClientTest, BrokerAssignsNamesAndExplicitSequenceIdsAreKept) {
  auto a = producer(topic());
  auto b = producer(topic());
  EXPECT_FALSE(a.name().empty());
  EXPECT_NE(a.name(), b.name());
  Message m("explicit");
  m.set_sequence_id(100);
  ASSERT_TRUE(a.send(m).ok());
  EXPECT_EQ(a.last_sequence_id(), 100);
  ASSERT_TRUE(a.send(Message("next")).ok());
  EXPECT_EQ(a.last_sequence_id(), 101);
  ProducerOptions po;
  po.initial_sequence_id = 41;
  auto c = producer(topic(), po);
  ASSERT_TRUE(c.send(Message("x")).ok());
  EXPECT_EQ(c.last_sequence_id(), 42);
}

TEST_F(ClientTest, ExclusiveAccessModesFenceOrWait) {
  ProducerOptions exclusive;
  exclusive.access_mode = ProducerAccessMode::kExclusive;
  auto first = producer(topic(), exclusive);
  auto second = client().create_producer(topic(), exclusive);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(server_error_of(second.status()).has_value()) << second.status().to_string();
  auto shared = client().create_producer(topic());
  EXPECT_FALSE(shared.ok());
  // WaitForExclusive: created once the exclusive producer leaves.
  ProducerOptions wait;
  wait.access_mode = ProducerAccessMode::kWaitForExclusive;
  auto waiting =
      std::async(std::launch::async, [&] { return client().create_producer(topic(), wait); });
  EXPECT_EQ(waiting.wait_for(300ms), std::future_status::timeout);
  ASSERT_TRUE(first.close().ok());
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  auto got = waiting.get();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_TRUE(got->send(Message("mine")).ok());
  // ExclusiveWithFencing takes over from it.
  ProducerOptions fencing;
  fencing.access_mode = ProducerAccessMode::kExclusiveWithFencing;
  auto fencer = producer(topic(), fencing);
  EXPECT_TRUE(fencer.send(Message("fenced them")).ok());
}

TEST_F(ClientTest, FullPendingQueueFailsOrTimesOut) {
  ProducerOptions po;
  po.batching_enabled = false;
  po.max_pending_messages = 3;
  po.send_timeout = 500ms;
  auto p = producer(topic(), po);
  broker_->stop();  // nothing is acknowledged any more
  std::vector<std::future<Result<MessageId>>> sent;
  for (int i = 0; i < 4; ++i) {
    auto promise = std::make_shared<std::promise<Result<MessageId>>>();
    sent.push_back(promise->get_future());
    p.send_async(Message("m"),
                 [promise](Result<MessageId> r) { promise->set_value(std::move(r)); });
  }
  auto overflow = sent[3].get();
  EXPECT_EQ(client_error_of(overflow.status()), ClientError::kProducerQueueFull);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(sent[static_cast<size_t>(i)].wait_for(5s), std::future_status::ready);
    EXPECT_EQ(client_error_of(sent[static_cast<size_t>(i)].get().status()), ClientError::kTimeout);
  }
}

TEST_F(ClientTest, OversizedMessageIsRefused) {
  ProducerOptions po;
  po.batching_enabled = false;
  auto p = producer(topic(), po);
  auto r = p.send(Message(std::string(6 * 1024 * 1024, 'x')));
  EXPECT_EQ(client_error_of(r.status()), ClientError::kMessageTooBig);
}

}  // namespace
}  // namespace magnetar::client::test

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, LargeMessagesGoAsChunksAndComeBackWhole) {
  broker_->stop();
  broker_.reset();
  start_broker([](broker::BrokerConfig& c) { c.max_message_size = 64 * 1024; });
  std::string big;
  for (int i = 0; big.size() < 300 * 1024; ++i) big += std::to_string(i * 7919) + ",";
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  co.receiver_queue_size = 4;  // fewer permits than chunks
  {
    auto c = consumer(topic(), "sub", co);
    ProducerOptions plain;
    plain.batching_enabled = false;
    auto refused = producer(topic(), plain).send(Message(big));
    EXPECT_EQ(client_error_of(refused.status()), ClientError::kMessageTooBig);
    for (auto codec : {CompressionType::kNone, CompressionType::kZstd}) {
      ProducerOptions po;
      po.batching_enabled = false;
      po.chunking_enabled = true;
      po.compression = codec;
      auto p = producer(topic(), po);
      Message m(big);
      m.set_key("k").set_property("p", "v");
      auto id = p.send(m);
      ASSERT_TRUE(id.ok()) << id.status().to_string();
      ASSERT_TRUE(p.send(Message("small after")).ok());
      auto got = c.receive(5s);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(got->payload().size(), big.size());
      EXPECT_TRUE(got->payload() == big);
      EXPECT_EQ(got->key(), "k");
      EXPECT_EQ(got->property("p"), "v");
      EXPECT_EQ(got->id(), *id);
      ASSERT_TRUE(c.acknowledge(*got).ok());
      auto small = c.receive(5s);
      ASSERT_TRUE(small.ok());
      EXPECT_EQ(small->payload(), "small after");
      ASSERT_TRUE(c.acknowledge(*small).ok());
    }
    ASSERT_TRUE(c.close().ok());
  }
  // Every chunk was acknowledged: nothing comes back.
  auto again = consumer(topic(), "sub", co);
  EXPECT_FALSE(again.receive(300ms).ok());
}

}  // namespace
}  // namespace magnetar::client::test

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, BlockIfQueueFullWaitsForRoom) {
  ProducerOptions po;
  po.batching_enabled = false;
  po.max_pending_messages = 2;
  po.block_if_queue_full = true;
  auto p = producer(topic(), po);
  std::atomic<int> done{0};
  for (int i = 0; i < 50; ++i) {
    p.send_async(Message(fmt::format("m{}", i)), [&](Result<MessageId> r) {
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      ++done;
    });
  }
  ASSERT_TRUE(p.flush().ok());
  EXPECT_EQ(done.load(), 50) << "every send waited for room instead of failing";
}

TEST_F(ClientTest, SeveralIoThreadsShareTheWork) {
  ClientOptions o = fast_options();
  o.io_threads = 3;
  auto c = Client::create(url(), o);
  ASSERT_TRUE(c.ok());
  std::vector<Producer> producers;
  std::vector<Consumer> consumers;
  for (int i = 0; i < 4; ++i) {
    const std::string t = topic("-" + std::to_string(i));
    ConsumerOptions co;
    co.initial_position = InitialPosition::kEarliest;
    auto s = c->subscribe(t, "sub", co);
    ASSERT_TRUE(s.ok());
    consumers.push_back(std::move(*s));
    auto p = c->create_producer(t);
    ASSERT_TRUE(p.ok());
    producers.push_back(std::move(*p));
  }
  for (int k = 0; k < 20; ++k) {
    for (auto& p : producers) p.send_async(Message(std::to_string(k)), nullptr);
  }
  for (auto& p : producers) ASSERT_TRUE(p.flush().ok());
  for (auto& s : consumers) {
    for (int k = 0; k < 20; ++k) {
      auto m = s.receive(5s);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      EXPECT_EQ(m->payload(), std::to_string(k));
      EXPECT_TRUE(s.acknowledge(*m).ok());
    }
  }
  EXPECT_TRUE(c->close().ok());
  EXPECT_FALSE(producers[0].send(Message("closed")).ok());
}

}  // namespace
}  // namespace magnetar::client::test
