#include "cli/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace magnetar::cli {

// Bucket layout: values below kSubBuckets have a bucket each. Above, a value with its highest
// set bit at position e (e >= kSubBucketBits) is shifted right by s = e - kSubBucketBits so
// that its top kSubBucketBits + 1 bits remain, m in [kSubBuckets, 2 * kSubBuckets); its
// bucket is (s + 1) * kSubBuckets + (m - kSubBuckets), and covers [m << s, (m + 1) << s).

int Histogram::bucket_of(int64_t value) {
  if (value < 0) value = 0;
  if (value > kMaxValue) value = kMaxValue;
  if (value < kSubBuckets) return static_cast<int>(value);
  const int e = 63 - std::countl_zero(static_cast<uint64_t>(value));
  const int s = e - kSubBucketBits;
  const int64_t m = value >> s;
  return (s + 1) * kSubBuckets + static_cast<int>(m - kSubBuckets);
}

int64_t Histogram::bucket_low(int bucket) {
  if (bucket < kSubBuckets) return bucket;
  const int s = bucket / kSubBuckets - 1;
  const int64_t m = kSubBuckets + bucket % kSubBuckets;
  return m << s;
}

int64_t Histogram::bucket_width(int bucket) {
  if (bucket < kSubBuckets) return 1;
  return int64_t{1} << (bucket / kSubBuckets - 1);
}

static_assert(Histogram::kMaxValue < (int64_t{1} << 32), "the bucket table covers 2^32");

void Histogram::record(int64_t value) {
  if (value < 0) value = 0;
  ++counts_[static_cast<size_t>(bucket_of(value))];
  if (count_ == 0 || value < min_) min_ = value;
  if (value > max_) max_ = value;
  ++count_;
  sum_ += value;
}

void Histogram::merge(const Histogram& other) {
  if (other.count_ == 0) return;
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

void Histogram::reset() {
  *this = Histogram();
}

int64_t Histogram::percentile(double percent) const {
  if (count_ == 0) return 0;
  percent = std::clamp(percent, 0.0, 100.0);
  // The rank of the value asked for, 1-based: at least the first value, at most the last.
  const auto rank = std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(percent / 100.0 * static_cast<double>(count_))));
  int64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const int b = static_cast<int>(i);
      const int64_t middle = bucket_low(b) + (bucket_width(b) - 1) / 2;
      return std::clamp(middle, min_, max_);
    }
  }
  return max_;
}

}  // namespace magnetar::cli
