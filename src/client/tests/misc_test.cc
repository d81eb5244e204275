// Message ids, hashing, partitioned topics, multi-topic and pattern consumers, timeouts
// without a broker, and reconnection across a broker restart.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <map>
#include <set>
#include <thread>

#include "client/tests/client_test_support.h"
#include "protocol/message_id.h"

namespace magnetar::client::test {
namespace {

TEST(MessageIdTest, SerializesLikePulsarsMessageIdData) {
  MessageId id(12, 34, 2, 5, 10);
  auto bytes = id.serialize();
  protocol::MessageId theirs{12, 34, 2, 5, 10};
  EXPECT_EQ(bytes, theirs.serialize());
  auto back = MessageId::deserialize(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, id);
  EXPECT_EQ(back->batch_size(), 10);
  auto plain = MessageId::deserialize(MessageId(7, 8).serialize());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->partition(), -1);
  EXPECT_EQ(plain->batch_index(), -1);
  EXPECT_TRUE(MessageId::deserialize(MessageId::earliest().serialize())->is_earliest());
  EXPECT_TRUE(MessageId::deserialize(MessageId::latest().serialize())->is_latest());
  EXPECT_FALSE(MessageId::deserialize("\xff\xff garbage").ok());
  EXPECT_LT(MessageId(1, 2), MessageId(1, 3));
  EXPECT_LT(MessageId(1, 2, -1, 0), MessageId(1, 2, -1, 1));
  EXPECT_EQ(MessageId(1, 2, 3, 4).to_string(), "1:2:3:4");
}

TEST(HashTest, JavaStringHashAndMurmur3MatchTheirReferenceValues) {
  EXPECT_EQ(java_string_hash(""), 0);
  EXPECT_EQ(java_string_hash("hello"), 99162322);            // "hello".hashCode()
  EXPECT_EQ(java_string_hash("\xc3\xa9"), 233);              // "é"
  EXPECT_EQ(java_string_hash("\xf0\x9f\x98\x80"), 1772899);  // U+1F600 as a surrogate pair
  EXPECT_EQ(murmur3_32(""), 0u);
  EXPECT_EQ(murmur3_32("hello"), 613153351u);
  EXPECT_EQ(murmur3_32("The quick brown fox jumps over the lazy dog"), 0x2e4ff723u);
  for (int n : {1, 3, 7}) {
    for (const char* key : {"a", "key-1", "another key"}) {
      const int p = partition_for_key(key, n, HashingScheme::kJavaStringHash);
      EXPECT_EQ(p, (java_string_hash(key) & 0x7fffffff) % n);
      const int q = partition_for_key(key, n, HashingScheme::kMurmur3_32Hash);
      EXPECT_EQ(q, static_cast<int>((murmur3_32(key) & 0x7fffffffu) % static_cast<uint32_t>(n)));
    }
  }
}

TEST(ClientOptionsTest, BadServiceUrlsAreRefused) {
  EXPECT_FALSE(Client::create("ftp://localhost:8080").ok());
  EXPECT_FALSE(Client::create("localhost:6650").ok());
  EXPECT_FALSE(Client::create("pulsar://:6650").ok());
  EXPECT_TRUE(Client::create("pulsar://no-port").ok()) << "6650 by default";
  EXPECT_TRUE(Client::create("pulsar://h1:6650,h2:6651").ok());
}

TEST(NoBrokerTest, CreateFailsWithinTheOperationTimeout) {
  ClientOptions o;
  o.operation_timeout = 1500ms;
  o.initial_backoff = 50ms;
  auto c = Client::create("pulsar://127.0.0.1:" + std::to_string(closed_port()), o);
  ASSERT_TRUE(c.ok());
  auto start = std::chrono::steady_clock::now();
  auto p = c->create_producer("persistent://public/default/nowhere");
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().is(Errc::kTimeout) || p.status().is(Errc::kUnavailable))
      << p.status().to_string();
  auto s = c->subscribe("persistent://public/default/nowhere", "sub");
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(s.status().is(Errc::kTimeout) || s.status().is(Errc::kUnavailable));
  auto r = c->create_reader("persistent://public/default/nowhere", MessageId::earliest());
  EXPECT_FALSE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_TRUE(c->close().ok());
}

