// The dispatchers of each subscription kind over a fake cursor and fake consumer sinks: no
// bookie, no broker, no socket. The cursor holds entries in memory (ledger 1, entry ids from
// 0), the sinks record what a connection would have been asked to send.

#include "broker/service/dispatcher.h"

#include <gtest/gtest.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "broker/service/errors.h"
#include "protocol/frame.h"
#include "testing/event_loop.h"
#include "testing/ids.h"

namespace magnetar::broker {
namespace {

using magnetar::testing::E;
using magnetar::testing::L;

using mledger::Position;

Buffer make_entry(const std::string& key, int messages = 1, int64_t deliver_at_ms = -1) {
  wire::MessageMetadata md;
  md.set_producer_name("p");
  md.set_sequence_id(0);
  md.set_publish_time(1);
  if (!key.empty()) md.set_partition_key(key);
  if (messages > 1) md.set_num_messages_in_batch(messages);
  if (deliver_at_ms >= 0) md.set_deliver_at_time(deliver_at_ms);
  return protocol::encode_entry(md, BufferChain(Buffer::copy_of("payload"))).flatten();
}

// Entries in memory; reads wait at the end until append() or cancel_wait(). `fail_reads`
// makes the next reads fail (kUnavailable) without consuming anything.
class FakeCursor final : public DispatchCursor {
 public:
  explicit FakeCursor(Executor executor) : wakeup_(executor), stall_(executor) {}

  void append(const std::string& key = "", int messages = 1, int64_t deliver_at_ms = -1) {
    entries_.push_back(mledger::Entry{Position{L(1), E(static_cast<int64_t>(entries_.size()))},
                                      make_entry(key, messages, deliver_at_ms)});
    wakeup_.cancel();
  }
  void acknowledge(Position p) { acked_.insert(p); }

  Task<Result<std::vector<mledger::Entry>>> read_or_wait(int max) override {
    ++reads;
    read_times.push_back(std::chrono::steady_clock::now());
    if (fail_reads > 0) {
      --fail_reads;
      co_return Status(Errc::kUnavailable, "the bookies are away");
    }
    if (stall_reads) {
      // A read already on its way to the bookies: cancel_wait() does not end it.
      stall_reads = false;
      stalled = true;
      stall_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await stall_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      stalled = false;
    }
    while (next_ >= entries_.size()) {
      cancelled_ = false;
      wakeup_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (cancelled_) co_return Status(Errc::kCancelled, "wait cancelled");
    }
    std::vector<mledger::Entry> out;
    while (next_ < entries_.size() && static_cast<int>(out.size()) < max) {
      const auto& e = entries_[next_++];
      if (!acked_.count(e.position)) out.push_back(e);
    }
    co_return out;
  }
  Task<std::optional<mledger::Entry>> read_at(Position p) override {
    const int64_t e = p.entry_id.value();
    if (e < 0 || e >= static_cast<int64_t>(entries_.size())) {
      co_return std::nullopt;
    }
    co_return entries_[static_cast<size_t>(e)];
  }
  bool is_acknowledged(Position p) const override { return acked_.count(p) > 0; }
  bool has_more_entries() const override { return next_ < entries_.size(); }
  void seek(Position p) override {
    next_ = static_cast<size_t>(std::max<int64_t>(0, p.entry_id.value()));
  }
  void rewind() override {
    size_t first = 0;
    while (first < entries_.size() && acked_.count(entries_[first].position)) ++first;
    next_ = first;
  }
  void cancel_wait() override {
    cancelled_ = true;
    wakeup_.cancel();
  }

  // Ends a stalled read.
  void release() { stall_.cancel(); }

  int reads = 0;
  int fail_reads = 0;
  bool stall_reads = false;  // the next read stalls until release()
  bool stalled = false;
  std::vector<std::chrono::steady_clock::time_point> read_times;

