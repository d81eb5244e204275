// What Pulsar clients expect of a producer's creation and of a lookup, beyond the basics of
// broker_test.cc: the subscription a dead-letter producer asks for, partitions beyond a
// partitioned topic's count, and lookups naming an advertised listener.

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <set>
#include <string>

#include "broker/config/store_paths.h"
#include "broker/tests/broker_test_fixture.h"

namespace magnetar::broker {
namespace {

using namespace std::chrono_literals;
using namespace test;

TEST_F(BrokerTest, InitialSubscriptionOfAProducerKeepsEveryMessageFromTheStart) {
  auto c = client();
  ASSERT_TRUE(c);
  const std::string topic = "persistent://public/default/dlq-like";
  wire::CommandProducer p;
  p.set_topic(topic);
  p.set_producer_id(1);
  p.set_initial_subscription_name("init-sub");
  auto made = c->create_producer(p);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c->send_message(1, static_cast<uint64_t>(i), "m-" + std::to_string(i)).ok());
  }
  // A consumer coming later with the default initial position (Latest) still gets them: the
  // subscription existed before the first message.
  ASSERT_TRUE(c->subscribe(topic, "init-sub", wire::CommandSubscribe::Shared, 7).ok());
  ASSERT_TRUE(c->flow(7, 10).ok());
  for (int i = 0; i < 3; ++i) {
    auto m = c->receive_message(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    auto single = m->unpack();
    ASSERT_TRUE(single.ok());
    EXPECT_EQ((*single)[0].payload.to_string(), "m-" + std::to_string(i));
  }
  // Another subscription made now starts at the end, as before.
  ASSERT_TRUE(c->subscribe(topic, "later", wire::CommandSubscribe::Shared, 8).ok());
  ASSERT_TRUE(c->flow(8, 10).ok());
  EXPECT_FALSE(c->receive_message(300ms).ok());

  // A second producer naming the same subscription leaves it where it is.
  wire::CommandProducer again = p;
  again.set_producer_id(2);
  again.clear_request_id();
  ASSERT_TRUE(c->create_producer(again).ok());
  ASSERT_TRUE(c->send_message(2, 0, "m-3").ok());
  auto m = c->receive_message(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
}

TEST_F(BrokerTest, AProducerWaitingForExclusiveIsFencedByExclusiveWithFencing) {
  const std::string topic = "persistent://public/default/fenced-wait";
  auto a = client();
  auto b = client();
  ASSERT_TRUE(a && b);
  wire::CommandProducer exclusive;
  exclusive.set_topic(topic);
  exclusive.set_producer_id(1);
  exclusive.set_producer_access_mode(wire::Exclusive);
  ASSERT_TRUE(a->create_producer(exclusive).ok());
  wire::CommandProducer waiting = exclusive;
  waiting.set_producer_id(2);
  waiting.set_producer_access_mode(wire::WaitForExclusive);
  waiting.set_request_id(b->next_request_id());
  auto early = b->create_producer(waiting);
  ASSERT_TRUE(early.ok()) << early.status().to_string();
  EXPECT_FALSE(early->producer_ready());
  // The fencing producer takes the topic: the exclusive one is closed, the waiting one gets
  // an answer to its PRODUCER request (it waited for ever before).
  wire::CommandProducer fencing = exclusive;
  fencing.set_producer_id(3);
  fencing.set_producer_access_mode(wire::ExclusiveWithFencing);
  fencing.clear_request_id();
  ASSERT_TRUE(a->create_producer(fencing).ok());
  auto closed = a->receive(wire::BaseCommand::CLOSE_PRODUCER);
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  EXPECT_EQ(closed->command.close_producer().producer_id(), 1u);
  auto fenced = b->response(waiting.request_id(), 5s);
  ASSERT_TRUE(fenced.ok()) << fenced.status().to_string();
  ASSERT_EQ(fenced->command.type(), wire::BaseCommand::ERROR);
  EXPECT_EQ(fenced->command.error().error(), wire::ProducerFenced);
  // Once the fencing producer leaves, a new WaitForExclusive producer gets the topic.
  wire::CommandProducer next = waiting;
  next.set_producer_id(4);
  next.clear_request_id();
  auto queued = b->create_producer(next);
  ASSERT_TRUE(queued.ok()) << queued.status().to_string();
  EXPECT_FALSE(queued->producer_ready());
  ASSERT_TRUE(a->close_producer(3).ok());
  auto ready = b->receive(wire::BaseCommand::PRODUCER_SUCCESS, 5s);
  ASSERT_TRUE(ready.ok()) << ready.status().to_string();
  EXPECT_TRUE(ready->command.producer_success().producer_ready());
  EXPECT_TRUE(b->send_message(4, 0, "mine").ok());
}

TEST_F(BrokerTest, AProducerClosedBeforeItsCreationCompletedDoesNotStayOnTheTopic) {
  const std::string topic = "persistent://public/default/closed-early";
  auto a = client();
  auto b = client();
  ASSERT_TRUE(a && b);
  // PRODUCER and CLOSE_PRODUCER back to back: the close is handled while the topic loads.
  wire::BaseCommand producer;
  producer.set_type(wire::BaseCommand::PRODUCER);
  const uint64_t create_id = a->next_request_id();
  producer.mutable_producer()->set_topic(topic);
  producer.mutable_producer()->set_producer_id(1);
  producer.mutable_producer()->set_request_id(create_id);
  producer.mutable_producer()->set_producer_access_mode(wire::Exclusive);
  ASSERT_TRUE(a->send(producer).ok());
  // A second PRODUCER for the same id while the first is being handled is refused.
  wire::BaseCommand again = producer;
  const uint64_t again_id = a->next_request_id();
  again.mutable_producer()->set_request_id(again_id);
  ASSERT_TRUE(a->send(again).ok());
  wire::BaseCommand close;
  close.set_type(wire::BaseCommand::CLOSE_PRODUCER);
  const uint64_t close_id = a->next_request_id();
  close.mutable_close_producer()->set_producer_id(1);
  close.mutable_close_producer()->set_request_id(close_id);
  ASSERT_TRUE(a->send(close).ok());
  auto closed = a->response(close_id, 5s);
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  EXPECT_EQ(closed->command.type(), wire::BaseCommand::SUCCESS);
  auto refused = a->response(again_id, 5s);
  ASSERT_TRUE(refused.ok()) << refused.status().to_string();
  ASSERT_EQ(refused->command.type(), wire::BaseCommand::ERROR);
  EXPECT_EQ(refused->command.error().error(), wire::ServiceNotReady);
  auto created = a->response(create_id, 5s);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  EXPECT_EQ(created->command.type(), wire::BaseCommand::ERROR);
  // The topic has no producer left: another exclusive one is accepted at once.
  wire::CommandProducer exclusive;
  exclusive.set_topic(topic);
  exclusive.set_producer_id(2);
  exclusive.set_producer_access_mode(wire::Exclusive);
  auto other = b->create_producer(exclusive);
  EXPECT_TRUE(other.ok()) << other.status().to_string();
}

TEST_F(BrokerTest, APartitionBeyondThePartitionedTopicsCountIsNotCreated) {
  const auto parts = protocol::TopicName::parse("persistent://public/default/grown");
  ASSERT_TRUE(parts.ok());
  auto put = cluster_.await(store_->put_recursive(partitioned_topic_path(*parts),
                                                  R"({"partitions":2})"));
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  auto c = client();
  ASSERT_TRUE(c);
  // Auto-creation is on: a partition below the count is made on demand, one beyond it not.
  ASSERT_TRUE(c->create_producer("persistent://public/default/grown-partition-1", 1).ok());
  auto beyond = c->create_producer("persistent://public/default/grown-partition-2", 2);
  ASSERT_FALSE(beyond.ok());
  EXPECT_TRUE(beyond.status().is(Errc::kNotFound)) << beyond.status().to_string();
  // Once the count is raised, the same producer is accepted.
  put = cluster_.await(store_->put_recursive(partitioned_topic_path(*parts),
                                             R"({"partitions":3})"));
  ASSERT_TRUE(put.ok());
  auto grown = c->create_producer("persistent://public/default/grown-partition-2", 3);
  EXPECT_TRUE(grown.ok()) << grown.status().to_string();
  // A non-partitioned topic whose name looks like a partition is still auto-created.
  EXPECT_TRUE(c->create_producer("persistent://public/default/plain-partition-5", 4).ok());
}

TEST_F(BrokerTest, ALookupNamingAListenerTheBrokerLacksFailsWithPulsarsText) {
  auto c = client();
  ASSERT_TRUE(c);
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::LOOKUP);
  const uint64_t request_id = c->next_request_id();
  cmd.mutable_lookuptopic()->set_topic("persistent://public/default/listened");
  cmd.mutable_lookuptopic()->set_request_id(request_id);
  cmd.mutable_lookuptopic()->set_advertised_listener_name("external");
  auto answer = c->request(cmd, request_id);
  ASSERT_TRUE(answer.ok()) << answer.status().to_string();
  const auto& r = answer->command.lookuptopicresponse();
  EXPECT_EQ(r.response(), wire::CommandLookupTopicResponse::Failed);
  EXPECT_EQ(r.error(), wire::ServiceNotReady);
  EXPECT_EQ(r.message(), "the broker do not have external listener");
  // Without a listener name the same lookup answers.
  auto plain = c->lookup("persistent://public/default/listened");
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->response(), wire::CommandLookupTopicResponse::Connect);
}

