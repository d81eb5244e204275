// The broker's own HTTP endpoints (lookup, topics, bundles, brokers: broker/admin/) over HTTP: a
// whole BrokerServer (web port, broker, load manager) and an in-process bookie over a memory:
// metadata store; the cluster, tenant and namespace made through the admin REST API itself;
// requests sent with the blocking http::HttpClient and messages produced with
// testing::PulsarTestClient.
//
// Each endpoint gets a success case and bad-input cases checked against Pulsar's codes and its
// {"reason": ...} body. Several tests pin down defects found while writing them
// (now fixed) so that they stay fixed.

#include "broker/tests/broker_routes_fixture.h"

namespace magnetar::broker::routes_test {
namespace {

// --- Lookup ----------------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, LookupAnswersWithThisBrokersUrls) {
  Reply r = get(kLookup + "/my-topic");
  ASSERT_EQ(r.status, 200) << r;
  Json j = r.json();
  const std::string native = fmt::format("pulsar://127.0.0.1:{}", server_->port());
  EXPECT_EQ(j["brokerUrl"], native);
  EXPECT_EQ(j["nativeUrl"], native);
  EXPECT_EQ(j["httpUrl"], base_);
  for (const char* key : {"brokerUrlTls", "brokerUrlSsl", "httpUrlTls"}) {
    EXPECT_TRUE(j.contains(key) && j[key].is_string()) << key;
  }
  // The same with ?authoritative=true, and the topic's bundle is now owned here.
  EXPECT_EQ(get(kLookup + "/my-topic?authoritative=true").status, 200);
  const std::string bundle = bundle_of("my-topic");
  EXPECT_TRUE(std::regex_match(bundle, std::regex("0x[0-9a-f]{8}_0x[0-9a-f]{8}"))) << bundle;
  EXPECT_TRUE(owned_bundles().count("public/default/" + bundle));
}

TEST_F(BrokerRoutesTest, LookupBundleIsOneOfTheNamespaceBundles) {
  Json boundaries = namespace_policies()["bundles"]["boundaries"];
  ASSERT_EQ(boundaries.size(), 5u);
  std::set<std::string> bundles;
  for (size_t i = 0; i + 1 < boundaries.size(); ++i) {
    bundles.insert(boundaries[i].get<std::string>() + "_" + boundaries[i + 1].get<std::string>());
  }
  for (const char* t : {"a", "b", "c", "d", "e"}) EXPECT_TRUE(bundles.count(bundle_of(t))) << t;
  // Asking for the bundle does not take it.
  EXPECT_TRUE(owned_bundles().empty());
}

TEST_F(BrokerRoutesTest, LookupRejectsMalformedPaths) {
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/public/default"), 400);
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/public/default/"), 400);
  EXPECT_ERROR(get("/lookup/v2/topic/persistent"), 400);
  EXPECT_ERROR(get("/lookup/v2/topic/"), 400);
  EXPECT_ERROR(get(kLookup + "/t%zz"), 400);
  EXPECT_ERROR(get(kLookup + "/t/bundle/x"), 404);
  EXPECT_ERROR(get(kLookup + "/t/other"), 404);
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/public//t"), 412);
  // An encoded slash makes a v1 name (tenant/cluster/ns/topic) as in Pulsar: its namespace
  // public/default/a does not exist.
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/public/default/a%2Fb"), 404);
  EXPECT_ERROR(get("/lookup/v2/topic/nonsense/public/default/t"), 412);
}

TEST_F(BrokerRoutesTest, LookupOfAnUnknownNamespaceIs404) {
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/public/nope/t"), 404);
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/nobody/default/t"), 404);
  EXPECT_ERROR(get("/lookup/v2/topic/persistent/public/nope/t/bundle"), 404);
}

TEST_F(BrokerRoutesTest, LookupOfNonPersistentTopicsAndUnknownDomains) {
  Reply r = get("/lookup/v2/topic/non-persistent/public/default/t");
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.json()["brokerUrl"], get(kLookup + "/t").json()["brokerUrl"]);
  Reply other = get("/lookup/v2/topic/volatile/public/default/t");
  EXPECT_ERROR(other, 412);
  EXPECT_EQ(other.reason(), "Unsupported topic domain: volatile");
}

TEST_F(BrokerRoutesTest, LookupWithoutAutoCreationFindsOnlyExistingTopics) {
  start_server([](BrokerConfig& config) { config.allow_auto_topic_creation = false; });
  ASSERT_TRUE(server_);
  Reply missing = get(kLookup + "/absent");
  EXPECT_ERROR(missing, 404);
  EXPECT_EQ(missing.reason(), "Topic not found.");
  ASSERT_EQ(put(kTopics + "/parted/partitions", "2").status, 204);
  EXPECT_EQ(get(kLookup + "/parted").status, 200);
  // A topic that exists (made while auto-creation was on).
  start_server();
  ASSERT_TRUE(server_);
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/present", 1);
  c.reset();
  start_server([](BrokerConfig& config) { config.allow_auto_topic_creation = false; });
  ASSERT_TRUE(server_);
  EXPECT_EQ(get(kLookup + "/present").status, 200);
  EXPECT_ERROR(get(kLookup + "/absent"), 404);
}

// An explicit create works whatever allowAutoTopicCreation says (it governs clients' use).
TEST_F(BrokerRoutesTest, AdminCreateWorksWithoutAutoCreation) {
  start_server([](BrokerConfig& config) { config.allow_auto_topic_creation = false; });
  ASSERT_TRUE(server_);
  EXPECT_EQ(put(kTopics + "/present").status, 204);
  EXPECT_EQ(get(kLookup + "/present").status, 200);
}

// With allowAutoTopicCreation=false, a partition of an existing partitioned topic exists
// for lookups (its index is below the partition count) before its managed ledger does.
TEST_F(BrokerRoutesTest, LookupOfAPartitionWithoutAutoCreation) {
  start_server([](BrokerConfig& config) { config.allow_auto_topic_creation = false; });
  ASSERT_TRUE(server_);
  ASSERT_EQ(put(kTopics + "/parted/partitions", "2").status, 204);
  EXPECT_EQ(get(kLookup + "/parted-partition-1").status, 200);
  EXPECT_ERROR(get(kLookup + "/parted-partition-2"), 404);
}