 private:
  std::vector<mledger::Entry> entries_;
  std::set<Position> acked_;
  size_t next_ = 0;
  bool cancelled_ = false;
  asio::steady_timer wakeup_;
  asio::steady_timer stall_;
};

struct Sent {
  uint64_t consumer_id;
  Position position;
  uint32_t redelivery_count;
};

class FakeSink final : public ConsumerSink {
 public:
  void send_message(uint64_t consumer_id, Position position, int32_t, const Buffer&,
                    uint32_t redelivery_count) override {
    sent.push_back({consumer_id, position, redelivery_count});
  }
  void close_consumer(uint64_t consumer_id) override { closed.push_back(consumer_id); }
  void send_reached_end_of_topic(uint64_t consumer_id) override { ended.push_back(consumer_id); }
  void send_active_consumer_change(uint64_t consumer_id, bool active) override {
    active_changes[consumer_id] = active;
  }
  const std::string& remote() const override { return remote_; }
  const std::string& client_version() const override { return version_; }

  std::vector<Sent> sent;
  std::vector<uint64_t> closed, ended;
  std::map<uint64_t, bool> active_changes;  // last notice per consumer

  std::vector<Position> positions_for(uint64_t consumer_id) const {
    std::vector<Position> out;
    for (const auto& s : sent) {
      if (s.consumer_id == consumer_id) out.push_back(s.position);
    }
    return out;
  }

 private:
  std::string remote_ = "127.0.0.1:1";
  std::string version_ = "fake-client";
};

class DispatcherTest : public ::testing::Test {
 protected:
  std::shared_ptr<Dispatcher> make(SubType type, DispatchOptions options = {}) {
    return make_dispatcher(type, loop_.executor(), gate_, cursor_, options, log::Logger("test"));
  }
  std::shared_ptr<Consumer> consumer(uint64_t id, std::string name = "", int priority = 0) {
    return std::make_shared<Consumer>(sink_, id, name.empty() ? "c" + std::to_string(id) : name,
                                      priority);
  }
  // Turns the loop until `n` messages were sent in all (false on timeout).
  bool until_sent(size_t n) {
    return loop_.run_until([&] { return sink_->sent.size() >= n; }, std::chrono::seconds(5));
  }

