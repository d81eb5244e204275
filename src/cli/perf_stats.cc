#include "cli/perf_stats.h"

#include <fmt/format.h>

#include <algorithm>

namespace magnetar::cli {

namespace {

double ms(int64_t micros) {
  return static_cast<double>(micros) / 1000.0;
}

double megabits(int64_t bytes) {
  return static_cast<double>(bytes) * 8 / 1024 / 1024;
}

double megabytes(int64_t bytes) {
  return static_cast<double>(bytes) / 1e6;
}

}  // namespace

std::string latency_text(const Histogram& h, bool with_99_999) {
  std::string out = fmt::format(
      "Latency: mean: {:.3f} ms - med: {:.3f} - 95pct: {:.3f} - 99pct: {:.3f} - 99.9pct: {:.3f} "
      "- 99.99pct: {:.3f}",
      h.mean() / 1000.0, ms(h.percentile(50)), ms(h.percentile(95)), ms(h.percentile(99)),
      ms(h.percentile(99.9)), ms(h.percentile(99.99)));
  if (with_99_999) out += fmt::format(" - 99.999pct: {:.3f}", ms(h.percentile(99.999)));
  out += fmt::format(" - Max: {:.3f}", ms(h.max()));
  return out;
}

std::string throughput_text(int64_t ops, int64_t bytes, double seconds, const PerfUnits& units) {
  if (seconds <= 0) seconds = 1e-9;
  const double rate = static_cast<double>(ops) / seconds;
  if (units.megabytes) {
    return fmt::format("{:.1f} {} --- {:.2f} MB/s", rate, units.per_second,
                       megabytes(bytes) / seconds);
  }
  return fmt::format("{:.1f} {} --- {:.1f} Mbit/s", rate, units.per_second,
                     megabits(bytes) / seconds);
}

void GapTracker::note(Clock::time_point at) {
  std::lock_guard lock(mu_);
  if (last_ == Clock::time_point{}) {
    last_ = at;
    return;
  }
  if (at <= last_) return;
  const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(at - last_).count();
  last_ = at;
  interval_.longest_us = std::max(interval_.longest_us, us);
  if (us > threshold_.count()) {
    ++interval_.over;
    if (stalls_.size() < kMaxStalls) {
      // The wall clock now, less the time since `at`: when the stall ended.
      const auto end = std::chrono::system_clock::now() -
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::max(Clock::duration::zero(), Clock::now() - at));
      stalls_.push_back(Stall{end, us});
    }
  }
}

void GapTracker::resume(Clock::time_point at) {
  std::lock_guard lock(mu_);
  if (last_ != Clock::time_point{}) last_ = std::max(last_, at);
}

GapTracker::Gaps GapTracker::take_interval() {
  std::lock_guard lock(mu_);
  const Gaps g = interval_;
  total_.longest_us = std::max(total_.longest_us, g.longest_us);
  total_.over += g.over;
  interval_ = Gaps{};
  return g;
}

GapTracker::Gaps GapTracker::total() const {
  std::lock_guard lock(mu_);
  return Gaps{std::max(total_.longest_us, interval_.longest_us), total_.over + interval_.over};
}

std::vector<GapTracker::Stall> GapTracker::stalls() const {
  std::lock_guard lock(mu_);
  return stalls_;
}

std::string stalls_text(const std::vector<GapTracker::Stall>& stalls) {
  std::string out;
  for (const auto& s : stalls) {
    if (!out.empty()) out += ", ";
    const auto ms_of_day =
        std::chrono::duration_cast<std::chrono::milliseconds>(s.end.time_since_epoch()).count() %
        (24 * 3600 * 1000);
    out += fmt::format("{:02}:{:02}:{:02}.{:03} ({:.1f} ms)", ms_of_day / 3600000,
                       ms_of_day / 60000 % 60, ms_of_day / 1000 % 60, ms_of_day % 1000, ms(s.us));
  }
  return out;
}

std::string gaps_text(const GapTracker::Gaps& g, std::chrono::microseconds threshold) {
  return fmt::format("Gaps: longest: {:.3f} ms - over {:g} ms: {}", ms(g.longest_us),
                     ms(threshold.count()), g.over);
}

std::string IntervalLine::next(PerfCounters& c, IntervalRecorder& latency, double seconds) {
  const int64_t ops = c.messages.load();
  const int64_t bytes = c.bytes.load();
  const int64_t failures = c.failures.load();
  const Histogram h = latency.take_interval();
  std::string line =
      fmt::format("Throughput {}: {}", label_,
                  throughput_text(ops - last_ops_, bytes - last_bytes_, seconds, units_));
  if (with_failures_) {
    line += fmt::format(" --- failure {:.1f} {}",
                        static_cast<double>(failures - last_failures_) / std::max(seconds, 1e-9),
                        units_.per_second);
  }
  line += " --- " + latency_text(h, false);
  line += " --- " + gaps_text(c.gaps.take_interval(), c.gaps.threshold());
  last_ops_ = ops;
  last_bytes_ = bytes;
  last_failures_ = failures;
  return line;
}

nlohmann::ordered_json summary_json(std::string_view command, const nlohmann::ordered_json& subject,
                                    double seconds, int64_t messages, int64_t failures,
                                    int64_t bytes, const Histogram& h, const GapTracker::Gaps& gaps,
                                    std::chrono::microseconds gap_threshold,
                                    const std::vector<GapTracker::Stall>& stalls) {
  const double s = seconds > 0 ? seconds : 1e-9;
  nlohmann::ordered_json j;
  j["command"] = command;
  if (subject.is_object()) {
    for (const auto& [key, value] : subject.items()) j[key] = value;
  }
  j["duration_seconds"] = seconds;
  j["messages"] = messages;
  j["failures"] = failures;
  j["bytes"] = bytes;
  j["throughput_msg_per_sec"] = static_cast<double>(messages) / s;
  j["throughput_mbit_per_sec"] = megabits(bytes) / s;
  j["throughput_mb_per_sec"] = megabytes(bytes) / s;
  j["latency_ms"] = {{"mean", h.mean() / 1000.0},           {"p50", ms(h.percentile(50))},
                     {"p95", ms(h.percentile(95))},         {"p99", ms(h.percentile(99))},
                     {"p99_9", ms(h.percentile(99.9))},     {"p99_99", ms(h.percentile(99.99))},
                     {"p99_999", ms(h.percentile(99.999))}, {"max", ms(h.max())}};
  j["gaps"] = {{"threshold_ms", ms(gap_threshold.count())},
               {"longest_ms", ms(gaps.longest_us)},
               {"over_threshold", gaps.over}};
  auto listed = nlohmann::ordered_json::array();
  for (const auto& st : stalls) {
    const auto end_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(st.end.time_since_epoch()).count();
    listed.push_back({{"end_unix_ms", end_ms}, {"ms", ms(st.us)}});
  }
  j["gaps"]["stalls"] = std::move(listed);
  return j;
}

}  // namespace magnetar::cli