TEST_F(BrokerRoutesTest, RedirectsToTheOwnerOfTheBundle) {
  const std::string bundle = bundle_of("t");
  give_bundle_away(bundle);
  // A lookup answers with the owner's URLs (as Pulsar: a redirect only comes from placement).
  Reply lookup = get(kLookup + "/t");
  ASSERT_EQ(lookup.status, 200) << lookup;
  EXPECT_EQ(lookup.json()["brokerUrl"], "pulsar://10.255.255.1:6650");
  EXPECT_EQ(lookup.json()["httpUrl"], "http://10.255.255.1:8080");
  // Topic and bundle operations are sent to the owner.
  Reply stats = raw_call("GET", kTopics + "/t/stats?authoritative=false");
  EXPECT_EQ(stats.status, 307) << stats;
  EXPECT_EQ(stats.location,
            "http://10.255.255.1:8080/admin/v2/persistent/public/default/t/stats"
            "?authoritative=true");
  Reply sub = raw_call("PUT", kTopics + "/t/subscription/s");
  EXPECT_EQ(sub.status, 307) << sub;
  Reply unload = raw_call("PUT", kNamespace + "/" + bundle + "/unload");
  EXPECT_EQ(unload.status, 307) << unload;
  EXPECT_EQ(
      unload.location.rfind("http://10.255.255.1:8080" + kNamespace + "/" + bundle + "/unload?", 0),
      0u)
      << unload.location;
  EXPECT_EQ(raw_call("PUT", kNamespace + "/" + bundle + "/split").status, 307);
  // Not this broker's to list.
  EXPECT_FALSE(owned_bundles().count("public/default/" + bundle));
}

// The 307 Location keeps the query encoded: ?x=a%26b%20c is not split into x=a and b c.
TEST_F(BrokerRoutesTest, RedirectKeepsTheQueryEncoded) {
  give_bundle_away(bundle_of("t"));
  Reply r = raw_call("GET", kTopics + "/t/stats?x=a%26b%20c");
  EXPECT_EQ(r.status, 307) << r;
  EXPECT_NE(r.location.find("x=a%26b%20c"), std::string::npos) << r.location;
}

