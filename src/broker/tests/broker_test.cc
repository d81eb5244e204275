// The broker at the protocol level: a broker and a bookie in this process over a memory:
// metadata store, driven frame by frame by a blocking Pulsar protocol client
// (testing/pulsar_test_client.h). Covers the handshake, lookup, producing, the four
// subscription types, acks, redelivery, readers, seek, and bad input.

#include "broker/broker.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "broker/tests/broker_test_fixture.h"
#include "common/metrics.h"
#include "ledger/tests/ledger_test_support.h"
#include "protocol/replication.h"

namespace magnetar::broker {
namespace {

using namespace std::chrono_literals;
using namespace test;

TEST_F(BrokerTest, ConnectNegotiatesTheVersionAndAnswersPing) {
  auto c = client(21);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->connected().protocol_version(), 21);
  EXPECT_FALSE(c->connected().server_version().empty());
  EXPECT_EQ(c->connected().max_message_size(), 5 * 1024 * 1024);
  EXPECT_TRUE(c->ping().ok());
  auto old = client(10);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->connected().protocol_version(), 10);
  // Nothing above the negotiated version: no ACTIVE_CONSUMER_CHANGE (v12) for a v10 client.
  ASSERT_TRUE(
      old->subscribe("persistent://public/default/v10", "fo", wire::CommandSubscribe::Failover, 1)
          .ok());
  EXPECT_FALSE(old->receive(wire::BaseCommand::ACTIVE_CONSUMER_CHANGE, 300ms).ok());
}

TEST_F(BrokerTest, LookupAnswersConnectHereAndRejectsBadNames) {
  auto c = client();
  auto r = c->lookup("my-topic");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->response(), wire::CommandLookupTopicResponse::Connect);
  EXPECT_EQ(r->brokerserviceurl(), broker_->config().service_url());
  auto bad = c->lookup("persistent://only-tenant");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(testing::server_error_of(bad.status()), wire::InvalidTopicName);
  auto meta = c->partitioned_metadata("persistent://public/default/t");
  ASSERT_TRUE(meta.ok()) << meta.status().to_string();
  EXPECT_EQ(meta->partitions(), 0u);
}

TEST_F(BrokerTest, ProduceThenConsumeExclusiveInOrder) {
  auto c = client();
  const std::string topic = "persistent://public/default/orders";
  // Before anything is written the last message id is -1:-1, as Pulsar answers.
  ASSERT_TRUE(c->subscribe(topic, "early", wire::CommandSubscribe::Exclusive, 3).ok());
  auto none = c->get_last_message_id(3);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_EQ(static_cast<int64_t>(none->last_message_id().ledgerid()), -1);
  EXPECT_EQ(static_cast<int64_t>(none->last_message_id().entryid()), -1);
  auto ids = produce(*c, topic, 10);
  ASSERT_EQ(ids.size(), 10u);
  for (size_t i = 1; i < ids.size(); ++i) {
    EXPECT_TRUE(ids[i].ledgerid() > ids[i - 1].ledgerid() ||
                (ids[i].ledgerid() == ids[i - 1].ledgerid() &&
                 ids[i].entryid() == ids[i - 1].entryid() + 1));
  }
  ASSERT_TRUE(c->subscribe(topic, "sub", wire::CommandSubscribe::Exclusive, 7,
                           wire::CommandSubscribe::Earliest)
                  .ok());
  ASSERT_TRUE(c->flow(7, 100).ok());
  for (int i = 0; i < 10; ++i) {
    auto m = c->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "msg-" + std::to_string(i));
    EXPECT_TRUE(m->had_checksum);
    EXPECT_EQ(m->id.entryid(), ids[static_cast<size_t>(i)].entryid());
    EXPECT_TRUE(m->id.has_partition());  // -1: not a partition, sent as Pulsar sends it
    EXPECT_EQ(m->id.partition(), -1);
  }
  // Cumulative ack with a request id gets an ACK_RESPONSE (the client waits for it).
  auto acked = c->ack(7, {id_of(ids.back())}, true, 99);
  ASSERT_TRUE(acked.ok()) << acked.to_string();
  // A second exclusive consumer is refused.
  auto other = client();
  auto busy = other->subscribe(topic, "sub", wire::CommandSubscribe::Exclusive, 1);
  EXPECT_EQ(testing::server_error_of(busy), wire::ConsumerBusy);
  // Prometheus counters with Pulsar's names and labels.
  const std::string exposed = metrics::default_registry().expose();
  EXPECT_NE(exposed.find("pulsar_in_messages_total{cluster=\"standalone\",namespace=\"public/"
                         "default\",topic=\"persistent://public/default/orders\"} 10"),
            std::string::npos)
      << exposed;
  EXPECT_NE(exposed.find("pulsar_out_messages_total{cluster=\"standalone\",namespace=\"public/"
                         "default\",topic=\"persistent://public/default/orders\",subscription="
                         "\"sub\"} 10"),
            std::string::npos);
  auto last = c->get_last_message_id(7);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(last->last_message_id().entryid(), ids.back().entryid());
}

