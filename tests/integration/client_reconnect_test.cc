// Our client library through broker crashes: `magnetar standalone` (deduplication on) is
// SIGKILLed and restarted twice while a producer sends 100,000 messages; the producer
// reconnects and re-sends what was pending with the original sequence ids, the broker drops
// the duplicates, and the consumer receives every message exactly once, in order.

#include <atomic>
#include <mutex>

#include "magnetar/client.h"
#include "standalone_process.h"

namespace magnetar::testing {
namespace {

TEST(ClientReconnectTest, ProducerAndConsumerRideThroughTwoBrokerCrashesExactlyOnceInOrder) {
  constexpr int kMessages = 100000;
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-client-reconnect-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Standalone standalone(dir, {"brokerDeduplicationEnabled=true"});
  ASSERT_TRUE(standalone.start());

  client::ClientOptions options;
  options.operation_timeout = 30s;
  options.initial_backoff = 100ms;
  options.max_backoff = 1s;
  auto made = client::Client::create(fmt::format("pulsar://127.0.0.1:{}", standalone.port()),
                                     options);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  client::Client c = std::move(*made);
  const std::string topic = "persistent://public/default/through-crashes";
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  co.receiver_queue_size = 2000;
  auto consumer = c.subscribe(topic, "all", co);
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  client::ProducerOptions po;
  po.producer_name = "crash-rider";  // deduplication is per producer name
  po.max_pending_messages = 5000;
  po.block_if_queue_full = true;
  po.send_timeout = 120s;
  auto producer = c.create_producer(topic, po);
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();

  std::atomic<int> acked{0}, failed{0};
  std::thread sender([&] {
    for (int i = 0; i < kMessages; ++i) {
      producer->send_async(client::Message(fmt::format("m{}", i)),
                           [&](Result<client::MessageId> r) { r.ok() ? ++acked : ++failed; });
    }
    (void)producer->flush();
  });
  struct Joiner {
    std::thread& t;
    ~Joiner() {
      if (t.joinable()) t.join();
    }
  } joiner{sender};

  // Receive while the broker dies twice (after about 30,000 and 60,000 receipts).
  int next = 0;
  int crashes = 0;
  const auto deadline = std::chrono::steady_clock::now() + 240s;
  while (next < kMessages && std::chrono::steady_clock::now() < deadline) {
    if (crashes < 2 && acked.load() >= 30000 * (crashes + 1)) {
      standalone.kill();
      ++crashes;
      std::this_thread::sleep_for(500ms);
      ASSERT_TRUE(standalone.start());
    }
    auto m = consumer->receive(500ms);
    if (!m.ok()) continue;
    ASSERT_EQ(m->payload(), fmt::format("m{}", next)) << "out of order or duplicated";
    ++next;
    ASSERT_TRUE(consumer->acknowledge(*m).ok());
  }
  if (sender.joinable()) sender.join();
  EXPECT_EQ(crashes, 2);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(acked.load(), kMessages);
  EXPECT_EQ(next, kMessages) << "messages missing";
  // Nothing more: no duplicate after the last one.
  auto extra = consumer->receive(1s);
  EXPECT_FALSE(extra.ok()) << "duplicate: " << extra->payload();
  (void)c.close();
  standalone.kill();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magnetar::testing
