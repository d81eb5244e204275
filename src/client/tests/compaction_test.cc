// Topic compaction end to end: PUT .../compaction, then readers and consumers with
// read_compacted get the latest message of each key up to the horizon (tombstones and keyless
// messages gone, batches with their indexes), then the topic itself; a second compaction
// merges the first; the compacted ledger outlives a broker restart and the topic's deleted
// ledgers; the namespace's compaction threshold starts compactions by itself.

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "client/tests/client_test_support.h"
#include "http/http_client.h"
#include "metadata/paths.h"

namespace magnetar::client::test {
namespace {

using Json = nlohmann::json;

class CompactionTest : public ClientTest {
 protected:
  CompactionTest() : web_(serve_http()) {}

  // A REST call to the broker's web port: status and body.
  std::pair<int, std::string> rest(const std::string& method, const std::string& path,
                                   const std::string& body = "") {
    http::ClientOptions o;
    o.timeout = 10s;
    http::HttpClient http(o);
    http::HttpRequest request;
    request.method = method;
    request.url = web_ + path;
    request.body = body;
    auto got = http.send_blocking(std::move(request));
    EXPECT_TRUE(got.ok()) << method << " " << path << ": " << got.status().to_string();
    if (!got.ok()) return {0, ""};
    return {got->status, got->body};
  }
  std::string admin_path(const std::string& suffix) {
    return "/admin/v2/persistent/public/default/" + test_name() + suffix;
  }

