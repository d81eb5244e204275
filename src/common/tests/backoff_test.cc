#include "common/backoff.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace magnetar {
namespace {

using std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

// A clock the test moves by hand.
struct FakeClock {
  TimePoint now{};
  void set(milliseconds since_start) { now = TimePoint{} + since_start; }
  Backoff::Clock fn() {
    return [this] { return now; };
  }
};

Backoff::Options opts(milliseconds initial, milliseconds max, uint64_t seed = 42) {
  Backoff::Options o;
  o.initial = initial;
  o.max = max;
  o.seed = seed;
  return o;
}

// Jitter only shortens, by at most a tenth, and never below initial.
void expect_jittered(milliseconds got, milliseconds nominal, milliseconds initial) {
  milliseconds low = std::max(initial, nominal - nominal / 10);
  EXPECT_GE(got, low) << "nominal " << nominal.count();
  EXPECT_LE(got, nominal) << "nominal " << nominal.count();
}

TEST(BackoffTest, DoublesThenCapsExactlyBelowJitterRange) {
  // Delays under 10 ms have no room for jitter, so the sequence is exact.
  Backoff b(opts(milliseconds(1), milliseconds(8)));
  std::vector<int64_t> got;
  for (int i = 0; i < 6; ++i) got.push_back(b.next().count());
  EXPECT_EQ(got, (std::vector<int64_t>{1, 2, 4, 8, 8, 8}));
}

TEST(BackoffTest, GrowsThenCapsWithJitter) {
  Backoff b(opts(milliseconds(100), milliseconds(1000)));
  for (int64_t nominal : {100, 200, 400, 800, 1000, 1000, 1000}) {
    expect_jittered(b.next(), milliseconds(nominal), milliseconds(100));
  }
}

TEST(BackoffTest, JitterStaysWithinATenthBelowAndVaries) {
  Backoff b(opts(milliseconds(50), milliseconds(1000), 7));
  std::set<int64_t> seen;
  for (int i = 0; i < 5000; ++i) {
    milliseconds d = b.next();
    if (i >= 5) expect_jittered(d, milliseconds(1000), milliseconds(50));
    seen.insert(d.count());
  }
  EXPECT_GT(seen.size(), 50u);      // it is random...
  EXPECT_TRUE(seen.count(1000));    // ...spanning the whole range
  EXPECT_LE(*seen.rbegin(), 1000);  // and never longer than nominal
}

TEST(BackoffTest, JitterNeverGoesBelowInitial) {
  Backoff b(opts(milliseconds(1000), milliseconds(1000)));
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(b.next(), milliseconds(1000));
}

TEST(BackoffTest, SameSeedSameSequence) {
  Backoff a(opts(milliseconds(100), milliseconds(60'000), 9));
  Backoff b(opts(milliseconds(100), milliseconds(60'000), 9));
  Backoff c(opts(milliseconds(100), milliseconds(60'000), 10));
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    milliseconds x = a.next();
    EXPECT_EQ(x, b.next());
    differs |= x != c.next();
  }
  EXPECT_TRUE(differs);
}

TEST(BackoffTest, ResetStartsOver) {
  Backoff b(opts(milliseconds(100), milliseconds(10'000)));
  for (int i = 0; i < 10; ++i) (void)b.next();
  expect_jittered(b.next(), milliseconds(10'000), milliseconds(100));
  b.reset();
  EXPECT_EQ(b.next(), milliseconds(100));  // jitter cannot go below initial
  expect_jittered(b.next(), milliseconds(200), milliseconds(100));
}

TEST(BackoffTest, MandatoryStopPinsTheCallThatWouldOverrun) {
  FakeClock clock;
  Backoff::Options o = opts(milliseconds(100), milliseconds(60'000));
  o.mandatory_stop = milliseconds(1000);
  o.clock = clock.fn();
  Backoff b(std::move(o));

  clock.set(milliseconds(0));
  EXPECT_EQ(b.next(), milliseconds(100));
  clock.set(milliseconds(100));
  expect_jittered(b.next(), milliseconds(200), milliseconds(100));
  clock.set(milliseconds(300));
  expect_jittered(b.next(), milliseconds(400), milliseconds(100));
  EXPECT_FALSE(b.mandatory_stop_made());

  // 700 + 800 would end past 1000: only the remaining 300 is returned.
  clock.set(milliseconds(700));
  expect_jittered(b.next(), milliseconds(300), milliseconds(100));
  EXPECT_TRUE(b.mandatory_stop_made());

  // Afterwards the exponential sequence resumes where it was.
  clock.set(milliseconds(1000));
  expect_jittered(b.next(), milliseconds(1600), milliseconds(100));
  expect_jittered(b.next(), milliseconds(3200), milliseconds(100));
  EXPECT_TRUE(b.mandatory_stop_made());
}

TEST(BackoffTest, MandatoryStopNeverBelowInitialAndReArmedByReset) {
  FakeClock clock;
  Backoff::Options o = opts(milliseconds(100), milliseconds(60'000));
  o.mandatory_stop = milliseconds(250);
  o.clock = clock.fn();
  Backoff b(std::move(o));

  clock.set(milliseconds(0));
  EXPECT_EQ(b.next(), milliseconds(100));
  clock.set(milliseconds(240));  // 10 ms left, but never less than initial
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_TRUE(b.mandatory_stop_made());

  b.reset();
  EXPECT_FALSE(b.mandatory_stop_made());
  clock.set(milliseconds(10'000));  // the budget counts from the first call after reset
  EXPECT_EQ(b.next(), milliseconds(100));
  clock.set(milliseconds(10'100));
  expect_jittered(b.next(), milliseconds(150), milliseconds(100));
  EXPECT_TRUE(b.mandatory_stop_made());
}

TEST(BackoffTest, WithoutMandatoryStopNeverMade) {
  FakeClock clock;
  Backoff::Options o = opts(milliseconds(10), milliseconds(100));
  o.clock = clock.fn();
  Backoff b(std::move(o));
  for (int i = 0; i < 100; ++i) {
    clock.set(std::chrono::hours(i));
    (void)b.next();
  }
  EXPECT_FALSE(b.mandatory_stop_made());
}

TEST(BackoffTest, NoOverflowAfterThousandsOfCalls) {
  FakeClock clock;
  Backoff::Options o = opts(milliseconds(1), milliseconds::max());
  o.mandatory_stop = milliseconds::max();
  o.clock = clock.fn();
  Backoff b(std::move(o));
  milliseconds previous{0};
  for (int i = 0; i < 5000; ++i) {
    clock.set(std::chrono::hours(24) * i);
    milliseconds d = b.next();
    ASSERT_GT(d.count(), 0) << "call " << i;
    if (i < 60) {
      ASSERT_GT(d, previous) << "call " << i;  // still growing
    }
    if (i >= 70) {
      expect_jittered(d, milliseconds::max(), milliseconds(1));
    }
    previous = d;
  }
  // Once capped at max the delay overran the (huge) budget, with no overflow on the way.
  EXPECT_TRUE(b.mandatory_stop_made());
}

TEST(BackoffTest, DefaultClockAndSeedWork) {
  Backoff::Options o;
  o.initial = milliseconds(100);
  o.max = milliseconds(400);
  o.mandatory_stop = std::chrono::hours(1);
  Backoff b(std::move(o));
  EXPECT_EQ(b.next(), milliseconds(100));
  expect_jittered(b.next(), milliseconds(200), milliseconds(100));
  EXPECT_FALSE(b.mandatory_stop_made());
}

}  // namespace
}  // namespace magnetar
