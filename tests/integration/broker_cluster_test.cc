// Cluster mode with real processes: a ZooKeeper server (or etcd), three `magnetar bookie` and
// two `magnetar broker` processes on 127.0.0.1. Clients are the blocking protocol client
// (testing/pulsar_test_client.h) and the brokers' HTTP API (curl-free: a raw HTTP GET/PUT
// over a socket is enough here).

#include <map>
#include <thread>

#include "broker_fixture.h"
#include "testing/eventually.h"

namespace magnetar::testing {
namespace {

class BrokerClusterTest : public BrokerClusterFixture {
 protected:
  void killed_owner_is_replaced_without_losing_messages();
  // The store stays paused for at least `paused_for` (longer than the session: the lease or
  // session then expires on the server once it runs again).
  void cut_off_broker_stops_serving_before_its_session_can_expire(
      std::chrono::milliseconds paused_for = {}, const Settings& broker_settings = {});
  void metadata_member_killed_under_load_changes_nothing(const std::function<void()>& kill);
};

TEST_F(BrokerClusterTest, EitherBrokerReachesEveryTopicAndBundlesSpreadOverBoth) {
  start_broker();
  start_broker();
  ASSERT_FALSE(HasFailure());
  // Both registered.
  wait_for_registered_brokers(2);
  auto [code, body] = http(brokers_[0].web_port, "GET", "/admin/v2/brokers/test");
  ASSERT_EQ(code, 200) << body;
  EXPECT_EQ(nlohmann::json::parse(body).size(), 2u) << body;

  // 100 topics, looked up through alternating brokers: every lookup ends at an owner, and
  // the same topic resolves to the same owner through either broker.
  std::map<std::string, int> owners;
  int redirects = 0;
  for (int i = 0; i < 100; ++i) {
    const std::string topic = fmt::format("persistent://public/default/spread-{}", i);
    const std::string owner = resolve(brokers_[i % 2], topic, &redirects);
    ASSERT_FALSE(owner.empty());
    EXPECT_EQ(resolve(brokers_[(i + 1) % 2], topic, &redirects), owner) << topic;
    ++owners[owner];
  }
  EXPECT_GT(redirects, 0) << "the non-owner never redirected";
  // Bundles (16 in the namespace) per broker, from the ownership nodes.
  auto bundles = await(store_->children("/namespace/public/default"));
  ASSERT_TRUE(bundles.ok());
  std::map<std::string, int> per_broker;
  for (const auto& b : *bundles) {
    auto node = await(store_->get("/namespace/public/default/" + b));
    ASSERT_TRUE(node.ok() && node->has_value());
    ++per_broker[nlohmann::json::parse((*node)->value).value("nativeUrl", "")];
  }
  ASSERT_EQ(per_broker.size(), 2u);
  for (const auto& [broker, n] : per_broker) {
    EXPECT_LE(n * 100, 70 * static_cast<int>(bundles->size()))
        << broker << " owns " << n << " of " << bundles->size() << " bundles";
  }

  // A message produced on the owner of one topic, found through the other broker.
  const std::string topic = "persistent://public/default/spread-7";
  const BrokerChild* owner = broker_by_url(resolve(brokers_[0], topic, &redirects));
  ASSERT_NE(owner, nullptr);
  auto c = connect(*owner);
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  ASSERT_TRUE(c->send_message(1, 0, "hello").ok());
  // The non-owner refuses producers on it (clients must look it up).
  const BrokerChild& other = owner == &brokers_[0] ? brokers_[1] : brokers_[0];
  auto wrong = connect(other);
  auto refused = wrong->create_producer(topic, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(server_error_of(refused.status()), wire::ServiceNotReady)
      << refused.status().to_string();
  // HTTP lookup through the non-owner: 307 to the owner.
  auto [lcode, lbody] =
      http(other.web_port, "GET", "/lookup/v2/topic/persistent/public/default/spread-7");
  EXPECT_TRUE(lcode == 200 || lcode == 307) << lcode << " " << lbody;
  if (lcode == 200) {
    EXPECT_EQ(nlohmann::json::parse(lbody).value("brokerUrl", ""), owner->url()) << lbody;
  }
  // Topic stats through the non-owner: redirected.
  auto [scode, sbody] =
      http(other.web_port, "GET", "/admin/v2/persistent/public/default/spread-7/stats");
  EXPECT_EQ(scode, 307) << sbody;
  auto [ocode, obody] =
      http(owner->web_port, "GET", "/admin/v2/persistent/public/default/spread-7/stats");
  ASSERT_EQ(ocode, 200) << obody;
  EXPECT_EQ(nlohmann::json::parse(obody).value("msgInCounter", 0), 1) << obody;
}

// A fresh namespace of 4 bundles, one topic of each looked up at the same moment: the
// placements see each other and split the bundles 2 and 2 over the brokers.
TEST_F(BrokerClusterTest, BundlesLookedUpAtTheSameMomentSpreadOverBothBrokers) {
  start_broker();
  start_broker();
  ASSERT_FALSE(HasFailure());
  wait_for_registered_brokers(2);
  auto [made, made_body] = http(brokers_[0].web_port, "PUT", "/admin/v2/namespaces/public/four",
                                R"({"bundles":{"numBundles":4}})");
  ASSERT_EQ(made, 204) << made_body;
  // One topic per bundle (the bundle endpoint places nothing).
  std::map<std::string, std::string> topic_of_bundle;
  for (int i = 0; topic_of_bundle.size() < 4 && i < 1000; ++i) {
    const std::string name = fmt::format("at-once-{}", i);
    auto [code, bundle] = http(brokers_[0].web_port, "GET",
                               "/lookup/v2/topic/persistent/public/four/" + name + "/bundle");
    ASSERT_EQ(code, 200) << bundle;
    topic_of_bundle.emplace(bundle, "persistent://public/four/" + name);
  }
  ASSERT_EQ(topic_of_bundle.size(), 4u);
  std::vector<std::thread> lookups;
  std::vector<std::string> owners(4);
  std::vector<int> redirects(4, 0);
  size_t i = 0;
  for (const auto& [bundle, topic] : topic_of_bundle) {
    lookups.emplace_back([&, i, topic = topic]() {
      owners[i] = resolve(brokers_[i % 2], topic, &redirects[i]);
    });
    ++i;
  }
  for (auto& t : lookups) t.join();
  std::map<std::string, int> per_broker;
  for (const auto& o : owners) {
    ASSERT_FALSE(o.empty());
    ++per_broker[o];
  }
  EXPECT_EQ(per_broker.size(), 2u);
  for (const auto& [broker, n] : per_broker) EXPECT_EQ(n, 2) << broker;
}

TEST_F(BrokerClusterTest, BundleUnloadMovesTheTopicAndKeepsItsMessages) {
  start_broker();
  start_broker();
  ASSERT_FALSE(HasFailure());
  const std::string topic = "persistent://public/default/moving";
  int redirects = 0;
  const BrokerChild* first = broker_by_url(resolve(brokers_[0], topic, &redirects));
  ASSERT_NE(first, nullptr);
  auto c = connect(*first);
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c->send_message(1, i, fmt::format("m{}", i)).ok());
  // The bundle of the topic, from the lookup endpoint.
  auto [bcode, bundle] =
      http(first->web_port, "GET", "/lookup/v2/topic/persistent/public/default/moving/bundle");
  ASSERT_EQ(bcode, 200) << bundle;
  const BrokerChild& second = first == &brokers_[0] ? brokers_[1] : brokers_[0];
  // Unload through the other broker (307 to the owner, as Pulsar's admin client follows).
  auto [ucode, ubody] =
      http(second.web_port, "PUT", "/admin/v2/namespaces/public/default/" + bundle + "/unload");
  ASSERT_EQ(ucode, 307) << ubody;
  std::tie(ucode, ubody) =
      http(first->web_port, "PUT", "/admin/v2/namespaces/public/default/" + bundle + "/unload");
  ASSERT_EQ(ucode, 204) << ubody;
  // The producer was told to go (CLOSE_PRODUCER); the next lookup places it elsewhere.
  auto closed = c->receive(wire::BaseCommand::CLOSE_PRODUCER, 10s);
  EXPECT_TRUE(closed.ok()) << closed.status().to_string();
  const BrokerChild* now = broker_by_url(resolve(*first, topic, &redirects));
  ASSERT_NE(now, nullptr);
  EXPECT_EQ(now, &second) << "the unloaded bundle came back to the broker that unloaded it";
  auto d = connect(*now);
  ASSERT_TRUE(d->subscribe(topic, "s", wire::CommandSubscribe::Exclusive, 1,
                           wire::CommandSubscribe::Earliest)
                  .ok());
  ASSERT_TRUE(d->flow(1, 100).ok());
  for (int i = 0; i < 20; ++i) {
    auto m = d->receive_message(10s);
    ASSERT_TRUE(m.ok()) << i << ": " << m.status().to_string();
    auto unpacked = m->unpack();
    ASSERT_TRUE(unpacked.ok());
    EXPECT_EQ((*unpacked)[0].payload.to_string(), fmt::format("m{}", i));
  }
}

TEST_F(BrokerClusterTest, KilledOwnerIsReplacedAfterTheSessionTimeoutWithoutLosingMessages) {
  killed_owner_is_replaced_without_losing_messages();
}

void BrokerClusterTest::killed_owner_is_replaced_without_losing_messages() {
  start_broker();
  start_broker();
  ASSERT_FALSE(HasFailure());
  const std::string topic = "persistent://public/default/failover";
  int redirects = 0;
  BrokerChild* owner =
      const_cast<BrokerChild*>(broker_by_url(resolve(brokers_[0], topic, &redirects)));
  ASSERT_NE(owner, nullptr);
  auto c = connect(*owner);
  ASSERT_TRUE(c->subscribe(topic, "durable", wire::CommandSubscribe::Exclusive, 7,
                           wire::CommandSubscribe::Earliest)
                  .ok());
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(c->send_message(1, i, fmt::format("m{}", i)).ok());
  // The consumer takes and acknowledges the first 10.
  ASSERT_TRUE(c->flow(7, 10).ok());
  std::vector<wire::MessageIdData> first10;
  for (int i = 0; i < 10; ++i) {
    auto m = c->receive_message(10s);
    ASSERT_TRUE(m.ok());
    first10.push_back(m->id);
  }
  ASSERT_TRUE(c->ack(7, {first10.back()}, true, 99).ok());
  c.reset();
  ::kill(owner->pid, SIGKILL);
  (void)reap_child(owner->pid, true);
  owner->pid = -1;
  const BrokerChild& survivor = owner == &brokers_[0] ? brokers_[1] : brokers_[0];
  // The survivor serves the topic once the dead broker's session expired.
  const auto killed = std::chrono::steady_clock::now();
  std::string now;
  while (std::chrono::steady_clock::now() - killed < 30s) {
    auto s = connect(survivor);
    auto r = s->lookup(topic, false);
    if (r.ok() && r->response() == wire::CommandLookupTopicResponse::Connect &&
        r->brokerserviceurl() == survivor.url()) {
      now = r->brokerserviceurl();
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(now, survivor.url());
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - killed);
  std::fprintf(stderr, "failover: the survivor serves the topic %lld ms after the SIGKILL\n",
               static_cast<long long>(took.count()));
  auto d = connect(survivor);
  ASSERT_TRUE(d->subscribe(topic, "durable", wire::CommandSubscribe::Exclusive, 7,
                           wire::CommandSubscribe::Earliest)
                  .ok());
  ASSERT_TRUE(d->flow(7, 100).ok());
  // Resumes after the acknowledged 10: m10..m49, all of them.
  for (int i = 10; i < 50; ++i) {
    auto m = d->receive_message(10s);
    ASSERT_TRUE(m.ok()) << i << ": " << m.status().to_string();
    auto unpacked = m->unpack();
    ASSERT_TRUE(unpacked.ok());
    EXPECT_EQ((*unpacked)[0].payload.to_string(), fmt::format("m{}", i));
  }
  // And the survivor takes new messages on the recovered topic.
  ASSERT_TRUE(d->create_producer(topic, 2).ok());
  EXPECT_TRUE(d->send_message(2, 0, "after").ok());
}

TEST_F(BrokerClusterTest, NamespaceWideOperationsReachEveryOwner) {
  start_broker();
  start_broker();
  ASSERT_FALSE(HasFailure());
  // A partitioned topic whose 6 partitions spread over both brokers, one message each.
  auto [pcode, pbody] =
      http(brokers_[0].web_port, "PUT", "/admin/v2/persistent/public/default/wide/partitions", "6");
  ASSERT_EQ(pcode, 204) << pbody;
  std::set<std::string> owners;
  int redirects = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string partition = fmt::format("persistent://public/default/wide-partition-{}", i);
    const BrokerChild* owner = broker_by_url(resolve(brokers_[i % 2], partition, &redirects));
    ASSERT_NE(owner, nullptr);
    owners.insert(owner->url());
    auto c = connect(*owner);
    ASSERT_TRUE(c->subscribe(partition, "sub", wire::CommandSubscribe::Exclusive, 1,
                             wire::CommandSubscribe::Earliest)
                    .ok());
    ASSERT_TRUE(c->create_producer(partition, 1).ok());
    ASSERT_TRUE(c->send_message(1, 0, fmt::format("p{}", i)).ok());
  }
  // Stats of all partitions through either broker, wherever each partition lives.
  for (const auto& b : brokers_) {
    auto [scode, sbody] =
        http(b.web_port, "GET", "/admin/v2/persistent/public/default/wide/partitioned-stats");
    ASSERT_EQ(scode, 200) << sbody;
    EXPECT_EQ(nlohmann::json::parse(sbody).value("msgInCounter", 0), 6) << sbody;
  }
  // Peek the message of partition 0 through its owner.
  const BrokerChild* owner0 = broker_by_url(
      resolve(brokers_[0], "persistent://public/default/wide-partition-0", &redirects));
  ASSERT_NE(owner0, nullptr);
  auto [kcode, kbody] = http(owner0->web_port, "GET",
                             "/admin/v2/persistent/public/default/wide-partition-0/subscription/"
                             "sub/position/1");
  ASSERT_EQ(kcode, 200) << kbody;
  EXPECT_EQ(kbody, "p0");
  // Clear every backlog of the namespace through one broker.
  auto [ccode, cbody] =
      http(brokers_[1].web_port, "POST", "/admin/v2/namespaces/public/default/clearBacklog");
  ASSERT_EQ(ccode, 204) << cbody;
  auto [kcode2, kbody2] = http(owner0->web_port, "GET",
                               "/admin/v2/persistent/public/default/wide-partition-0/"
                               "subscription/sub/position/1");
  EXPECT_EQ(kcode2, 404) << kbody2;
  // Unload the whole namespace through one broker: no bundle stays owned anywhere.
  auto [ucode, ubody] =
      http(brokers_[0].web_port, "PUT", "/admin/v2/namespaces/public/default/unload");
  ASSERT_EQ(ucode, 204) << ubody;
  auto left = await(store_->children("/namespace/public/default"));
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty()) << left->size() << " bundles still owned";
  // Delete the partitioned topic through one broker (each partition by its owner).
  auto [dcode, dbody] = http(brokers_[1].web_port, "DELETE",
                             "/admin/v2/persistent/public/default/wide/partitions?force=true");
  ASSERT_EQ(dcode, 204) << dbody;
  auto [lcode, lbody] = http(brokers_[0].web_port, "GET", "/admin/v2/persistent/public/default");
  ASSERT_EQ(lcode, 200) << lbody;
  EXPECT_EQ(lbody, "[]");
}

// Namespace policies changed through one broker reach a topic loaded on its owner, whichever
// broker that is, without an unload: deduplication (on, then off), TTL and a backlog quota.
TEST_F(BrokerClusterTest, PolicyChangesReachLoadedTopicsOnEveryBrokerWithoutAnUnload) {
  const Settings fast_checks = {{"messageExpiryCheckIntervalInMinutes", "0.005"},
                                {"backlogQuotaCheckIntervalInSeconds", "0.3"}};
  start_broker(fast_checks);
  start_broker(fast_checks);
  ASSERT_FALSE(HasFailure());
  const std::string topic = "persistent://public/default/policies-live";
  int redirects = 0;
  const BrokerChild* owner = broker_by_url(resolve(brokers_[0], topic, &redirects));
  ASSERT_NE(owner, nullptr);
  const BrokerChild& other = owner == &brokers_[0] ? brokers_[1] : brokers_[0];
  auto c = connect(*owner);
  ASSERT_TRUE(c->subscribe(topic, "sub", wire::CommandSubscribe::Exclusive, 1,
                           wire::CommandSubscribe::Earliest)
                  .ok());
  ASSERT_TRUE(c->create_producer(topic, 1, std::string("p1")).ok());
  auto stats = [&]() {
    auto [code, body] =
        http(owner->web_port, "GET", "/admin/v2/persistent/public/default/policies-live/stats");
    EXPECT_EQ(code, 200) << body;
    return nlohmann::json::parse(body, nullptr, false);
  };
  auto backlog = [&]() {
    auto j = stats();
    return j.is_object() ? j["subscriptions"]["sub"].value("msgBacklog", int64_t{-1}) : -1;
  };
  auto wait_for = [](const std::function<bool()>& done) {
    return magnetar::testing::eventually(done, 20s, 100ms);
  };
  // Deduplication off: the same sequence id twice is stored twice.
  ASSERT_TRUE(c->send_message(1, 0, "a").ok());
  ASSERT_TRUE(c->send_message(1, 0, "a again").ok());
  EXPECT_EQ(stats().value("deduplicationStatus", ""), "Disabled");
  EXPECT_EQ(backlog(), 2);

  // On, through the other broker: the loaded topic deduplicates from the next send.
  auto [dcode, dbody] =
      http(other.web_port, "POST", "/admin/v2/namespaces/public/default/deduplication", "true");
  ASSERT_EQ(dcode, 204) << dbody;
  ASSERT_TRUE(wait_for([&] { return stats().value("deduplicationStatus", "") == "Enabled"; }))
      << stats().dump();
  auto dup = c->send_message(1, 0, "a third time");
  ASSERT_TRUE(dup.ok()) << dup.status().to_string();
  ASSERT_TRUE(c->send_message(1, 1, "b").ok());
  EXPECT_EQ(backlog(), 3);

  // Off again: sequence ids are not checked any more.
  auto [ocode, obody] =
      http(other.web_port, "POST", "/admin/v2/namespaces/public/default/deduplication", "false");
  ASSERT_EQ(ocode, 204) << obody;
  ASSERT_TRUE(wait_for([&] { return stats().value("deduplicationStatus", "") == "Disabled"; }));
  ASSERT_TRUE(c->send_message(1, 1, "b again").ok());
  EXPECT_EQ(backlog(), 4);

  // A TTL of 1 s: the loaded topic's subscription expires its backlog.
  auto [tcode, tbody] =
      http(other.web_port, "POST", "/admin/v2/namespaces/public/default/messageTTL", "1");
  ASSERT_EQ(tcode, 204) << tbody;
  EXPECT_TRUE(wait_for([&] { return backlog() == 0; })) << stats().dump();

  // A backlog quota of 1 byte with producer_exception: the connected producer is cut off.
  auto [qcode, qbody] =
      http(other.web_port, "POST", "/admin/v2/namespaces/public/default/messageTTL", "0");
  ASSERT_EQ(qcode, 204) << qbody;
  ASSERT_TRUE(c->send_message(1, 2, "c").ok());
  auto [bcode, bbody] =
      http(other.web_port, "POST", "/admin/v2/namespaces/public/default/backlogQuota",
           R"({"limitSize":1,"limitTime":-1,"policy":"producer_exception"})");
  ASSERT_EQ(bcode, 204) << bbody;
  EXPECT_TRUE(wait_for([&] { return stats()["publishers"].empty(); })) << stats().dump();
}

TEST_F(BrokerClusterTest, ABundleWithTooManyTopicsIsSplitAndItsTopicsStayReachable) {
  // One split only (at most 2 bundles), so no later split unloads topics under the checks.
  const Settings split_early = {{"defaultNumberOfNamespaceBundles", "1"},
                                {"loadBalancerNamespaceBundleMaxTopics", "3"},
                                {"loadBalancerNamespaceMaximumBundles", "2"}};
  start_broker(split_early);
  start_broker(split_early);
  ASSERT_FALSE(HasFailure());
  int redirects = 0;
  std::vector<std::string> topics;
  for (int i = 0; i < 8; ++i) {
    topics.push_back(fmt::format("persistent://public/default/hot-{}", i));
    // The split may start once the fourth topic is loaded and unload the bundle between a
    // lookup and the producer: then look up again, as a client does.
    EXPECT_TRUE(magnetar::testing::eventually([&] {
      const BrokerChild* owner = broker_by_url(resolve(brokers_[0], topics.back(), &redirects));
      if (owner == nullptr) return false;
      auto c = connect(*owner);
      return c->create_producer(topics.back(), 1).ok() && c->send_message(1, 0, "x").ok();
    })) << topics.back();
  }
  // The one bundle holds 8 topics > 3: its owner splits it.
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  int bundles = 1;
  while (std::chrono::steady_clock::now() < deadline) {
    auto [code, body] =
        http(brokers_[1].web_port, "GET", "/admin/v2/namespaces/public/default/bundles");
    if (code == 200) bundles = nlohmann::json::parse(body).value("numBundles", 1);
    if (bundles >= 2) break;
    run_for(200ms);
  }
  ASSERT_GE(bundles, 2) << "the bundle was not split";
  // Every topic resolves to an owner and still has its message. A half the split unloads may
  // move between the lookup and the subscribe: a client looks up again then, and so does this.
  for (const auto& topic : topics) {
    Status last;
    bool received = false;
    for (int attempt = 0; attempt < 20 && !received; ++attempt) {
      if (attempt > 0) run_for(500ms);
      const BrokerChild* owner = broker_by_url(resolve(brokers_[1], topic, &redirects));
      ASSERT_NE(owner, nullptr) << topic;
      auto c = connect(*owner);
      last = c->subscribe(topic, "check", wire::CommandSubscribe::Exclusive, 1,
                          wire::CommandSubscribe::Earliest);
      if (!last.ok()) continue;
      ASSERT_TRUE(c->flow(1, 10).ok());
      // The split may also unload this half just after the subscribe: the broker then closes
      // the consumer, and (as a client does) this looks up and subscribes again. A message
      // that is not there still fails here.
      auto m = c->receive_if(
          [](const protocol::Frame& f) {
            return f.command.type() == wire::BaseCommand::MESSAGE ||
                   f.command.type() == wire::BaseCommand::CLOSE_CONSUMER;
          },
          10s);
      ASSERT_TRUE(m.ok()) << topic << ": waiting for the message: " << m.status().to_string();
      if (m->command.type() == wire::BaseCommand::CLOSE_CONSUMER) {
        last = Status(Errc::kUnavailable, "the broker closed the consumer: the topic moved");
        continue;
      }
      received = true;
    }
    EXPECT_TRUE(received) << topic << ": " << last.to_string();
  }
}

// ZooKeeper hung for longer than every session (4 s): the broker stops serving before its
// session can expire, and once ZooKeeper runs again the broker, and the bookies whose
// registrations expired, come back on new sessions.
TEST_F(BrokerClusterTest, ABrokerCutOffFromZooKeeperStopsServingBeforeItsSessionCanExpire) {
  cut_off_broker_stops_serving_before_its_session_can_expire(6s);
}

void BrokerClusterTest::cut_off_broker_stops_serving_before_its_session_can_expire(
    std::chrono::milliseconds paused_for, const Settings& broker_settings) {
  start_broker(broker_settings);
  ASSERT_FALSE(HasFailure());
  const std::string topic = "persistent://public/default/cut-off";
  int redirects = 0;
  ASSERT_EQ(resolve(brokers_[0], topic, &redirects), brokers_[0].url());
  auto c = connect(brokers_[0]);
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  ASSERT_TRUE(c->send_message(1, 0, "before").ok());
  // A hung metadata store: connections stay open, nothing answers. The broker's session (4 s)
  // cannot expire before the server answers again, but the broker cannot know that: it
  // stops serving before the session timeout (ZooKeeper's client notices after 2/3 of it,
  // then a sixth more; our etcd client after a TTL less an eighth from its last answered
  // keep-alive).
  const auto paused = std::chrono::steady_clock::now();
  pause_metadata();
  auto closed = c->receive(wire::BaseCommand::CLOSE_PRODUCER, 10s);
  const auto after = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - paused);
  std::this_thread::sleep_until(paused + paused_for);
  resume_metadata();
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  EXPECT_LT(after.count(), 4000) << "stopped serving only after the session timeout";
  std::fprintf(stderr, "cut off from the metadata store: producers closed after %lld ms\n",
               static_cast<long long>(after.count()));
  // The store answers again: the broker serves the topic again (same or new session).
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  bool served = false;
  Status last;
  while (!served && std::chrono::steady_clock::now() < deadline) {
    auto d = connect(brokers_[0]);
    if (!d) continue;
    last = d->create_producer(topic, 2).status();
    if (last.ok()) last = d->send_message(2, 0, "after").status();
    if (last.ok()) {
      served = true;
    } else {
      std::this_thread::sleep_for(200ms);
    }
  }
  EXPECT_TRUE(served) << last.to_string();
}

