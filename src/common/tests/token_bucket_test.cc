// TokenBucket with a simulated clock: waits, bursts, the long-run rate.

#include "common/token_bucket.h"

#include <gtest/gtest.h>

namespace magnetar {
namespace {

using namespace std::chrono_literals;
using Clock = TokenBucket::Clock;

TEST(TokenBucketTest, WaitsGrowByOneIntervalPerBorrowedToken) {
  const auto t0 = Clock::time_point{} + 1h;
  TokenBucket bucket(10, 1, t0);
  EXPECT_EQ(bucket.take(t0), Clock::duration::zero());
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.take(t0)), 100ms);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.take(t0)), 200ms);
}

TEST(TokenBucketTest, IdleTimeFillsAtMostTheBurst) {
  const auto t0 = Clock::time_point{} + 1h;
  TokenBucket bucket(100, 5, t0);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bucket.take(t0), Clock::duration::zero());
  const auto later = t0 + 10s;  // would be 1000 tokens without the cap
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bucket.take(later), Clock::duration::zero());
  EXPECT_GT(bucket.take(later), Clock::duration::zero());
}

TEST(TokenBucketTest, ZeroRateIsUnlimited) {
  TokenBucket bucket(0, 1);
  EXPECT_TRUE(bucket.unlimited());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(bucket.take(Clock::now()), Clock::duration::zero());
}

TEST(TokenBucketTest, OversleepingCallerStillGetsTheRate) {
  auto now = Clock::time_point{} + 1h;
  TokenBucket bucket(100, 10, now);
  for (int i = 0; i < 1000; ++i) {
    const auto wait = bucket.take(now);
    now += wait + (wait > Clock::duration::zero() ? 1ms : 0ms);  // sleeps run 1 ms late
  }
  const double seconds = std::chrono::duration<double>(now - (Clock::time_point{} + 1h)).count();
  EXPECT_GT(seconds, 9.8);
  EXPECT_LT(seconds, 10.1);
}

TEST(TokenBucketTest, TakesManyTokensAtOnceAndSaysWhenOneIsBack) {
  const auto t0 = Clock::time_point{} + 1h;
  TokenBucket bucket(1000, 1000, t0);  // e.g. bytes per second
  EXPECT_EQ(bucket.available(t0), 1000);
  EXPECT_EQ(bucket.take(600, t0), Clock::duration::zero());
  EXPECT_EQ(bucket.wait_for_one(t0), Clock::duration::zero());
  // 900 more borrow 500: half a second before they are paid back, and a millisecond more
  // before one token is there again.
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.take(900, t0)), 500ms);
  EXPECT_EQ(bucket.available(t0), -500);
  EXPECT_EQ(std::chrono::duration_cast<std::chrono::milliseconds>(bucket.wait_for_one(t0)), 501ms);
  EXPECT_EQ(bucket.wait_for_one(t0 + 501ms), Clock::duration::zero());
}

}  // namespace
}  // namespace magnetar
