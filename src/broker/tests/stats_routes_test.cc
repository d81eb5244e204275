// Rates in topic stats and in /metrics, as Pulsar computes them: once per stats period
// (statsUpdateFrequencyInSecs, here one second), the growth of each counter over the
// period, per second; the storage write latency and entry size buckets of the period with
// Pulsar's metric names; partitioned-stats adding up its partitions.

#include <map>
#include <sstream>
#include <thread>

#include "broker/service/rates.h"
#include "broker/tests/broker_routes_fixture.h"

namespace magnetar::broker::routes_test {
namespace {

// Every sample of an exposition, keyed by `name{labels}` as written.
std::map<std::string, double> samples(const std::string& exposition) {
  std::map<std::string, double> out;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[line.substr(0, space)] = std::stod(line.substr(space + 1));
  }
  return out;
}

std::string topic_labels(const std::string& topic) {
  return fmt::format(R"({{cluster="test",namespace="public/default",topic="{}"}})", topic);
}

class StatsRoutesTest : public BrokerRoutesTest {
 protected:
  void configure(BrokerConfig& c) override { c.stats_update_frequency_seconds = 1; }

  using Predicate = std::function<bool(const Json&)>;
  // Polls `topic`'s stats (at most 10 s) until each predicate has held once; returns, for
  // each, the first stats it held on. (The rates of a burst may show over two periods: each
  // predicate is about one of them.)
  std::vector<Json> stats_seen(const std::string& topic, const std::vector<Predicate>& preds) {
    std::vector<Json> seen(preds.size());
    std::vector<bool> held(preds.size(), false);
    Json j;
    for (int i = 0; i < 400; ++i) {
      j = get(kTopics + "/" + topic + "/stats").json();
      bool all = true;
      for (size_t k = 0; k < preds.size(); ++k) {
        if (!held[k] && j.is_object() && preds[k](j)) {
          held[k] = true;
          seen[k] = j;
        }
        all = all && held[k];
      }
      if (all) return seen;
      std::this_thread::sleep_for(25ms);
    }
    ADD_FAILURE() << "stats of " << topic << " never matched every predicate: " << j.dump();
    return seen;
  }
  Json stats_when(const std::string& topic, const Predicate& pred) {
    return stats_seen(topic, {pred})[0];
  }
};

TEST(RateMeterTest, RatesAreTheGrowthOverThePeriod) {
  RateMeter r;
  r.update(100, 5000, 2.0);
  EXPECT_DOUBLE_EQ(r.msg_rate(), 50);
  EXPECT_DOUBLE_EQ(r.byte_rate(), 2500);
  EXPECT_DOUBLE_EQ(r.average_size(), 50);
  r.update(100, 5000, 0.0);  // no time passed: nothing changes
  EXPECT_DOUBLE_EQ(r.msg_rate(), 50);
  r.update(130, 5300, 3.0);
  EXPECT_DOUBLE_EQ(r.msg_rate(), 10);
  EXPECT_DOUBLE_EQ(r.byte_rate(), 100);
  r.update(130, 5300, 1.0);
  EXPECT_DOUBLE_EQ(r.msg_rate(), 0);
  EXPECT_DOUBLE_EQ(r.average_size(), 0);
  r.update(4, 40, 1.0);  // a counter that restarted from zero
  EXPECT_DOUBLE_EQ(r.msg_rate(), 4);
}

TEST(PeriodBucketsTest, CountsThePeriodIntoPulsarsBuckets) {
  PeriodBuckets b(write_latency_bounds_ms());
  for (double v : {0.2, 0.5, 0.7, 3.0, 999.0, 1000.0, 1500.0}) b.observe(v);
  auto p = b.roll();
  ASSERT_EQ(p.buckets.size(), 10u);  // le_0_5 ... le_1000, overflow
  EXPECT_EQ(p.buckets[0], 2);        // 0.2, 0.5 (a bound is inclusive)
  EXPECT_EQ(p.buckets[1], 1);
  EXPECT_EQ(p.buckets[2], 1);
  EXPECT_EQ(p.buckets[8], 2);
  EXPECT_EQ(p.buckets[9], 1);
  EXPECT_EQ(p.count, 7);
  EXPECT_DOUBLE_EQ(p.sum, 0.2 + 0.5 + 0.7 + 3.0 + 999.0 + 1000.0 + 1500.0);
  auto next = b.roll();  // a new period starts empty
  EXPECT_EQ(next.count, 0);
  EXPECT_EQ(next.buckets, std::vector<int64_t>(10, 0));
  EXPECT_EQ(entry_size_bounds_bytes().size() + 1, 9u);  // le_128 ... le_1_mb, le_overflow
}

TEST_F(StatsRoutesTest, TopicStatsCarryTheRatesOfTheLastPeriod) {
  const std::string topic = "persistent://public/default/rates";
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->subscribe(topic, "sub", wire::CommandSubscribe::Shared, 9).ok());
  ASSERT_TRUE(c->flow(9, 1000).ok());
  auto ids = produce(*c, topic, 40);
  ASSERT_EQ(ids.size(), 40u);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(c->receive_message(5s).ok()) << i;
  // Redeliveries count for msgRateRedeliver.
  ASSERT_TRUE(c->redeliver_unacknowledged(9).ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(c->receive_message(5s).ok()) << i;

  auto seen = stats_seen(
      "rates",
      {[](const Json& j) { return j.value("msgRateIn", 0.0) > 0; },
       [](const Json& j) { return j.value("msgRateOut", 0.0) > 0; },
       [](const Json& j) {
         const Json sub = j.value("subscriptions", Json::object()).value("sub", Json::object());
         const Json consumers = sub.value("consumers", Json::array());
         return sub.value("msgRateRedeliver", 0.0) > 0 && consumers.size() == 1 &&
                consumers[0].value("msgRateRedeliver", 0.0) > 0;
       }});
  const Json& in = seen[0];
  EXPECT_GT(in["msgThroughputIn"].get<double>(), in["msgRateIn"].get<double>());
  // "m-0" .. "m-39" plus metadata: every message is a few dozen bytes.
  EXPECT_GT(in["averageMsgSize"].get<double>(), 3);
  EXPECT_LT(in["averageMsgSize"].get<double>(), 128);
  ASSERT_EQ(in["publishers"].size(), 1u);
  EXPECT_GT(in["publishers"][0]["msgRateIn"].get<double>(), 0);
  EXPECT_GT(in["publishers"][0]["msgThroughputIn"].get<double>(), 0);
  EXPECT_GT(in["publishers"][0]["averageMsgSize"].get<double>(), 0);
  const Json& out = seen[1];
  EXPECT_GT(out["msgThroughputOut"].get<double>(), 0);
  const Json& sub = out["subscriptions"]["sub"];
  EXPECT_GT(sub["msgRateOut"].get<double>(), 0);
  EXPECT_GT(sub["msgThroughputOut"].get<double>(), 0);
  ASSERT_EQ(sub["consumers"].size(), 1u);
  EXPECT_GT(sub["consumers"][0]["msgRateOut"].get<double>(), 0);
  const Json now = get(kTopics + "/rates/stats").json();
  EXPECT_EQ(now["subscriptions"]["sub"]["consumers"][0]["msgOutCounter"], 80);  // redeliveries in
  EXPECT_EQ(now["msgOutCounter"], 80);
  // Each producer's and consumer's client, as its CONNECT named it (Pulsar's clientVersion).
  EXPECT_EQ(now["publishers"][0]["clientVersion"], "magnetar-test");
  EXPECT_EQ(now["subscriptions"]["sub"]["consumers"][0]["clientVersion"], "magnetar-test");
  EXPECT_GT(now["bytesOutCounter"].get<int64_t>(), now["bytesInCounter"].get<int64_t>());

  // A quiet period brings every rate back to zero.
  Json quiet = stats_when("rates", [](const Json& j) {
    return j.value("msgRateIn", 1.0) == 0 && j.value("msgRateOut", 1.0) == 0;
  });
  EXPECT_EQ(quiet["averageMsgSize"].get<double>(), 0);
  EXPECT_EQ(quiet["publishers"][0]["msgRateIn"].get<double>(), 0);
  EXPECT_EQ(quiet["msgInCounter"], 40);  // the counters stay
}

TEST_F(StatsRoutesTest, MetricsExportPulsarsRatesAndBuckets) {
  const std::string topic = "persistent://public/default/exported";
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->subscribe(topic, "sub", wire::CommandSubscribe::Exclusive, 9).ok());
  ASSERT_TRUE(c->flow(9, 1000).ok());
  ASSERT_EQ(produce(*c, topic, 25).size(), 25u);
  for (int i = 0; i < 25; ++i) ASSERT_TRUE(c->receive_message(5s).ok()) << i;