// ZooKeeper servers that allow sessions of 4 s at most, and a broker asking for 12 s: the
// broker plans with the 4 s the servers gave, so it still stops serving before they can
// expire its session (planning with 12 s, it would serve 2 s after noticing the loss at
// 2.7 s, past the 4 s).
class BrokerClusterOnBoundedSessionsTest : public BrokerClusterTest {
 protected:
  ZooKeeperOptions zookeeper_options() const override {
    ZooKeeperOptions options;
    options.max_session_timeout_ms = 4000;
    return options;
  }
};

TEST_F(BrokerClusterOnBoundedSessionsTest,
       ABrokerCutOffStopsServingWithinTheSessionTheServersGaveNotTheOneItAskedFor) {
  cut_off_broker_stops_serving_before_its_session_can_expire(
      6s, {{"metadataStoreSessionTimeoutMillis", "12000"}});
}

// The same cluster over a 3-server ZooKeeper ensemble.
class BrokerClusterOnEnsembleTest : public BrokerClusterTest {
 protected:
  int zookeeper_servers() const override { return 3; }
};

TEST_F(BrokerClusterOnEnsembleTest, AZooKeeperServerKilledUnderLoadChangesNothing) {
  auto leader = ensemble_->wait_for_leader(10s);
  ASSERT_TRUE(leader.ok()) << leader.status().to_string();
  metadata_member_killed_under_load_changes_nothing([&] { ensemble_->server(*leader).kill(); });
}

