// Bookie and ledger throughput and latency over real TCP on 127.0.0.1, fsync on:
//  - BM_BookieAdd: one bookie, adds at full pipelining (`inflight` outstanding).
//  - BM_BookieAddLatency: one bookie, adds paced at half the rate BM_BookieAdd measured
//    for the same size; reports p50/p99/p99.9 latency (ms).
//  - BM_DiskGroupCommitFloor: the same paced arrivals written and fdatasync'd by one thread
//    straight to a file: the disk's floor for BM_BookieAddLatency's percentiles.
//  - BM_LedgerAdd: E=3, Qw=3, Qa=2 over three bookies through the ledger client.
// Journal and ledger directories go under $MAGNETAR_BENCH_DIR (default /tmp): put it on the
// disk being measured, and run fio there in the same session for comparison.
// $MAGNETAR_BENCH_RATE=N paces the latency runs at N adds/s instead of half the measured rate.
// $MAGNETAR_BENCH_LATENCY_DUMP=PREFIX writes each paced add as "start_ms latency_ms" to
// PREFIX-<size>.txt: stalls show up as clusters of slow adds (when, how long, how often).
// $MAGNETAR_BENCH_METRICS=1 prints the metrics registry after each latency run (the journal's
// fdatasync latency histogram tells the disk's share of the tail from the bookie's).
// $MAGNETAR_BENCH_REUSE=1: journal files rolled at 64 MiB and reused (journalReuseFiles); the
// latency rows first add three files' worth, so they measure a bookie in its steady state.

#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <thread>

#include "common/env.h"
#include "common/metrics.h"
#include "latency_report.h"
#include "ledger/bookie_client.h"
#include "ledger/bookkeeper.h"
#include "local_bookie.h"
#include "metadata/metadata_store.h"
#include "protocol/bookie_entry.h"
#include "testing/event_loop.h"

namespace {

using namespace magnetar;
using Clock = std::chrono::steady_clock;

std::filesystem::path bench_dir() {
  const char* d = std::getenv("MAGNETAR_BENCH_DIR");
  return std::filesystem::path(d != nullptr ? d : "/tmp") /
         ("magnetar-bookie-bench-" + std::to_string(::getpid()));
}

using bench::LocalBookie;
using bench::report_latency;

std::map<int64_t, double> g_max_rate;  // entry size -> adds/s measured at full pipelining

struct AddLatency {
  double start_ms;  // since the run began
  double latency_ms;
};

// Issues `count` adds of `size` bytes to one bookie with at most `inflight` outstanding;
// when `pace` > 0, starts one add every 1/pace seconds. Returns each add's latency.
std::vector<AddLatency> run_adds(magnetar::testing::EventLoop& loop, ledger::BookieClient& client,
                                 const std::string& bookie, int64_t ledger, int64_t first,
                                 int count, size_t size, int inflight, double pace) {
  std::vector<AddLatency> latencies;
  latencies.reserve(static_cast<size_t>(count));
  int started = 0, finished = 0, outstanding = 0;
  const std::string payload(size, 'b');
  const auto t0 = Clock::now();
  while (finished < count) {
    while (started < count && outstanding < inflight) {
      if (pace > 0) {
        auto due = t0 + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(started / pace));
        if (Clock::now() < due) break;
      }
      int64_t entry = first + started;
      ++started;
      ++outstanding;
      bookie_wire::AddRequest r;
      r.set_ledger_id(ledger);
      r.set_entry_id(entry);
      r.set_master_key("bench-master-key-20b");
      BufferChain packaged =
          protocol::package_entry(protocol::EntryHeader{ledger, entry, entry - 1, 0},
                                  BufferChain(Buffer::copy_of(payload)));
      auto sent_at = Clock::now();
      auto answered = [&, sent_at](Result<ledger::AddResult> result) {
        if (!result.ok() || result->status != bookie_wire::OK) std::abort();
        latencies.push_back(
            {std::chrono::duration<double, std::milli>(sent_at - t0).count(),
             std::chrono::duration<double, std::milli>(Clock::now() - sent_at).count()});
        ++finished;
        --outstanding;
      };
      client.async_add(bookie, std::move(r), packaged, std::move(answered));
    }
    // Run whatever completed; if nothing was ready, wait briefly for the next completion
    // (or, when pacing, for the next start time).
    if (loop.context().poll() == 0) {
      loop.context().run_one_for(pace > 0 ? std::chrono::microseconds(50)
                                          : std::chrono::microseconds(1000));
    }
  }
  return latencies;
}

// The pace of the latency rows: half the full-pipelining rate measured for `size`, or
// $MAGNETAR_BENCH_RATE.
double latency_rate(size_t size) {
  if (const char* fixed = std::getenv("MAGNETAR_BENCH_RATE")) return std::atof(fixed);
  auto it = g_max_rate.find(static_cast<int64_t>(size));
  return it != g_max_rate.end() ? it->second / 2 : 1000;
}

void BM_BookieAdd(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const int inflight = static_cast<int>(state.range(1));
  auto dir = bench_dir();
  std::filesystem::remove_all(dir);
  auto b = std::make_unique<LocalBookie>(dir, nullptr);
  magnetar::testing::EventLoop loop;
  ledger::BookieClient client(loop.executor());
  int64_t next = 0, total = 0;
  const int batch = 100000;  // ~0.5 s at full speed: past the ramp-up and a checkpoint
  double seconds = 0;
  for (auto _ : state) {
    auto t = Clock::now();
    run_adds(loop, client, b->id(), 1, next, batch, size, inflight, 0);
    seconds += std::chrono::duration<double>(Clock::now() - t).count();
    next += batch;
    total += batch;
  }
  state.SetItemsProcessed(total);
  state.SetBytesProcessed(total * static_cast<int64_t>(size));
  double& best = g_max_rate[static_cast<int64_t>(size)];  // the best in-flight row sets the pace
  best = std::max(best, static_cast<double>(total) / seconds);
  loop.await([&]() -> Task<bool> {
    co_await client.close();
    co_return true;
  }());
  b.reset();  // its final flush writes into `dir`
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_BookieAdd)
    ->ArgNames({"size", "inflight"})
    ->Args({100, 1024})
    ->Args({100, 4096})
    ->Args({1024, 1024})
    ->Args({1024, 4096})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

