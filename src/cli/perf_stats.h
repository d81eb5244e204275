#pragma once
// What magnetar-perf measures and how it prints it: message, byte and failure counters, a
// latency histogram recorded from many threads and read per interval, pulsar-perf's stats
// lines, and the JSON summary.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/histogram.h"

namespace magnetar::cli {

// Latencies recorded from any thread (client IO threads, consumer threads), read by the
// reporter: take_interval() hands over what was recorded since the last call and adds it to
// the run's total. Thread-safe.
class IntervalRecorder {
 public:
  void record(int64_t micros) {
    std::lock_guard lock(mu_);
    interval_.record(micros);
  }
  Histogram take_interval() {
    std::lock_guard lock(mu_);
    Histogram h = interval_;
    total_.merge(interval_);
    interval_.reset();
    return h;
  }
  // The whole run so far, the current interval included.
  Histogram total() {
    std::lock_guard lock(mu_);
    Histogram h = total_;
    h.merge(interval_);
    return h;
  }

 private:
  std::mutex mu_;
  Histogram interval_;  // guarded by mu_
  Histogram total_;     // guarded by mu_
};

// The stall detector: the gaps between consecutive receipts (publish acknowledgements,
// received messages, completed adds), the longest of them and how many were longer than a
// threshold, over the run and per stats interval (a gap belongs to the interval it ends in).
// A server that stops answering for 200 ms once a minute hides in the percentiles of a busy
// run; here it is one gap of 200 ms. The first receipt opens the first gap. Thread-safe:
// receipts are noted from client IO threads and consumer threads, read by the reporter.
class GapTracker {
 public:
  using Clock = std::chrono::steady_clock;

  struct Gaps {
    int64_t longest_us = 0;  // 0 when fewer than two receipts
    int64_t over = 0;        // gaps longer than the threshold
  };
  // One gap over the threshold: when it ended (wall clock, to match server logs) and how
  // long it was.
  struct Stall {
    std::chrono::system_clock::time_point end;
    int64_t us = 0;
  };
  // The stalls kept, at most: the first ones of a run (their count is in Gaps::over).
  static constexpr size_t kMaxStalls = 100;

  // Set before the first receipt; 20 ms by default (--stall-threshold-ms).
  void set_threshold(std::chrono::microseconds threshold) {
    std::lock_guard lock(mu_);
    threshold_ = threshold;
  }
  std::chrono::microseconds threshold() const {
    std::lock_guard lock(mu_);
    return threshold_;
  }
  // A receipt at `at`. Receipts noted from several threads may come slightly out of order:
  // one earlier than the latest noted is no gap and moves nothing back.
  void note(Clock::time_point at);
  // Nothing was awaited until `at` (a producer with nothing in flight sends again): the next
  // receipt's gap is counted from `at`, so a sender's own idle time is never a stall.
  void resume(Clock::time_point at);
  // What ended since the last call (the run's total keeps it).
  Gaps take_interval();
  // The whole run so far, the current interval included.
  Gaps total() const;
  // The run's first kMaxStalls gaps over the threshold, in the order they ended.
  std::vector<Stall> stalls() const;

 private:
  mutable std::mutex mu_;
  std::chrono::microseconds threshold_{20000};  // guarded by mu_
  Clock::time_point last_{};                    // guarded by mu_; epoch: no receipt yet
  Gaps interval_;                               // guarded by mu_
  Gaps total_;                                  // guarded by mu_, without interval_
  std::vector<Stall> stalls_;                   // guarded by mu_
};

// Monotonic totals, updated from any thread.
struct PerfCounters {
  std::atomic<int64_t> messages{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> failures{0};
  GapTracker gaps;  // noted with every counted receipt
};

// "Gaps: longest: 1.204 ms - over 20 ms: 0" (the threshold in ms as given).
std::string gaps_text(const GapTracker::Gaps& g, std::chrono::microseconds threshold);
// "16:14:33.180 (74.3 ms), 16:14:38.366 (86.2 ms)": when each stall ended (UTC) and its
// length; empty without stalls.
std::string stalls_text(const std::vector<GapTracker::Stall>& stalls);

// "Latency: mean: 3.575 ms - med: 3.460 - 95pct: 4.790 - 99pct: 5.308 - 99.9pct: 5.834 -
// 99.99pct: 6.609 - Max: 6.609" from microseconds; `with_99_999` adds "99.999pct" before Max.
std::string latency_text(const Histogram& h, bool with_99_999);

// What one operation of a command is called and how its bytes are shown: pulsar-perf's
// "msg/s" and Mbit/s (2^20 bits), or the bookie command's "adds/s" and MB/s (10^6 bytes, as
// BookKeeper's tools and `magnetar bookkeeper simpletest` print them).
struct PerfUnits {
  std::string_view per_second = "msg/s";
  bool megabytes = false;
};
inline constexpr PerfUnits kMessageUnits{};
inline constexpr PerfUnits kAddUnits{"adds/s", true};

// `ops` and `bytes` over `seconds` as "X msg/s --- Y Mbit/s" (both with one decimal), or
// "X adds/s --- Y MB/s" with kAddUnits (MB/s with two).
std::string throughput_text(int64_t ops, int64_t bytes, double seconds,
                            const PerfUnits& units = kMessageUnits);

// The periodic stats line of a run, for what was counted since the previous line:
// "Throughput <label>: X msg/s --- Y Mbit/s[ --- failure Z msg/s] --- Latency: ... ---
// Gaps: ...".
// Used by the reporting thread only.
class IntervalLine {
 public:
  IntervalLine(std::string label, bool with_failures, PerfUnits units = kMessageUnits)
      : label_(std::move(label)), with_failures_(with_failures), units_(units) {}

  // Takes the latency interval out of `latency` and the gaps' interval out of `c.gaps`.
  std::string next(PerfCounters& c, IntervalRecorder& latency, double seconds);

 private:
  const std::string label_;
  const bool with_failures_;
  const PerfUnits units_;
  int64_t last_ops_ = 0;
  int64_t last_bytes_ = 0;
  int64_t last_failures_ = 0;
};

// The final summary: {"command", <the members of `subject`, e.g. "topics">,
// "duration_seconds", "messages", "failures", "bytes", "throughput_msg_per_sec",
// "throughput_mbit_per_sec", "throughput_mb_per_sec", "latency_ms": {"mean", "p50", "p95",
// "p99", "p99_9", "p99_99", "p99_999", "max"}, "gaps": {"threshold_ms", "longest_ms",
// "over_threshold", "stalls": [{"end_unix_ms", "ms"}, ...]}}. "messages" counts the
// command's operations (messages sent or received, entries added); "gaps" are those between
// receipts (GapTracker), "stalls" the first of those over the threshold.
nlohmann::ordered_json summary_json(std::string_view command, const nlohmann::ordered_json& subject,
                                    double seconds, int64_t messages, int64_t failures,
                                    int64_t bytes, const Histogram& latency_micros,
                                    const GapTracker::Gaps& gaps,
                                    std::chrono::microseconds gap_threshold,
                                    const std::vector<GapTracker::Stall>& stalls);

}  // namespace magnetar::cli
