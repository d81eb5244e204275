#pragma once
// A latency histogram in the manner of HdrHistogram: log-linear buckets (128 linear steps per
// power of two), so every value from 0 to kMaxValue is kept within 0.8 % (exactly below 128),
// in a fixed 26 KiB table. Histograms merge by adding counts, so per-interval histograms add
// up to the run's.
//
// Values are plain integers; magnetar-perf records microseconds (1 µs to 1 h). Values above
// kMaxValue count in the top bucket; max() still reports the true largest value.
//
// Not thread-safe: callers serialize access (see IntervalRecorder in perf_stats.h).

#include <array>
#include <cstdint>

namespace magnetar::cli {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 7;
  static constexpr int64_t kMaxValue = int64_t{3'600'000'000};  // one hour in microseconds

  // Negative values count as 0.
  void record(int64_t value);
  void merge(const Histogram& other);
  void reset();

  int64_t count() const { return count_; }
  // 0 when empty.
  int64_t min() const { return count_ == 0 ? 0 : min_; }
  int64_t max() const { return max_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  // The value below which `percent` (0..100) of the recorded values fall, as the middle of
  // its bucket, clamped to [min(), max()]. 0 when empty.
  int64_t percentile(double percent) const;

  // Bucket arithmetic, exposed for tests.
  static int bucket_of(int64_t value);
  static int64_t bucket_low(int bucket);
  static int64_t bucket_width(int bucket);

 private:
  static constexpr int kSubBuckets = 1 << kSubBucketBits;
  // Enough for every value below 2^32 (kMaxValue's bucket is 3286).
  static constexpr int kBuckets = 3328;

  std::array<int64_t, kBuckets> counts_{};
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t min_ = 0;
  int64_t max_ = 0;
};

}  // namespace magnetar::cli