// --- Topic lists ------------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, ListsTopicsAndPartitionedTopics) {
  Reply empty = get(kTopics);
  ASSERT_EQ(empty.status, 200) << empty;
  EXPECT_EQ(empty.json(), Json::array());
  EXPECT_EQ(get(kTopics + "/partitioned").json(), Json::array());

  ASSERT_EQ(put(kTopics + "/plain").status, 204);
  ASSERT_EQ(put(kTopics + "/parted/partitions", "2").status, 204);
  Reply all = get(kTopics);
  ASSERT_EQ(all.status, 200) << all;
  // The partitions are listed at once, as Pulsar (which creates them with the topic) does.
  EXPECT_EQ(all.json(), Json::parse(R"(["persistent://public/default/parted-partition-0",
                                         "persistent://public/default/parted-partition-1",
                                         "persistent://public/default/plain"])"));
  Reply parted = get(kTopics + "/partitioned");
  ASSERT_EQ(parted.status, 200) << parted;
  EXPECT_EQ(parted.json(), Json::parse(R"(["persistent://public/default/parted"])"));
  // Also with a trailing slash.
  EXPECT_EQ(get(kTopics + "/").status, 200);
}

TEST_F(BrokerRoutesTest, TopicListsOfAnUnknownNamespaceAre404) {
  EXPECT_ERROR(get("/admin/v2/persistent/public/nope"), 404);
  EXPECT_ERROR(get("/admin/v2/persistent/public/nope/partitioned"), 404);
  EXPECT_ERROR(get("/admin/v2/persistent/nobody/default"), 404);
  EXPECT_ERROR(get("/admin/v2/persistent/public"), 404);
  EXPECT_ERROR(get("/admin/v2/persistent/public/default%zz"), 400);
  EXPECT_ERROR(post(kTopics), 405);
}

// --- Partitioned-topic metadata ---------------------------------------------------------------

TEST_F(BrokerRoutesTest, CreatesGrowsAndDeletesAPartitionedTopic) {
  EXPECT_EQ(get(kTopics + "/p/partitions").json(), Json::parse(R"({"partitions":0})"));
  ASSERT_EQ(put(kTopics + "/p/partitions", "3").status, 204);
  EXPECT_EQ(get(kTopics + "/p/partitions").json(), Json::parse(R"({"partitions":3})"));
  Reply again = put(kTopics + "/p/partitions", "4");
  EXPECT_ERROR(again, 409);
  EXPECT_EQ(again.reason(), "This topic already exists");

  EXPECT_ERROR(post(kTopics + "/p/partitions", "2"), 412);
  EXPECT_ERROR(post(kTopics + "/p/partitions", "3"), 412);
  EXPECT_EQ(post(kTopics + "/p/partitions", R"({"partitions":5})").status, 204);
  EXPECT_EQ(get(kTopics + "/p/partitions").json()["partitions"], 5);

  // The object form, with properties.
  ASSERT_EQ(put(kTopics + "/q/partitions", R"({"partitions":2,"properties":{"k":"v"}})").status,
            204);
  EXPECT_EQ(get(kTopics + "/q/partitions").json()["partitions"], 2);

  EXPECT_EQ(del(kTopics + "/p/partitions").status, 204);
  EXPECT_EQ(get(kTopics + "/p/partitions").json()["partitions"], 0);
  EXPECT_ERROR(del(kTopics + "/p/partitions"), 404);
  EXPECT_ERROR(post(kTopics + "/p/partitions", "7"), 404);
  EXPECT_EQ(get(kTopics + "/partitioned").json(),
            Json::parse(R"(["persistent://public/default/q"])"));
}

TEST_F(BrokerRoutesTest, DeletingAPartitionedTopicInUseNeedsForce) {
  ASSERT_EQ(put(kTopics + "/p/partitions", "2").status, 204);
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/p-partition-1", 1);
  EXPECT_ERROR(del(kTopics + "/p/partitions"), 412);
  EXPECT_EQ(get(kTopics + "/p/partitions").json()["partitions"], 2);
  EXPECT_EQ(del(kTopics + "/p/partitions?force=true").status, 204);
  EXPECT_EQ(get(kTopics + "/p/partitions").json()["partitions"], 0);
  EXPECT_ERROR(get(kTopics + "/p-partition-1/stats"), 404);
}

TEST_F(BrokerRoutesTest, PartitionsOfAnExistingNonPartitionedTopicIs409) {
  ASSERT_EQ(put(kTopics + "/plain").status, 204);
  Reply r = put(kTopics + "/plain/partitions", "2");
  EXPECT_ERROR(r, 409);
  EXPECT_EQ(r.reason(), "This topic already exists");
}

TEST_F(BrokerRoutesTest, RejectsBadPartitionCounts) {
  for (const char* body :
       {"", "abc", "\"3\"", "3.5", "1e2", "[3]", "true", "null", "{}", R"({"partitions":"3"})",
        R"({"partitions":2.5})", R"({"partition":2})", "99999999999999999999999"}) {
    EXPECT_ERROR(put(kTopics + "/p/partitions", body), 400) << "body: " << body;
  }
  for (const char* body : {"0", "-1", R"({"partitions":0})", "9223372036854775807",
                           "-9223372036854775808", "18446744073709551615"}) {
    EXPECT_ERROR(put(kTopics + "/p/partitions", body), 412) << "body: " << body;
  }
  // A partition cannot be partitioned.
  EXPECT_ERROR(put(kTopics + "/p-partition-0/partitions", "2"), 412);
  // Nothing was created.
  EXPECT_EQ(get(kTopics + "/p/partitions").json()["partitions"], 0);
  ASSERT_EQ(put(kTopics + "/p/partitions", "2").status, 204);
  EXPECT_ERROR(post(kTopics + "/p/partitions", "x"), 400);
  EXPECT_ERROR(post(kTopics + "/p/partitions", "0"), 412);
  EXPECT_ERROR(call("PATCH", kTopics + "/p/partitions"), 405);
}

TEST_F(BrokerRoutesTest, PartitionsInAnUnknownNamespaceAre404) {
  EXPECT_ERROR(put("/admin/v2/persistent/public/nope/p/partitions", "2"), 404);
  EXPECT_ERROR(get("/admin/v2/persistent/public/nope/p/partitions"), 404);
  EXPECT_ERROR(del("/admin/v2/persistent/public/nope/p/partitions"), 404);
}

// --- Topic create / delete --------------------------------------------------------------------

TEST_F(BrokerRoutesTest, CreatesAndDeletesATopic) {
  EXPECT_EQ(put(kTopics + "/t").status, 204);
  Reply again = put(kTopics + "/t");
  EXPECT_ERROR(again, 409);
  EXPECT_EQ(again.reason(), "This topic already exists");
  EXPECT_EQ(get(kTopics + "/t/stats").status, 200);
  EXPECT_EQ(del(kTopics + "/t").status, 204);
  EXPECT_ERROR(get(kTopics + "/t/stats"), 404);
  EXPECT_ERROR(del(kTopics + "/t"), 404);
  EXPECT_ERROR(del(kTopics + "/never"), 404);
  // A partitioned topic's name is taken.
  ASSERT_EQ(put(kTopics + "/p/partitions", "2").status, 204);
  EXPECT_ERROR(put(kTopics + "/p"), 409);
  EXPECT_ERROR(get(kTopics + "/t"), 405);
}

TEST_F(BrokerRoutesTest, DeleteWithAConnectedProducerNeedsForce) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/busy", 1);
  Reply refused = del(kTopics + "/busy");
  EXPECT_ERROR(refused, 412);
  EXPECT_EQ(get(kTopics + "/busy/stats").status, 200);
  EXPECT_EQ(del(kTopics + "/busy?force=true").status, 204);
  EXPECT_ERROR(get(kTopics + "/busy/stats"), 404);
}

TEST_F(BrokerRoutesTest, TopicOperationsInAnUnknownNamespaceAre404) {
  EXPECT_ERROR(put("/admin/v2/persistent/public/nope/t"), 404);
  EXPECT_ERROR(del("/admin/v2/persistent/public/nope/t"), 404);
  EXPECT_ERROR(get("/admin/v2/persistent/public/nope/t/stats"), 404);
  EXPECT_ERROR(put("/admin/v2/persistent/public/nope/t/subscription/s"), 404);
}

// --- Stats and friends ------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, StatsInternalStatsSubscriptionsAndLastMessageId) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ids = produce(*c, "persistent://public/default/s", 5);
  ASSERT_EQ(ids.size(), 5u);

  Reply stats = get(kTopics + "/s/stats");
  ASSERT_EQ(stats.status, 200) << stats;
  EXPECT_EQ(stats.json()["msgInCounter"], 5);
  EXPECT_EQ(stats.json()["publishers"].size(), 1u);
  EXPECT_TRUE(stats.json()["subscriptions"].is_object());

  Reply internal = get(kTopics + "/s/internalStats");
  ASSERT_EQ(internal.status, 200) << internal;
  EXPECT_EQ(internal.json()["entriesAddedCounter"], 5);
  EXPECT_TRUE(internal.json()["ledgers"].is_array());

  EXPECT_EQ(get(kTopics + "/s/subscriptions").json(), Json::array());
  ASSERT_EQ(put(kTopics + "/s/subscription/sub-a").status, 204);
  EXPECT_EQ(get(kTopics + "/s/subscriptions").json(), Json::parse(R"(["sub-a"])"));

  Reply last = get(kTopics + "/s/lastMessageId");
  ASSERT_EQ(last.status, 200) << last;
  EXPECT_EQ(last.json()["ledgerId"].get<uint64_t>(), ids.back().ledgerid());
  EXPECT_EQ(last.json()["entryId"].get<uint64_t>(), ids.back().entryid());
}

TEST_F(BrokerRoutesTest, StatsOfUnknownTopicsAre404) {
  for (const char* op : {"stats", "internalStats", "subscriptions", "lastMessageId"}) {
    Reply r = get(kTopics + "/nope/" + op);
    EXPECT_ERROR(r, 404);
    EXPECT_EQ(r.reason(), "Topic not found") << op;
  }
  EXPECT_ERROR(get(kTopics + "/nope/whatever"), 404);
  EXPECT_ERROR(post(kTopics + "/nope/stats"), 404);
}

TEST_F(BrokerRoutesTest, PartitionedStatsAddUpThePartitions) {
  ASSERT_EQ(put(kTopics + "/ps/partitions", "2").status, 204);
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/ps-partition-0", 2, 1);
  produce(*c, "persistent://public/default/ps-partition-1", 3, 2);

  Reply r = get(kTopics + "/ps/partitioned-stats");
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.json()["metadata"]["partitions"], 2);
  EXPECT_EQ(r.json()["msgInCounter"], 5);
  EXPECT_TRUE(r.json()["partitions"].empty());

  Reply per = get(kTopics + "/ps/partitioned-stats?perPartition=true");
  ASSERT_EQ(per.status, 200) << per;
  Json parts = per.json()["partitions"];
  ASSERT_EQ(parts.size(), 2u) << per;
  EXPECT_EQ(parts["persistent://public/default/ps-partition-0"]["msgInCounter"], 2);
  EXPECT_EQ(parts["persistent://public/default/ps-partition-1"]["msgInCounter"], 3);

  ASSERT_EQ(put(kTopics + "/plain").status, 204);
  EXPECT_ERROR(get(kTopics + "/plain/partitioned-stats"), 404);
  EXPECT_ERROR(get(kTopics + "/nope/partitioned-stats"), 404);
}

