// Readers: start positions, inclusive start, has_message_available, seek.

#include <future>

#include "client/tests/client_test_support.h"

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, ReaderFromEarliestReadsEverythingThenReportsNoMore) {
  auto p = producer(topic(), unbatched());
  send_n(p, 3);
  auto r = client().create_reader(topic(), MessageId::earliest());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (int i = 0; i < 3; ++i) {
    auto avail = r->has_message_available();
    ASSERT_TRUE(avail.ok()) << avail.status().to_string();
    EXPECT_TRUE(*avail);
    auto m = r->read_next(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->payload(), "msg-" + std::to_string(i));
  }
  auto avail = r->has_message_available();
  ASSERT_TRUE(avail.ok());
  EXPECT_FALSE(*avail);
  EXPECT_FALSE(r->read_next(200ms).ok());
  send_n(p, 1, "more-");
  EXPECT_TRUE(*r->has_message_available());
  auto m = r->read_next(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "more-0");
}

TEST_F(ClientTest, ReaderFromLatestSeesOnlyNewMessages) {
  auto p = producer(topic(), unbatched());
  send_n(p, 2);
  auto r = client().create_reader(topic(), MessageId::latest());
  ASSERT_TRUE(r.ok());
  auto avail = r->has_message_available();
  ASSERT_TRUE(avail.ok()) << avail.status().to_string();
  EXPECT_FALSE(*avail);
  EXPECT_FALSE(r->read_next(200ms).ok());
  send_n(p, 1, "new-");
  auto m = r->read_next(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "new-0");
}

TEST_F(ClientTest, ReaderFromAMessageIdExclusiveAndInclusive) {
  auto p = producer(topic(), unbatched());
  auto ids = send_n(p, 5);
  auto exclusive = client().create_reader(topic(), ids[1]);
  ASSERT_TRUE(exclusive.ok());
  auto m = exclusive->read_next(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "msg-2");
  ReaderOptions inclusive;
  inclusive.start_message_id_inclusive = true;
  auto r = client().create_reader(topic(), ids[1], inclusive);
  ASSERT_TRUE(r.ok());
  m = r->read_next(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "msg-1");
  // A serialized id works the same.
  auto parsed = MessageId::deserialize(ids[3].serialize());
  ASSERT_TRUE(parsed.ok());
  auto from_bytes = client().create_reader(topic(), *parsed);
  ASSERT_TRUE(from_bytes.ok());
  m = from_bytes->read_next(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "msg-4");
}

TEST_F(ClientTest, ReaderStartsInsideABatch) {
  ProducerOptions po;
  po.batching_max_messages = 5;
  po.batching_max_delay = 1000ms;
  auto p = producer(topic(), po);
  std::vector<std::shared_ptr<std::promise<Result<MessageId>>>> ids;
  std::vector<std::future<Result<MessageId>>> futures;
  for (int i = 0; i < 5; ++i) {
    auto promise = std::make_shared<std::promise<Result<MessageId>>>();
    futures.push_back(promise->get_future());
    p.send_async(Message("b" + std::to_string(i)),
                 [promise](Result<MessageId> r) { promise->set_value(std::move(r)); });
  }
  std::vector<MessageId> sent;
  for (auto& f : futures) sent.push_back(*f.get());
  auto r = client().create_reader(topic(), sent[2]);
  ASSERT_TRUE(r.ok());
  auto m = r->read_next(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload(), "b3");
}

TEST_F(ClientTest, ReaderSeeksByIdAndByTime) {
  auto p = producer(topic(), unbatched());
  auto ids = send_n(p, 4);
  auto r = client().create_reader(topic(), MessageId::earliest());
  ASSERT_TRUE(r.ok());
  std::vector<Message> read;
  for (int i = 0; i < 4; ++i) read.push_back(*r->read_next(5s));
  ASSERT_TRUE(r->seek(ids[1]).ok());
  auto m = r->read_next(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload(), "msg-1");
  ASSERT_TRUE(r->seek(read[3].publish_time()).ok());
  m = r->read_next(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->publish_time(), read[3].publish_time());
}

}  // namespace
}  // namespace magnetar::client::test

namespace magnetar::client::test {
namespace {

TEST_F(ClientTest, ReaderAtLatestInclusiveStartsWithTheLastMessage) {
  ProducerOptions po;
  po.batching_enabled = false;
  auto p = producer(topic(), po);
  send_n(p, 3);
  ReaderOptions o;
  o.start_message_id_inclusive = true;
  auto r = client().create_reader(topic(), MessageId::latest(), o);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  auto m = r->read_next(5s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->payload(), "msg-2");
  send_n(p, 1, "next-");
  m = r->read_next(5s);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->payload(), "next-0");
  // On an empty topic it simply waits for the first message.
  auto empty = client().create_reader(topic("-empty"), MessageId::latest(), o);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->read_next(200ms).ok());
}

}  // namespace
}  // namespace magnetar::client::test