TEST_F(BrokerTest, FlowPermitsBoundDispatchAndBatchesCountTheirMessages) {
  auto c = client();
  const std::string topic = "persistent://public/default/permits";
  ASSERT_TRUE(c->subscribe(topic, "sub", wire::CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  ASSERT_TRUE(c->send_batch(1, 0, {"a", "b", "c"}).ok());
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(c->send_message(1, static_cast<uint64_t>(i), "x").ok());
  ASSERT_TRUE(c->flow(1, 4).ok());  // the batch uses 3 permits, then one single message
  auto batch = c->receive_message();
  ASSERT_TRUE(batch.ok()) << batch.status().to_string();
  EXPECT_EQ(batch->metadata.num_messages_in_batch(), 3);
  EXPECT_EQ(batch->unpack()->size(), 3u);
  ASSERT_TRUE(c->receive_message().ok());
  EXPECT_FALSE(c->receive_message(300ms).ok()) << "dispatched past the permits";
  ASSERT_TRUE(c->flow(1, 10).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c->receive_message().ok());
}

TEST_F(BrokerTest, SharedRoundRobinAndRedeliveryWhenAConsumerLeaves) {
  const std::string topic = "persistent://public/default/shared";
  auto a = client();
  auto b = client();
  ASSERT_TRUE(a->subscribe(topic, "work", wire::CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(b->subscribe(topic, "work", wire::CommandSubscribe::Shared, 2).ok());
  ASSERT_TRUE(a->flow(1, 100).ok());
  ASSERT_TRUE(b->flow(2, 100).ok());
  auto p = client();
  produce(*p, topic, 10);
  int got_a = 0, got_b = 0;
  std::vector<wire::MessageIdData> held_by_a;
  while (got_a + got_b < 10) {
    if (auto m = a->receive_message(200ms); m.ok()) {
      ++got_a;
      held_by_a.push_back(id_of(m->id));
    } else if (auto n = b->receive_message(200ms); n.ok()) {
      ++got_b;
      ASSERT_TRUE(b->ack(2, {id_of(n->id)}).ok());
    } else {
      break;
    }
  }
  EXPECT_EQ(got_a + got_b, 10);
  EXPECT_GT(got_a, 0);
  EXPECT_GT(got_b, 0);
  // a leaves without acknowledging: b gets a's messages again, counted as redelivered.
  a->close();
  for (int i = 0; i < got_a; ++i) {
    auto m = b->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->redelivery_count, 1u);
  }
  // Cumulative acks are not allowed on Shared subscriptions.
  auto refused = b->ack(2, {held_by_a.back()}, true, 5);
  EXPECT_EQ(testing::server_error_of(refused), wire::NotAllowedError) << refused.to_string();
}

TEST_F(BrokerTest, FailoverHasOneActiveConsumerAndTellsThem) {
  const std::string topic = "persistent://public/default/failover";
  auto a = client();
  auto b = client();
  wire::CommandSubscribe sub;
  ASSERT_TRUE(a->subscribe(topic, "fo", wire::CommandSubscribe::Failover, 1).ok());
  auto first = a->receive(wire::BaseCommand::ACTIVE_CONSUMER_CHANGE);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_TRUE(first->command.active_consumer_change().is_active());
  ASSERT_TRUE(b->subscribe(topic, "fo", wire::CommandSubscribe::Failover, 2).ok());
  auto standby = b->receive(wire::BaseCommand::ACTIVE_CONSUMER_CHANGE);
  ASSERT_TRUE(standby.ok()) << standby.status().to_string();
  EXPECT_FALSE(standby->command.active_consumer_change().is_active());
  ASSERT_TRUE(a->flow(1, 100).ok());
  ASSERT_TRUE(b->flow(2, 100).ok());
  auto p = client();
  produce(*p, topic, 5);
  // Consumer names are equal (empty) and priorities too: the first one stays active.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a->receive_message().ok());
  EXPECT_FALSE(b->receive_message(300ms).ok());
  // The active one leaves: b becomes active and gets the unacknowledged messages.
  a->close();
  for (int i = 0; i < 5; ++i) {
    auto m = b->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "msg-" + std::to_string(i));
  }
}

TEST_F(BrokerTest, ReaderStartsAfterTheGivenMessageId) {
  const std::string topic = "persistent://public/default/reader";
  auto c = client();
  auto ids = produce(*c, topic, 6);
  wire::MessageIdData start = id_of(ids[2]);
  ASSERT_TRUE(c->subscribe(topic, "reader-1", wire::CommandSubscribe::Exclusive, 3,
                           wire::CommandSubscribe::Latest, false, &start)
                  .ok());
  ASSERT_TRUE(c->flow(3, 10).ok());
  // Delivery starts at the start message itself (clients drop it unless inclusive).
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload.to_string(), "msg-2");
  // Earliest: (-1, -1) on the wire as uint64 max.
  wire::MessageIdData earliest;
  earliest.set_ledgerid(UINT64_MAX);
  earliest.set_entryid(UINT64_MAX);
  ASSERT_TRUE(c->subscribe(topic, "reader-2", wire::CommandSubscribe::Exclusive, 4,
                           wire::CommandSubscribe::Latest, false, &earliest)
                  .ok());
  ASSERT_TRUE(c->flow(4, 10).ok());
  auto first = c->receive_if([](const protocol::Frame& f) {
    return f.command.type() == wire::BaseCommand::MESSAGE && f.command.message().consumer_id() == 4;
  });
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->payload.to_string(), "msg-0");
}

TEST_F(BrokerTest, DurableSubscriptionSurvivesABrokerRestart) {
  const std::string topic = "persistent://public/default/restart";
  {
    auto c = client();
    ASSERT_TRUE(c->subscribe(topic, "durable", wire::CommandSubscribe::Exclusive, 1).ok());
    auto ids = produce(*c, topic, 5);
    ASSERT_TRUE(c->flow(1, 10).ok());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->receive_message().ok());
    ASSERT_TRUE(c->ack(1, {id_of(ids[1])}, true, 1).ok());
  }
  broker_->stop();
  broker_.reset();
  start_broker();
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "durable", wire::CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->flow(1, 10).ok());
  for (int i = 2; i < 5; ++i) {
    auto m = c->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "msg-" + std::to_string(i));
  }
}