  // Starts a compaction and waits for it to end; returns the final status object.
  Json compact() {
    auto started = rest("PUT", admin_path("/compaction"));
    EXPECT_EQ(started.first, 204) << started.second;
    return wait_for_compaction();
  }
  Json wait_for_compaction() {
    Json status;
    for (int i = 0; i < 500; ++i) {
      status = Json::parse(rest("GET", admin_path("/compaction")).second, nullptr, false);
      if (status.is_object() && status.value("status", "") != "RUNNING" &&
          status.value("status", "") != "NOT_RUN") {
        break;
      }
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_EQ(status.value("status", ""), "SUCCESS") << status.dump();
    return status;
  }

  Json stats(const std::string& what = "/stats") {
    auto r = rest("GET", admin_path(what));
    EXPECT_EQ(r.first, 200) << r.second;
    return Json::parse(r.second, nullptr, false);
  }

  static Message keyed(const std::string& key, const std::string& value) {
    Message m(value);
    m.set_key(key);
    return m;
  }

  // Everything a compacted reader from the earliest message reads until nothing more comes:
  // "key=value" each.
  std::vector<std::string> read_compacted_view() {
    ReaderOptions o;
    o.read_compacted = true;
    auto r = client().create_reader(topic(), MessageId::earliest(), o);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    std::vector<std::string> out;
    if (!r.ok()) return out;
    while (true) {
      auto m = r->read_next(1s);
      if (!m.ok()) break;
      out.push_back((m->has_key() ? m->key() : std::string("<none>")) + "=" + m->payload());
    }
    return out;
  }

  std::string web_;
};

using Values = std::vector<std::string>;

TEST_F(CompactionTest, ACompactedReaderSeesTheLatestValueOfEachKey) {
  auto p = producer(topic(), unbatched());
  EXPECT_EQ(Json::parse(rest("GET", admin_path("/compaction")).second, nullptr, false),
            Json({{"status", "NOT_RUN"}, {"lastError", ""}}));
  for (auto m : {keyed("k1", "a1"), keyed("k2", "b1"), keyed("k1", "a2"), keyed("k3", "c1"),
                 keyed("k3", ""), Message("no key")}) {
    ASSERT_TRUE(p.send(m).ok());
  }
  compact();
  EXPECT_EQ(read_compacted_view(), (Values{"k2=b1", "k1=a2"}));

  // The topic itself is untouched: a plain reader sees every message.
  auto plain = client().create_reader(topic(), MessageId::earliest());
  ASSERT_TRUE(plain.ok());
  int all = 0;
  while (plain->read_next(500ms).ok()) ++all;
  EXPECT_EQ(all, 6);

  // After the horizon, a compacted reader goes on with the topic.
  ASSERT_TRUE(p.send(keyed("k1", "a3")).ok());
  EXPECT_EQ(read_compacted_view(), (Values{"k2=b1", "k1=a2", "k1=a3"}));

  const Json s = stats();
  EXPECT_EQ(s["compaction"]["lastCompactionRemovedEventCount"], 4);  // 6 read, 2 kept
  EXPECT_GT(s["compaction"]["lastCompactionSucceedTimestamp"].get<int64_t>(), 0);
  EXPECT_FALSE(s["subscriptions"].contains("__compaction"));
  const Json internal = stats("/internalStats");
  EXPECT_GE(internal["compactedLedger"]["ledgerId"].get<int64_t>(), 0);
  EXPECT_EQ(internal["compactedLedger"]["entries"], 2);
  EXPECT_TRUE(internal["cursors"].contains("__compaction"));
}

TEST_F(CompactionTest, BatchesKeepTheirIndexesWithoutTheMessagesCompactedOut) {
  ProducerOptions o;
  o.batching_max_delay = 1h;  // batches end at flush()
  auto p = producer(topic(), o);
  std::vector<std::future<Result<MessageId>>> sent;
  auto send = [&](const Message& m) {
    auto done = std::make_shared<std::promise<Result<MessageId>>>();
    sent.push_back(done->get_future());
    p.send_async(m, [done](Result<MessageId> id) { done->set_value(std::move(id)); });
  };
  send(keyed("k1", "1"));
  send(keyed("k2", "1"));
  send(keyed("k1", "2"));
  send(keyed("k3", "1"));
  ASSERT_TRUE(p.flush().ok());
  send(keyed("k3", ""));
  send(keyed("k2", "2"));
  ASSERT_TRUE(p.flush().ok());
  std::vector<MessageId> ids;
  for (auto& f : sent) {
    auto id = f.get();
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    ids.push_back(*id);
  }
  compact();

  ReaderOptions ro;
  ro.read_compacted = true;
  auto r = client().create_reader(topic(), MessageId::earliest(), ro);
  ASSERT_TRUE(r.ok());
  auto first = r->read_next(5s);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->key() + "=" + first->payload(), "k1=2");
  EXPECT_EQ(first->id(), ids[2]);  // the batch index it had
  auto second = r->read_next(5s);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->key() + "=" + second->payload(), "k2=2");
  EXPECT_EQ(second->id(), ids[5]);
  auto third = r->read_next(500ms);
  EXPECT_FALSE(third.ok()) << third->payload() << " " << third->id().entry_id() << ":"
                           << third->id().batch_index();
}

TEST_F(CompactionTest, ASecondCompactionMergesTheFirstAndReplacesItsLedger) {
  auto p = producer(topic(), unbatched());
  for (auto m : {keyed("k1", "a1"), keyed("k2", "b1"), keyed("k3", "c1")}) {
    ASSERT_TRUE(p.send(m).ok());
  }
  compact();
  const int64_t first_ledger = stats("/internalStats")["compactedLedger"]["ledgerId"];
  for (auto m : {keyed("k2", "b2"), keyed("k4", "d1"), keyed("k1", "")}) {
    ASSERT_TRUE(p.send(m).ok());
  }
  compact();
  EXPECT_EQ(read_compacted_view(), (Values{"k3=c1", "k2=b2", "k4=d1"}));
  const int64_t second_ledger = stats("/internalStats")["compactedLedger"]["ledgerId"];
  EXPECT_NE(second_ledger, first_ledger);
  // The first compacted ledger is gone.
  auto old = cluster_.await(store_->exists(metadata::ledger_path(first_ledger)));
  ASSERT_TRUE(old.ok());
  EXPECT_FALSE(*old);
  // Nothing new: a compaction succeeds without writing a ledger.
  compact();
  EXPECT_EQ(stats("/internalStats")["compactedLedger"]["ledgerId"], second_ledger);
}

TEST_F(CompactionTest, TheCompactedViewOutlivesARestartAndTheTopicsDeletedLedgers) {
  start_broker([](broker::BrokerConfig& c) {
    c.managed_ledger.max_entries_per_ledger = 2;
    c.managed_ledger.min_ledger_rollover_time_minutes = 0;
  });
  web_ = serve_http();
  // A subscription keeps the messages until compacted (without one, retention 0 deletes them
  // at once, in Pulsar too), then consumes everything: the ledgers behind the horizon go.
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = consumer(topic(), "all", co);
  auto p = producer(topic(), unbatched());
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(p.send(keyed("k" + std::to_string(i % 3), std::to_string(i))).ok());
  }
  compact();
  auto got = receive_n(c, 10);
  ASSERT_EQ(got.size(), 10u);
  ASSERT_TRUE(c.acknowledge_cumulative(got.back()).ok());
  (void)p.close();
  (void)c.close();
  (void)client_->close();
  client_.reset();
  start_broker([](broker::BrokerConfig& c) {
    c.managed_ledger.max_entries_per_ledger = 2;
    c.managed_ledger.min_ledger_rollover_time_minutes = 0;
  });
  web_ = serve_http();
  const Json internal = stats("/internalStats");
  ASSERT_TRUE(internal["ledgers"].is_array());
  EXPECT_LE(internal["ledgers"].size(), 2u) << internal.dump();  // the early ledgers trimmed
  EXPECT_EQ(read_compacted_view(), (Values{"k1=7", "k2=8", "k0=9"}));

