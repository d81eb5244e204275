// Geo-replication between `magnetar standalone` processes, clusters "east" and "west" (and
// "a" to "d" for the topologies), each with its own metadata and configuration store;
// each registers the others (the "independent configuration stores" shape). The last test
// has the other shape: clusters made by `magnetar cluster up`, each with its own ZooKeeper,
// bookie and broker, sharing one configuration store.
// Producers and consumers are our client library, in this process.
//
// What is checked: every message reaches every cluster exactly once (none lost, none doubled,
// none sent back to its origin), per-message replicate_to and disableReplication, a remote
// cluster killed under load (stats show it disconnected with a growing backlog; its consumer
// gets everything once it is back), and the source broker killed mid-replication (no loss
// and no duplicate at the target after it recovers).

#include <atomic>
#include <iostream>
#include <map>
#include <mutex>
#include <set>

#include "broker_fixture.h"
#include "magnetar/client.h"
#include "standalone_process.h"
#include "testing/child_process.h"

namespace magnetar::testing {
namespace {

using nlohmann::json;

constexpr const char* kNamespace = "public/geo";

class GeoReplicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fresh_dir();
    std::filesystem::create_directories(dir_ / "east");
    std::filesystem::create_directories(dir_ / "west");
    east_ = std::make_unique<Standalone>(dir_ / "east", settings("east"));
    west_ = std::make_unique<Standalone>(dir_ / "west", settings("west"));
    ASSERT_TRUE(east_->start());
    ASSERT_TRUE(west_->start());
    for (auto [self, other, name] : {std::tuple{east_.get(), west_.get(), "west"},
                                     std::tuple{west_.get(), east_.get(), "east"}}) {
      register_cluster(*self, name, *other);
    }
    for (Standalone* s : {east_.get(), west_.get()}) {
      expect_http(*s, "POST", "/admin/v2/tenants/public",
                  json{{"adminRoles", json::array()}, {"allowedClusters", {"east", "west"}}});
      expect_http(*s, "PUT", fmt::format("/admin/v2/namespaces/{}", kNamespace), json::object());
      expect_http(*s, "POST", fmt::format("/admin/v2/namespaces/{}/replication", kNamespace),
                  json{"east", "west"});
    }
  }
  void TearDown() override {
    clients_.clear();
    east_.reset();
    west_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }

  // An empty directory of this test's own.
  static std::filesystem::path fresh_dir() {
    auto dir = std::filesystem::temp_directory_path() /
               fmt::format("magnetar-geo-{}-{}", ::getpid(),
                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir);
    return dir;
  }
  virtual std::vector<std::string> settings(const std::string& cluster) const {
    return {"clusterName=" + cluster, "brokerDeduplicationEnabled=false"};
  }
  void register_cluster(Standalone& at, const std::string& name, Standalone& target) {
    expect_http(at, "PUT", "/admin/v2/clusters/" + name,
                json{{"serviceUrl", fmt::format("http://127.0.0.1:{}", target.web_port())},
                     {"brokerServiceUrl", fmt::format("pulsar://127.0.0.1:{}", target.port())}});
  }
  void expect_http(Standalone& s, const std::string& method, const std::string& path,
                   const json& body) {
    auto [code, text] = http(s.web_port(), method, path, body.dump());
    EXPECT_TRUE(code == 200 || code == 204) << method << " " << path << ": " << code << " " << text;
  }
  json topic_stats(Standalone& s, const std::string& local_name,
                   const std::string& ns = kNamespace) {
    auto [code, text] =
        http(s.web_port(), "GET", fmt::format("/admin/v2/persistent/{}/{}/stats", ns, local_name));
    if (code != 200) return json();
    return json::parse(text, nullptr, false);
  }