TEST_F(BrokerTest, TopicsOfANamespaceByMode) {
  auto c = client();
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->create_producer("persistent://public/default/listed-p", 1).ok());
  ASSERT_TRUE(c->create_producer("non-persistent://public/default/listed-np", 2).ok());
  auto list = [&](std::optional<wire::CommandGetTopicsOfNamespace::Mode> mode) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE);
    const uint64_t request_id = c->next_request_id();
    auto* req = cmd.mutable_gettopicsofnamespace();
    req->set_request_id(request_id);
    req->set_namespace_("public/default");
    if (mode) req->set_mode(*mode);
    auto answer = c->request(cmd, request_id);
    EXPECT_TRUE(answer.ok()) << answer.status().to_string();
    std::set<std::string> topics;
    if (answer.ok()) {
      for (const auto& t : answer->command.gettopicsofnamespaceresponse().topics()) {
        topics.insert(t);
      }
    }
    return topics;
  };
  const std::set<std::string> persistent = {"persistent://public/default/listed-p"};
  const std::set<std::string> non_persistent = {"non-persistent://public/default/listed-np"};
  const std::set<std::string> all = {"persistent://public/default/listed-p",
                                     "non-persistent://public/default/listed-np"};
  EXPECT_EQ(list(std::nullopt), persistent);  // PERSISTENT is the field's default
  EXPECT_EQ(list(wire::CommandGetTopicsOfNamespace::PERSISTENT), persistent);
  EXPECT_EQ(list(wire::CommandGetTopicsOfNamespace::NON_PERSISTENT), non_persistent);
  EXPECT_EQ(list(wire::CommandGetTopicsOfNamespace::ALL), all);
}

}  // namespace
}  // namespace magnetar::broker
