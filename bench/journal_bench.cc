// Bookie journal appends with fsync on: records of 100 B and 1 KiB with 1, 16 and 256 in
// flight, grouped by time (journalMaxGroupWaitMSec = 2 ms, BookKeeper's default) or flushed
// whenever the queue runs empty. Reports records/s (items_per_second), MB/s
// (bytes_per_second), syncs/s and records per sync. The journal lives in a temp dir under
// /tmp, so it measures the disk behind /tmp.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <string>

#include "bookie/journal/journal.h"
#include "common/env.h"

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
    journal->append(JournalRecord{JournalRecordType::kEntry, 1, entry++, payload}, done);
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

}  // namespace
}  // namespace magnetar::bookie