  // A new durable subscription at Earliest reading compacted gets the same, then new ones.
  ConsumerOptions compacted;
  compacted.initial_position = InitialPosition::kEarliest;
  compacted.read_compacted = true;
  auto d = consumer(topic(), "compacted", compacted);
  auto view = receive_n(d, 3);
  ASSERT_EQ(view.size(), 3u);
  EXPECT_EQ(view[0].payload() + view[1].payload() + view[2].payload(), "789");
}

TEST_F(CompactionTest, MoreKeysThanTheWritesInFlightAllArriveInOrder) {
  // 1,200 kept entries: more than the compactor's 500 writes in flight.
  ProducerOptions o = unbatched();
  o.max_pending_messages = 2000;
  auto p = producer(topic(), o);
  constexpr int kKeys = 1200;
  std::vector<std::future<Result<MessageId>>> sent;
  for (int i = 0; i < kKeys; ++i) {
    auto done = std::make_shared<std::promise<Result<MessageId>>>();
    sent.push_back(done->get_future());
    p.send_async(keyed("k" + std::to_string(i), std::to_string(i)),
                 [done](Result<MessageId> id) { done->set_value(std::move(id)); });
  }
  ASSERT_TRUE(p.flush().ok());
  for (auto& f : sent) ASSERT_TRUE(f.get().ok());
  compact();
  const Values view = read_compacted_view();
  ASSERT_EQ(view.size(), static_cast<size_t>(kKeys));
  for (int i = 0; i < kKeys; ++i) {
    EXPECT_EQ(view[static_cast<size_t>(i)], "k" + std::to_string(i) + "=" + std::to_string(i));
  }
}

TEST_F(CompactionTest, ReadCompactedOnASharedSubscriptionIsRefused) {
  ConsumerOptions o;
  o.type = SubscriptionType::kShared;
  o.read_compacted = true;
  auto c = client().subscribe(topic(), "shared", o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("readCompacted only allowed on failover or exclusive"),
            std::string::npos)
      << c.status().to_string();
}

TEST_F(CompactionTest, TheNamespaceThresholdStartsACompaction) {
  start_broker([](broker::BrokerConfig& c) {
    c.broker_service_compaction_monitor_interval_seconds = 0.05;
  });
  web_ = serve_http();
  // Messages first (nothing compacts them yet), then a threshold they are over.
  auto p = producer(topic(), unbatched());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(p.send(keyed("k" + std::to_string(i % 2), "v")).ok());
  EXPECT_EQ(Json::parse(rest("GET", admin_path("/compaction")).second, nullptr, false)["status"],
            "NOT_RUN");
  auto set = rest("PUT", "/admin/v2/namespaces/public/default/compactionThreshold", "100");
  ASSERT_EQ(set.first, 204) << set.second;
  EXPECT_EQ(rest("GET", "/admin/v2/namespaces/public/default/compactionThreshold").second, "100");
  EXPECT_EQ(rest("PUT", "/admin/v2/namespaces/public/default/compactionThreshold", "-1").first,
            412);
  wait_for_compaction();
  EXPECT_EQ(read_compacted_view(), (Values{"k0=v", "k1=v"}));
}

}  // namespace
}  // namespace magnetar::client::test
