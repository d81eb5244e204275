// Bookie journal appends with fsync on: records of 100 B and 1 KiB with 1, 16 and 256 in
// flight, grouped by time (journalMaxGroupWaitMSec = 2 ms, BookKeeper's default) or flushed
// whenever the queue runs empty. Reports records/s (items_per_second), MB/s
// (bytes_per_second), syncs/s and records per sync. The journal lives in a temp dir under
// /tmp, so it measures the disk behind /tmp.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bookie/journal/journal.h"
#include "common/env.h"
#include "common/metrics.h"
#include "latency_report.h"

namespace magnetar::bookie {
namespace {

void BM_JournalAppend(benchmark::State& state) {
  const auto record_size = static_cast<size_t>(state.range(0));
  const auto window = static_cast<int>(state.range(1));
  const bool flush_when_empty = state.range(2) != 0;

  std::string dir = (std::filesystem::temp_directory_path() /
                     ("magnetar-journal-bench-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  FaultInjectionEnv env(posix_env());  // only to count syncs
  JournalOptions options;
  options.dir = dir;
  options.flush_when_queue_empty = flush_when_empty;
  auto opened = Journal::open(options, env);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().to_string().c_str());
    return;
  }
  std::unique_ptr<Journal> journal = std::move(*opened);

  Buffer payload = Buffer::allocate(record_size);
  for (size_t i = 0; i < record_size; ++i) payload.mutable_data()[i] = static_cast<uint8_t>(i);

  // At most `window` records in flight: the appender waits for a callback to free a slot.
  std::mutex mu;
  std::condition_variable cv;
  int outstanding = 0;
  bool failed = false;
  auto done = [&](Status st, JournalPosition) {
    std::lock_guard lock(mu);
    if (!st.ok()) failed = true;
    --outstanding;
    cv.notify_one();
  };

  uint64_t syncs_before = env.syncs;
  int64_t entry = 0;
  for (auto _ : state) {
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return outstanding < window; });
      ++outstanding;
    }
    journal->append(JournalRecord{JournalRecordType::kEntry, LedgerId{1}, EntryId{entry++}, payload}, done);
  }
  {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return outstanding == 0; });
  }
  uint64_t syncs = env.syncs - syncs_before;
  journal.reset();
  std::filesystem::remove_all(dir);
  if (failed) state.SkipWithError("an append failed");

  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(record_size));
  state.counters["syncs/s"] =
      benchmark::Counter(static_cast<double>(syncs), benchmark::Counter::kIsRate);
  state.counters["records/sync"] =
      static_cast<double>(state.iterations()) / static_cast<double>(std::max<uint64_t>(syncs, 1));
}

BENCHMARK(BM_JournalAppend)
    ->ArgNames({"size", "in_flight", "flush_when_empty"})
    ->ArgsProduct({{100, 1024}, {1, 16, 256}, {0, 1}})
    ->UseRealTime()
    ->MinTime(1.0);

// The journal alone at a steady pace ($MAGNETAR_BENCH_RATE records/s, default 10 000; 1 KiB,
// flush when the queue runs empty, 3 s): per-record latency from append to callback. Beside
// bookie_bench's BM_BookieAddLatency it tells the journal's share of an add's tail from the
// network's, the server's and the ledger storage's. $MAGNETAR_BENCH_METRICS=1 prints the
// metrics registry afterwards (the journal's fdatasync and append-to-callback histograms).
void BM_JournalAppendLatency(benchmark::State& state) {
  const char* rate_env = std::getenv("MAGNETAR_BENCH_RATE");
  const double rate = rate_env != nullptr ? std::atof(rate_env) : 10000;
  const int count = std::max(1000, static_cast<int>(rate * 3));
  const char* base = std::getenv("MAGNETAR_BENCH_DIR");
  std::string dir = (std::filesystem::path(base != nullptr ? base : "/tmp") /
                     ("magnetar-journal-bench-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::remove_all(dir);
  JournalOptions options;
  options.dir = dir;
  options.flush_when_queue_empty = std::getenv("MAGNETAR_BENCH_GROUP_WAIT_US") == nullptr;
  if (!options.flush_when_queue_empty) {
    options.max_group_wait =
        std::chrono::microseconds(std::atoi(std::getenv("MAGNETAR_BENCH_GROUP_WAIT_US")));
  }
  // $MAGNETAR_BENCH_REUSE=1: a journal in its steady state, writing over reused files
  // (journalReuseFiles, 64 MiB files, checkpoints every 50 ms): no zeros ahead of the data.
  const bool reuse = std::getenv("MAGNETAR_BENCH_REUSE") != nullptr;
  if (reuse) {
    options.reuse_files = true;
    options.max_file_size = 64 << 20;
    options.max_backups = 0;
  }
  auto opened = Journal::open(options);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().to_string().c_str());
    return;
  }
  std::unique_ptr<Journal> journal = std::move(*opened);
  Buffer payload = Buffer::allocate(1024);
  std::fill(payload.mutable_data(), payload.mutable_data() + payload.size(), uint8_t{'j'});
  using Clock = std::chrono::steady_clock;
  std::atomic<bool> stop_checkpoints{false};
  std::thread checkpointer;
  if (reuse) {
    checkpointer = std::thread([&] {
      while (!stop_checkpoints) {
        (void)journal->checkpoint_complete(journal->last_durable());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    // Warm up: three files' worth, so the measured records land in reused files.
    std::mutex wmu;
    std::condition_variable wcv;
    int warm_left = 3 * 64 * 1024;
    for (int i = 0; i < 3 * 64 * 1024; ++i) {
      journal->append(JournalRecord{JournalRecordType::kEntry, LedgerId{2}, EntryId{i}, payload},
                      [&](Status, JournalPosition) {
                        std::lock_guard lock(wmu);
                        if (--warm_left == 0) wcv.notify_one();
                      });
    }
    std::unique_lock lock(wmu);
    wcv.wait(lock, [&] { return warm_left == 0; });
  }
  std::vector<double> latencies(static_cast<size_t>(count));
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  bench::HiccupMeter hiccups;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    for (int i = 0; i < count; ++i) {
      std::this_thread::sleep_until(
          t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / rate)));
      const auto sent = Clock::now();
      journal->append(JournalRecord{JournalRecordType::kEntry, LedgerId{1}, EntryId{i}, payload},
                      [&, i, sent](Status st, JournalPosition) {
                        if (!st.ok()) std::abort();
                        latencies[static_cast<size_t>(i)] =
                            std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
                        std::lock_guard lock(mu);
                        ++finished;
                        cv.notify_one();
                      });
    }
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return finished == count; });
  }
  stop_checkpoints = true;
  if (checkpointer.joinable()) checkpointer.join();
  if (std::getenv("MAGNETAR_BENCH_METRICS") != nullptr) {  // before the journal drops them
    std::fprintf(stderr, "%s", metrics::default_registry().expose().c_str());
  }
  journal.reset();
  std::filesystem::remove_all(dir);
  bench::report_latency(state, rate, std::move(latencies), hiccups);
}
BENCHMARK(BM_JournalAppendLatency)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

}  // namespace
}  // namespace magnetar::bookie