TEST_F(ClientTest, SendTimesOutWhileTheBrokerIsGone) {
  ProducerOptions po = unbatched();
  po.send_timeout = 400ms;
  auto p = producer(topic(), po);
  ConsumerOptions co;
  auto c = consumer(topic(), "sub", co);
  broker_->stop();
  auto start = std::chrono::steady_clock::now();
  auto r = p.send(Message("lost"));
  EXPECT_EQ(client_error_of(r.status()), ClientError::kTimeout) << r.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(client_error_of(c.receive(200ms).status()), ClientError::kTimeout);
}

TEST_F(ClientTest, PartitionedProducerRoutesByKeyAndRoundRobin) {
  make_partitioned(test_name(), 3);
  auto parts = client().get_partitions_for_topic(topic());
  ASSERT_TRUE(parts.ok());
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[2], topic() + "-partition-2");
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = consumer(topic(), "sub", co);
  auto p = producer(topic(), unbatched());
  for (const char* key : {"alpha", "beta", "gamma", "delta"}) {
    Message m(key);
    m.set_key(key);
    auto id = p.send(m);
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    EXPECT_EQ(id->partition(), partition_for_key(key, 3, HashingScheme::kJavaStringHash)) << key;
  }
  std::set<int> used;
  for (int i = 0; i < 6; ++i) {
    auto id = p.send(Message("rr"));
    ASSERT_TRUE(id.ok());
    used.insert(id->partition());
  }
  EXPECT_EQ(used.size(), 3u) << "round robin covers every partition";
  std::map<std::string, int> got;
  for (int i = 0; i < 10; ++i) {
    auto m = c.receive(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    ++got[m->payload()];
    EXPECT_GE(m->id().partition(), 0);
    EXPECT_TRUE(c.acknowledge(*m).ok());  // routed to the right partition's consumer
  }
  EXPECT_EQ(got["rr"], 6);
  EXPECT_EQ(got["alpha"], 1);
  EXPECT_FALSE(c.receive(200ms).ok());
  ProducerOptions murmur = unbatched();
  murmur.hashing_scheme = HashingScheme::kMurmur3_32Hash;
  auto q = producer(topic(), murmur);
  Message m("m");
  m.set_key("alpha");
  auto id = q.send(m);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->partition(), partition_for_key("alpha", 3, HashingScheme::kMurmur3_32Hash));
  ProducerOptions single = unbatched();
  single.routing_mode = RoutingMode::kSinglePartition;
  auto s = producer(topic(), single);
  std::set<int> one;
  for (int i = 0; i < 4; ++i) one.insert(s.send(Message("s"))->partition());
  EXPECT_EQ(one.size(), 1u);
}

TEST_F(ClientTest, MultiTopicAndPatternConsumers) {
  auto a = producer(topic("-a"), unbatched());
  auto b = producer(topic("-b"), unbatched());
  auto other = producer("persistent://public/default/unrelated-" + test_name(), unbatched());
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto multi = client().subscribe({topic("-a"), topic("-b")}, "multi", co);
  ASSERT_TRUE(multi.ok()) << multi.status().to_string();
  send_n(a, 2, "a-");
  send_n(b, 2, "b-");
  send_n(other, 1, "o-");
  std::set<std::string> got;
  for (int i = 0; i < 4; ++i) {
    auto m = multi->receive(5s);
    ASSERT_TRUE(m.ok());
    got.insert(m->payload());
    EXPECT_TRUE(multi->acknowledge(*m).ok()) << m->topic();
  }
  EXPECT_EQ(got, (std::set<std::string>{"a-0", "a-1", "b-0", "b-1"}));
  auto pattern = client().subscribe_pattern("persistent://public/default/" + test_name() + "-.*",
                                            "pattern", co);
  ASSERT_TRUE(pattern.ok()) << pattern.status().to_string();
  got.clear();
  for (int i = 0; i < 4; ++i) {
    auto m = pattern->receive(5s);
    ASSERT_TRUE(m.ok());
    got.insert(m->payload());
  }
  EXPECT_EQ(got.size(), 4u);
  EXPECT_FALSE(pattern->receive(200ms).ok());
}