TEST_F(BrokerTest, SeekRewindsTheSubscriptionAndDisconnectsItsConsumers) {
  const std::string topic = "persistent://public/default/seek";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "s", wire::CommandSubscribe::Exclusive, 1).ok());
  auto ids = produce(*c, topic, 5);
  ASSERT_TRUE(c->ack(1, {id_of(ids[4])}, true).ok());
  // The consumer is closed before the SEEK is answered, as Pulsar orders them (the official
  // client relies on it to finish a seek only once it has subscribed again).
  wire::BaseCommand seek;
  seek.set_type(wire::BaseCommand::SEEK);
  const uint64_t request_id = c->next_request_id();
  seek.mutable_seek()->set_consumer_id(1);
  seek.mutable_seek()->set_request_id(request_id);
  *seek.mutable_seek()->mutable_message_id() = id_of(ids[1]);
  ASSERT_TRUE(c->send(seek).ok());
  auto first = c->receive_if([](const protocol::Frame& f) {
    return f.command.type() == wire::BaseCommand::CLOSE_CONSUMER ||
           f.command.type() == wire::BaseCommand::SUCCESS;
  });
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->command.type(), wire::BaseCommand::CLOSE_CONSUMER);
  auto answered = c->response(request_id);
  ASSERT_TRUE(answered.ok()) << answered.status().to_string();
  EXPECT_EQ(answered->command.type(), wire::BaseCommand::SUCCESS);
  ASSERT_TRUE(c->subscribe(topic, "s", wire::CommandSubscribe::Exclusive, 2).ok());
  ASSERT_TRUE(c->flow(2, 10).ok());
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload.to_string(), "msg-1");
}

TEST_F(BrokerTest, AReadersSubscriptionOutlivesItsSeek) {
  // The official client seeks a reader by time, is closed by the broker, and subscribes again
  // without a start position: it must find the cursor where the seek put it (hasMessageAvailable
  // compares its mark-delete position with the last message id), not a new one at the end.
  const std::string topic = "persistent://public/default/reader-seek-time";
  auto c = client();
  auto ids = produce(*c, topic, 3);
  ASSERT_TRUE(c->subscribe(topic, "reader-1", wire::CommandSubscribe::Exclusive, 1,
                           wire::CommandSubscribe::Latest, false)
                  .ok());
  auto before = c->get_last_message_id(1);
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  EXPECT_EQ(before->consumer_mark_delete_position().entryid(), ids[2].entryid());
  wire::BaseCommand seek;
  seek.set_type(wire::BaseCommand::SEEK);
  const uint64_t request_id = c->next_request_id();
  seek.mutable_seek()->set_consumer_id(1);
  seek.mutable_seek()->set_request_id(request_id);
  seek.mutable_seek()->set_message_publish_time(1);  // before everything: the first message
  ASSERT_TRUE(c->send(seek).ok());
  auto answered = c->response(request_id);
  ASSERT_TRUE(answered.ok()) << answered.status().to_string();
  ASSERT_EQ(answered->command.type(), wire::BaseCommand::SUCCESS);
  ASSERT_TRUE(c->receive(wire::BaseCommand::CLOSE_CONSUMER).ok());
  ASSERT_TRUE(c->subscribe(topic, "reader-1", wire::CommandSubscribe::Exclusive, 2,
                           wire::CommandSubscribe::Latest, false)
                  .ok());
  auto after = c->get_last_message_id(2);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_EQ(static_cast<int64_t>(after->consumer_mark_delete_position().entryid()), -1);
  EXPECT_EQ(after->last_message_id().entryid(), ids[2].entryid());
  ASSERT_TRUE(c->flow(2, 10).ok());
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload.to_string(), "msg-0");
  // Once its consumer leaves for good, the reader's subscription goes with it.
  ASSERT_TRUE(c->close_consumer(2).ok());
  ASSERT_TRUE(c->subscribe(topic, "reader-1", wire::CommandSubscribe::Exclusive, 3,
                           wire::CommandSubscribe::Latest, false)
                  .ok());
  auto fresh = c->get_last_message_id(3);
  ASSERT_TRUE(fresh.ok()) << fresh.status().to_string();
  EXPECT_EQ(fresh->consumer_mark_delete_position().entryid(), ids[2].entryid());
}

TEST_F(BrokerTest, UnsubscribeSchemaAndTransactionsAnswers) {
  const std::string topic = "persistent://public/default/misc";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "gone", wire::CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->unsubscribe(1).ok());
  wire::BaseCommand get;
  get.set_type(wire::BaseCommand::GET_SCHEMA);
  const uint64_t rid = c->next_request_id();
  get.mutable_getschema()->set_request_id(rid);
  get.mutable_getschema()->set_topic(topic);
  ASSERT_TRUE(c->send(get).ok());
  auto schema = c->response(rid);
  ASSERT_TRUE(schema.ok()) << schema.status().to_string();
  EXPECT_EQ(schema->command.getschemaresponse().error_code(), wire::TopicNotFound);
  wire::BaseCommand txn;
  txn.set_type(wire::BaseCommand::NEW_TXN);
  txn.mutable_newtxn()->set_request_id(c->next_request_id());
  ASSERT_TRUE(c->send(txn).ok());
  auto txn_resp = c->receive(wire::BaseCommand::NEW_TXN_RESPONSE);
  ASSERT_TRUE(txn_resp.ok());
  EXPECT_EQ(txn_resp->command.newtxnresponse().error(), wire::NotAllowedError);
  wire::BaseCommand end;
  end.set_type(wire::BaseCommand::END_TXN);
  end.mutable_endtxn()->set_request_id(c->next_request_id());
  ASSERT_TRUE(c->send(end).ok());
  auto end_resp = c->receive(wire::BaseCommand::END_TXN_RESPONSE);
  ASSERT_TRUE(end_resp.ok()) << end_resp.status().to_string();
  EXPECT_EQ(end_resp->command.endtxnresponse().error(), wire::NotAllowedError);
}