  client::Client& client_for(Standalone& s) {
    auto it = clients_.find(&s);
    if (it != clients_.end()) return *it->second;
    client::ClientOptions options;
    options.operation_timeout = 30s;
    options.initial_backoff = 100ms;
    options.max_backoff = 1s;
    auto made = client::Client::create(fmt::format("pulsar://127.0.0.1:{}", s.port()), options);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    return *clients_.emplace(&s, std::make_unique<client::Client>(std::move(*made))).first->second;
  }
  client::Consumer subscribe(Standalone& s, const std::string& topic) {
    client::ConsumerOptions co;
    co.initial_position = client::InitialPosition::kEarliest;
    auto consumer = client_for(s).subscribe(topic, "check", co);
    EXPECT_TRUE(consumer.ok()) << consumer.status().to_string();
    return std::move(*consumer);
  }
  client::Producer producer(Standalone& s, const std::string& topic, const std::string& name) {
    client::ProducerOptions po;
    po.producer_name = name;
    po.batching_enabled = false;  // replicate_to is per entry
    po.max_pending_messages = 2000;
    po.block_if_queue_full = true;
    po.send_timeout = 120s;
    auto p = client_for(s).create_producer(topic, po);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return std::move(*p);
  }
  // Receives until `expected` distinct payloads came (or `deadline`), then a little longer to
  // catch late duplicates. Returns payload -> times received.
  static std::map<std::string, int> drain(client::Consumer& consumer, size_t expected,
                                          std::chrono::seconds deadline = 60s) {
    std::map<std::string, int> seen;
    const auto until = std::chrono::steady_clock::now() + deadline;
    auto quiet_until = std::chrono::steady_clock::time_point::max();
    while (std::chrono::steady_clock::now() < std::min(until, quiet_until)) {
      auto m = consumer.receive(200ms);
      if (!m.ok()) continue;
      ++seen[m->payload()];
      (void)consumer.acknowledge(*m);
      if (seen.size() >= expected && quiet_until == std::chrono::steady_clock::time_point::max()) {
        quiet_until = std::chrono::steady_clock::now() + 2s;
      }
    }
    return seen;
  }
  static void expect_exactly_once(const std::map<std::string, int>& seen,
                                  const std::set<std::string>& wanted, const char* where) {
    std::vector<std::string> missing, doubled, unexpected;
    for (const auto& w : wanted) {
      auto it = seen.find(w);
      if (it == seen.end()) missing.push_back(w);
    }
    for (const auto& [payload, n] : seen) {
      if (!wanted.count(payload)) unexpected.push_back(payload);
      if (n > 1) doubled.push_back(payload);
    }
    EXPECT_TRUE(missing.empty()) << where << ": " << missing.size() << " missing, first "
                                 << missing.front();
    EXPECT_TRUE(doubled.empty()) << where << ": " << doubled.size() << " doubled, first "
                                 << doubled.front();
    EXPECT_TRUE(unexpected.empty())
        << where << ": " << unexpected.size() << " unexpected, first " << unexpected.front();
  }
  // After a crash of the source: everything it acknowledged (`acked`) arrived once; what it
  // stored without acknowledging (killed between storing and answering) may arrive too, once;
  // nothing outside `sent`.
  static void expect_acknowledged_once(const std::map<std::string, int>& seen,
                                       const std::set<std::string>& acked,
                                       const std::set<std::string>& sent) {
    std::vector<std::string> missing, doubled;
    for (const auto& w : acked) {
      if (!seen.count(w)) missing.push_back(w);
    }
    for (const auto& [payload, n] : seen) {
      EXPECT_TRUE(sent.count(payload)) << payload;
      if (n > 1) doubled.push_back(payload);
    }
    EXPECT_TRUE(missing.empty()) << missing.size() << " acknowledged messages missing at west";
    EXPECT_TRUE(doubled.empty()) << doubled.size() << " messages doubled at west, first "
                                 << (doubled.empty() ? "" : doubled.front());
  }
  static std::set<std::string> payloads(const std::string& prefix, int n) {
    std::set<std::string> out;
    for (int i = 0; i < n; ++i) out.insert(fmt::format("{}-{}", prefix, i));
    return out;
  }
  static int send_all(client::Producer& p, const std::string& prefix, int n) {
    std::atomic<int> failed{0};
    for (int i = 0; i < n; ++i) {
      p.send_async(client::Message(fmt::format("{}-{}", prefix, i)),
                   [&](Result<client::MessageId> r) {
                     if (!r.ok()) ++failed;
                   });
    }
    EXPECT_TRUE(p.flush().ok());
    return failed.load();
  }

  std::filesystem::path dir_;
  std::unique_ptr<Standalone> east_, west_;
  std::map<Standalone*, std::unique_ptr<client::Client>> clients_;
};

TEST_F(GeoReplicationTest, ActiveActiveEveryClusterGetsEveryMessageExactlyOnce) {
  const std::string topic = fmt::format("persistent://{}/active-active", kNamespace);
  auto at_east = subscribe(*east_, topic);
  auto at_west = subscribe(*west_, topic);
  auto from_east = producer(*east_, topic, "east-producer");
  auto from_west = producer(*west_, topic, "west-producer");
  constexpr int kEach = 500;
  std::thread west_sends([&] { EXPECT_EQ(send_all(from_west, "w", kEach), 0); });
  EXPECT_EQ(send_all(from_east, "e", kEach), 0);
  west_sends.join();
  std::set<std::string> all = payloads("e", kEach);
  all.merge(payloads("w", kEach));
  expect_exactly_once(drain(at_east, all.size()), all, "east");
  expect_exactly_once(drain(at_west, all.size()), all, "west");

  // Nothing went back to its origin: east's topic holds its 500 and west's 500 once each.
  const json stats = topic_stats(*east_, "active-active");
  ASSERT_TRUE(stats.is_object());
  EXPECT_EQ(stats["msgInCounter"], 2 * kEach);
  ASSERT_TRUE(stats["replication"].contains("west")) << stats.dump();
  EXPECT_EQ(stats["replication"]["west"]["connected"], true);
  EXPECT_EQ(stats["replication"]["west"]["replicationBacklog"], 0);
  // The inbound half: west's replicator publishing here.
  EXPECT_TRUE(stats["replication"]["west"]["inboundConnection"].is_string()) << stats.dump();
  EXPECT_TRUE(stats["replication"]["west"]["inboundConnectedSince"].is_string()) << stats.dump();
  for (const auto& [name, p] : stats["publishers"].items()) {
    EXPECT_FALSE(p["producerName"].get<std::string>().starts_with("pulsar.repl."))
        << "a replicator is not a publisher";
  }
}

TEST_F(GeoReplicationTest, ReplicateToAndDisableReplicationKeepMessagesWhereAsked) {
  const std::string topic = fmt::format("persistent://{}/selective", kNamespace);
  auto at_east = subscribe(*east_, topic);
  auto at_west = subscribe(*west_, topic);
  auto p = producer(*east_, topic, "selective");
  ASSERT_TRUE(p.send(client::Message("everywhere")).ok());
  ASSERT_TRUE(p.send(client::Message("local-only").set_replicate_to({"__local__"})).ok());
  ASSERT_TRUE(p.send(client::Message("to-west").set_replicate_to({"west"})).ok());
  ASSERT_TRUE(p.send(client::Message("to-nowhere").set_replicate_to({"north"})).ok());
  expect_exactly_once(drain(at_east, 4), {"everywhere", "local-only", "to-west", "to-nowhere"},
                      "east");
  expect_exactly_once(drain(at_west, 2), {"everywhere", "to-west"}, "west");
}