// --- Subscriptions ----------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, CreatesAndDeletesSubscriptions) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ids = produce(*c, "persistent://public/default/t", 5);
  ASSERT_EQ(ids.size(), 5u);

  // Without a body: at the end.
  EXPECT_EQ(put(kTopics + "/t/subscription/latest").status, 204);
  EXPECT_EQ(backlog("t", "latest"), 0);
  Reply again = put(kTopics + "/t/subscription/latest");
  EXPECT_ERROR(again, 409);
  EXPECT_EQ(again.reason(), "Subscription already exists for topic");

  // At a message: it is the first one read.
  EXPECT_EQ(put(kTopics + "/t/subscription/third", message_id(ids[2])).status, 204);
  EXPECT_EQ(backlog("t", "third"), 3);
  // MessageId.earliest (-1:-1) and MessageId.latest (Long.MAX_VALUE twice), as pulsar-admin
  // sends them.
  EXPECT_EQ(put(kTopics + "/t/subscription/earliest", R"({"ledgerId":-1,"entryId":-1})").status,
            204);
  EXPECT_EQ(backlog("t", "earliest"), 5);
  const std::string latest =
      R"({"ledgerId":9223372036854775807,"entryId":9223372036854775807,"partitionIndex":-1})";
  EXPECT_EQ(put(kTopics + "/t/subscription/max", latest).status, 204);
  EXPECT_EQ(backlog("t", "max"), 0);

  EXPECT_EQ(del(kTopics + "/t/subscription/third").status, 204);
  EXPECT_EQ(backlog("t", "third"), -1);
  EXPECT_ERROR(del(kTopics + "/t/subscription/third"), 404);
  EXPECT_ERROR(del(kTopics + "/t/subscription/never"), 404);
  // On a topic that does not exist: created, as Pulsar does with auto-creation on.
  EXPECT_EQ(put(kTopics + "/unknown-topic/subscription/s").status, 204);
  EXPECT_EQ(backlog("unknown-topic", "s"), 0);
}

TEST_F(BrokerRoutesTest, RejectsMalformedSubscriptionBodies) {
  ASSERT_EQ(put(kTopics + "/t").status, 204);
  for (const char* body : {"{", "[]", "3", "\"x\"", "{}", R"({"ledgerId":1})", R"({"entryId":1})",
                           R"({"ledgerId":"1","entryId":1})", R"({"ledgerId":1,"entryId":1.5})",
                           R"({"ledgerId":1e40,"entryId":1})"}) {
    EXPECT_ERROR(put(kTopics + "/t/subscription/s", body), 400) << "body: " << body;
  }
  EXPECT_EQ(get(kTopics + "/t/subscriptions").json(), Json::array());
  EXPECT_ERROR(get(kTopics + "/t/subscription/s"), 404);
}

// DELETE .../subscription/{sub} refuses while a consumer is connected (412 "Subscription has
// active connected consumers", as Pulsar's admin call), unless ?force=true.
TEST_F(BrokerRoutesTest, DeletingASubscriptionWithAConsumerNeedsForce) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(
      c->subscribe("persistent://public/default/t", "busy", wire::CommandSubscribe::Shared, 1)
          .ok());
  Reply refused = del(kTopics + "/t/subscription/busy");
  EXPECT_ERROR(refused, 412);
  EXPECT_EQ(refused.reason(), "Subscription has active connected consumers");
  EXPECT_EQ(get(kTopics + "/t/subscriptions").json(), Json::parse(R"(["busy"])"));
  EXPECT_EQ(del(kTopics + "/t/subscription/busy?force=true").status, 204);
  EXPECT_EQ(get(kTopics + "/t/subscriptions").json(), Json::array());
}

TEST_F(BrokerRoutesTest, SkipAndSkipAllMoveTheCursor) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ids = produce(*c, "persistent://public/default/t", 10);
  ASSERT_EQ(ids.size(), 10u);
  ASSERT_EQ(put(kTopics + "/t/subscription/s", message_id(ids[0])).status, 204);
  EXPECT_EQ(backlog("t", "s"), 10);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/skip/3").status, 204);
  EXPECT_EQ(backlog("t", "s"), 7);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/skip/0").status, 204);
  EXPECT_EQ(backlog("t", "s"), 7);
  // More than the backlog: stops at the end.
  EXPECT_EQ(post(kTopics + "/t/subscription/s/skip/9223372036854775807").status, 204);
  EXPECT_EQ(backlog("t", "s"), 0);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/resetcursor", message_id(ids[0])).status, 204);
  EXPECT_EQ(backlog("t", "s"), 10);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/skip_all").status, 204);
  EXPECT_EQ(backlog("t", "s"), 0);
}

