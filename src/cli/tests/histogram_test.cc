// Histogram: bucket precision, percentiles of known distributions, merging.

#include "cli/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace magnetar::cli {
namespace {

TEST(HistogramTest, EmptyReportsZeros) {
  Histogram h;
  EXPECT_EQ(h.count(), 0);
  EXPECT_EQ(h.percentile(50), 0);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), 0);
  EXPECT_EQ(h.mean(), 0.0);
}

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (int v = 0; v < 128; ++v) h.record(v);
  EXPECT_EQ(h.count(), 128);
  EXPECT_EQ(h.percentile(50), 63);
  EXPECT_EQ(h.percentile(100), 127);
  EXPECT_EQ(h.percentile(0), 0);
  EXPECT_DOUBLE_EQ(h.mean(), 63.5);
}

TEST(HistogramTest, EveryBucketIsWithinOnePercentUpToAnHour) {
  for (int64_t v = 1; v <= Histogram::kMaxValue; v = v * 3 / 2 + 1) {
    const int b = Histogram::bucket_of(v);
    const int64_t low = Histogram::bucket_low(b);
    const int64_t width = Histogram::bucket_width(b);
    ASSERT_LE(low, v) << v;
    ASSERT_LT(v, low + width) << v;
    ASSERT_LE(static_cast<double>(width - 1) / static_cast<double>(low), 0.01) << v;
  }
  // Larger values share kMaxValue's bucket.
  EXPECT_EQ(Histogram::bucket_of(Histogram::kMaxValue * 2),
            Histogram::bucket_of(Histogram::kMaxValue));
  // Consecutive buckets tile the values without gaps.
  for (int b = 0; b + 1 <= Histogram::bucket_of(Histogram::kMaxValue); ++b) {
    ASSERT_EQ(Histogram::bucket_low(b) + Histogram::bucket_width(b), Histogram::bucket_low(b + 1));
  }
}

TEST(HistogramTest, UniformPercentilesWithinOnePercent) {
  Histogram h;
  for (int64_t v = 1; v <= 100'000; ++v) h.record(v);
  for (double p : {10.0, 50.0, 90.0, 95.0, 99.0, 99.9}) {
    const double expected = p / 100 * 100'000;
    EXPECT_NEAR(static_cast<double>(h.percentile(p)), expected, expected * 0.01) << p;
  }
  EXPECT_EQ(h.min(), 1);
  EXPECT_EQ(h.max(), 100'000);
  EXPECT_NEAR(h.mean(), 50'000.5, 1e-6);
}

TEST(HistogramTest, ExponentialPercentilesMatchTheQuantileFunction) {
  std::mt19937_64 random(42);
  std::exponential_distribution<double> exp(1.0 / 1000.0);  // mean 1000 µs
  Histogram h;
  for (int i = 0; i < 1'000'000; ++i) h.record(std::llround(exp(random)));
  for (double p : {50.0, 90.0, 99.0}) {
    const double expected = -std::log(1 - p / 100) * 1000.0;
    EXPECT_NEAR(static_cast<double>(h.percentile(p)), expected, expected * 0.02) << p;
  }
  EXPECT_NEAR(h.mean(), 1000.0, 10.0);
}

TEST(HistogramTest, MergedHalvesEqualTheWhole) {
  Histogram whole;
  Histogram a;
  Histogram b;
  std::mt19937 random(7);
  std::lognormal_distribution<double> dist(8.0, 1.5);
  for (int i = 0; i < 50'000; ++i) {
    const auto v = std::llround(dist(random));
    whole.record(v);
    (i % 2 == 0 ? a : b).record(v);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), whole.count());
  EXPECT_EQ(a.min(), whole.min());
  EXPECT_EQ(a.max(), whole.max());
  EXPECT_DOUBLE_EQ(a.mean(), whole.mean());
  for (double p : {1.0, 50.0, 99.0, 99.99}) EXPECT_EQ(a.percentile(p), whole.percentile(p));
}

TEST(HistogramTest, HugeAndNegativeValuesAreClamped) {
  Histogram h;
  h.record(-5);
  h.record(int64_t{1} << 40);
  EXPECT_EQ(h.count(), 2);
  EXPECT_EQ(h.min(), 0);
  EXPECT_EQ(h.max(), int64_t{1} << 40);
  EXPECT_EQ(h.percentile(1), 0);
  EXPECT_GE(h.percentile(100), Histogram::kMaxValue * 99 / 100);
  h.reset();
  EXPECT_EQ(h.count(), 0);
}

}  // namespace
}  // namespace magnetar::cli