TEST_F(GeoReplicationTest, RemoteOutageThenEverythingArrivesOnce) {
  const std::string topic = fmt::format("persistent://{}/outage", kNamespace);
  {
    auto at_west = subscribe(*west_, topic);  // the durable subscription exists on west
    (void)at_west.close();
  }
  auto p = producer(*east_, topic, "through-outage");
  ASSERT_EQ(send_all(p, "before", 100), 0);
  west_->kill();
  clients_.erase(west_.get());
  ASSERT_EQ(send_all(p, "during", 300), 0);
  // The source shows the remote away and the entries waiting for it.
  json west_stats;
  for (int i = 0; i < 100; ++i) {
    west_stats = topic_stats(*east_, "outage")["replication"]["west"];
    if (west_stats.is_object() && west_stats["connected"] == false &&
        west_stats["replicationBacklog"].get<int64_t>() >= 300) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(west_stats.is_object());
  EXPECT_EQ(west_stats["connected"], false) << west_stats.dump();
  EXPECT_GE(west_stats["replicationBacklog"].get<int64_t>(), 300) << west_stats.dump();
  // The same in Prometheus series (updated once a second).
  const std::string series =
      "{cluster=\"east\",namespace=\"public/geo\",topic=\"persistent://public/geo/outage\","
      "remote_cluster=\"west\"}";
  std::string exposed;
  for (int i = 0; i < 30; ++i) {
    exposed = http(east_->web_port(), "GET", "/metrics").second;
    if (exposed.find("pulsar_replication_disconnected_count" + series + " 1") !=
        std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(exposed.find("pulsar_replication_disconnected_count" + series + " 1"),
            std::string::npos);
  EXPECT_NE(exposed.find("pulsar_replication_connected_count" + series + " 0"), std::string::npos);
  EXPECT_NE(exposed.find("pulsar_replication_backlog" + series), std::string::npos);
  ASSERT_TRUE(west_->start());
  ASSERT_EQ(send_all(p, "after", 100), 0);
  auto at_west = subscribe(*west_, topic);
  std::set<std::string> all = payloads("before", 100);
  all.merge(payloads("during", 300));
  all.merge(payloads("after", 100));
  expect_exactly_once(drain(at_west, all.size(), 90s), all, "west");
}

TEST_F(GeoReplicationTest, SourceKilledMidReplicationLosesAndDoublesNothing) {
  const std::string topic = fmt::format("persistent://{}/source-crash", kNamespace);
  auto at_west = subscribe(*west_, topic);
  std::set<std::string> acked;
  std::mutex mu;
  {
    auto p = producer(*east_, topic, "before-crash");
    for (int i = 0; i < 2000; ++i) {
      const std::string payload = fmt::format("m-{}", i);
      p.send_async(client::Message(payload), [&, payload](Result<client::MessageId> r) {
        if (!r.ok()) return;
        std::lock_guard lock(mu);
        acked.insert(payload);
      });
    }
    (void)p.flush();
    // Killed while the replicator is still sending (it acknowledges in batches, so its
    // cursor lags what the remote has stored: the restart re-sends some).
    east_->kill();
    clients_.erase(east_.get());
  }
  ASSERT_TRUE(east_->start());
  std::set<std::string> wanted;
  {
    std::lock_guard lock(mu);
    wanted = acked;
  }
  ASSERT_FALSE(wanted.empty());
  expect_acknowledged_once(drain(at_west, wanted.size(), 90s), wanted, payloads("m", 2000));
}

// One-way (west's namespace lists only west): after both sides restart, no client touches
// east's topic, and its replication backlog still reaches west (Pulsar waits for a client).
TEST_F(GeoReplicationTest, ReplicationResumesAfterARestartWithoutAnyClient) {
  const std::string ns = "public/oneway";
  expect_http(*east_, "PUT", "/admin/v2/namespaces/" + ns, json::object());
  expect_http(*east_, "POST", fmt::format("/admin/v2/namespaces/{}/replication", ns),
              json{"east", "west"});
  expect_http(*west_, "PUT", "/admin/v2/namespaces/" + ns, json::object());
  expect_http(*west_, "POST", fmt::format("/admin/v2/namespaces/{}/replication", ns),
              json{"west"});
  const std::string topic = fmt::format("persistent://{}/resumed", ns);
  {
    auto at_west = subscribe(*west_, topic);
    (void)at_west.close();
  }
  west_->kill();
  clients_.erase(west_.get());
  {
    auto p = producer(*east_, topic, "before-restart");
    ASSERT_EQ(send_all(p, "m", 200), 0);
  }
  clients_.erase(east_.get());
  east_->kill();
  ASSERT_TRUE(west_->start());
  ASSERT_TRUE(east_->start());
  auto at_west = subscribe(*west_, topic);
  expect_exactly_once(drain(at_west, 200, 90s), payloads("m", 200), "west");
}

// A topic's own replication clusters on a namespace that replicates nowhere, on a partitioned
// topic: the remote partitioned metadata is made to match, a remote of another shape is
// refused, only that topic replicates, and removing the policy stops it.
TEST_F(GeoReplicationTest, TopicLevelClustersReplicateOnlyThatTopicWithItsPartitions) {
  const std::string ns = "public/solo";
  for (auto [s, self] : {std::pair{east_.get(), "east"}, std::pair{west_.get(), "west"}}) {
    expect_http(*s, "PUT", "/admin/v2/namespaces/" + ns, json::object());
    expect_http(*s, "POST", fmt::format("/admin/v2/namespaces/{}/replication", ns), json{self});
  }
  const std::string root = "/admin/v2/persistent/" + ns;
  expect_http(*east_, "PUT", root + "/parts/partitions", json(4));
  EXPECT_EQ(http(east_->web_port(), "GET", root + "/parts/replication").first, 204);
  EXPECT_EQ(json::parse(http(east_->web_port(), "GET", root + "/parts/replication?applied=true")
                            .second),
            json({"east"}));

  // Bad input changes nothing.
  auto [code, text] = http(east_->web_port(), "POST", root + "/parts/replication",
                           json({"east", "north"}).dump());
  EXPECT_EQ(code, 403) << text;
  EXPECT_NE(text.find("Invalid cluster id: north"), std::string::npos) << text;
  std::tie(code, text) = http(east_->web_port(), "POST", root + "/parts-partition-1/replication",
                              json({"east", "west"}).dump());
  EXPECT_EQ(code, 412) << text;
  std::tie(code, text) = http(east_->web_port(), "POST", root + "/nothing/replication",
                              json({"east", "west"}).dump());
  EXPECT_EQ(code, 404) << text;
  std::tie(code, text) = http(east_->web_port(), "POST", root + "/parts/replication", "[]");
  EXPECT_EQ(code, 412) << text;
  // A remote partitioned topic of another size is refused, and nothing is stored.
  expect_http(*west_, "PUT", root + "/odd/partitions", json(3));
  expect_http(*east_, "PUT", root + "/odd/partitions", json(4));
  std::tie(code, text) = http(east_->web_port(), "POST", root + "/odd/replication",
                              json({"east", "west"}).dump());
  EXPECT_EQ(code, 409) << text;
  EXPECT_NE(text.find("different partitions"), std::string::npos) << text;
  EXPECT_EQ(http(east_->web_port(), "GET", root + "/odd/replication").first, 204);

  // The topic's own clusters: west gets the partitioned topic, then its messages.
  expect_http(*east_, "POST", root + "/parts/replication", json({"east", "west"}));
  EXPECT_EQ(json::parse(http(east_->web_port(), "GET", root + "/parts/replication").second),
            json({"east", "west"}));
  EXPECT_EQ(json::parse(http(west_->web_port(), "GET", root + "/parts/partitions").second),
            json({{"partitions", 4}}));
  const std::string topic = fmt::format("persistent://{}/parts", ns);
  const std::string plain = fmt::format("persistent://{}/plain", ns);
  auto at_west = subscribe(*west_, topic);
  auto p = producer(*east_, topic, "parts-producer");
  auto q = producer(*east_, plain, "plain-producer");
  ASSERT_EQ(send_all(p, "p", 200), 0);
  ASSERT_EQ(send_all(q, "q", 20), 0);
  expect_exactly_once(drain(at_west, 200), payloads("p", 200), "west");
  // The namespace replicates nowhere: the other topic stays in east.
  EXPECT_TRUE(topic_stats(*west_, "plain", ns).is_null());

  // Removed: the namespace's (east only) applies again, and the replicators stop.
  EXPECT_EQ(http(east_->web_port(), "DELETE", root + "/parts/replication").first, 204);
  json replication;
  for (int i = 0; i < 50; ++i) {
    replication = topic_stats(*east_, "parts-partition-0", ns)["replication"];
    if (replication.is_object() && replication.empty()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(replication, json::object());
}

// Namespace-level replication of partitioned topics with independent configuration stores:
// the replicator makes the remote partitioned metadata; a remote with another partition count
// is reported (stats, not a silent retry) and gets nothing.
TEST_F(GeoReplicationTest, PartitionedTopicsAreCreatedRemotelyAndAMismatchIsReported) {
  const std::string root = fmt::format("/admin/v2/persistent/{}", kNamespace);
  expect_http(*east_, "PUT", root + "/parted/partitions", json(2));
  expect_http(*west_, "PUT", root + "/skewed/partitions", json(3));
  expect_http(*east_, "PUT", root + "/skewed/partitions", json(2));
  auto p = producer(*east_, fmt::format("persistent://{}/parted", kNamespace), "parted");
  auto q = producer(*east_, fmt::format("persistent://{}/skewed", kNamespace), "skewed");
  ASSERT_EQ(send_all(p, "p", 100), 0);
  ASSERT_EQ(send_all(q, "q", 10), 0);
  // West's partitioned metadata of `parted` once it says `n` partitions (or after 10 s).
  auto west_partitions = [&](int n) {
    json partitions;
    for (int i = 0; i < 100; ++i) {
      partitions = json::parse(http(west_->web_port(), "GET", root + "/parted/partitions").second,
                               nullptr, false);
      if (partitions == json({{"partitions", n}})) break;
      std::this_thread::sleep_for(100ms);
    }
    return partitions;
  };
  EXPECT_EQ(west_partitions(2), json({{"partitions", 2}}));
  auto at_west = subscribe(*west_, fmt::format("persistent://{}/parted", kNamespace));
  expect_exactly_once(drain(at_west, 100), payloads("p", 100), "west");
  // Grown here, grown there: the new partition's replicator adds it remotely.
  expect_http(*east_, "POST", root + "/parted/partitions", json(3));
  expect_http(*east_, "GET", root + "/parted-partition-2/stats", json());  // loads it
  EXPECT_EQ(west_partitions(3), json({{"partitions", 3}}));

  json west;
  for (int i = 0; i < 100; ++i) {
    west = topic_stats(*east_, "skewed-partition-0")["replication"]["west"];
    if (west.is_object() && west.contains("lastError")) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(west.is_object() && west.contains("lastError")) << west.dump();
  EXPECT_NE(west["lastError"].get<std::string>().find("inconsistent"), std::string::npos)
      << west.dump();
  EXPECT_EQ(west["connected"], false);
  EXPECT_GT(west["replicationBacklog"].get<int64_t>(), 0);
  EXPECT_EQ(json::parse(http(west_->web_port(), "GET", root + "/skewed/partitions").second),
            json({{"partitions", 3}}));
}

// Message TTL applies to the replication cursor: while the remote is away, what outlives the
// TTL expires (msgRateExpired / msgExpiredCounter) and never reaches it.
TEST_F(GeoReplicationTest, MessagesOlderThanTheTtlExpireInsteadOfReplicating) {
  expect_http(*east_, "POST", fmt::format("/admin/v2/namespaces/{}/messageTTL", kNamespace),
              json(2));
  const std::string topic = fmt::format("persistent://{}/ttl", kNamespace);
  {
    auto at_west = subscribe(*west_, topic);
    (void)at_west.close();
  }
  auto p = producer(*east_, topic, "ttl");
  west_->kill();
  clients_.erase(west_.get());
  ASSERT_EQ(send_all(p, "old", 50), 0);
  json west;
  for (int i = 0; i < 200; ++i) {
    west = topic_stats(*east_, "ttl")["replication"]["west"];
    if (west.is_object() && west["msgExpiredCounter"].get<int64_t>() >= 50) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(west.is_object());
  EXPECT_GE(west["msgExpiredCounter"].get<int64_t>(), 50) << west.dump();
  EXPECT_EQ(west["replicationBacklog"], 0) << west.dump();
  ASSERT_TRUE(west_->start());
  for (int i = 0; i < 600; ++i) {  // reconnected (the backoff may have grown meanwhile)
    if (topic_stats(*east_, "ttl")["replication"]["west"]["connected"] == true) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_EQ(send_all(p, "new", 20), 0);
  auto at_west = subscribe(*west_, topic);
  expect_exactly_once(drain(at_west, 20), payloads("new", 20), "west");
}

// Three clusters, each its own standalone that registers the two others.
// Replicated subscriptions (PIP-33) between east and west, snapshots every 200 ms.
class GeoReplicatedSubscriptionTest : public GeoReplicationTest {
 protected:
  std::vector<std::string> settings(const std::string& cluster) const override {
    auto s = GeoReplicationTest::settings(cluster);
    s.push_back("replicatedSubscriptionsSnapshotFrequencyMillis=200");
    return s;
  }
  json subscription_stats(Standalone& s, const std::string& local_name, const std::string& sub) {
    const json stats = topic_stats(s, local_name);
    if (!stats.is_object() || !stats["subscriptions"].contains(sub)) return json();
    return stats["subscriptions"][sub];
  }
  // A consumer of `type` acknowledges on east while messages flow; east is SIGKILLed; the
  // same subscription consumed on west delivers every message east did not acknowledge (none
  // lost) and redelivers at most what east acknowledged after the last snapshot it passed.
  void consumer_moves(client::SubscriptionType type);
};

void GeoReplicatedSubscriptionTest::consumer_moves(client::SubscriptionType type) {
  const std::string topic = fmt::format("persistent://{}/replicated-sub", kNamespace);
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  co.type = type;
  co.replicate_subscription_state = true;
  auto on_east = client_for(*east_).subscribe(topic, "rs", co);
  ASSERT_TRUE(on_east.ok()) << on_east.status().to_string();
  auto p = producer(*east_, topic, "rs-producer");
  constexpr int kRounds = 6, kEach = 20, kUnconsumed = 80;
  int sent = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (int i = 0; i < kEach; ++i, ++sent) {
      ASSERT_TRUE(p.send(client::Message(fmt::format("m-{}", sent))).ok());
    }
    for (int i = 0; i < kEach; ++i) {
      auto m = on_east->receive(10s);
      ASSERT_TRUE(m.ok()) << m.status().to_string();
      ASSERT_TRUE(on_east->acknowledge(*m).ok());
    }
    std::this_thread::sleep_for(400ms);  // a snapshot or two per round
  }
  const int consumed = sent;
  for (int i = 0; i < kUnconsumed; ++i, ++sent) {
    ASSERT_TRUE(p.send(client::Message(fmt::format("m-{}", sent))).ok());
  }
  // West's copy of the subscription follows (created by the first UPDATE, replicated).
  json west_sub;
  for (int i = 0; i < 100; ++i) {
    west_sub = subscription_stats(*west_, "replicated-sub", "rs");
    if (west_sub.is_object() && west_sub["msgBacklog"].get<int64_t>() <= kUnconsumed + kEach) {
      break;
    }
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_TRUE(west_sub.is_object()) << "west never got the subscription";
  EXPECT_EQ(west_sub["isReplicated"], true);
  EXPECT_LE(west_sub["msgBacklog"].get<int64_t>(), kUnconsumed + kEach) << west_sub.dump();
  // Markers never count: east's backlog is exactly what was not consumed, and stays so while
  // snapshots go on.
  std::this_thread::sleep_for(1s);
  const json east_sub = subscription_stats(*east_, "replicated-sub", "rs");
  EXPECT_EQ(east_sub["msgBacklog"], kUnconsumed) << east_sub.dump();
  EXPECT_EQ(east_sub["isReplicated"], true);

  east_->kill();
  clients_.erase(east_.get());
  auto on_west = client_for(*west_).subscribe(topic, "rs", co);
  ASSERT_TRUE(on_west.ok()) << on_west.status().to_string();
  auto seen = drain(*on_west, kUnconsumed, 60s);
  std::set<std::string> unconsumed;
  for (int i = consumed; i < sent; ++i) unconsumed.insert(fmt::format("m-{}", i));
  int redelivered = 0;
  for (const auto& w : unconsumed) EXPECT_TRUE(seen.count(w)) << w << " lost";
  for (const auto& [payload, n] : seen) {
    EXPECT_EQ(n, 1) << payload;
    if (!unconsumed.count(payload)) ++redelivered;
  }
  std::cout << "replicated subscription (" << (type == client::SubscriptionType::kShared
                                                     ? "Shared"
                                                     : "Failover")
            << "): " << redelivered << " of " << consumed
            << " consumed messages redelivered on west, 0 of " << kUnconsumed << " lost\n";
  EXPECT_LE(redelivered, 2 * kEach);
}

TEST_F(GeoReplicatedSubscriptionTest, ASharedConsumerMovingToTheOtherClusterLosesNothing) {
  consumer_moves(client::SubscriptionType::kShared);
}

TEST_F(GeoReplicatedSubscriptionTest, AFailoverConsumerMovingToTheOtherClusterLosesNothing) {
  consumer_moves(client::SubscriptionType::kFailover);
}

// Snapshots every 10 ms: 600 periods in 6 s, what the default period (1 s) makes in 10
// minutes. A topic with nothing new takes no snapshot: no marker is written on either
// cluster, and no subscription's backlog grows (Pulsar's markers pile up in the backlog of
// idle topics).
class GeoIdleReplicatedSubscriptionTest : public GeoReplicatedSubscriptionTest {
 protected:
  std::vector<std::string> settings(const std::string& cluster) const override {
    auto s = GeoReplicationTest::settings(cluster);
    s.push_back("replicatedSubscriptionsSnapshotFrequencyMillis=10");
    return s;
  }
  int64_t entries_added(Standalone& s, const std::string& local_name) {
    auto [code, text] = http(s.web_port(), "GET",
                             fmt::format("/admin/v2/persistent/{}/{}/internalStats", kNamespace,
                                         local_name));
    if (code != 200) return -1;
    const auto j = json::parse(text, nullptr, false);
    return j.is_object() ? j.value("entriesAddedCounter", int64_t{-1}) : -1;
  }
};

TEST_F(GeoIdleReplicatedSubscriptionTest, AnIdleTopicGrowsNoBacklogOfMarkers) {
  const std::string topic = fmt::format("persistent://{}/idle-replicated", kNamespace);
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  co.replicate_subscription_state = true;
  auto on_east = client_for(*east_).subscribe(topic, "rs", co);
  ASSERT_TRUE(on_east.ok()) << on_east.status().to_string();
  auto plain = client_for(*west_).subscribe(topic, "plain", client::ConsumerOptions{});
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  auto p = producer(*east_, topic, "idle-producer");
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(p.send(client::Message(fmt::format("m-{}", i))).ok());
  for (int i = 0; i < 20; ++i) {
    auto m = on_east->receive(10s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    ASSERT_TRUE(on_east->acknowledge(*m).ok());
    auto w = plain->receive(10s);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    ASSERT_TRUE(plain->acknowledge(*w).ok());
  }
  // The last snapshot round and its UPDATE settle.
  std::this_thread::sleep_for(2s);
  const int64_t east_before = entries_added(*east_, "idle-replicated");
  const int64_t west_before = entries_added(*west_, "idle-replicated");
  ASSERT_GT(east_before, 20);  // the messages and the markers of their snapshots
  ASSERT_GT(west_before, 20);
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(1s);
    for (Standalone* s : {east_.get(), west_.get()}) {
      const json stats = topic_stats(*s, "idle-replicated");
      ASSERT_TRUE(stats.is_object());
      for (const auto& [name, sub] : stats["subscriptions"].items()) {
        EXPECT_EQ(sub["msgBacklog"], 0) << name << " after " << i + 1 << " s: " << sub.dump();
      }
    }
  }
  EXPECT_EQ(entries_added(*east_, "idle-replicated"), east_before) << "markers written on east";
  EXPECT_EQ(entries_added(*west_, "idle-replicated"), west_before) << "markers written on west";
  std::cout << "idle replicated topic: " << east_before << " entries on east, " << west_before
            << " on west, none added over 600 snapshot periods\n";
}

class GeoTopologyTest : public GeoReplicationTest {
 protected:
  void SetUp() override {
    dir_ = fresh_dir();
    const std::vector<std::string> names = cluster_names();
    for (const std::string& name : names) {
      std::filesystem::create_directories(dir_ / name);
      clusters_[name] = std::make_unique<Standalone>(dir_ / name, settings(name));
      ASSERT_TRUE(clusters_[name]->start()) << name;
    }
    for (auto& [name, s] : clusters_) {
      for (auto& [other, t] : clusters_) {
        if (other != name) register_cluster(*s, other, *t);
      }
      expect_http(*s, "POST", "/admin/v2/tenants/public",
                  json{{"adminRoles", json::array()}, {"allowedClusters", names}});
    }
  }
  virtual std::vector<std::string> cluster_names() const { return {"a", "b", "c"}; }
  void TearDown() override {
    clients_.clear();
    clusters_.clear();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  // Namespace `ns` on cluster `at`, replicating to `clusters`.
  void replicated_namespace(const std::string& at, const std::string& ns, const json& clusters) {
    expect_http(*clusters_[at], "PUT", "/admin/v2/namespaces/" + ns, json::object());
    expect_http(*clusters_[at], "POST", fmt::format("/admin/v2/namespaces/{}/replication", ns),
                clusters);
  }
  std::map<std::string, std::unique_ptr<Standalone>> clusters_;
};

TEST_F(GeoTopologyTest, FullMeshOfThreeEveryMessageOnceEverywhereNoneBackToItsOrigin) {
  for (const char* name : {"a", "b", "c"})
    replicated_namespace(name, "public/mesh", {"a", "b", "c"});
  const std::string topic = "persistent://public/mesh/all";
  std::map<std::string, client::Consumer> consumers;
  for (auto& [name, s] : clusters_) consumers.emplace(name, subscribe(*s, topic));
  constexpr int kEach = 300;
  std::map<std::string, client::Producer> producers;  // made here: clients_ is not shared
  std::set<std::string> all;
  for (auto& [name, s] : clusters_) {
    producers.emplace(name, producer(*s, topic, "mesh-" + name));
    all.merge(payloads(name, kEach));
  }
  std::vector<std::thread> senders;
  for (auto& entry : producers) {
    senders.emplace_back(
        [p = &entry.second, name = entry.first] { EXPECT_EQ(send_all(*p, name, kEach), 0); });
  }
  for (auto& t : senders) t.join();
  for (auto& [name, consumer] : consumers) {
    expect_exactly_once(drain(consumer, all.size()), all, name.c_str());
  }
  for (auto& [name, s] : clusters_) {
    const json stats = topic_stats(*s, "all", "public/mesh");
    EXPECT_EQ(stats["msgInCounter"], 3 * kEach) << name << ": each message stored once";
  }
}

// Three edge clusters into a centre ("d") that replicates nowhere.
class GeoAggregationTest : public GeoTopologyTest {
 protected:
  std::vector<std::string> cluster_names() const override { return {"a", "b", "c", "d"}; }
};

TEST_F(GeoAggregationTest, ThreeEdgesIntoTheCentreAndNothingFlowsBack) {
  const std::vector<std::string> edges = {"a", "b", "c"};
  for (const std::string& edge : edges) replicated_namespace(edge, "public/agg", {edge, "d"});
  replicated_namespace("d", "public/agg", {"d"});  // the centre replicates nowhere
  const std::string topic = "persistent://public/agg/events";
  std::map<std::string, client::Consumer> at;
  for (const std::string& name : cluster_names()) at.emplace(name, subscribe(*clusters_[name], topic));
  constexpr int kEach = 200;
  std::set<std::string> every;
  for (const std::string& edge : edges) {
    auto p = producer(*clusters_[edge], topic, "edge-" + edge);
    ASSERT_EQ(send_all(p, edge, kEach), 0);
    every.merge(payloads(edge, kEach));
  }
  expect_exactly_once(drain(at.at("d"), every.size()), every, "centre");
  for (const std::string& edge : edges) {
    expect_exactly_once(drain(at.at(edge), kEach), payloads(edge, kEach), edge.c_str());
  }
  // The centre stores each message once and sends nothing back; its topic lists no
  // replicator, and the edges' replicators are not its publishers.
  const json centre = topic_stats(*clusters_["d"], "events", "public/agg");
  EXPECT_EQ(centre["msgInCounter"], 3 * kEach);
  EXPECT_TRUE(centre["replication"].empty()) << centre["replication"].dump();
  EXPECT_TRUE(centre["publishers"].empty()) << centre["publishers"].dump();
}

// Two clusters from `magnetar cluster up --name N --configuration-store URL`, the shared store a
// ZooKeeper of its own (`cluster up --brokers 0 --bookies 0`): every instance-wide command is
// given once, to either cluster, and messages flow both ways exactly once.
class GeoSharedStoreTest : public GeoReplicationTest {
 protected:
  void SetUp() override {
    dir_ = fresh_dir();
    auto [code, out] = run_command(
        fmt::format("{} cluster up --brokers 0 --bookies 0 --data {}/config", MAGNETAR_BINARY,
                    dir_.string()));
    ASSERT_EQ(code, 0) << out;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(metadata store (zk:\S+))"))) << out;
    const std::string store = m[1];
    for (const char* name : {"east", "west"}) {
      std::tie(code, out) = run_command(fmt::format(
          "{} cluster up --name {} --configuration-store {} {} --data {}/{}", MAGNETAR_BINARY,
          name, store, shape(name), dir_.string(), name));
      ASSERT_EQ(code, 0) << out;
      ASSERT_TRUE(std::regex_search(
          out, m, std::regex(R"(broker\s+pulsar://127\.0\.0\.1:(\d+)\s+http://127\.0\.0\.1:(\d+))")))
          << out;
      ports_[name] = {std::stoi(m[1]), std::stoi(m[2])};
      ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(cluster\s+\S+\s+(pulsar://\S+))")))
          << out;
      service_urls_[name] = m[1];  // every broker of the cluster
    }
  }
  void TearDown() override {
    clients_.clear();
    for (const char* name : {"east", "west", "config"}) {
      auto [code, out] =
          run_command(fmt::format("{} cluster down --data {}/{}", MAGNETAR_BINARY, dir_.string(),
                                  name));
      EXPECT_EQ(code, 0) << out;
    }
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  client::Client& client_of(const std::string& cluster) {
    auto it = shared_clients_.find(cluster);
    if (it != shared_clients_.end()) return *it->second;
    client::ClientOptions options;
    options.operation_timeout = 30s;
    auto made = client::Client::create(service_urls_[cluster], options);
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    return *shared_clients_.emplace(cluster, std::make_unique<client::Client>(std::move(*made)))
                .first->second;
  }
  int web(const std::string& cluster) { return ports_[cluster].second; }
  // The `cluster up` options of a cluster besides its name, store and directory.
  virtual std::string shape(const std::string& /*cluster*/) const {
    return "--brokers 1 --bookies 1";
  }
  // Once, on either cluster (the store is shared): tenant public allows both, namespace
  // public/shared replicates to both.
  void shared_namespace() {
    auto expect_ok = [](int port, const std::string& method, const std::string& path,
                        const json& body) {
      auto [c, t] = http(port, method, path, body.dump());
      EXPECT_TRUE(c == 200 || c == 204) << method << " " << path << ": " << c << " " << t;
    };
    expect_ok(web("east"), "POST", "/admin/v2/tenants/public",
              json{{"adminRoles", json::array()}, {"allowedClusters", {"east", "west"}}});
    expect_ok(web("east"), "PUT", "/admin/v2/namespaces/public/shared", json::object());
    expect_ok(web("west"), "POST", "/admin/v2/namespaces/public/shared/replication",
              json{"east", "west"});
  }

  std::map<std::string, std::pair<int, int>> ports_;  // cluster -> its first broker's ports
  std::map<std::string, std::string> service_urls_;   // cluster -> pulsar://every broker
  std::map<std::string, std::unique_ptr<client::Client>> shared_clients_;
};

TEST_F(GeoSharedStoreTest, ClustersUpWithOneConfigurationStoreReplicateBothWays) {
  // Both clusters registered themselves in the one store; each sees the other.
  auto [code, text] = http(web("west"), "GET", "/admin/v2/clusters");
  ASSERT_EQ(code, 200) << text;
  for (const char* name : {"east", "west"}) {
    EXPECT_NE(text.find(fmt::format("\"{}\"", name)), std::string::npos) << text;
  }
  shared_namespace();
  const std::string topic = "persistent://public/shared/both-ways";
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  auto at_east = client_of("east").subscribe(topic, "check", co);
  auto at_west = client_of("west").subscribe(topic, "check", co);
  ASSERT_TRUE(at_east.ok() && at_west.ok());
  client::ProducerOptions po;
  po.batching_enabled = false;
  po.producer_name = "from-east";
  auto from_east = client_of("east").create_producer(topic, po);
  po.producer_name = "from-west";
  auto from_west = client_of("west").create_producer(topic, po);
  ASSERT_TRUE(from_east.ok() && from_west.ok());
  ASSERT_EQ(send_all(*from_east, "e", 200), 0);
  ASSERT_EQ(send_all(*from_west, "w", 200), 0);
  std::set<std::string> all = payloads("e", 200);
  all.merge(payloads("w", 200));
  expect_exactly_once(drain(*at_east, all.size()), all, "east");
  expect_exactly_once(drain(*at_west, all.size()), all, "west");
}

// East with two brokers (and a 4 s ZooKeeper session): the broker owning the topic is
// SIGKILLed mid-replication, the other one recovers the topic (when the producer comes back)
// and its replicator goes on from the cursor: west gets everything east acknowledged, once.
class GeoSourceFailoverTest : public GeoSharedStoreTest {
 protected:
  std::string shape(const std::string& cluster) const override {
    return cluster == "east"
               ? "--brokers 2 --bookies 2 --set metadataStoreSessionTimeoutMillis=4000"
               : "--brokers 1 --bookies 1";
  }
};

TEST_F(GeoSourceFailoverTest, SourceOwnerKilledTheOtherBrokerGoesOnNothingLostOrDoubled) {
  shared_namespace();
  // The producer re-sends what the killed owner stored without answering: east deduplicates
  // those (by producer and sequence id), so anything doubled at west would be replication's.
  auto [dcode, dtext] = http(web("east"), "POST", "/admin/v2/namespaces/public/shared/deduplication",
                             "true");
  ASSERT_EQ(dcode, 204) << dtext;
  const std::string topic = "persistent://public/shared/failover";
  client::ConsumerOptions co;
  co.initial_position = client::InitialPosition::kEarliest;
  auto at_west = client_of("west").subscribe(topic, "check", co);
  ASSERT_TRUE(at_west.ok()) << at_west.status().to_string();
  client::ProducerOptions po;
  po.batching_enabled = false;
  po.producer_name = "through-failover";
  po.max_pending_messages = 3000;
  po.send_timeout = 120s;
  auto p = client_of("east").create_producer(topic, po);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // The owner, from east's lookup, and its pid from the launcher's state.
  auto [code, text] = http(web("east"), "GET", "/lookup/v2/topic/persistent/public/shared/failover");
  ASSERT_EQ(code, 200) << text;
  const std::string owner = json::parse(text)["brokerUrl"];
  const json state = json::parse(read_file((dir_ / "east" / "cluster.json").string()));
  pid_t owner_pid = -1;
  for (size_t i = 0; i < state["brokers"].size(); ++i) {
    if (state["brokers"][i]["serviceUrl"] != owner) continue;
    for (const auto& proc : state["processes"]) {
      if (proc["name"] == fmt::format("broker-{}", i)) owner_pid = proc["pid"].get<pid_t>();
    }
  }
  ASSERT_GT(owner_pid, 0) << owner << " in " << state.dump();
  std::set<std::string> acked;
  std::mutex mu;
  for (int i = 0; i < 2000; ++i) {
    const std::string payload = fmt::format("m-{}", i);
    p->send_async(client::Message(payload), [&, payload](Result<client::MessageId> r) {
      if (!r.ok()) return;
      std::lock_guard lock(mu);
      acked.insert(payload);
    });
    if (i == 1000) ::kill(owner_pid, SIGKILL);  // mid-stream, mid-replication
  }
  EXPECT_TRUE(p->flush().ok());  // the rest goes to the survivor once it owns the topic
  std::set<std::string> wanted;
  {
    std::lock_guard lock(mu);
    wanted = acked;
  }
  EXPECT_EQ(wanted.size(), 2000u) << "the producer's sends survive the failover";
  expect_acknowledged_once(drain(*at_west, wanted.size(), 90s), wanted, payloads("m", 2000));
}

}  // namespace
}  // namespace magnetar::testing