TEST_F(BrokerRoutesTest, SkipRejectsBadInput) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/t", 2);
  ASSERT_EQ(put(kTopics + "/t/subscription/s", R"({"ledgerId":-1,"entryId":-1})").status, 204);
  for (const char* n : {"abc", "-1", "1.5", "99999999999999999999", "0x10", "%20"}) {
    EXPECT_ERROR(post(kTopics + "/t/subscription/s/skip/" + n), 400) << n;
  }
  EXPECT_ERROR(post(kTopics + "/t/subscription/s/skip"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription/s/skip_all/3"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription/s/skip/1/2"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription/s/jump/1"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription//skip_all"), 412);
  EXPECT_ERROR(post(kTopics + "/t/subscription/nope/skip/1"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription/nope/skip_all"), 404);
  EXPECT_ERROR(post(kTopics + "/nope/subscription/s/skip_all"), 404);
  EXPECT_EQ(backlog("t", "s"), 2);
}

TEST_F(BrokerRoutesTest, ResetCursorByTimestampAndByMessageId) {
  auto c = client();
  ASSERT_TRUE(c);
  const int64_t hour_ago = now_ms() - 3'600'000;
  auto old_ids =
      produce(*c, "persistent://public/default/t", 3, 1, static_cast<uint64_t>(hour_ago));
  auto new_ids = produce(*c, "persistent://public/default/t", 4, 1, 0, 3);
  ASSERT_EQ(old_ids.size() + new_ids.size(), 7u);
  ASSERT_EQ(put(kTopics + "/t/subscription/s").status, 204);
  EXPECT_EQ(backlog("t", "s"), 0);

  // Back to the first message published at or after half an hour ago: the 4 new ones.
  const std::string half_hour_ago = std::to_string(now_ms() - 1'800'000);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/resetcursor/" + half_hour_ago).status, 204);
  EXPECT_EQ(backlog("t", "s"), 4);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/resetcursor/0").status, 204);
  EXPECT_EQ(backlog("t", "s"), 7);
  EXPECT_EQ(
      post(kTopics + "/t/subscription/s/resetcursor/" + std::to_string(now_ms() + 60'000)).status,
      204);
  EXPECT_EQ(backlog("t", "s"), 0);
  EXPECT_EQ(post(kTopics + "/t/subscription/s/resetcursor/9223372036854775807").status, 204);
  EXPECT_EQ(backlog("t", "s"), 0);

  EXPECT_EQ(post(kTopics + "/t/subscription/s/resetcursor", message_id(old_ids[1])).status, 204);
  EXPECT_EQ(backlog("t", "s"), 6);
}

TEST_F(BrokerRoutesTest, ResetCursorRejectsBadInput) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/t", 2);
  ASSERT_EQ(put(kTopics + "/t/subscription/s", R"({"ledgerId":-1,"entryId":-1})").status, 204);
  for (const char* ts : {"abc", "-5", "1.5", "99999999999999999999", "1e3"}) {
    EXPECT_ERROR(post(kTopics + "/t/subscription/s/resetcursor/" + ts), 400) << ts;
  }
  for (const char* body : {"", "{", "[1,2]", "42", R"({"ledgerId":"a","entryId":0})",
                           R"({"entryId":0})", "\x01\x02\xff"}) {
    EXPECT_ERROR(post(kTopics + "/t/subscription/s/resetcursor", body), 400) << body;
  }
  EXPECT_ERROR(post(kTopics + "/t/subscription/nope/resetcursor/0"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription/nope/resetcursor", R"({"ledgerId":1,"entryId":0})"),
               404);
  EXPECT_EQ(backlog("t", "s"), 2);
}

TEST_F(BrokerRoutesTest, ExpireMessagesOfOneAndOfAllSubscriptions) {
  auto c = client();
  ASSERT_TRUE(c);
  const auto hour_ago = static_cast<uint64_t>(now_ms() - 3'600'000);
  produce(*c, "persistent://public/default/t", 3, 1, hour_ago);
  produce(*c, "persistent://public/default/t", 2, 1, 0, 3);
  for (const char* sub : {"a", "b", "c"}) {
    ASSERT_EQ(put(kTopics + "/t/subscription/" + sub, R"({"ledgerId":-1,"entryId":-1})").status,
              204);
    EXPECT_EQ(backlog("t", sub), 5);
  }
  // Older than a day: nothing.
  EXPECT_EQ(post(kTopics + "/t/subscription/a/expireMessages/86400").status, 204);
  EXPECT_EQ(backlog("t", "a"), 5);
  // Older than a minute: the three old ones, on "a" only.
  EXPECT_EQ(post(kTopics + "/t/subscription/a/expireMessages/60").status, 204);
  EXPECT_EQ(backlog("t", "a"), 2);
  EXPECT_EQ(backlog("t", "b"), 5);
  EXPECT_EQ(post(kTopics + "/t/all_subscription/expireMessages/60").status, 204);
  EXPECT_EQ(backlog("t", "b"), 2);
  EXPECT_EQ(backlog("t", "c"), 2);
  EXPECT_EQ(backlog("t", "a"), 2);
  // Everything.
  EXPECT_EQ(post(kTopics + "/t/all_subscription/expireMessages/0").status, 204);
  EXPECT_EQ(backlog("t", "b"), 0);
}

TEST_F(BrokerRoutesTest, ExpireMessagesRejectsBadInput) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/t", 2);
  ASSERT_EQ(put(kTopics + "/t/subscription/s", R"({"ledgerId":-1,"entryId":-1})").status, 204);
  for (const std::string n : {"abc", "-1", "2.5", "99999999999999999999"}) {
    EXPECT_ERROR(post(kTopics + "/t/subscription/s/expireMessages/" + n), 400) << n;
    EXPECT_ERROR(post(kTopics + "/t/all_subscription/expireMessages/" + n), 400) << n;
  }
  EXPECT_ERROR(post(kTopics + "/t/subscription/s/expireMessages"), 404);
  EXPECT_ERROR(post(kTopics + "/t/all_subscription/expireMessages"), 404);
  EXPECT_ERROR(post(kTopics + "/t/subscription/nope/expireMessages/1"), 404);
  EXPECT_ERROR(post(kTopics + "/nope/all_subscription/expireMessages/1"), 404);
  EXPECT_EQ(backlog("t", "s"), 2);
}

// expireMessages/{seconds} with seconds beyond the epoch expires nothing (and the cut-off
// computation does not overflow: `seconds * 1000` once wrapped and expired everything).
TEST_F(BrokerRoutesTest, ExpireMessagesWithAHugeTimeExpiresNothing) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/t", 3);
  ASSERT_EQ(put(kTopics + "/t/subscription/s", R"({"ledgerId":-1,"entryId":-1})").status, 204);
  Reply one = post(kTopics + "/t/subscription/s/expireMessages/9223372036854775807");
  EXPECT_TRUE(one.status == 204 || one.status == 400) << one;
  EXPECT_EQ(backlog("t", "s"), 3);
  Reply all = post(kTopics + "/t/all_subscription/expireMessages/9223372036854775807");
  EXPECT_TRUE(all.status == 204 || all.status == 400) << all;
  EXPECT_EQ(backlog("t", "s"), 3);
}

// --- Unload and terminate ---------------------------------------------------------------------

TEST_F(BrokerRoutesTest, UnloadClosesTheTopicAndItReloads) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ids = produce(*c, "persistent://public/default/t", 3);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(put(kTopics + "/t/unload").status, 204);
  // The producer is closed by the broker.
  EXPECT_TRUE(c->receive(wire::BaseCommand::CLOSE_PRODUCER, 5s).ok());
  Reply stats = get(kTopics + "/t/stats");
  ASSERT_EQ(stats.status, 200) << stats;
  EXPECT_TRUE(stats.json()["publishers"].empty());
  Reply last = get(kTopics + "/t/lastMessageId");
  ASSERT_EQ(last.status, 200) << last;
  EXPECT_EQ(last.json()["entryId"].get<uint64_t>(), ids.back().entryid());
  EXPECT_ERROR(post(kTopics + "/t/unload"), 404);
}