void BrokerClusterTest::metadata_member_killed_under_load_changes_nothing(
    const std::function<void()>& kill) {
  // Killing the ZooKeeper leader drops every client until the ensemble has elected another,
  // and a broker that lost its connection serves a sixth of the session more (the safe
  // bound, namespace_service.h). The fixture's 4 s session leaves 0.67 s, less than an
  // election takes on a loaded CI machine (this test failed so in two CI runs); 12 s leaves
  // 2 s, Pulsar's default of 30 s leaves 5 s.
  const Settings small_ledgers = {{"managedLedgerMaxEntriesPerLedger", "100"},
                                  {"managedLedgerMinLedgerRolloverTimeMinutes", "0"},
                                  {"metadataStoreSessionTimeoutMillis", "12000"}};
  start_broker(small_ledgers);
  start_broker(small_ledgers);
  ASSERT_FALSE(HasFailure());
  const std::string topic = "persistent://public/default/through-zk-failure";
  int redirects = 0;
  const BrokerChild* owner = broker_by_url(resolve(brokers_[1], topic, &redirects));
  ASSERT_NE(owner, nullptr);
  auto c = connect(*owner);
  ASSERT_TRUE(
      c->subscribe(topic, "s", wire::CommandSubscribe::Shared, 1, wire::CommandSubscribe::Earliest)
          .ok());
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  // Kill a metadata server a third of the way through 600 messages; ledgers roll over
  // meanwhile (new ledger ids and metadata come from the store).
  for (int i = 0; i < 600; ++i) {
    if (i == 200) kill();
    auto receipt = c->send_message(1, i, fmt::format("m{}", i));
    ASSERT_TRUE(receipt.ok()) << i << ": " << receipt.status().to_string();
  }
  // Lookups and new topics keep working through the surviving servers.
  const std::string other = "persistent://public/default/after-zk-failure";
  EXPECT_FALSE(resolve(brokers_[0], other, &redirects).empty());
  ASSERT_TRUE(c->flow(1, 1000).ok());
  for (int i = 0; i < 600; ++i) {
    auto m = c->receive_message(10s);
    ASSERT_TRUE(m.ok()) << i << ": " << m.status().to_string();
    auto unpacked = m->unpack();
    ASSERT_TRUE(unpacked.ok());
    EXPECT_EQ((*unpacked)[0].payload.to_string(), fmt::format("m{}", i));
  }
}

