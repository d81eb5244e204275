// Rate limits: the limiters on a simulated clock; the dispatch, subscribe and publish rate
// policies through the admin API (stored per cluster, applied, read back) and as clients meet
// them. The time checks are bounds a slower machine still meets: at most so many messages
// early on, and no faster than the rate allows.

#include <algorithm>
#include <thread>

#include "broker/service/dispatch_rate.h"
#include "broker/tests/broker_routes_fixture.h"
#include "testing/eventually.h"

namespace magnetar::broker::routes_test {
namespace {

using Clock = RateLimiter::Clock;

TEST(RateLimiterTest, AllowsAtMostTheMessageTokensAndWaitsWhileEitherBucketIsEmpty) {
  const auto t0 = Clock::time_point{} + 1h;
  RateLimiter limiter;
  EXPECT_FALSE(limiter.enabled());
  limiter.update(RateLimit{10, -1, 1, false}, t0);  // 10 messages a second, bytes free
  EXPECT_TRUE(limiter.enabled());
  EXPECT_EQ(limiter.allowed(100, t0), 10);  // a full period's worth at first
  EXPECT_EQ(limiter.allowed(4, t0), 4);
  limiter.charge(10, 1 << 20, t0);
  EXPECT_EQ(limiter.allowed(100, t0), 0);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(limiter.wait(t0)), 100ms);
  EXPECT_EQ(limiter.allowed(100, t0 + 350ms), 3);

  // Bytes: one read may overshoot; the debt delays the next.
  RateLimiter bytes(RateLimit{-1, 1000, 1, false});
  const auto t1 = Clock::now();
  EXPECT_EQ(bytes.allowed(50, t1), 50);  // no message limit
  bytes.charge(50, 3000, t1);
  EXPECT_EQ(bytes.allowed(50, t1 + 1s), 0);
  EXPECT_GE(bytes.wait(t1 + 1s), 1s);  // 1000 bytes owed
  EXPECT_EQ(bytes.allowed(50, t1 + 2100ms), 50);
}

TEST(RateLimiterTest, APeriodSpreadsItsRateAndANewLimitKeepsWhatWasUsed) {
  const auto t0 = Clock::time_point{} + 1h;
  RateLimiter limiter;
  limiter.update(RateLimit{100, 0, 10, false}, t0);  // 100 messages per 10 s
  limiter.charge(100, 0, t0);
  limiter.update(RateLimit{100, 0, 10, false}, t0 + 1s);  // the same: nothing changes
  EXPECT_EQ(limiter.allowed(1, t0 + 50ms), 0);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(limiter.wait(t0 + 50ms)),
            50ms);  // half a token there: one message per 100 ms
  // A higher limit starts from what the old bucket held, not full.
  limiter.update(RateLimit{1000, 0, 10, false}, t0);
  EXPECT_EQ(limiter.allowed(1000, t0), 0);
  EXPECT_EQ(limiter.allowed(1000, t0 + 1s), 100);
  // Off: no limit at all.
  limiter.update(RateLimit{-1, -1, 1, false}, t0);
  EXPECT_FALSE(limiter.enabled());
}

TEST(RateLimiterTest, ARelativeLimitFollowsThePublishRate) {
  const auto t0 = Clock::time_point{} + 1h;
  RateLimiter limiter;
  limiter.update(RateLimit{10, 0, 1, true}, t0);
  limiter.charge(10, 0, t0);
  limiter.set_publish_rate(90, 0, t0);  // 10 + 90 a second from now on
  EXPECT_EQ(limiter.allowed(1000, t0 + 500ms), 50);
}

TEST(RateLimiterTest, AThrottleAllowsTheLeastOfItsLimitersAndChargesThemAll) {
  const auto now = Clock::now();
  auto topic = std::make_shared<RateLimiter>(RateLimit{100, -1, 1, false});
  auto subscription = std::make_shared<RateLimiter>(RateLimit{5, -1, 1, false});
  auto off = std::make_shared<RateLimiter>();
  Throttle throttle;
  throttle.add(topic);
  throttle.add(subscription);
  throttle.add(off);
  Clock::duration wait;
  EXPECT_EQ(throttle.allowed(50, now, &wait), 5);
  throttle.charge(5, 0, now);
  EXPECT_EQ(throttle.allowed(50, now, &wait), 0);
  EXPECT_GT(wait, Clock::duration::zero());
  EXPECT_EQ(topic->allowed(1000, now), 95);
}