// PUT .../{topic}/unload of a topic that does not exist answers 404 ("Topic not found").
TEST_F(BrokerRoutesTest, UnloadOfAnUnknownTopicIs404) {
  EXPECT_ERROR(put(kTopics + "/never-created/unload"), 404);
}

// Operations on a partitioned topic's own name apply to every partition: unload closes
// them all, PUT .../subscription/{sub} creates it on each, GET .../subscriptions lists the
// union.
TEST_F(BrokerRoutesTest, PartitionedTopicOperationsApplyToEveryPartition) {
  ASSERT_EQ(put(kTopics + "/pt/partitions", "2").status, 204);
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/pt-partition-1", 1);
  EXPECT_EQ(put(kTopics + "/pt/unload").status, 204);
  EXPECT_TRUE(c->receive(wire::BaseCommand::CLOSE_PRODUCER, 500ms).ok())
      << "the partition's producer was not closed";
  EXPECT_EQ(put(kTopics + "/pt/subscription/s").status, 204);
  Reply subs = get(kTopics + "/pt/subscriptions");
  EXPECT_EQ(subs.status, 200) << subs;
  EXPECT_EQ(get(kTopics + "/pt-partition-1/subscriptions").json(), Json::parse(R"(["s"])"));
}

TEST_F(BrokerRoutesTest, TerminateFreezesTheTopic) {
  auto c = client();
  ASSERT_TRUE(c);
  auto ids = produce(*c, "persistent://public/default/t", 3);
  ASSERT_EQ(ids.size(), 3u);
  Reply r = post(kTopics + "/t/terminate");
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.json()["ledgerId"].get<uint64_t>(), ids.back().ledgerid());
  EXPECT_EQ(r.json()["entryId"].get<uint64_t>(), ids.back().entryid());

  // Its producer is closed, and refused when it comes back (clients learn it at once).
  auto closed = c->receive(wire::BaseCommand::CLOSE_PRODUCER);
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  EXPECT_EQ(closed->command.close_producer().producer_id(), 1u);
  auto back = c->create_producer("persistent://public/default/t", 1);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(testing::server_error_of(back.status()), wire::TopicTerminatedError)
      << back.status().to_string();
  Reply last = get(kTopics + "/t/lastMessageId");
  ASSERT_EQ(last.status, 200) << last;
  EXPECT_EQ(last.json()["entryId"].get<uint64_t>(), ids.back().entryid());
  // Terminating again answers the same last message.
  Reply again = post(kTopics + "/t/terminate");
  EXPECT_EQ(again.status, 200) << again;
  EXPECT_EQ(again.json()["entryId"], r.json()["entryId"]);

  EXPECT_ERROR(post(kTopics + "/nope/terminate"), 404);
  EXPECT_ERROR(get(kTopics + "/t/terminate"), 404);
}

// --- Namespace bundles ------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, UnloadsABundle) {
  ASSERT_EQ(get(kLookup + "/t").status, 200);
  const std::string bundle = bundle_of("t");
  ASSERT_TRUE(owned_bundles().count("public/default/" + bundle));
  EXPECT_EQ(put(kNamespace + "/" + bundle + "/unload").status, 204);
  EXPECT_FALSE(owned_bundles().count("public/default/" + bundle));
  // Unowned: nothing to do.
  EXPECT_EQ(put(kNamespace + "/" + bundle + "/unload").status, 204);
  // A lookup takes it again.
  ASSERT_EQ(get(kLookup + "/t").status, 200);
  EXPECT_TRUE(owned_bundles().count("public/default/" + bundle));
}

TEST_F(BrokerRoutesTest, BundleOperationsRejectBadInput) {
  for (const char* op : {"unload", "split"}) {
    for (const char* name :
         {"foo", "0x00000000", "0x40000000_0x00000000", "0x00000000_0x00000000",
          "0x0000000g_0x40000000", "0x00000000_0x1ffffffff", "0x00000000-0x40000000", "_"}) {
      EXPECT_ERROR(put(kNamespace + "/" + name + "/" + op), 412) << op << " " << name;
    }
    EXPECT_ERROR(put("/admin/v2/namespaces/public/nope/0x00000000_0x40000000/" + std::string(op)),
                 404)
        << op;
    EXPECT_ERROR(put("/admin/v2/namespaces/nobody/x/0x00000000_0x40000000/" + std::string(op)), 404)
        << op;
    EXPECT_ERROR(post(kNamespace + "/0x00000000_0x40000000/" + std::string(op)), 405) << op;
  }
  // Not owned by anyone: a split has nothing to split.
  EXPECT_ERROR(put(kNamespace + "/0x00000000_0x40000000/split"), 412);
}

