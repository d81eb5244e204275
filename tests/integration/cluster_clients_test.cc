// Our client library against a real cluster (ZooKeeper, 3 bookies, 2 brokers): topics move
// between brokers under a running producer and consumer, which reconnect by themselves.

#include <atomic>
#include <mutex>

#include "broker_fixture.h"
#include "magnetar/client.h"

namespace magnetar::testing {
namespace {

using ClusterClientsTest = BrokerClusterFixture;

// The broker serving `topic` now, through lookups from `from`.
const BrokerChild* owner_of(BrokerClusterFixture& f, const BrokerChild& from,
                            const std::string& topic) {
  int redirects = 0;
  return f.broker_by_url(f.resolve(from, topic, &redirects));
}

TEST_F(ClusterClientsTest, UnloadsMoveTheTopicUnderARunningProducerAndConsumerLosingNothing) {
  start_broker();
  start_broker();
  ASSERT_FALSE(HasFailure());
  const std::string topic = "persistent://public/default/moving-under-load";
  client::ClientOptions options;
  options.operation_timeout = 20s;
  options.initial_backoff = 50ms;
  options.max_backoff = 1s;
  // The client knows one broker only: lookups redirect it.
  auto made = client::Client::create(brokers_[0].url(), options);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  client::Client c = std::move(*made);
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  auto consumer = c.subscribe(topic, "durable", co);
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  client::ProducerOptions po;
  po.batching_enabled = false;
  auto producer = c.create_producer(topic, po);
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();

  constexpr int kMessages = 3000;
  std::mutex mu;
  std::set<std::string> acked;  // payloads the broker acknowledged
  std::atomic<int> failed{0};
  std::atomic<bool> done{false};
  std::thread sender([&] {
    for (int i = 0; i < kMessages; ++i) {
      std::string payload = fmt::format("m{}", i);
      producer->send_async(client::Message(payload), [&, payload](Result<client::MessageId> r) {
        if (r.ok()) {
          std::lock_guard lock(mu);
          acked.insert(payload);
        } else {
          ++failed;
        }
      });
      std::this_thread::sleep_for(1ms);
    }
    (void)producer->flush();
    done = true;
  });

  // Joined on every path out of the test (an ASSERT returns early).
  struct Joiner {
    std::thread& t;
    ~Joiner() {
      if (t.joinable()) t.join();
    }
  } joiner{sender};
  std::set<std::string> received;
  auto receive_some = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto m = consumer->receive(200ms);
      if (!m.ok()) return;  // nothing for now
      received.insert(m->payload());
      ASSERT_TRUE(consumer->acknowledge(*m).ok());
    }
  };
  receive_some(200);
  const BrokerChild* first = owner_of(*this, brokers_[0], topic);
  ASSERT_NE(first, nullptr);
  // 1. Bundle unload: the topic moves to the other broker.
  auto [bcode, bundle] =
      http(first->web_port, "GET", "/lookup/v2/topic/persistent/public/default/moving-under-load/bundle");
  ASSERT_EQ(bcode, 200) << bundle;
  auto [ucode, ubody] =
      http(first->web_port, "PUT", "/admin/v2/namespaces/public/default/" + bundle + "/unload");
  ASSERT_EQ(ucode, 204) << ubody;
  receive_some(300);
  const BrokerChild* second = owner_of(*this, brokers_[1], topic);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, first) << "the bundle did not move";
  // 2. Topic unload on the new owner: closed and reopened there.
  auto [tcode, tbody] = http(second->web_port, "PUT",
                             "/admin/v2/persistent/public/default/moving-under-load/unload");
  ASSERT_EQ(tcode, 204) << tbody;
  // Everything acknowledged arrives.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    receive_some(100);
    if (!done) continue;
    std::lock_guard lock(mu);
    if (std::includes(received.begin(), received.end(), acked.begin(), acked.end())) break;
  }
  if (sender.joinable()) sender.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(failed.load(), 0) << "sends failed instead of being retried";
  EXPECT_EQ(acked.size(), static_cast<size_t>(kMessages));
  std::vector<std::string> lost;
  std::set_difference(acked.begin(), acked.end(), received.begin(), received.end(),
                      std::back_inserter(lost));
  EXPECT_TRUE(lost.empty()) << lost.size() << " acknowledged messages never arrived, e.g. "
                            << (lost.empty() ? "" : lost.front());
  EXPECT_TRUE(producer->connected());
  EXPECT_TRUE(consumer->connected());
  (void)c.close();
}

}  // namespace
}  // namespace magnetar::testing