// The same cluster with etcd (one member) as its metadata store instead of ZooKeeper.
class BrokerClusterOnEtcdTest : public BrokerClusterTest {
 protected:
  int etcd_members() const override { return 1; }
};

TEST_F(BrokerClusterOnEtcdTest, KilledOwnerIsReplacedAfterTheSessionTimeoutWithoutLosingMessages) {
  killed_owner_is_replaced_without_losing_messages();
}

// etcd hung for longer than the broker's lease (4 s): the broker stops serving within the TTL,
// before etcd can expire the lease and another broker take the bundle, and serves again on a
// new lease once etcd runs.
TEST_F(BrokerClusterOnEtcdTest, ABrokerCutOffFromEtcdStopsServingBeforeItsLeaseCanExpire) {
  cut_off_broker_stops_serving_before_its_session_can_expire(6s);
}

// Over a 3-member etcd cluster: the member every client talks to first is killed under load.
class BrokerClusterOnEtcdClusterTest : public BrokerClusterTest {
 protected:
  int etcd_members() const override { return 3; }
};

TEST_F(BrokerClusterOnEtcdClusterTest, AnEtcdMemberKilledUnderLoadChangesNothing) {
  metadata_member_killed_under_load_changes_nothing([&] { etcd_->member(0).kill(); });
}

}  // namespace
}  // namespace magnetar::testing