// The broker goes away mid-stream and comes back on the same port (deduplication on): the
// producer re-sends what was not acknowledged, the consumer re-subscribes, and every message
// arrives exactly once, in order.
TEST_F(ClientTest, ReconnectsAcrossABrokerRestartWithoutLossOrDuplicates) {
  broker_->stop();
  broker_.reset();
  start_broker([](broker::BrokerConfig& c) { c.broker_deduplication_enabled = true; });
  const int port = broker_->port();
  ProducerOptions po;
  po.batching_max_messages = 10;
  po.batching_max_delay = 5ms;
  auto p = producer(topic(), po);
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = consumer(topic(), "sub", co);
  constexpr int kTotal = 400;
  std::atomic<int> acked{0}, failed{0};
  std::vector<std::string> received;
  std::thread reader([&] {
    while (static_cast<int>(received.size()) < kTotal) {
      auto m = c.receive(15s);
      if (!m.ok()) break;
      received.push_back(m->payload());
      (void)c.acknowledge(*m);
    }
  });
  for (int i = 0; i < kTotal; ++i) {
    p.send_async(Message(std::to_string(i)), [&](Result<MessageId> r) {
      if (r.ok()) {
        ++acked;
      } else {
        ++failed;
      }
    });
    if (i == kTotal / 2) {
      broker_->stop();
      broker_.reset();
      start_broker([](broker::BrokerConfig& c) { c.broker_deduplication_enabled = true; }, port);
    }
    if (i % 20 == 0) std::this_thread::sleep_for(5ms);
  }
  EXPECT_TRUE(p.flush().ok());
  reader.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(acked.load(), kTotal);
  ASSERT_EQ(static_cast<int>(received.size()), kTotal);
  for (int i = 0; i < kTotal; ++i) {
    ASSERT_EQ(received[static_cast<size_t>(i)], std::to_string(i)) << "at " << i;
  }
  EXPECT_FALSE(c.receive(300ms).ok()) << "no duplicates after the last message";
  EXPECT_TRUE(p.connected());
}

TEST_F(ClientTest, ProducerReconnectsAfterTheBrokerClosesIt) {
  auto p = producer(topic(), unbatched());
  ASSERT_TRUE(p.send(Message("before")).ok());
  // Fencing closes the other producers (CLOSE_PRODUCER); the fenced one retries on its own.
  ProducerOptions fencing = unbatched();
  fencing.access_mode = ProducerAccessMode::kExclusiveWithFencing;
  auto fencer = producer(topic(), fencing);
  ASSERT_TRUE(fencer.close().ok());
  auto r = p.send(Message("after"));
  EXPECT_TRUE(r.ok()) << r.status().to_string();
}

}  // namespace
}  // namespace magnetar::client::test

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, ReaderResumesAfterTheLastMessageAcrossABrokerRestart) {
  ProducerOptions po;
  po.batching_enabled = false;
  auto p = producer(topic(), po);
  send_n(p, 10);
  auto r = client().create_reader(topic(), MessageId::earliest());
  ASSERT_TRUE(r.ok());
  for (int i = 0; i < 5; ++i) {
    auto m = r->read_next(5s);
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(m->payload(), "msg-" + std::to_string(i));
  }
  const int port = broker_->port();
  broker_->stop();
  broker_.reset();
  start_broker({}, port);
  for (int i = 5; i < 10; ++i) {
    auto m = r->read_next(10s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload(), "msg-" + std::to_string(i));
  }
  EXPECT_FALSE(r->read_next(300ms).ok());
}

}  // namespace
}  // namespace magnetar::client::test

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, PatternConsumerPicksUpNewTopics) {
  ProducerOptions po;
  po.batching_enabled = false;
  auto first = producer(topic("-disc-a"), po);
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  co.pattern_auto_discovery_period = 200ms;
  auto c = client().subscribe_pattern("persistent://public/default/" + test_name() + "-disc-.*",
                                      "sub", co);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_TRUE(first.send(Message("from a")).ok());
  auto m = c->receive(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "from a");
  auto later = producer(topic("-disc-b"), po);
  ASSERT_TRUE(later.send(Message("from b")).ok());
  m = c->receive(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload(), "from b");
  EXPECT_EQ(m->topic(), topic("-disc-b"));
  EXPECT_TRUE(c->acknowledge(*m).ok());
}

}  // namespace
}  // namespace magnetar::client::test