TEST_F(BrokerTest, MissingNamespaceAndDisabledAutoCreation) {
  auto c = client();
  auto p = c->create_producer("persistent://nope/nothing/t", 1);
  EXPECT_EQ(testing::server_error_of(p.status()), wire::TopicNotFound);
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.allow_auto_topic_creation = false; });
  auto d = client();
  auto q = d->create_producer("persistent://public/default/never-created", 1);
  EXPECT_EQ(testing::server_error_of(q.status()), wire::TopicNotFound);
}

TEST_F(BrokerTest, AutoCreatedPartitionedTopics) {
  broker_->stop();
  start_broker([](BrokerConfig& cfg) {
    cfg.allow_auto_topic_creation_type = "partitioned";
    cfg.default_num_partitions = 3;
  });
  auto c = client();
  auto meta = c->partitioned_metadata("persistent://public/default/parts");
  ASSERT_TRUE(meta.ok()) << meta.status().to_string();
  EXPECT_EQ(meta->partitions(), 3u);
  auto ids = produce(*c, "persistent://public/default/parts-partition-2", 2);
  EXPECT_EQ(ids.size(), 2u);
  // Messages of a partition carry its index in their ids, as Pulsar's do; clients build the
  // message ids they hand out from it.
  ASSERT_TRUE(c->subscribe("persistent://public/default/parts-partition-2", "s",
                           wire::CommandSubscribe::Exclusive, 4, wire::CommandSubscribe::Earliest)
                  .ok());
  ASSERT_TRUE(c->flow(4, 10).ok());
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->id.partition(), 2);
}

// Bad input closes only the offending connection.
TEST_F(BrokerTest, GarbageLyingLengthsHugeFramesAndUnknownProducersCloseTheConnection) {
  auto healthy = client();
  {
    auto c = client();
    ASSERT_TRUE(c->send_raw(std::string(64, '\xff')).ok());
    EXPECT_TRUE(c->closed_by_peer(5s)) << "garbage";
  }
  {
    auto c = client();
    // totalSize 100 MiB: refused before anything is allocated.
    ASSERT_TRUE(c->send_raw(std::string("\x06\x40\x00\x00\x00\x00\x00\x05", 8)).ok());
    EXPECT_TRUE(c->closed_by_peer(5s)) << "100 MiB frame header";
  }
  {
    auto c = client();
    // commandSize larger than totalSize.
    ASSERT_TRUE(c->send_raw(std::string("\x00\x00\x00\x08\x00\x00\x00\x50xxxx", 12)).ok());
    EXPECT_TRUE(c->closed_by_peer(5s)) << "lying length";
  }
  {
    auto c = client();
    wire::BaseCommand send;
    send.set_type(wire::BaseCommand::SEND);
    send.mutable_send()->set_producer_id(42);
    send.mutable_send()->set_sequence_id(0);
    wire::MessageMetadata md;
    md.set_producer_name("ghost");
    md.set_sequence_id(0);
    md.set_publish_time(1);
    ASSERT_TRUE(c->send_payload(send, md, BufferChain(Buffer::copy_of("boo"))).ok());
    EXPECT_TRUE(c->closed_by_peer(5s)) << "SEND for an unknown producer";
  }
  {
    auto c = client();
    auto bad = c->subscribe("persistent://bad", "s", wire::CommandSubscribe::Shared, 1);
    EXPECT_EQ(testing::server_error_of(bad), wire::InvalidTopicName);
    // Pulsar's answer to an empty subscription name, which the official clients rely on.
    auto unnamed = c->subscribe("persistent://public/default/unnamed", "",
                                wire::CommandSubscribe::Shared, 2);
    EXPECT_EQ(testing::server_error_of(unnamed), wire::ProducerBusy);
    EXPECT_NE(unnamed.message().find("Empty subscription name"), std::string::npos)
        << unnamed.to_string();
  }
  // The broker still serves the well-behaved client.
  auto ids = produce(*healthy, "persistent://public/default/still-fine", 3);
  EXPECT_EQ(ids.size(), 3u);
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

TEST_F(BrokerTest, DeduplicationDropsResentMessagesAcrossRestarts) {
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.broker_deduplication_enabled = true; });
  const std::string topic = "persistent://public/default/dedup";
  {
    auto c = client();
    ASSERT_TRUE(c->subscribe(topic, "all", wire::CommandSubscribe::Exclusive, 9,
                             wire::CommandSubscribe::Earliest)
                    .ok());
    auto p = c->create_producer(topic, 1, "p1");
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ(p->last_sequence_id(), -1);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(c->send_message(1, static_cast<uint64_t>(i), "x").ok());
    auto again = c->send_message(1, 3, "x");
    ASSERT_TRUE(again.ok()) << again.status().to_string();
    EXPECT_EQ(again->message_id().ledgerid(), UINT64_MAX) << "a duplicate is not stored";
    EXPECT_EQ(again->message_id().entryid(), UINT64_MAX);
    ASSERT_TRUE(c->send_message(1, 5, "x").ok());
  }
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.broker_deduplication_enabled = true; });
  auto c = client();
  auto p = c->create_producer(topic, 1, "p1");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->last_sequence_id(), 5) << "the last sequence id survives the restart";
  auto dup = c->send_message(1, 5, "x");
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->message_id().ledgerid(), UINT64_MAX);
  ASSERT_TRUE(c->subscribe(topic, "all", wire::CommandSubscribe::Exclusive, 9).ok());
  ASSERT_TRUE(c->flow(9, 100).ok());
  int stored = 0;
  while (c->receive_message(500ms).ok()) ++stored;
  EXPECT_EQ(stored, 6);
  // The reserved cursor is not a subscription anyone may use.
  auto reserved = c->subscribe(topic, "pulsar.dedup", wire::CommandSubscribe::Shared, 10);
  EXPECT_EQ(testing::server_error_of(reserved), wire::NotAllowedError);
}