using magnetar::testing::eventually;

TEST_F(BrokerRoutesTest, RatePoliciesAreKeptPerClusterAndAppliedLevelByLevel) {
  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/rated", 1);
  const std::string t = kTopics + "/rated";
  const std::string rate =
      R"({"dispatchThrottlingRateInMsg":1000,"dispatchThrottlingRateInByte":1048576,
          "relativeToPublishRate":false,"ratePeriodInSecond":1})";

  EXPECT_EQ(get(kNamespace + "/dispatchRate").status, 204);  // unset: null
  ASSERT_EQ(post(kNamespace + "/dispatchRate", rate).status, 204);
  EXPECT_EQ(get(kNamespace + "/dispatchRate").json()["dispatchThrottlingRateInMsg"], 1000);
  // Stored as Pulsar does: per cluster, under the new and the deprecated field.
  const Json policies = get(kNamespace).json();
  EXPECT_EQ(policies["topicDispatchRate"]["test"]["dispatchThrottlingRateInByte"], 1048576);
  EXPECT_EQ(policies["clusterDispatchRate"]["test"]["ratePeriodInSecond"], 1);
  // A body missing fields gets Pulsar's defaults; a wrong type is a 400.
  ASSERT_EQ(post(kNamespace + "/subscribeRate", R"({"subscribeThrottlingRatePerConsumer":5})")
                .status,
            204);
  EXPECT_EQ(get(kNamespace + "/subscribeRate").json(),
            Json::parse(R"({"subscribeThrottlingRatePerConsumer":5,"ratePeriodInSecond":30})"));
  EXPECT_ERROR(post(kNamespace + "/publishRate", R"({"publishThrottlingRateInMsg":"many"})"), 400);
  EXPECT_ERROR(post(kNamespace + "/dispatchRate", "[1]"), 400);

  // The topic's applied value: the namespace's; a topic value that enables no rate leaves it
  // there (Pulsar's normalize()); one that does wins.
  EXPECT_EQ(get(t + "/dispatchRate?applied=true").json()["dispatchThrottlingRateInMsg"], 1000);
  ASSERT_EQ(post(t + "/dispatchRate", R"({"dispatchThrottlingRateInMsg":-1,
                                         "dispatchThrottlingRateInByte":-1})")
                .status,
            204);
  EXPECT_EQ(get(t + "/dispatchRate").json()["dispatchThrottlingRateInMsg"], -1);
  EXPECT_EQ(get(t + "/dispatchRate?applied=true").json()["dispatchThrottlingRateInMsg"], 1000);
  ASSERT_EQ(post(t + "/dispatchRate", R"({"dispatchThrottlingRateInMsg":7})").status, 204);
  EXPECT_EQ(get(t + "/dispatchRate?applied=true").json()["dispatchThrottlingRateInMsg"], 7);
  // Unset everywhere: the broker's (0: none).
  ASSERT_EQ(del(t + "/dispatchRate").status, 204);
  ASSERT_EQ(del(kNamespace + "/dispatchRate").status, 204);
  EXPECT_EQ(get(kNamespace + "/dispatchRate").status, 204);
  EXPECT_FALSE(get(kNamespace).json().contains("clusterDispatchRate") &&
               get(kNamespace).json()["clusterDispatchRate"].contains("test"));
  EXPECT_EQ(get(t + "/dispatchRate?applied=true").json()["dispatchThrottlingRateInMsg"], 0);
}

TEST_F(BrokerRoutesTest, ASubscriptionDispatchRateThrottlesDelivery) {
  // 10 messages a second for each subscription of the namespace's topics.
  ASSERT_EQ(post(kNamespace + "/subscriptionDispatchRate",
                 R"({"dispatchThrottlingRateInMsg":10,"ratePeriodInSecond":1})")
                .status,
            204);
  const std::string topic = "persistent://public/default/slow";
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->subscribe(topic, "s", wire::CommandSubscribe::Exclusive, 1).ok());
  produce(*c, topic, 30);
  ASSERT_TRUE(c->flow(1, 1000).ok());
  const auto start = std::chrono::steady_clock::now();
  int received = 0;
  while (received < 30) {
    auto m = c->receive_message(10s);
    ASSERT_TRUE(m.ok()) << "after " << received << ": " << m.status().to_string();
    ++received;
    if (std::chrono::steady_clock::now() - start < 500ms) {
      // A period's burst, then a message per 100 ms.
      EXPECT_LE(received, 10 + 5 + 1) << "faster than 10 a second";
    }
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1500ms);  // 20 after the burst
}

