#pragma once
// Latency rows of the benchmarks: rate, p50 / p99 / p99.9 and max (ms) as counters, and the
// hiccups of the row: a helper thread sleeps 1 ms at a time, and every wake-up more than
// 2 ms late counts (jHiccup's method). It does no work, so what delays it is the machine:
// all cores busy, or (on a shared VM) the hypervisor descheduling a vCPU for 5-25 ms, which
// makes every add in flight wait that long whatever the bookie and the disk do.
// hiccup_ms is the total lateness, hiccup_max_ms the longest.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace magnetar::bench {

class HiccupMeter {
 public:
  HiccupMeter()
      : thread_([this] {
          using Clock = std::chrono::steady_clock;
          while (!stop_.load(std::memory_order_relaxed)) {
            const auto due = Clock::now() + std::chrono::milliseconds(1);
            std::this_thread::sleep_until(due);
            const double late = std::chrono::duration<double, std::milli>(Clock::now() - due).count();
            if (late > 2.0) {
              total_ms_ += late;
              max_ms_ = std::max(max_ms_, late);
            }
          }
        }) {}
  HiccupMeter(const HiccupMeter&) = delete;
  HiccupMeter& operator=(const HiccupMeter&) = delete;
  ~HiccupMeter() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // After stop().
  double total_ms() const { return total_ms_; }
  double max_ms() const { return max_ms_; }

 private:
  std::atomic<bool> stop_{false};
  double total_ms_ = 0;
  double max_ms_ = 0;
  std::thread thread_;  // last: started once the fields above exist
};

inline void report_latency(benchmark::State& state, double rate, std::vector<double> ms,
                           HiccupMeter& hiccups) {
  hiccups.stop();
  state.counters["hiccup_ms"] = hiccups.total_ms();
  state.counters["hiccup_max_ms"] = hiccups.max_ms();
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