// Another cluster's replicator (producer "pulsar.repl.<source>-->...") re-sends from its
// mark-delete after any disturbance; the target applies each source position once, with
// deduplication off on the topic, across a broker restart, and never skips a new one.
TEST_F(BrokerTest, ReplicatedSendsAreAppliedOncePerSourcePositionAcrossRestarts) {
  const std::string topic = "persistent://public/default/replicated-in";
  auto send = [](PulsarTestClient& c, uint64_t seq, int64_t ledger, int64_t entry) {
    wire::MessageMetadata md;
    md.set_producer_name("origin-producer");  // the original producer's, kept by replicators
    md.set_replicated_from("east");
    protocol::set_source_position(&md, {LedgerId{ledger}, EntryId{entry}});
    return c.send_message(1, seq, fmt::format("{}:{}", ledger, entry), &md);
  };
  auto stored = [](const Result<wire::CommandSendReceipt>& r) {
    return r.ok() && r->message_id().ledgerid() != UINT64_MAX;
  };
  {
    auto c = client();
    ASSERT_TRUE(c->subscribe(topic, "all", wire::CommandSubscribe::Exclusive, 9,
                             wire::CommandSubscribe::Earliest)
                    .ok());
    ASSERT_TRUE(c->create_producer(topic, 1, "pulsar.repl.east-->standalone").ok());
    EXPECT_TRUE(stored(send(*c, 0, 5, 0)));
    EXPECT_TRUE(stored(send(*c, 1, 5, 1)));
    EXPECT_FALSE(stored(send(*c, 2, 5, 1))) << "a re-send of 5:1";
    EXPECT_FALSE(stored(send(*c, 3, 5, 0))) << "a re-send of 5:0";
    EXPECT_TRUE(stored(send(*c, 4, 5, 2)));
    EXPECT_TRUE(stored(send(*c, 5, 7, 0))) << "a later ledger of the source";
  }
  broker_->stop();
  start_broker();
  auto c = client();
  ASSERT_TRUE(c->create_producer(topic, 1, "pulsar.repl.east-->standalone").ok());
  EXPECT_FALSE(stored(send(*c, 0, 7, 0))) << "known after the restart (rebuilt from the entries)";
  EXPECT_FALSE(stored(send(*c, 1, 5, 2)));
  EXPECT_TRUE(stored(send(*c, 2, 7, 1)));
  ASSERT_TRUE(c->subscribe(topic, "all", wire::CommandSubscribe::Exclusive, 9).ok());
  ASSERT_TRUE(c->flow(9, 100).ok());
  int received = 0;
  while (c->receive_message(500ms).ok()) ++received;
  EXPECT_EQ(received, 5) << "5:0 5:1 5:2 7:0 7:1, once each";
  // An ordinary producer's sequence ids are not deduplicated on this topic, and the
  // replicators' cursor prefix is not a subscription name anyone may use.
  ASSERT_TRUE(c->create_producer(topic, 2, "plain").ok());
  EXPECT_TRUE(stored(c->send_message(2, 0, "a")));
  EXPECT_TRUE(stored(c->send_message(2, 0, "a again")));
  auto reserved = c->subscribe(topic, "pulsar.repl.west", wire::CommandSubscribe::Shared, 10);
  EXPECT_EQ(testing::server_error_of(reserved), wire::NotAllowedError);
}

