#include "cli/perf_stats.h"

#include <fmt/format.h>

namespace magnetar::cli {

namespace {

double ms(int64_t micros) {
  return static_cast<double>(micros) / 1000.0;
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

std::string throughput_text(int64_t messages, int64_t bytes, double seconds) {
  if (seconds <= 0) seconds = 1e-9;
  return fmt::format("{:.1f} msg/s --- {:.1f} Mbit/s", static_cast<double>(messages) / seconds,
                     static_cast<double>(bytes) * 8 / 1024 / 1024 / seconds);
}

nlohmann::ordered_json summary_json(std::string_view command,
                                    const std::vector<std::string>& topics, double seconds,
                                    int64_t messages, int64_t failures, int64_t bytes,
                                    const Histogram& h) {
  const double s = seconds > 0 ? seconds : 1e-9;
  nlohmann::ordered_json j;
  j["command"] = command;
  j["topics"] = topics;
  j["duration_seconds"] = seconds;
  j["messages"] = messages;
  j["failures"] = failures;
  j["bytes"] = bytes;
  j["throughput_msg_per_sec"] = static_cast<double>(messages) / s;
  j["throughput_mbit_per_sec"] = static_cast<double>(bytes) * 8 / 1024 / 1024 / s;
  j["latency_ms"] = {{"mean", h.mean() / 1000.0},           {"p50", ms(h.percentile(50))},
                     {"p95", ms(h.percentile(95))},         {"p99", ms(h.percentile(99))},
                     {"p99_9", ms(h.percentile(99.9))},     {"p99_99", ms(h.percentile(99.99))},
                     {"p99_999", ms(h.percentile(99.999))}, {"max", ms(h.max())}};
  return j;
}

}  // namespace magnetar::cli