// A well-formed range that is not one of the namespace's bundles is refused with 412 (as
// Pulsar's validateNamespaceBundleRange does), not treated as an unowned bundle.
TEST_F(BrokerRoutesTest, UnloadOfARangeThatIsNoBundleIs412) {
  EXPECT_ERROR(put(kNamespace + "/0x00000001_0x00000002/unload"), 412);
}

TEST_F(BrokerRoutesTest, SplitsABundle) {
  ASSERT_EQ(get(kLookup + "/t").status, 200);
  const std::string bundle = bundle_of("t");
  ASSERT_EQ(namespace_policies()["bundles"]["boundaries"].size(), 5u);
  EXPECT_EQ(put(kNamespace + "/" + bundle + "/split").status, 204);
  Json bundles = namespace_policies()["bundles"];
  ASSERT_EQ(bundles["boundaries"].size(), 6u) << bundles;
  EXPECT_EQ(bundles["numBundles"], 5);
  // The topic is now in one of the halves, both owned here.
  const std::string half = bundle_of("t");
  EXPECT_NE(half, bundle);
  EXPECT_EQ(half.substr(0, 10) == bundle.substr(0, 10) || half.substr(11) == bundle.substr(11),
            true)
      << half << " in " << bundle;
  auto owned = owned_bundles();
  EXPECT_FALSE(owned.count("public/default/" + bundle));
  EXPECT_TRUE(owned.count("public/default/" + half));
  // The old range is no bundle any more.
  EXPECT_ERROR(put(kNamespace + "/" + bundle + "/split"), 412);

  // With ?unload=true both halves are released.
  EXPECT_EQ(put(kNamespace + "/" + half + "/split?unload=true").status, 204);
  EXPECT_EQ(namespace_policies()["bundles"]["boundaries"].size(), 7u);
  EXPECT_FALSE(owned_bundles().count("public/default/" + half));
  for (const auto& b : owned_bundles()) EXPECT_NE(b, "public/default/" + bundle_of("t"));
}

TEST_F(BrokerRoutesTest, UnloadsAWholeNamespace) {
  for (const char* t : {"a", "b", "c", "d", "e", "f"})
    ASSERT_EQ(get(kLookup + "/" + t).status, 200);
  ASSERT_FALSE(owned_bundles().empty());
  EXPECT_EQ(put(kNamespace + "/unload").status, 204);
  EXPECT_TRUE(owned_bundles().empty());
  EXPECT_EQ(put(kNamespace + "/unload").status, 204);
  EXPECT_ERROR(put("/admin/v2/namespaces/public/nope/unload"), 404);
  EXPECT_ERROR(put("/admin/v2/namespaces/nobody/x/unload"), 404);
  EXPECT_ERROR(post(kNamespace + "/unload"), 405);
}

// --- Brokers ----------------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, ListsTheActiveBrokersOfTheCluster) {
  Reply r = get("/admin/v2/brokers/test");
  ASSERT_EQ(r.status, 200) << r;
  EXPECT_EQ(r.json(), Json::array({fmt::format("127.0.0.1:{}", server_->web_port())}));
  // Without a cluster: this cluster's brokers too.
  Reply all = get("/admin/v2/brokers");
  ASSERT_EQ(all.status, 200) << all;
  EXPECT_EQ(all.json(), r.json());
  Reply unknown = get("/admin/v2/brokers/other");
  EXPECT_ERROR(unknown, 404);
  EXPECT_EQ(unknown.reason(), "Cluster other does not exist");
  EXPECT_ERROR(get("/admin/v2/brokers/"), 404);
  EXPECT_ERROR(get("/admin/v2/brokers/test/x"), 404);
  EXPECT_ERROR(get("/admin/v2/brokers/test/x/y/z"), 404);
}

TEST_F(BrokerRoutesTest, HealthAndLeader) {
  Reply health = get("/admin/v2/brokers/health");
  EXPECT_EQ(health.status, 200) << health;
  EXPECT_EQ(health.body, "ok");
  Reply leader = get("/admin/v2/brokers/leaderBroker");
  ASSERT_EQ(leader.status, 200) << leader;
  EXPECT_EQ(leader.json()["serviceUrl"], base_);
  EXPECT_EQ(leader.json()["brokerId"], fmt::format("127.0.0.1:{}", server_->web_port()));
  EXPECT_NE(call("POST", "/admin/v2/brokers/health").status, 200);
  EXPECT_NE(call("DELETE", "/admin/v2/brokers/leaderBroker").status, 200);
}

TEST_F(BrokerRoutesTest, BrokersOfAStandaloneBroker) {
  start_server({}, /*load_manager=*/false);
  ASSERT_TRUE(server_);
  Reply list = get("/admin/v2/brokers/test");
  ASSERT_EQ(list.status, 200) << list;
  EXPECT_EQ(list.json(), Json::array({fmt::format("127.0.0.1:{}", server_->web_port())}));
  EXPECT_ERROR(get("/admin/v2/brokers/other"), 404);
  Reply leader = get("/admin/v2/brokers/leaderBroker");
  ASSERT_EQ(leader.status, 200) << leader;
  EXPECT_EQ(leader.json()["serviceUrl"], base_);
  EXPECT_EQ(get("/admin/v2/brokers/health").status, 200);
  // Every bundle is taken here at its first lookup.
  ASSERT_EQ(get(kLookup + "/t").status, 200);
  EXPECT_TRUE(owned_bundles().count("public/default/" + bundle_of("t")));
}

TEST_F(BrokerRoutesTest, OwnedNamespacesListsTheBundlesServedHere) {
  EXPECT_TRUE(owned_bundles().empty());
  ASSERT_EQ(get(kLookup + "/t").status, 200);
  const std::string bundle = "public/default/" + bundle_of("t");
  Reply r =
      get(fmt::format("/admin/v2/brokers/test/127.0.0.1:{}/ownedNamespaces", server_->web_port()));
  ASSERT_EQ(r.status, 200) << r;
  ASSERT_TRUE(r.json().contains(bundle)) << r;
  EXPECT_EQ(r.json()[bundle]["is_active"], true);
  EXPECT_EQ(r.json()[bundle]["broker_assignment"], "shared");
}