TEST_F(BrokerTest, ProducerAccessModes) {
  const std::string topic = "persistent://public/default/modes";
  auto a = client();
  auto b = client();
  wire::CommandProducer exclusive;
  exclusive.set_topic(topic);
  exclusive.set_producer_id(1);
  exclusive.set_producer_access_mode(wire::Exclusive);
  ASSERT_TRUE(a->create_producer(exclusive).ok());
  EXPECT_EQ(testing::server_error_of(b->create_producer(topic, 2).status()), wire::ProducerBusy);
  wire::CommandProducer second = exclusive;
  second.set_producer_id(3);
  EXPECT_EQ(testing::server_error_of(b->create_producer(second).status()), wire::ProducerFenced);
  // WaitForExclusive: an early answer (not ready), then ready once the other one leaves.
  wire::CommandProducer waiting = exclusive;
  waiting.set_producer_id(4);
  waiting.set_producer_access_mode(wire::WaitForExclusive);
  auto early = b->create_producer(waiting);
  ASSERT_TRUE(early.ok()) << early.status().to_string();
  EXPECT_FALSE(early->producer_ready());
  ASSERT_TRUE(a->close_producer(1).ok());
  auto ready = b->receive(wire::BaseCommand::PRODUCER_SUCCESS);
  ASSERT_TRUE(ready.ok()) << ready.status().to_string();
  EXPECT_TRUE(ready->command.producer_success().producer_ready());
  EXPECT_TRUE(b->send_message(4, 0, "mine now").ok());
  // ExclusiveWithFencing takes the topic over: the current producer is closed.
  wire::CommandProducer fencing = exclusive;
  fencing.set_producer_id(5);
  fencing.set_producer_access_mode(wire::ExclusiveWithFencing);
  ASSERT_TRUE(a->create_producer(fencing).ok());
  auto closed = b->receive(wire::BaseCommand::CLOSE_PRODUCER);
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  EXPECT_EQ(closed->command.close_producer().producer_id(), 4u);
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

TEST_F(BrokerTest, SchemaVersionsAreStoredAndServed) {
  const std::string topic = "persistent://public/default/typed";
  auto c = client();
  wire::CommandProducer producer;
  producer.set_topic(topic);
  producer.set_producer_id(1);
  auto* schema = producer.mutable_schema();
  schema->set_name("typed");
  schema->set_type(wire::Schema::Json);
  schema->set_schema_data(R"({"type":"record","name":"R","fields":[]})");
  auto first = c->create_producer(producer);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->schema_version(), std::string(8, '\0'));
  producer.set_producer_id(2);
  auto same = c->create_producer(producer);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->schema_version(), std::string(8, '\0'));
  // Another type is incompatible.
  producer.set_producer_id(3);
  producer.mutable_schema()->set_type(wire::Schema::Avro);
  EXPECT_EQ(testing::server_error_of(c->create_producer(producer).status()),
            wire::IncompatibleSchema);
  // A changed definition of the same type is the next version (through GET_OR_CREATE_SCHEMA).
  wire::BaseCommand create;
  create.set_type(wire::BaseCommand::GET_OR_CREATE_SCHEMA);
  const uint64_t rid = c->next_request_id();
  create.mutable_getorcreateschema()->set_request_id(rid);
  create.mutable_getorcreateschema()->set_topic(topic + "-partition-0");  // shares the topic's
  *create.mutable_getorcreateschema()->mutable_schema() = *schema;
  create.mutable_getorcreateschema()->mutable_schema()->set_type(wire::Schema::Json);
  create.mutable_getorcreateschema()->mutable_schema()->set_schema_data("{}");
  ASSERT_TRUE(c->send(create).ok());
  auto created = c->response(rid);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  EXPECT_EQ(created->command.getorcreateschemaresponse().schema_version(),
            std::string("\0\0\0\0\0\0\0\x01", 8));
  // GET_SCHEMA: the latest, a given version, and "no schema" for an untyped topic.
  wire::BaseCommand get;
  get.set_type(wire::BaseCommand::GET_SCHEMA);
  const uint64_t rid2 = c->next_request_id();
  get.mutable_getschema()->set_request_id(rid2);
  get.mutable_getschema()->set_topic(topic);
  get.mutable_getschema()->set_schema_version(std::string(8, '\0'));
  ASSERT_TRUE(c->send(get).ok());
  auto v0 = c->response(rid2);
  ASSERT_TRUE(v0.ok());
  EXPECT_EQ(v0->command.getschemaresponse().schema().schema_data(),
            R"({"type":"record","name":"R","fields":[]})");
  const uint64_t rid3 = c->next_request_id();
  get.mutable_getschema()->set_request_id(rid3);
  get.mutable_getschema()->set_topic("persistent://public/default/untyped");
  get.mutable_getschema()->clear_schema_version();
  ASSERT_TRUE(c->send(get).ok());
  auto none = c->response(rid3);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->command.getschemaresponse().error_code(), wire::TopicNotFound);
  EXPECT_EQ(none->command.getschemaresponse().error_message(), "Topic not found or no-schema");
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

TEST_F(BrokerTest, MessageTtlExpiresUnconsumedMessages) {
  ASSERT_TRUE(
      cluster_
          .await(store_->put("/admin/policies/public/default", R"({"message_ttl_in_seconds": 1})"))
          .ok());
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.message_expiry_check_interval_minutes = 0.002; });
  const std::string topic = "persistent://public/default/ttl";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "slow", wire::CommandSubscribe::Exclusive, 1).ok());
  produce(*c, topic, 5);
  std::this_thread::sleep_for(1500ms);
  ASSERT_TRUE(c->send_message(1, 5, "fresh").ok());
  ASSERT_TRUE(c->flow(1, 100).ok());
  auto m = c->receive_message();
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload.to_string(), "fresh") << "older messages expired";
  EXPECT_FALSE(c->receive_message(300ms).ok());
}

TEST_F(BrokerTest, BacklogQuotaPolicies) {
  ASSERT_TRUE(cluster_
                  .await(store_->put("/admin/policies/public/default",
                                     R"({"backlog_quota_map": {"destination_storage":
                                         {"limitSize": 2000, "policy": "producer_exception"}}})"))
                  .ok());
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.backlog_quota_check_interval_seconds = 0.1; });
  const std::string topic = "persistent://public/default/quota";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "behind", wire::CommandSubscribe::Exclusive, 1).ok());
  // The producer has its own connection: once the quota check closes it, a further SEND
  // would be a protocol error that closes the connection.
  auto p = client();
  ASSERT_TRUE(p->create_producer(topic, 1).ok());
  int sent = 0;
  for (; sent < 40; ++sent) {
    if (!p->send_message(1, static_cast<uint64_t>(sent), std::string(100, 'q')).ok()) break;
  }
  EXPECT_GE(sent, 15) << "the quota (2000 bytes) is passed after ~15 messages";
  // Over the quota: the producer is disconnected and new ones are refused.
  if (sent == 40) {
    auto closed = p->receive(wire::BaseCommand::CLOSE_PRODUCER, 5s);
    ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  }
  auto q = client();
  auto refused = q->create_producer(topic, 2);
  EXPECT_EQ(testing::server_error_of(refused.status()),
            wire::ProducerBlockedQuotaExceededException);
  // Consuming brings the backlog under the quota: producers are welcome again.
  ASSERT_TRUE(c->flow(1, 100).ok());
  wire::MessageIdData last;
  int received = 0;
  while (auto m = c->receive_message(500ms)) {
    if (!m.ok()) break;
    last = m->id;
    ++received;
  }
  ASSERT_GE(received, sent);
  wire::MessageIdData id;
  id.set_ledgerid(last.ledgerid());
  id.set_entryid(last.entryid());
  ASSERT_TRUE(c->ack(1, {id}, true, 77).ok());
  EXPECT_TRUE(q->create_producer(topic, 3).ok());
}