  Gate gate_;  // outlives the loop (and the frames it destroys)
  testing::EventLoop loop_;
  std::shared_ptr<FakeCursor> cursor_ = std::make_shared<FakeCursor>(loop_.executor());
  std::shared_ptr<FakeSink> sink_ = std::make_shared<FakeSink>();
};

TEST_F(DispatcherTest, ExclusiveSendsInOrderWithinPermitsAndRefusesASecondConsumer) {
  auto d = make(wire::CommandSubscribe::Exclusive);
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  Status busy = d->add_consumer(consumer(2));
  EXPECT_EQ(busy.code(), make_error_code(Error::kConsumerBusy));
  for (int i = 0; i < 5; ++i) cursor_->append();
  d->flow(c1, 3);
  ASSERT_TRUE(until_sent(3));
  loop_.run_for(std::chrono::milliseconds(30));
  EXPECT_EQ(sink_->sent.size(), 3u);  // no more than the permits
  d->flow(c1, 10);
  ASSERT_TRUE(until_sent(5));
  EXPECT_EQ(sink_->positions_for(1),
            (std::vector<Position>{
                {L(1), E(0)}, {L(1), E(1)}, {L(1), E(2)}, {L(1), E(3)}, {L(1), E(4)}}));
  EXPECT_EQ(c1->unacked_messages, 5);
}

TEST_F(DispatcherTest, ExclusiveConsumerLeavingRewindsToTheFirstUnacknowledgedEntry) {
  auto d = make(wire::CommandSubscribe::Exclusive);
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  for (int i = 0; i < 4; ++i) cursor_->append();
  d->flow(c1, 4);
  ASSERT_TRUE(until_sent(4));
  cursor_->acknowledge({L(1), E(0)});
  d->acknowledged({{L(1), E(0)}});
  ASSERT_TRUE(d->remove_consumer(1, sink_.get()));
  auto c2 = consumer(2);
  ASSERT_TRUE(d->add_consumer(c2).ok());
  d->flow(c2, 10);
  ASSERT_TRUE(until_sent(7));
  EXPECT_EQ(sink_->positions_for(2),
            (std::vector<Position>{{L(1), E(1)}, {L(1), E(2)}, {L(1), E(3)}}));
}

TEST_F(DispatcherTest, CumulativeAcknowledgementIsRefusedOnSharedKindsOnly) {
  EXPECT_TRUE(make(wire::CommandSubscribe::Exclusive)->check_cumulative_ack().ok());
  EXPECT_TRUE(make(wire::CommandSubscribe::Failover)->check_cumulative_ack().ok());
  EXPECT_EQ(make(wire::CommandSubscribe::Shared)->check_cumulative_ack().code(),
            make_error_code(Error::kNotAllowed));
  EXPECT_EQ(make(wire::CommandSubscribe::Key_Shared)->check_cumulative_ack().code(),
            make_error_code(Error::kNotAllowed));
}

TEST_F(DispatcherTest, FailoverTellsEveryConsumerWhoIsActiveAndFailsOverInOrder) {
  auto d = make(wire::CommandSubscribe::Failover);
  auto b = consumer(2, "b");
  auto a = consumer(1, "a");
  ASSERT_TRUE(d->add_consumer(b).ok());
  ASSERT_TRUE(d->add_consumer(a).ok());  // "a" sorts first: it becomes active
  EXPECT_TRUE(sink_->active_changes.at(1));
  EXPECT_FALSE(sink_->active_changes.at(2));
  for (int i = 0; i < 3; ++i) cursor_->append();
  d->flow(a, 10);
  d->flow(b, 10);
  ASSERT_TRUE(until_sent(3));
  EXPECT_EQ(sink_->positions_for(2).size(), 0u);  // the standby got nothing
  ASSERT_TRUE(d->remove_consumer(1, sink_.get()));
  EXPECT_TRUE(sink_->active_changes.at(2));
  ASSERT_TRUE(until_sent(6));  // nothing was acknowledged: all three again, to "b"
  EXPECT_EQ(sink_->positions_for(2),
            (std::vector<Position>{{L(1), E(0)}, {L(1), E(1)}, {L(1), E(2)}}));
}

TEST_F(DispatcherTest, FailoverOnAPartitionPicksTheConsumerAtThePartitionsIndex) {
  DispatchOptions o;
  o.partition_index = 1;
  auto d = make(wire::CommandSubscribe::Failover, o);
  ASSERT_TRUE(d->add_consumer(consumer(1, "a")).ok());
  ASSERT_TRUE(d->add_consumer(consumer(2, "b")).ok());
  EXPECT_FALSE(sink_->active_changes.at(1));
  EXPECT_TRUE(sink_->active_changes.at(2));
}

TEST_F(DispatcherTest, SharedSpreadsRoundRobinAndRedeliversWhatALeavingConsumerHeld) {
  auto d = make(wire::CommandSubscribe::Shared);
  auto c1 = consumer(1), c2 = consumer(2);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  ASSERT_TRUE(d->add_consumer(c2).ok());
  for (int i = 0; i < 4; ++i) cursor_->append();
  d->flow(c1, 2);
  d->flow(c2, 10);
  ASSERT_TRUE(until_sent(4));
  EXPECT_EQ(sink_->positions_for(1).size(), 2u);
  EXPECT_EQ(sink_->positions_for(2).size(), 2u);
  const auto held = sink_->positions_for(1);
  ASSERT_TRUE(d->remove_consumer(1, sink_.get()));
  ASSERT_TRUE(until_sent(6));
  EXPECT_EQ(sink_->sent[4].consumer_id, 2u);
  EXPECT_EQ(sink_->sent[4].position, held[0]);
  EXPECT_EQ(sink_->sent[4].redelivery_count, 1u);
  EXPECT_EQ(sink_->sent[5].position, held[1]);
}

TEST_F(DispatcherTest, SharedPrefersTheHighestPriorityLevel) {
  auto d = make(wire::CommandSubscribe::Shared);
  auto low = consumer(1, "low", 5), high = consumer(2, "high", 0);
  ASSERT_TRUE(d->add_consumer(low).ok());
  ASSERT_TRUE(d->add_consumer(high).ok());
  for (int i = 0; i < 3; ++i) cursor_->append();
  d->flow(low, 10);
  d->flow(high, 2);
  ASSERT_TRUE(until_sent(3));
  EXPECT_EQ(sink_->positions_for(2), (std::vector<Position>{{L(1), E(0)}, {L(1), E(1)}}));
  EXPECT_EQ(sink_->positions_for(1), (std::vector<Position>{{L(1), E(2)}}));
}

TEST_F(DispatcherTest, SharedStopsAConsumerAtMaxUnackedUntilHalfIsAcknowledged) {
  DispatchOptions o;
  o.max_unacked_messages_per_consumer = 4;
  auto d = make(wire::CommandSubscribe::Shared, o);
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  for (int i = 0; i < 10; ++i) cursor_->append();
  d->flow(c1, 100);
  ASSERT_TRUE(until_sent(4));
  loop_.run_for(std::chrono::milliseconds(30));
  EXPECT_EQ(sink_->sent.size(), 4u);
  EXPECT_TRUE(c1->blocked);
  d->acknowledged({{L(1), E(0)}});  // 3 left: still over half
  loop_.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(sink_->sent.size(), 4u);
  d->acknowledged({{L(1), E(1)}});  // 2 left: half, unblocked
  EXPECT_FALSE(c1->blocked);
  ASSERT_TRUE(until_sent(6));
}

TEST_F(DispatcherTest, RedeliverOnSharedSendsOnlyTheListedPositionsAgain) {
  auto d = make(wire::CommandSubscribe::Shared);
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  for (int i = 0; i < 3; ++i) cursor_->append();
  d->flow(c1, 10);
  ASSERT_TRUE(until_sent(3));
  d->redeliver(c1, {{L(1), E(1)}});
  ASSERT_TRUE(until_sent(4));
  EXPECT_EQ(sink_->sent[3].position, (Position{L(1), E(1)}));
  EXPECT_EQ(sink_->sent[3].redelivery_count, 1u);
  loop_.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(sink_->sent.size(), 4u);
}

TEST_F(DispatcherTest, KeySharedKeepsEveryKeyOnOneConsumer) {
  auto d = make(wire::CommandSubscribe::Key_Shared);
  auto c1 = consumer(1), c2 = consumer(2);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  ASSERT_TRUE(d->add_consumer(c2).ok());
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (int round = 0; round < 3; ++round) {
    for (const auto& k : keys) cursor_->append(k);
  }
  d->flow(c1, 100);
  d->flow(c2, 100);
  ASSERT_TRUE(until_sent(keys.size() * 3));
  std::map<std::string, std::set<uint64_t>> owners;
  for (const auto& s : sink_->sent) {
    owners[keys[static_cast<size_t>(s.position.entry_id.value()) % keys.size()]].insert(
        s.consumer_id);
  }
  std::set<uint64_t> used;
  for (const auto& [key, who] : owners) {
    EXPECT_EQ(who.size(), 1u) << key;
    used.insert(who.begin(), who.end());
  }
  EXPECT_EQ(used.size(), 2u);  // the hash ranges split: both consumers get keys
}

TEST_F(DispatcherTest, KeySharedRefusesOverlappingOrInvalidStickyRanges) {
  auto d = make(wire::CommandSubscribe::Key_Shared);
  auto c1 = consumer(1);
  c1->sticky_ranges = {{0, 100}};
  ASSERT_TRUE(d->add_consumer(c1).ok());
  auto overlapping = consumer(2);
  overlapping->sticky_ranges = {{50, 200}};
  EXPECT_EQ(d->add_consumer(overlapping).code(), make_error_code(Error::kConsumerAssignError));
  auto invalid = consumer(3);
  invalid->sticky_ranges = {{10, 70000}};
  EXPECT_EQ(d->add_consumer(invalid).code(), make_error_code(Error::kConsumerAssignError));
  auto fine = consumer(4);
  fine->sticky_ranges = {{101, 65535}};
  EXPECT_TRUE(d->add_consumer(fine).ok());
}

TEST_F(DispatcherTest, ATypeChangeCarriesTheRedeliveriesOver) {
  auto shared = make(wire::CommandSubscribe::Shared);
  auto c1 = consumer(1);
  ASSERT_TRUE(shared->add_consumer(c1).ok());
  for (int i = 0; i < 2; ++i) cursor_->append();
  shared->flow(c1, 10);
  ASSERT_TRUE(until_sent(2));
  ASSERT_TRUE(shared->remove_consumer(1, sink_.get()));  // both wait for redelivery
  auto exclusive = make(wire::CommandSubscribe::Exclusive);
  exclusive->take_over_from(*shared);
  auto c2 = consumer(2);
  ASSERT_TRUE(exclusive->add_consumer(c2).ok());
  exclusive->flow(c2, 10);
  ASSERT_TRUE(until_sent(4));
  EXPECT_EQ(sink_->sent[2].redelivery_count, 1u);
  EXPECT_EQ(sink_->sent[3].redelivery_count, 1u);
}

// The last Shared consumer leaves while a read is on its way; an Exclusive consumer comes
// before it returns. The new dispatcher waits for the old one's loop, and what that read
// brought reaches the new consumer: nothing is skipped, nothing read twice at once.
TEST_F(DispatcherTest, ATypeChangeDuringAReadInFlightLosesNothing) {
  auto shared = make(wire::CommandSubscribe::Shared);
  auto c1 = consumer(1);
  ASSERT_TRUE(shared->add_consumer(c1).ok());
  for (int i = 0; i < 3; ++i) cursor_->append();
  cursor_->stall_reads = true;
  shared->flow(c1, 10);
  ASSERT_TRUE(loop_.run_until([&] { return cursor_->stalled; }));
  ASSERT_TRUE(shared->remove_consumer(1, sink_.get()));
  auto exclusive = make(wire::CommandSubscribe::Exclusive);
  exclusive->take_over_from(*shared);
  auto c2 = consumer(2);
  ASSERT_TRUE(exclusive->add_consumer(c2).ok());
  exclusive->flow(c2, 10);
  loop_.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(cursor_->reads, 1);  // the new dispatcher waits for the old loop
  EXPECT_TRUE(sink_->sent.empty());
  cursor_->release();
  ASSERT_TRUE(until_sent(3));
  EXPECT_EQ(sink_->positions_for(2),
            (std::vector<Position>{{L(1), E(0)}, {L(1), E(1)}, {L(1), E(2)}}));
  EXPECT_TRUE(sink_->positions_for(1).empty());
}

// A cursor whose reads keep failing is retried with capped exponential delays: never
// faster than the first delay, never slower than the cap, however many failures (the delay
// was once 100 << failures: zero or negative past ~25 failures, a busy loop, and undefined
// behaviour at 32).
TEST_F(DispatcherTest, FailedReadsAreRetriedWithCappedExponentialDelays) {
  DispatchOptions o;
  o.read_retry_initial = std::chrono::milliseconds(1);
  o.read_retry_max = std::chrono::milliseconds(8);
  auto d = make(wire::CommandSubscribe::Exclusive, o);
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  cursor_->append();
  cursor_->fail_reads = 60;
  d->flow(c1, 10);
  ASSERT_TRUE(until_sent(1));  // ~1+2+4 ms, then 8 ms per try: well under 5 s
  // 60 failed reads, the one that succeeded (index 60), then one waiting for more.
  const auto& t = cursor_->read_times;
  ASSERT_GE(t.size(), 61u);
  // Past the cap, tries are at least 0.9 * 8 ms apart (jitter shortens by up to 10 %).
  for (size_t i = 10; i <= 60; ++i) {
    EXPECT_GE(t[i] - t[i - 1], std::chrono::microseconds(7000)) << "try " << i;
  }
  EXPECT_GE(t[60] - t[0], std::chrono::milliseconds(50 * 7));
}

TEST_F(DispatcherTest, CloseDisconnectsEveryConsumerAndNoDispatchStartsAgain) {
  auto d = make(wire::CommandSubscribe::Shared);
  auto c1 = consumer(1), c2 = consumer(2);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  ASSERT_TRUE(d->add_consumer(c2).ok());
  d->flow(c1, 10);
  loop_.run_for(std::chrono::milliseconds(10));  // the loop waits for entries
  EXPECT_EQ(gate_.count(), 1);                   // the dispatch loop joined the task group
  d->close();
  EXPECT_EQ(sink_->closed, (std::vector<uint64_t>{1, 2}));
  EXPECT_TRUE(d->consumers().empty());
  cursor_->append();
  loop_.run_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(sink_->sent.empty());
  EXPECT_EQ(gate_.count(), 0);  // and left it when its wait was cancelled
}

TEST_F(DispatcherTest, NoDispatchStartsOnceTheTaskGroupIsClosed) {
  auto d = make(wire::CommandSubscribe::Exclusive);
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  cursor_->append();
  gate_.close();
  d->flow(c1, 10);
  loop_.run_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(sink_->sent.empty());
  EXPECT_EQ(gate_.count(), 0);
}

}  // namespace
}  // namespace magnetar::broker