// GET /admin/v2/brokers/{cluster}/{broker}/ownedNamespaces checks the cluster (404) and the
// broker: a registered other broker gets a 307, an unknown one an error, never this broker's
// list.
TEST_F(BrokerRoutesTest, OwnedNamespacesOfAnUnknownClusterIs404) {
  ASSERT_EQ(get(kLookup + "/t").status, 200);
  EXPECT_ERROR(
      get(fmt::format("/admin/v2/brokers/other/127.0.0.1:{}/ownedNamespaces", server_->web_port())),
      404);
  Reply other_broker = get("/admin/v2/brokers/test/10.255.255.1:8080/ownedNamespaces");
  EXPECT_NE(other_broker.status, 200) << other_broker;
}

// --- Garbage ----------------------------------------------------------------------------------

TEST_F(BrokerRoutesTest, GarbageBodiesNeverGiveA500) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/t", 2);
  ASSERT_EQ(put(kTopics + "/t/subscription/s").status, 204);
  std::mt19937 rng(42);
  std::vector<std::string> bodies = {"",
                                     "null",
                                     "{}",
                                     "[]",
                                     "-0",
                                     "1e400",
                                     "-99999999999999999999999999",
                                     "18446744073709551616",
                                     R"({"partitions":null})",
                                     R"({"partitions":[1]})",
                                     R"({"partitions":{"a":1}})",
                                     R"({"ledgerId":null,"entryId":null})",
                                     R"({"ledgerId":[],"entryId":{}})",
                                     R"({"ledgerId":18446744073709551615,"entryId":-5})",
                                     "\"\xff\xfe\"",
                                     std::string(100000, '['),
                                     std::string("\0\0\0", 3)};
  for (int i = 0; i < 8; ++i) {
    std::string random(static_cast<size_t>(rng() % 200), '\0');
    for (auto& ch : random) ch = static_cast<char>(rng());
    bodies.push_back(random);
  }
  const std::vector<std::pair<std::string, std::string>> targets = {
      {"PUT", kTopics + "/g/partitions"},
      {"POST", kTopics + "/g/partitions"},
      {"PUT", kTopics + "/t/subscription/g"},
      {"POST", kTopics + "/t/subscription/s/resetcursor"},
      {"POST", kTopics + "/t/subscription/s/skip/1"},
      {"POST", kTopics + "/t/subscription/s/skip_all"},
      {"POST", kTopics + "/t/subscription/s/expireMessages/1000"},
      {"POST", kTopics + "/t/terminate"},
      {"PUT", kTopics + "/t/unload"},
      {"PUT", kNamespace + "/0x00000000_0x40000000/unload"},
      {"PUT", kNamespace + "/0x00000000_0x40000000/split"},
      {"PUT", kTopics + "/g2"},
  };
  for (const auto& [method, target] : targets) {
    for (const auto& body : bodies) {
      Reply r = call(method, target, body);
      EXPECT_NE(r.status, 0) << method << " " << target;
      EXPECT_LT(r.status, 500) << method << " " << target << " body of " << body.size()
                               << " bytes: " << r;
    }
  }
  Reply health = get("/admin/v2/brokers/health");
  EXPECT_EQ(health.status, 200) << health;
}

TEST_F(BrokerRoutesTest, GarbagePathsNeverGiveA500) {
  ASSERT_EQ(put(kTopics + "/t").status, 204);
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"GET", "/lookup/v2/topic/persistent/public/default/%00"},
      {"GET", "/lookup/v2/topic/persistent/public/default/a%2F%2Fb"},
      {"GET", "/lookup/v2/topic/persistent/public/default/" + std::string(3000, 'x')},
      {"GET", "/lookup/v2/topic/persistent/%2E%2E/default/t"},
      {"GET", "/lookup/v2/topic/persistent/public/default/t?authoritative=maybe"},
      {"GET", kTopics + "/t/stats?x=%zz"},
      {"PUT", kTopics + "/%00"},
      {"PUT", kTopics + "/a:b"},
      {"PUT", kTopics + "/t/subscription/%2F"},
      {"DELETE", kTopics + "/t/subscription/"},
      {"POST", kTopics + "/t/subscription/s/skip/" + std::string(400, '9')},
      {"POST", kTopics + "/t/subscription/s/resetcursor/-9223372036854775808"},
      {"POST", kTopics + "/t/all_subscription/expireMessages/-9223372036854775808"},
      {"POST", kTopics + "/t/all_subscription/x/1"},
      {"PUT", kTopics + "/t-partition-99999999999999999999/partitions"},
      {"GET", kTopics + "/t-partition-99999999999999999999/stats"},
      {"PUT", kNamespace + "/0xffffffff_0xffffffff/split"},
      {"PUT", kNamespace + "/0x00000000_0xffffffff/unload?destinationBroker=%00"},
      {"PUT", kNamespace + "//unload"},
      {"GET", "/admin/v2/brokers/test//ownedNamespaces"},
  };
  for (const auto& [method, target] : requests) {
    Reply r = call(method, target);
    EXPECT_NE(r.status, 0) << method << " " << target;
    EXPECT_LT(r.status, 500) << method << " " << target << ": " << r;
  }
}

// A path segment that is not UTF-8 (%FF) quoted in a reason or stored as a name never makes
// a 500: JSON output replaces the bytes that are not UTF-8.
TEST_F(BrokerRoutesTest, NonUtf8PathSegmentsAreNot500) {
  ASSERT_EQ(put(kTopics + "/t").status, 204);
  const std::vector<std::pair<std::string, std::string>> requests = {
      {"GET", "/admin/v2/brokers/%FF"},
      {"GET", "/lookup/v2/topic/%FF/public/default/t"},
      {"GET", "/lookup/v2/topic/persistent/public/default/%FF"},
      {"PUT", kNamespace + "/%FF/unload"},
      {"PUT", kTopics + "/%FF"},
      {"GET", kTopics + "/%FF/stats"},
      {"GET", kTopics},
      {"PUT", kTopics + "/t/subscription/%FF"},
      {"GET", kTopics + "/t/subscriptions"},
      {"GET", kTopics + "/t/stats"},
  };
  for (const auto& [method, target] : requests) {
    Reply r = call(method, target);
    EXPECT_NE(r.status, 0) << method << " " << target;
    EXPECT_LT(r.status, 500) << method << " " << target << ": " << r;
  }
}

}  // namespace
}  // namespace magnetar::broker::routes_test