TEST_F(BrokerTest, BacklogQuotaEvictsTheSlowestSubscription) {
  ASSERT_TRUE(cluster_
                  .await(store_->put("/admin/policies/public/default",
                                     R"({"backlog_quota_map": {"destination_storage":
                                         {"limitSize": 2000,
                                          "policy": "consumer_backlog_eviction"}}})"))
                  .ok());
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.backlog_quota_check_interval_seconds = 0.1; });
  const std::string topic = "persistent://public/default/evict";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "behind", wire::CommandSubscribe::Exclusive, 1).ok());
  ASSERT_TRUE(c->create_producer(topic, 1).ok());
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(c->send_message(1, static_cast<uint64_t>(i), std::string(100, 'e')).ok());
  }
  std::this_thread::sleep_for(500ms);
  ASSERT_TRUE(c->flow(1, 100).ok());
  int kept = 0;
  while (c->receive_message(300ms).ok()) ++kept;
  EXPECT_LT(kept, 40) << "the oldest entries were evicted";
  EXPECT_GT(kept, 0);
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

// Sends n messages with partition keys "k<i % keys>".
void produce_keyed(PulsarTestClient& c, uint64_t producer_id, int n, int keys) {
  for (int i = 0; i < n; ++i) {
    wire::MessageMetadata md;
    md.set_partition_key(fmt::format("k{}", i % keys));
    ASSERT_TRUE(
        c.send_message(producer_id, static_cast<uint64_t>(i), fmt::format("m{}", i), &md).ok());
  }
}

TEST_F(BrokerTest, KeySharedKeepsEachKeyOnOneConsumer) {
  const std::string topic = "persistent://public/default/keyed";
  auto a = client();
  auto b = client();
  ASSERT_TRUE(a->subscribe(topic, "ks", wire::CommandSubscribe::Key_Shared, 1).ok());
  ASSERT_TRUE(b->subscribe(topic, "ks", wire::CommandSubscribe::Key_Shared, 2).ok());
  ASSERT_TRUE(a->flow(1, 1000).ok());
  ASSERT_TRUE(b->flow(2, 1000).ok());
  auto p = client();
  ASSERT_TRUE(p->create_producer(topic, 1).ok());
  produce_keyed(*p, 1, 200, 20);
  std::map<std::string, int> owner;  // key -> consumer
  int total = 0;
  for (auto* c : {a.get(), b.get()}) {
    while (auto m = c->receive_message(500ms)) {
      if (!m.ok()) break;
      ++total;
      const int who = c == a.get() ? 1 : 2;
      auto [it, inserted] = owner.try_emplace(m->metadata.partition_key(), who);
      EXPECT_EQ(it->second, who) << "key " << it->first << " went to both consumers";
    }
  }
  EXPECT_EQ(total, 200);
  std::set<int> owners;
  for (const auto& [k, who] : owner) owners.insert(who);
  EXPECT_EQ(owners.size(), 2u) << "keys are split between the consumers";
  // Sticky ranges must not overlap.
  auto s1 = client();
  wire::CommandSubscribe sticky;
  sticky.set_topic(topic);
  sticky.set_subscription("sticky");
  sticky.set_subtype(wire::CommandSubscribe::Key_Shared);
  sticky.set_consumer_id(5);
  sticky.mutable_keysharedmeta()->set_keysharedmode(wire::STICKY);
  auto* range = sticky.mutable_keysharedmeta()->add_hashranges();
  range->set_start(0);
  range->set_end(40000);
  ASSERT_TRUE(s1->subscribe(sticky).ok());
  sticky.set_consumer_id(6);
  range->set_start(30000);
  range->set_end(65535);
  EXPECT_EQ(testing::server_error_of(s1->subscribe(sticky)), wire::ConsumerAssignError);
}

TEST_F(BrokerTest, UnackedLimitBlocksASharedConsumerUntilItAcknowledges) {
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.max_unacked_messages_per_consumer = 10; });
  const std::string topic = "persistent://public/default/unacked";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "s", wire::CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->flow(1, 100).ok());
  produce(*c, topic, 30);
  std::vector<wire::MessageIdData> got;
  while (auto m = c->receive_message(500ms)) {
    if (!m.ok()) break;
    got.push_back(id_of(m->id));
  }
  EXPECT_EQ(got.size(), 10u) << "blocked at maxUnackedMessagesPerConsumer";
  // Acknowledging down to half the limit unblocks it.
  ASSERT_TRUE(
      c->ack(1, std::vector<wire::MessageIdData>(got.begin(), got.begin() + 6), false, 1).ok());
  auto more = c->receive_message();
  ASSERT_TRUE(more.ok()) << more.status().to_string();
  // Consumer stats tell the same story.
  wire::BaseCommand stats;
  stats.set_type(wire::BaseCommand::CONSUMER_STATS);
  const uint64_t rid = c->next_request_id();
  stats.mutable_consumerstats()->set_request_id(rid);
  stats.mutable_consumerstats()->set_consumer_id(1);
  ASSERT_TRUE(c->send(stats).ok());
  auto resp = c->response(rid);
  ASSERT_TRUE(resp.ok()) << resp.status().to_string();
  EXPECT_EQ(resp->command.consumerstatsresponse().type(), "Shared");
  EXPECT_GE(resp->command.consumerstatsresponse().unackedmessages(), 5u);
}