void BM_BookieAddLatency(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const double rate = latency_rate(size);
  auto dir = bench_dir();
  std::filesystem::remove_all(dir);
  auto b = std::make_unique<LocalBookie>(dir, nullptr);
  magnetar::testing::EventLoop loop;
  ledger::BookieClient client(loop.executor());
  std::vector<double> all;
  int64_t next = 0;
  const int count = std::max(2000, static_cast<int>(rate * 3));  // ~3 s per iteration
  const char* dump = std::getenv("MAGNETAR_BENCH_LATENCY_DUMP");
  std::FILE* out =
      dump != nullptr ? std::fopen(fmt::format("{}-{}.txt", dump, size).c_str(), "w") : nullptr;
  if (bench::reuse_journal_files()) {
    // Three journal files' worth at full pipelining: the measured adds go to reused files.
    const int warm = static_cast<int>(3 * (64 << 20) / (size + 64));
    run_adds(loop, client, b->id(), 1, next, warm, size, 1024, 0);
    next += warm;
  }
  bench::HiccupMeter hiccups;
  for (auto _ : state) {
    auto lat = run_adds(loop, client, b->id(), 1, next, count, size, 1 << 20, rate);
    next += count;
    for (const auto& l : lat) {
      all.push_back(l.latency_ms);
      if (out != nullptr) std::fprintf(out, "%.3f %.3f\n", l.start_ms, l.latency_ms);
    }
  }
  if (out != nullptr) std::fclose(out);
  if (std::getenv("MAGNETAR_BENCH_METRICS") != nullptr) {
    std::fprintf(stderr, "%s", metrics::default_registry().expose().c_str());
  }
  report_latency(state, rate, all, hiccups);
  loop.await([&]() -> Task<bool> {
    co_await client.close();
    co_return true;
  }());
  b.reset();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_BookieAddLatency)
    ->ArgNames({"size"})
    ->Arg(100)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// The disk's own floor for the latency rows: records arrive at the same pace, and a single
// thread writes everything that has arrived with one write() over zero-filled space, then
// fdatasyncs — ideal group commit with no network, no threads, no bookie. A record's latency
// is from its arrival to the end of the fdatasync that covered it.
void BM_DiskGroupCommitFloor(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const double rate = latency_rate(size);
  auto dir = bench_dir();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = (dir / "floor.dat").string();
  auto file = posix_env().new_writable_file(path).value();
  const int count = std::max(2000, static_cast<int>(rate * 3));
  if (!file->zero_fill(static_cast<uint64_t>(count) * size + (1 << 20)).ok() ||
      !file->sync().ok()) {
    state.SkipWithError("cannot prepare the file");
    return;
  }
  const std::string record(size, 'f');
  std::string group;
  std::vector<double> all;
  bench::HiccupMeter hiccups;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    auto arrival = [&](int i) {
      return t0 +
             std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / rate));
    };
    int written = 0;
    while (written < count) {
      const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
      const int arrived = std::min(count, static_cast<int>(elapsed * rate) + 1);
      if (arrived <= written) {
        std::this_thread::sleep_until(arrival(arrived));
        continue;
      }
      group.clear();
      for (int i = written; i < arrived; ++i) group += record;
      if (!file->append(group.data(), group.size()).ok() || !file->sync().ok()) std::abort();
      const auto done = Clock::now();
      for (int i = written; i < arrived; ++i) {
        all.push_back(std::chrono::duration<double, std::milli>(done - arrival(i)).count());
      }
      written = arrived;
    }
  }
  report_latency(state, rate, all, hiccups);
  (void)file->close();
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_DiskGroupCommitFloor)
    ->ArgNames({"size"})
    ->Arg(100)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_LedgerAdd(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  auto dir = bench_dir();
  std::filesystem::remove_all(dir);
  magnetar::testing::EventLoop loop;
  std::shared_ptr<metadata::MetadataStore> store(
      loop.await(metadata::open_store("memory:bookie-bench")).value());
  std::vector<std::unique_ptr<LocalBookie>> bookies;
  for (int i = 0; i < 3; ++i) {
    bookies.push_back(std::make_unique<LocalBookie>(dir / std::to_string(i), store));
  }
  ledger::BookKeeper bk(*store, loop.executor());
  auto lh = loop.await(bk.create(3, 3, 2, "")).value();
  const std::string payload(size, 'l');
  int64_t total = 0;
  for (auto _ : state) {
    int finished = 0, started = 0;
    const int batch = 20000, window = 1024;
    while (finished < batch) {
      while (started < batch && started - finished < window) {
        ++started;
        auto added = [&](Result<EntryId> r) {
          if (!r.ok()) std::abort();
          ++finished;
        };
        lh->async_add(BufferChain(Buffer::copy_of(payload)), std::move(added));
      }
      if (loop.context().poll() == 0) {
        loop.context().run_one_for(std::chrono::milliseconds(1));
      }
    }
    total += batch;
  }
  state.SetItemsProcessed(total);
  state.SetBytesProcessed(total * static_cast<int64_t>(size));
  (void)loop.await(lh->close());
  bookies.clear();
  (void)loop.await(store->close());
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_LedgerAdd)
    ->ArgNames({"size"})
    ->Arg(100)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