namespace magnetar::broker {
namespace {

// Options with delayed delivery on, a 10 ms tick.
DispatchOptions delaying(bool strict = false) {
  DispatchOptions o;
  o.delayed_tracker.strict = strict;
  o.delayed_delivery = [] { return DelayedDeliveryPolicy{true, 10, 0}; };
  return o;
}

// Delayed delivery (delayed_delivery.h): a Shared dispatcher reads a delayed entry once,
// holds it without reading it again while it waits, and sends it when its wake-up comes.
TEST_F(DispatcherTest, SharedHoldsDelayedEntriesWithoutReadingThemAgain) {
  auto d = make(wire::CommandSubscribe::Shared, delaying(/*strict=*/true));
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  const int64_t now = wall_clock_ms();
  cursor_->append("", 1, now + 400);  // e0
  cursor_->append();                  // e1: at once
  cursor_->append("", 1, now + 200);  // e2
  d->flow(c1, 10);
  ASSERT_TRUE(until_sent(1));
  EXPECT_EQ(sink_->positions_for(1), (std::vector<Position>{Position{L(1), E(1)}}));
  EXPECT_EQ(d->delayed_messages(Position{L(0), E(0)}), 2);
  ASSERT_TRUE(until_sent(3));
  EXPECT_GE(wall_clock_ms(), now + 400);
  EXPECT_EQ(sink_->positions_for(1),
            (std::vector<Position>{{L(1), E(1)}, {L(1), E(2)}, {L(1), E(0)}}));
  for (const auto& s : sink_->sent) EXPECT_EQ(s.redelivery_count, 0u);
  // One read of the three, then waits for new entries: the held ones come from the tracker.
  EXPECT_LE(cursor_->reads, 4);
  EXPECT_EQ(d->delayed_messages(Position{L(0), E(0)}), 0);
}

TEST_F(DispatcherTest, ExclusiveIgnoresDeliveryTimes) {
  auto d = make(wire::CommandSubscribe::Exclusive, delaying());
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  cursor_->append("", 1, wall_clock_ms() + 60000);
  d->flow(c1, 10);
  ASSERT_TRUE(until_sent(1));
  EXPECT_EQ(d->delayed_messages(Position{L(0), E(0)}), 0);
}

TEST_F(DispatcherTest, AcknowledgedDelayedEntriesAreHeldNoMore) {
  auto d = make(wire::CommandSubscribe::Shared, delaying());
  auto c1 = consumer(1);
  ASSERT_TRUE(d->add_consumer(c1).ok());
  for (int i = 0; i < 3; ++i) cursor_->append("", 1, wall_clock_ms() + 60000);
  d->flow(c1, 10);
  ASSERT_TRUE(loop_.run_until([&] { return d->delayed_messages(Position{L(0), E(0)}) == 3; },
                              std::chrono::seconds(5)));
  d->acknowledged({Position{L(1), E(1)}});
  EXPECT_EQ(d->delayed_messages(Position{L(0), E(0)}), 2);
  EXPECT_EQ(d->delayed_messages(Position{L(1), E(0)}), 1);  // the mark-delete passed e0
}

}  // namespace
}  // namespace magnetar::broker
