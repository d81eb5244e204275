// `magnetar standalone` SIGKILLed in the middle of a produce/consume run of 100,000
// messages: after a restart over the same data directory, every message that got a send
// receipt reaches the durable subscription (at least once), none is lost.
//
// The standalone runs as a child process; a producer and a consumer (blocking Pulsar
// protocol clients, testing/pulsar_test_client.h) run on their own threads.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "standalone_process.h"
#include "testing/child_process.h"
#include "testing/pulsar_test_client.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY, the magnetar executable"
#endif

namespace magnetar {
namespace {

using namespace std::chrono_literals;
using testing::PulsarTestClient;
using testing::Standalone;

std::unique_ptr<PulsarTestClient> connect_to(int port) {
  PulsarTestClient::Options o;
  o.port = port;
  o.timeout = 10s;
  auto c = PulsarTestClient::connect(o);
  return c.ok() ? std::move(c).value() : nullptr;
}

int64_t seq_of(const testing::ReceivedMessage& m) {
  return std::stoll(m.payload.to_string().substr(2));
}

TEST(StandaloneCrashTest, EveryReceiptedMessageIsDeliveredAfterASigkill) {
  constexpr int64_t kMessages = 100000;
  const std::string topic = "persistent://public/default/crash-run";
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-standalone-crash-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Standalone standalone(dir);
  ASSERT_TRUE(standalone.start());

  // The durable subscription exists before the first message.
  auto consumer = connect_to(standalone.port());
  ASSERT_TRUE(consumer);
  ASSERT_TRUE(consumer
                  ->subscribe(topic, "durable", wire::CommandSubscribe::Exclusive, 1,
                              wire::CommandSubscribe::Earliest)
                  .ok());
  auto producer = connect_to(standalone.port());
  ASSERT_TRUE(producer);
  ASSERT_TRUE(producer->create_producer(topic, 1).ok());

  std::mutex mu;
  std::set<int64_t> receipted;
  int64_t acked_upto = -1;  // cumulative acknowledgement confirmed by the broker
  std::atomic<int64_t> receipts{0};
  std::atomic<bool> stop{false};

  std::thread produce([&] {
    int64_t next = 0;
    int64_t confirmed = 0;
    while (!stop && confirmed < kMessages) {
      while (next < kMessages && next - confirmed < 1000) {
        if (!producer->post_message(1, static_cast<uint64_t>(next), fmt::format("m-{}", next))
                 .ok()) {
          return;
        }
        ++next;
      }
      auto r = producer->send_receipt(1, static_cast<uint64_t>(confirmed), 10s);
      if (!r.ok()) return;
      std::lock_guard lock(mu);
      receipted.insert(confirmed);
      ++confirmed;
      ++receipts;
    }
  });
  std::thread consume([&] {
    if (!consumer->flow(1, 1000).ok()) return;
    int64_t received = 0;
    while (!stop) {
      auto m = consumer->receive_message(10s);
      if (!m.ok()) return;
      ++received;
      if (received % 500 == 0 && !consumer->flow(1, 500).ok()) return;
      if (received % 100 == 0) {
        wire::MessageIdData id;
        id.set_ledgerid(m->id.ledgerid());
        id.set_entryid(m->id.entryid());
        if (!consumer->ack(1, {id}, true, consumer->next_request_id()).ok()) return;
        std::lock_guard lock(mu);
        acked_upto = std::max(acked_upto, seq_of(*m));
      }
    }
  });

  // Kill it half-way.
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  while (receipts < kMessages / 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_GE(receipts.load(), kMessages / 2) << "the run did not get half-way";
  standalone.kill();
  stop = true;
  produce.join();
  consume.join();
  producer.reset();
  consumer.reset();

  // Restart over the same data; the durable subscription gets everything not acknowledged.
  ASSERT_TRUE(standalone.start());
  auto after = connect_to(standalone.port());
  ASSERT_TRUE(after);
  ASSERT_TRUE(after->subscribe(topic, "durable", wire::CommandSubscribe::Exclusive, 2).ok());
  ASSERT_TRUE(after->flow(2, 1000).ok());
  std::set<int64_t> delivered;
  int64_t received = 0;
  while (true) {
    auto m = after->receive_message(3s);
    if (!m.ok()) break;
    delivered.insert(seq_of(*m));
    if (++received % 500 == 0) {
      ASSERT_TRUE(after->flow(2, 500).ok());
    }
  }
  std::lock_guard lock(mu);
  int64_t lost = 0;
  for (int64_t seq : receipted) {
    if (seq > acked_upto && !delivered.count(seq)) ++lost;
  }
  std::fprintf(stderr,
               "crash run: %zu receipts, acknowledged up to %lld, %zu delivered after restart, "
               "%lld lost\n",
               receipted.size(), static_cast<long long>(acked_upto), delivered.size(),
               static_cast<long long>(lost));
  EXPECT_EQ(lost, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magnetar
