// The delayed-delivery tracker on a fake wall clock: what it holds, when it wakes its owner,
// what it hands back and in which order (broker/service/delayed_delivery.h).

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "broker/service/delayed_delivery.h"
#include "broker/service/errors.h"
#include "protocol/frame.h"

namespace magnetar::broker {
namespace {

using mledger::Position;
using std::chrono::milliseconds;

Position pos(int64_t entry) { return Position{LedgerId{1}, EntryId{entry}}; }

class TrackerTest : public ::testing::Test {
 protected:
  std::unique_ptr<DelayedDeliveryTracker> make(int64_t tick_ms, bool strict = false,
                                               int64_t lookahead = 0) {
    DelayedDeliveryTracker::Options o;
    o.tick_ms = tick_ms;
    o.strict = strict;
    o.fixed_delay_lookahead = lookahead;
    return std::make_unique<DelayedDeliveryTracker>(
        o, [this] { return now_; }, [this](std::optional<milliseconds> after) { armed_ = after; });
  }

  int64_t now_ = 1'000'000;
  std::optional<milliseconds> armed_;  // the last wake-up asked for (nullopt: disarmed)
};

TEST_F(TrackerTest, HoldsOnlyWhatIsDueAfterTheCutoff) {
  auto t = make(100, /*strict=*/true);
  EXPECT_FALSE(t->add(pos(0), -1));           // no delivery time
  EXPECT_FALSE(t->add(pos(1), now_ - 5));     // past
  EXPECT_FALSE(t->add(pos(2), now_));         // now
  EXPECT_TRUE(t->add(pos(3), now_ + 1));      // strict: a millisecond later is held
  EXPECT_EQ(t->size(), 1u);
  auto lax = make(100);
  EXPECT_FALSE(lax->add(pos(4), now_ + 100));  // within a tick: at once
  EXPECT_TRUE(lax->add(pos(5), now_ + 101));
}

TEST_F(TrackerTest, WakesAtTheFirstDeliveryTimeButNotSoonerThanATickAfterTheLast) {
  auto t = make(1000, /*strict=*/true);
  ASSERT_TRUE(t->add(pos(0), now_ + 5000));
  EXPECT_EQ(armed_, milliseconds(5000));
  ASSERT_TRUE(t->add(pos(1), now_ + 2000));  // earlier: re-armed
  EXPECT_EQ(armed_, milliseconds(2000));
  now_ += 2000;
  t->timer_fired();
  ASSERT_TRUE(t->has_due());
  EXPECT_EQ(t->take_due(10), std::vector<Position>{pos(1)});
  // The next is 3 s away: armed for it.
  EXPECT_EQ(armed_, milliseconds(3000));
  ASSERT_TRUE(t->add(pos(2), now_ + 10));  // 10 ms away, but the last wake-up was just now
  EXPECT_EQ(armed_, milliseconds(1000));
  t->take_all();
  EXPECT_EQ(armed_, std::nullopt);  // nothing held: disarmed
}

TEST_F(TrackerTest, DueMessagesComeBackInPositionOrder) {
  auto t = make(10, /*strict=*/true);
  ASSERT_TRUE(t->add(pos(0), now_ + 400));
  ASSERT_TRUE(t->add(pos(1), now_ + 300));
  ASSERT_TRUE(t->add(pos(2), now_ + 200));
  ASSERT_TRUE(t->add(pos(3), now_ + 100));
  ASSERT_TRUE(t->add(pos(4), now_ + 900));
  EXPECT_FALSE(t->has_due());
  now_ += 500;
  ASSERT_TRUE(t->has_due());
  // At most 3: the earliest three by time, handed back by position.
  EXPECT_EQ(t->take_due(3), (std::vector<Position>{pos(1), pos(2), pos(3)}));
  EXPECT_EQ(t->take_due(3), std::vector<Position>{pos(0)});
  EXPECT_FALSE(t->has_due());
  EXPECT_EQ(t->size(), 1u);
}

TEST_F(TrackerTest, WithoutStrictDeliveryAMessageMayGoATickEarly) {
  auto t = make(100);
  ASSERT_TRUE(t->add(pos(0), now_ + 1000));
  now_ += 899;
  EXPECT_FALSE(t->has_due());
  now_ += 1;
  EXPECT_TRUE(t->has_due());
}

TEST_F(TrackerTest, AcknowledgedMessagesAreHeldNoMore) {
  auto t = make(10, true);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(t->add(pos(i), now_ + 1000 + i));
  t->remove(pos(3));
  t->remove_upto(pos(1));
  EXPECT_EQ(t->size(), 2u);
  now_ += 2000;
  EXPECT_EQ(t->take_due(10), (std::vector<Position>{pos(2), pos(4)}));
  t->remove(pos(9));  // not held: nothing happens
  EXPECT_EQ(t->size(), 0u);
}

TEST_F(TrackerTest, AnEntryReadAgainIsHeldOnce) {
  auto t = make(10, true);
  ASSERT_TRUE(t->add(pos(0), now_ + 1000));
  ASSERT_TRUE(t->add(pos(0), now_ + 1000));
  EXPECT_EQ(t->size(), 1u);
}

TEST_F(TrackerTest, FixedDelaysPauseReadingAtTheLookahead) {
  auto t = make(10, true, /*lookahead=*/3);
  ASSERT_TRUE(t->add(pos(0), now_ + 1000));
  ASSERT_TRUE(t->add(pos(1), now_ + 1001));
  EXPECT_FALSE(t->should_pause());  // fewer than the lookahead
  ASSERT_TRUE(t->add(pos(2), now_ + 1002));
  EXPECT_TRUE(t->should_pause());
  now_ += 1000;
  EXPECT_FALSE(t->should_pause());  // the first is due: go on
  auto mixed = make(10, true, 3);
  ASSERT_TRUE(mixed->add(pos(0), now_ + 5000));
  ASSERT_TRUE(mixed->add(pos(1), now_ + 1000));  // out of order: a later read may be due sooner
  ASSERT_TRUE(mixed->add(pos(2), now_ + 6000));
  EXPECT_FALSE(mixed->should_pause());
}

Buffer entry_with(int64_t publish_ms, std::optional<int64_t> deliver_at_ms) {
  wire::MessageMetadata md;
  md.set_producer_name("p");
  md.set_sequence_id(0);
  md.set_publish_time(static_cast<uint64_t>(publish_ms));
  if (deliver_at_ms) md.set_deliver_at_time(*deliver_at_ms);
  return protocol::encode_entry(md, BufferChain(Buffer::copy_of("x"))).flatten();
}

TEST(DeliveryDelayRule, RefusesADelayOverTheMaximumOnly) {
  DelayedDeliveryPolicy p{true, 1000, 5000};
  EXPECT_TRUE(check_delivery_delay(p, entry_with(100, 5100)).ok());
  EXPECT_TRUE(check_delivery_delay(p, entry_with(100, std::nullopt)).ok());
  const Status refused = check_delivery_delay(p, entry_with(100, 5101));
  EXPECT_EQ(refused.code(), make_error_code(Error::kNotAllowed)) << refused.to_string();
  EXPECT_EQ(refused.message(), "Exceeds max allowed delivery delay of 5000 milliseconds");
  p.max_delay_ms = 0;  // no limit
  EXPECT_TRUE(check_delivery_delay(p, entry_with(100, 1'000'000'000)).ok());
  p = {false, 1000, 5000};  // delayed delivery off: no limit either (as Pulsar)
  EXPECT_TRUE(check_delivery_delay(p, entry_with(100, 1'000'000'000)).ok());
}

}  // namespace
}  // namespace magnetar::broker