TEST_F(BrokerTest, RedeliverUnacknowledgedAndTopicsOfNamespace) {
  const std::string topic = "persistent://public/default/redeliver";
  auto c = client();
  ASSERT_TRUE(c->subscribe(topic, "s", wire::CommandSubscribe::Shared, 1).ok());
  ASSERT_TRUE(c->flow(1, 3).ok());
  produce(*c, topic, 3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c->receive_message().ok());
  ASSERT_TRUE(c->redeliver_unacknowledged(1).ok());
  ASSERT_TRUE(c->flow(1, 3).ok());
  for (int i = 0; i < 3; ++i) {
    auto m = c->receive_message();
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->redelivery_count, 1u);
  }
  wire::BaseCommand list;
  list.set_type(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE);
  const uint64_t rid = c->next_request_id();
  list.mutable_gettopicsofnamespace()->set_request_id(rid);
  list.mutable_gettopicsofnamespace()->set_namespace_("public/default");
  ASSERT_TRUE(c->send(list).ok());
  auto topics = c->response(rid);
  ASSERT_TRUE(topics.ok()) << topics.status().to_string();
  const auto& names = topics->command.gettopicsofnamespaceresponse().topics();
  EXPECT_NE(std::find(names.begin(), names.end(), topic), names.end());
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

// A consumer leaving an idle Shared subscription must not stall dispatch to the others:
// the dispatch loop's wait for new entries is restarted, not dropped.
TEST_F(BrokerTest, AConsumerLeavingAnIdleSubscriptionDoesNotStallTheOthers) {
  const std::string topic = "persistent://public/default/idle-leave";
  for (auto type : {wire::CommandSubscribe::Shared, wire::CommandSubscribe::Failover}) {
    const std::string sub = wire::CommandSubscribe::SubType_Name(type);
    auto a = client();
    auto b = client();
    ASSERT_TRUE(a->subscribe(topic, sub, type, 1).ok());
    ASSERT_TRUE(b->subscribe(topic, sub, type, 2).ok());
    ASSERT_TRUE(a->flow(1, 100).ok());
    ASSERT_TRUE(b->flow(2, 100).ok());
    std::this_thread::sleep_for(100ms);  // both dispatch loops wait for entries
    ASSERT_TRUE(b->close_consumer(2).ok());
    auto p = client();
    produce(*p, topic, 3);
    for (int i = 0; i < 3; ++i) {
      auto m = a->receive_message(5s);
      ASSERT_TRUE(m.ok()) << sub << " message " << i << ": " << m.status().to_string();
      ASSERT_TRUE(a->ack(1, {id_of(m->id)}).ok());
    }
  }
}

// The chunks of one large message share its sequence id: with deduplication on, every chunk
// is stored, and only a resent last chunk counts as a duplicate.
TEST_F(BrokerTest, DeduplicationStoresEveryChunkAndDedupsOnTheLastOne) {
  broker_->stop();
  start_broker([](BrokerConfig& cfg) { cfg.broker_deduplication_enabled = true; });
  const std::string topic = "persistent://public/default/chunks";
  auto c = client();
  ASSERT_TRUE(c->create_producer(topic, 1, "chunker").ok());
  wire::MessageMetadata chunk;
  chunk.set_uuid("chunker-0");
  chunk.set_num_chunks_from_msg(3);
  chunk.set_total_chunk_msg_size(30);
  for (int i = 0; i < 3; ++i) {
    chunk.set_chunk_id(i);
    auto r = c->send_message(1, 0, "0123456789", &chunk);
    ASSERT_TRUE(r.ok()) << "chunk " << i << ": " << r.status().to_string();
    EXPECT_NE(r->message_id().ledgerid(), UINT64_MAX) << "chunk " << i << " taken as a duplicate";
  }
  chunk.set_chunk_id(2);
  auto again = c->send_message(1, 0, "0123456789", &chunk);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->message_id().ledgerid(), UINT64_MAX) << "the resent last chunk was stored";
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

// A client that leaves while its sends are being stored: their receipts find the connection
// closed and are dropped. (The connection was released twice by a GCC 12 coroutine temporary
// and freed under them: the broker aborted within a few rounds. Checked.)
TEST_F(BrokerTest, ProducerLeavingWithSendsInFlightLeavesTheBrokerServing) {
  for (int round = 0; round < 20; ++round) {
    const std::string topic = fmt::format("persistent://public/default/gone-{}", round);
    auto c = client();
    ASSERT_TRUE(c->create_producer(topic, 1, "p").ok());
    for (int i = 0; i < 500; ++i) ASSERT_TRUE(c->post_message(1, i, "x").ok());
    c->close();
  }
  std::this_thread::sleep_for(500ms);
  auto c = client();
  EXPECT_TRUE(c->create_producer("persistent://public/default/after", 1, "p").ok());
}

}  // namespace
}  // namespace magnetar::broker