TEST_F(BrokerRoutesTest, ASubscribeRateRefusesAConsumerOverIt) {
  ASSERT_EQ(post(kNamespace + "/subscribeRate",
                 R"({"subscribeThrottlingRatePerConsumer":1,"ratePeriodInSecond":60})")
                .status,
            204);
  auto c = client();
  ASSERT_TRUE(c);
  wire::CommandSubscribe sub;
  sub.set_topic("persistent://public/default/subscribed");
  sub.set_subscription("s");
  sub.set_subtype(wire::CommandSubscribe::Shared);
  sub.set_consumer_id(1);
  sub.set_consumer_name("the-consumer");
  ASSERT_TRUE(c->subscribe(sub).ok());
  ASSERT_TRUE(c->close_consumer(1).ok());
  sub.clear_request_id();
  Status refused = c->subscribe(sub);
  EXPECT_EQ(testing::server_error_of(refused), wire::NotAllowedError) << refused.to_string();
  EXPECT_NE(refused.message().find("Subscribe limited by subscribe rate limit per consumer."),
            std::string::npos)
      << refused.to_string();
  // Another consumer has its own allowance.
  sub.clear_request_id();
  sub.set_consumer_id(2);
  sub.set_consumer_name("another");
  EXPECT_TRUE(c->subscribe(sub).ok());
}

TEST_F(BrokerRoutesTest, APublishRateSlowsProducersWithoutFailingThem) {
  ASSERT_EQ(post(kNamespace + "/publishRate", R"({"publishThrottlingRateInMsg":10})").status,
            204);
  auto c = client();
  ASSERT_TRUE(c);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(produce(*c, "persistent://public/default/paced", 25).size(), 25u);
  // A second's burst of 10, then 15 at 10 a second.
  EXPECT_GE(std::chrono::steady_clock::now() - start, 1200ms);
}

TEST_F(BrokerRoutesTest, DynamicConfigurationOverridesTheBrokersDefaultsAtOnce) {
  const std::string config = "/admin/v2/brokers/configuration";
  const Json keys = get(config).json();
  ASSERT_TRUE(keys.is_array());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "brokerShutdownTimeoutMs"), keys.end());
  EXPECT_EQ(get(config + "/values").json(), Json::object());

  Reply fixed = post(config + "/clusterName/other");
  EXPECT_EQ(fixed.status, 412);
  EXPECT_EQ(fixed.reason(), "Can't update non-dynamic configuration");
  Reply bad = post(config + "/dispatchThrottlingRatePerSubscriptionInMsg/many");
  EXPECT_EQ(bad.status, 412);
  EXPECT_NE(bad.reason().find("Invalid value 'many' for dispatchThrottlingRatePerSubscriptionInMsg"),
            std::string::npos)
      << bad.reason();
  EXPECT_EQ(del(config + "/clusterName").status, 412);

  auto c = client();
  ASSERT_TRUE(c);
  produce(*c, "persistent://public/default/defaults", 1);
  const std::string applied = kTopics + "/defaults/subscriptionDispatchRate?applied=true";
  EXPECT_EQ(get(applied).json()["dispatchThrottlingRateInMsg"], 0);
  ASSERT_EQ(post(config + "/dispatchThrottlingRatePerSubscriptionInMsg/5").status, 204);
  EXPECT_EQ(get(config + "/values").json(),
            Json::parse(R"({"dispatchThrottlingRatePerSubscriptionInMsg":"5"})"));
  // Every broker of the cluster hears of it through the store.
  EXPECT_TRUE(eventually([&] {
    return get(config + "/runtime").json()["dispatchThrottlingRatePerSubscriptionInMsg"] == "5";
  }));
  EXPECT_EQ(get(applied).json()["dispatchThrottlingRateInMsg"], 5);
  ASSERT_EQ(del(config + "/dispatchThrottlingRatePerSubscriptionInMsg").status, 204);
  EXPECT_TRUE(eventually([&] {
    return get(config + "/runtime").json()["dispatchThrottlingRatePerSubscriptionInMsg"] == "0";
  }));
  EXPECT_EQ(del(config + "/dispatchThrottlingRatePerSubscriptionInMsg").status, 204);  // none
}

}  // namespace
}  // namespace magnetar::broker::routes_test
