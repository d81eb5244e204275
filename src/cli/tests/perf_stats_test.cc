// magnetar-perf's stall detector (GapTracker) and the lines and JSON it shows in, with
// receipt times given by the test (only the stall list's wall-clock end times read a clock).

#include "cli/perf_stats.h"

#include <gtest/gtest.h>

#include <string>

namespace magnetar::cli {
namespace {

using namespace std::chrono_literals;
using Clock = GapTracker::Clock;

// A point `us` microseconds after an arbitrary origin (never the clock's epoch).
Clock::time_point at_us(int64_t us) {
  return Clock::time_point{} + 1h + std::chrono::microseconds(us);
}

TEST(GapTrackerTest, NoGapBeforeTheSecondReceipt) {
  GapTracker g;
  EXPECT_EQ(g.total().longest_us, 0);
  g.note(at_us(0));
  const auto t = g.total();
  EXPECT_EQ(t.longest_us, 0);
  EXPECT_EQ(t.over, 0);
}

TEST(GapTrackerTest, LongestGapAndGapsOverTheThreshold) {
  GapTracker g;  // 20 ms by default
  EXPECT_EQ(g.threshold(), 20ms);
  int64_t t = 0;
  g.note(at_us(t));
  for (int64_t gap : {100, 20'000, 20'001, 500, 150'000, 35'000, 1}) {
    t += gap;
    g.note(at_us(t));
  }
  const auto total = g.total();
  EXPECT_EQ(total.longest_us, 150'000);
  EXPECT_EQ(total.over, 3) << "20.001, 150 and 35 ms are over 20 ms; exactly 20 ms is not";
}

TEST(GapTrackerTest, TheThresholdIsConfigurable) {
  GapTracker g;
  g.set_threshold(1ms);
  g.note(at_us(0));
  g.note(at_us(1'500));
  g.note(at_us(2'000));
  g.note(at_us(5'000));
  EXPECT_EQ(g.total().over, 2);
  EXPECT_EQ(g.total().longest_us, 3'000);
}

TEST(GapTrackerTest, IntervalsHandOverTheirGapsAndTheTotalKeepsThem) {
  GapTracker g;
  g.note(at_us(0));
  g.note(at_us(30'000));  // a stall in the first interval
  const auto first = g.take_interval();
  EXPECT_EQ(first.longest_us, 30'000);
  EXPECT_EQ(first.over, 1);
  // The gap that spans the interval boundary belongs to the interval it ends in.
  g.note(at_us(31'000));
  g.note(at_us(32'000));
  const auto second = g.take_interval();
  EXPECT_EQ(second.longest_us, 1'000);
  EXPECT_EQ(second.over, 0);
  g.note(at_us(60'000));  // 28 ms, not yet taken: the total includes it
  const auto total = g.total();
  EXPECT_EQ(total.longest_us, 30'000);
  EXPECT_EQ(total.over, 2);
  EXPECT_EQ(g.take_interval().over, 1);
  EXPECT_EQ(g.take_interval().longest_us, 0) << "an interval without receipts has no gap";
  EXPECT_EQ(g.total().over, 2);
}

TEST(GapTrackerTest, ReceiptsNotedOutOfOrderAreNoGapAndMoveNothingBack) {
  GapTracker g;
  g.note(at_us(0));
  g.note(at_us(10'000));
  g.note(at_us(9'000));  // another thread's receipt, noted late
  g.note(at_us(25'000));
  const auto total = g.total();
  EXPECT_EQ(total.longest_us, 15'000) << "measured from 10 ms, not from 9 ms";
  EXPECT_EQ(total.over, 0);
}

TEST(GapTrackerTest, ASenderIdleTimeIsNoStall) {
  GapTracker g;
  g.note(at_us(0));
  // Nothing in flight until 500 ms: the wait for the next receipt starts then.
  g.resume(at_us(500'000));
  g.note(at_us(502'000));
  EXPECT_EQ(g.total().longest_us, 2'000);
  EXPECT_EQ(g.total().over, 0);
  // A resume earlier than the last receipt changes nothing.
  g.resume(at_us(400'000));
  g.note(at_us(530'000));
  EXPECT_EQ(g.total().longest_us, 28'000);
  EXPECT_EQ(g.total().over, 1);
}

TEST(GapTrackerTest, ResumeBeforeAnyReceiptDoesNotOpenAGap) {
  GapTracker g;
  g.resume(at_us(0));
  g.note(at_us(100'000));  // the first receipt, 100 ms after the first send: a latency, not a gap
  EXPECT_EQ(g.total().longest_us, 0);
  EXPECT_EQ(g.total().over, 0);
}

TEST(GapTrackerTest, TheLinesAndTheSummaryShowTheGaps) {
  PerfCounters c;
  c.gaps.set_threshold(5ms);
  c.gaps.note(at_us(0));
  c.gaps.note(at_us(7'250));
  c.messages = 2;
  IntervalRecorder latency;
  IntervalLine line("produced", true);
  const std::string text = line.next(c, latency, 1.0);
  EXPECT_NE(text.find(" --- Gaps: longest: 7.250 ms - over 5 ms: 1"), std::string::npos) << text;
  // The line took the interval; the run's total still has it.
  EXPECT_EQ(c.gaps.take_interval().over, 0);
  const auto j = summary_json("produce", nullptr, 1.0, 2, 0, 0, Histogram(), c.gaps.total(),
                              c.gaps.threshold(), c.gaps.stalls());
  EXPECT_DOUBLE_EQ(j["gaps"]["threshold_ms"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["gaps"]["longest_ms"].get<double>(), 7.25);
  EXPECT_EQ(j["gaps"]["over_threshold"].get<int64_t>(), 1);
  ASSERT_EQ(j["gaps"]["stalls"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["gaps"]["stalls"][0]["ms"].get<double>(), 7.25);
  EXPECT_GT(j["gaps"]["stalls"][0]["end_unix_ms"].get<int64_t>(), 0);
}

TEST(GapTrackerTest, StallsAreListedWithWhenTheyEndedUpToTheLimit) {
  GapTracker g;  // 20 ms
  // Receipts at the steady clock's present, so that their wall-clock ends are known.
  const auto origin = Clock::now() - 1s;
  auto at = [&](int64_t us) { return origin + std::chrono::microseconds(us); };
  const auto before = std::chrono::system_clock::now() - 1s;
  int64_t t = 0;
  g.note(at(t));
  for (int64_t gap : {25'000, 1'000, 40'000}) g.note(at(t += gap));
  const auto stalls = g.stalls();
  ASSERT_EQ(stalls.size(), 2u) << "the 1 ms gap is no stall";
  EXPECT_EQ(stalls[0].us, 25'000);
  EXPECT_EQ(stalls[1].us, 40'000);
  // Each ended at its receipt: 25 ms and 66 ms after the origin, about a second ago.
  const auto apart = stalls[1].end - stalls[0].end;
  EXPECT_GE(apart, 40ms);
  EXPECT_LT(apart, 60ms);
  EXPECT_LE(stalls[1].end, std::chrono::system_clock::now());
  EXPECT_GT(stalls[0].end, before - 1s);
  // "hh:mm:ss.mmm (25.0 ms), hh:mm:ss.mmm (40.0 ms)"
  const std::string text = stalls_text(stalls);
  EXPECT_EQ(text.size(), std::string("00:00:00.000 (25.0 ms), 00:00:00.000 (40.0 ms)").size())
      << text;
  EXPECT_NE(text.find(" (25.0 ms), "), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 9), "(40.0 ms)") << text;
  EXPECT_EQ(stalls_text({}), "");

  // Past the limit, stalls are counted but no longer listed.
  for (size_t i = 0; i < GapTracker::kMaxStalls + 5; ++i) g.note(at(t += 30'000));
  EXPECT_EQ(g.stalls().size(), GapTracker::kMaxStalls);
  EXPECT_EQ(g.total().over, static_cast<int64_t>(GapTracker::kMaxStalls) + 7);
}

}  // namespace
}  // namespace magnetar::cli
