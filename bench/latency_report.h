#pragma once
// Latency rows of the benchmarks: rate, p50 / p99 / p99.9 and max (ms) as counters.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

namespace magnetar::bench {

inline void report_latency(benchmark::State& state, double rate, std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  auto at = [&](double p) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size())))];
  };
  state.counters["rate_per_s"] = rate;
  state.counters["p50_ms"] = at(0.50);
  state.counters["p99_ms"] = at(0.99);
  state.counters["p999_ms"] = at(0.999);
  state.counters["max_ms"] = ms.back();
}

}  // namespace magnetar::bench