  const std::string labels = topic_labels(topic);
  const std::string sub_labels = fmt::format(
      R"({{cluster="test",namespace="public/default",topic="{}",subscription="sub"}})", topic);
  // The period that stored the entries: its buckets add up to its count. (The dispatch may
  // show in the next period.)
  std::map<std::string, double> m;
  bool dispatched = false;
  for (int i = 0; i < 400; ++i) {
    auto now = samples(get("/metrics").body);
    dispatched = dispatched || now["pulsar_subscription_msg_rate_out" + sub_labels] > 0;
    if (m.empty() && now["pulsar_storage_write_latency_count" + labels] > 0) m = now;
    if (!m.empty() && dispatched) break;
    std::this_thread::sleep_for(25ms);
  }
  EXPECT_TRUE(dispatched);
  const double stored = m["pulsar_storage_write_latency_count" + labels];
  ASSERT_GT(stored, 0);
  double in_buckets = 0;
  for (const char* b : {"le_0_5", "le_1", "le_5", "le_10", "le_20", "le_50", "le_100", "le_200",
                        "le_1000", "overflow"}) {
    const std::string key = fmt::format("pulsar_storage_write_latency_{}{}", b, labels);
    ASSERT_TRUE(m.count(key)) << key;
    in_buckets += m[key];
  }
  EXPECT_EQ(in_buckets, stored);
  EXPECT_GT(m["pulsar_storage_write_latency_sum" + labels], 0);  // microseconds
  // The broker-wide publish latency summary (ms): every stored entry counted, Pulsar's
  // quantiles in order, each within the period's range.
  EXPECT_GE(m[R"(pulsar_broker_publish_latency_count{cluster="test"})"], stored);
  EXPECT_GT(m[R"(pulsar_broker_publish_latency_sum{cluster="test"})"], 0);
  double previous = 0;
  for (const char* q : {"0", "0.5", "0.95", "0.99", "0.999", "0.9999", "1"}) {
    const std::string key =
        fmt::format(R"(pulsar_broker_publish_latency{{cluster="test",quantile="{}"}})", q);
    ASSERT_TRUE(m.count(key)) << key;
    EXPECT_GT(m[key], 0) << key;
    EXPECT_GE(m[key], previous) << key;
    EXPECT_LT(m[key], 60'000) << key;
    previous = m[key];
  }
  // Small entries: all in the first size bucket.
  EXPECT_GT(m["pulsar_entry_size_count" + labels], 0);
  EXPECT_EQ(m["pulsar_entry_size_le_128" + labels], m["pulsar_entry_size_count" + labels]);
  for (const char* b : {"le_512", "le_1_kb", "le_2_kb", "le_4_kb", "le_16_kb", "le_100_kb",
                        "le_1_mb", "le_overflow"}) {
    const std::string key = fmt::format("pulsar_entry_size_{}{}", b, labels);
    ASSERT_TRUE(m.count(key)) << key;
    EXPECT_EQ(m[key], 0) << key;
  }
  EXPECT_GT(m["pulsar_entry_size_sum" + labels], 0);
  EXPECT_GT(m["pulsar_throughput_in" + labels], 0);
  EXPECT_GT(m["pulsar_average_msg_size" + labels], 0);
  EXPECT_GT(m["pulsar_storage_write_rate" + labels], 0);
  for (const char* name : {"pulsar_rate_out", "pulsar_throughput_out", "pulsar_storage_read_rate",
                           "pulsar_storage_backlog_size", "pulsar_storage_logical_size",
                           "pulsar_msg_backlog", "pulsar_storage_size"}) {
    EXPECT_TRUE(m.count(name + labels)) << name;
  }
  EXPECT_GT(m["pulsar_storage_logical_size" + labels], 0);
  EXPECT_TRUE(m.count("pulsar_subscription_msg_throughput_out" + sub_labels));
  EXPECT_TRUE(m.count("pulsar_subscription_msg_rate_redeliver" + sub_labels));
  EXPECT_GE(m[R"(pulsar_topics_count{cluster="test",namespace="public/default"})"], 1);
}

TEST_F(StatsRoutesTest, PartitionedStatsAddUpRatesSubscriptionsAndPublishers) {
  ASSERT_EQ(put(kTopics + "/agg/partitions", "2").status, 204);
  auto c = client();
  ASSERT_TRUE(c);
  const std::string p0 = "persistent://public/default/agg-partition-0";
  const std::string p1 = "persistent://public/default/agg-partition-1";
  ASSERT_TRUE(c->subscribe(p0, "sub", wire::CommandSubscribe::Shared, 10).ok());
  ASSERT_TRUE(c->subscribe(p1, "sub", wire::CommandSubscribe::Shared, 11).ok());
  ASSERT_TRUE(c->flow(10, 1000).ok());
  ASSERT_TRUE(c->flow(11, 1000).ok());
  ASSERT_EQ(produce(*c, p0, 20, 1).size(), 20u);
  ASSERT_EQ(produce(*c, p1, 10, 2).size(), 10u);
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(c->receive_message(5s).ok()) << i;
  stats_when("agg-partition-1", [](const Json& j) { return j.value("msgRateIn", 0.0) > 0; });

  Reply r = get(kTopics + "/agg/partitioned-stats?perPartition=true");
  ASSERT_EQ(r.status, 200) << r;
  const Json total = r.json();
  const Json& parts = total["partitions"];
  ASSERT_EQ(parts.size(), 2u) << r;
  for (const char* k : {"msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut"}) {
    EXPECT_DOUBLE_EQ(total[k].get<double>(),
                     parts[p0][k].get<double>() + parts[p1][k].get<double>())
        << k;
  }
  for (const char* k : {"msgInCounter", "bytesInCounter", "msgOutCounter", "bytesOutCounter",
                        "storageSize", "backlogSize"}) {
    EXPECT_EQ(total[k].get<int64_t>(), parts[p0][k].get<int64_t>() + parts[p1][k].get<int64_t>())
        << k;
  }
  EXPECT_EQ(total["msgInCounter"], 30);
  EXPECT_EQ(total["publishers"].size(), 2u);
  const Json& sub = total["subscriptions"]["sub"];
  EXPECT_EQ(sub["msgOutCounter"], 30);
  EXPECT_EQ(sub["consumers"].size(), 2u);
  EXPECT_EQ(sub["msgBacklog"].get<int64_t>(),
            parts[p0]["subscriptions"]["sub"]["msgBacklog"].get<int64_t>() +
                parts[p1]["subscriptions"]["sub"]["msgBacklog"].get<int64_t>());
  EXPECT_DOUBLE_EQ(
      total["averageMsgSize"].get<double>(),
      (parts[p0]["averageMsgSize"].get<double>() + parts[p1]["averageMsgSize"].get<double>()) / 2);
}

}  // namespace
}  // namespace magnetar::broker::routes_test
