// The managed ledger over real bookies (in-process, TCP on 127.0.0.1, journal fsync on):
//  - BM_RawLedgerAdd / BM_ManagedLedgerAdd: the same adds (same size, same E/Qw/Qa, the
//    same window of adds in flight, refilled as completions arrive) through the ledger
//    client's LedgerHandle::add and through ManagedLedger::async_add. Each pair runs back to
//    back; the managed ledger's run reports `vs_raw`, its adds/s over the raw run's
//    (target: >= 0.90).
//  - BM_ManagedLedgerTailingRead: a durable cursor reading batches of 100 just-added entries
//    while adds go on. Items/bytes per second are over the time spent inside
//    ManagedCursor::read (the cache's cost); `tail_per_s` is over the whole run (it cannot
//    exceed the add rate). Fails if any entry came from a bookie.
//  - BM_RawBacklogRead / BM_ManagedLedgerBacklogRead: 50 000 entries written first; then,
//    with an empty cache (a new factory), a non-durable cursor from the first position
//    reads batches of 100 to the end (raw: LedgerHandle::read of 100-entry ranges). Fails
//    unless every entry came from the bookies.
// Each benchmark starts its own store and bookies; directories go under $MAGNETAR_BENCH_DIR
// (default /tmp). Bookie knobs as in bookie_bench: MAGNETAR_BENCH_GROUP_WAIT_MS,
// MAGNETAR_BENCH_FLUSH_WHEN_EMPTY=1, MAGNETAR_BENCH_WRITE_CACHE_MB.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/logging.h"
#include "ledger/bookkeeper.h"
#include "local_bookie.h"
#include "local_cluster.h"
#include "metadata/metadata_store.h"
#include "mledger/managed_ledger.h"
#include "testing/event_loop.h"

namespace {

using namespace magnetar;
using Clock = std::chrono::steady_clock;
using EventLoop = magnetar::testing::EventLoop;

constexpr int kWindow = 1000;       // adds in flight
constexpr int kWarmupAdds = 2000;   // untimed: connections, allocator
constexpr int kTimedAdds = 100000;  // per add benchmark
constexpr int kReadBatch = 100;     // entries per cursor read
constexpr int kBacklogEntries = 50000;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "mledger_bench: %s\n", what.c_str());
  std::abort();
}

using bench::Cluster;
using bench::LocalBookie;
using bench::pump;

// E = Qw = bookies; Qa = 1 with one bookie, else 2.
int ack_quorum(int bookies) {
  return bookies == 1 ? 1 : 2;
}

mledger::ManagedLedgerConfig ml_config(int bookies) {
  mledger::ManagedLedgerConfig c;
  c.ensemble_size = bookies;
  c.write_quorum = bookies;
  c.ack_quorum = ack_quorum(bookies);
  // Defaults otherwise: no rollover within 10 minutes, so every add goes to one ledger, as
  // in the raw runs.
  return c;
}

mledger::ManagedLedgerFactoryConfig factory_config() {
  mledger::ManagedLedgerFactoryConfig f;
  f.read_batch_size = kReadBatch;
  f.retention_check_interval_seconds = 3600;
  return f;
}


// Raw: the ledger client's fastest write path, async_add with a callback (what the managed
// ledger itself uses).
double raw_adds(EventLoop& loop, const std::shared_ptr<ledger::LedgerHandle>& lh,
                const std::string& payload, int count) {
  return pump(loop, count, kWindow, [&](int& finished) {
    lh->async_add(BufferChain(Buffer::copy_of(payload)), [&finished](Result<EntryId> r) {
      if (!r.ok()) die("raw add: " + r.status().to_string());
      ++finished;
    });
  });
}

// Managed ledger: async_add with a completion callback (what a producer's send does).
double ml_adds(EventLoop& loop, mledger::ManagedLedger& ml, const std::string& payload, int count) {
  return pump(loop, count, kWindow, [&](int& finished) {
    ml.async_add(BufferChain(Buffer::copy_of(payload)), [&finished](Result<mledger::Position> p) {
      if (!p.ok()) die("managed ledger add: " + p.status().to_string());
      ++finished;
    });
  });
}

std::string config_key(const benchmark::State& state) {
  return std::to_string(state.range(0)) + "/" + std::to_string(state.range(1));
}
std::map<std::string, double> g_raw_add_rate;  // "size/bookies" -> raw adds/s

void report(benchmark::State& state, int64_t items, int64_t bytes, double seconds) {
  state.SetIterationTime(seconds);
  state.SetItemsProcessed(items);
  state.SetBytesProcessed(bytes);
}

// ---------------------------------------------------------------------------------------
// Adds

void BM_RawLedgerAdd(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const int bookies = static_cast<int>(state.range(1));
  Cluster c(bookies);
  auto lh = c.loop.await(c.bk->create(bookies, bookies, ack_quorum(bookies), "")).value();
  const std::string payload(size, 'r');
  raw_adds(c.loop, lh, payload, kWarmupAdds);
  for (auto _ : state) {
    const double s = raw_adds(c.loop, lh, payload, kTimedAdds);
    report(state, kTimedAdds, kTimedAdds * static_cast<int64_t>(size), s);
    g_raw_add_rate[config_key(state)] = kTimedAdds / s;
  }
  if (!c.loop.await(lh->close()).ok()) die("close");
}

void BM_ManagedLedgerAdd(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const int bookies = static_cast<int>(state.range(1));
  Cluster c(bookies);
  mledger::ManagedLedgerFactory factory(c.store(), *c.bk, factory_config());
  auto ml = c.loop.await(factory.open("bench/ns/persistent/adds", ml_config(bookies))).value();
  const std::string payload(size, 'm');
  ml_adds(c.loop, *ml, payload, kWarmupAdds);
  for (auto _ : state) {
    const double s = ml_adds(c.loop, *ml, payload, kTimedAdds);
    report(state, kTimedAdds, kTimedAdds * static_cast<int64_t>(size), s);
    if (auto raw = g_raw_add_rate.find(config_key(state)); raw != g_raw_add_rate.end()) {
      state.counters["vs_raw"] = (kTimedAdds / s) / raw->second;
    }
  }
  if (ml->counters().entries_added != kWarmupAdds + kTimedAdds * state.iterations()) {
    state.SkipWithError("entries_added does not match the adds made");
  }
  state.counters["ledgers"] = static_cast<double>(ml->ledgers().size());
  if (!c.loop.await(factory.close()).ok()) die("factory close");
}

// ---------------------------------------------------------------------------------------
// Tailing reads from the entry cache

void BM_ManagedLedgerTailingRead(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const int bookies = static_cast<int>(state.range(1));
  Cluster c(bookies);
  mledger::ManagedLedgerFactory factory(c.store(), *c.bk, factory_config());
  auto ml = c.loop.await(factory.open("bench/ns/persistent/tail", ml_config(bookies))).value();
  const std::string payload(size, 't');
  ml_adds(c.loop, *ml, payload, kWarmupAdds);
  auto cursor = c.loop.await(ml->open_cursor("sub", mledger::InitialPosition::kLatest)).value();

  for (auto _ : state) {
    const int64_t from_cache_before = ml->counters().entries_read_from_cache;
    int64_t added = 0, read = 0, read_bytes = 0, reads = 0;
    double read_seconds = 0;
    bool reading = false;
    // One read in flight at a time, started once a full batch (or the tail end) was added.
    auto read_task = [&]() -> Task<void> {
      const auto t = Clock::now();
      auto entries = co_await cursor->read(kReadBatch);
      read_seconds += seconds_since(t);
      if (!entries.ok()) die("cursor read: " + entries.status().to_string());
      for (const auto& e : *entries) read_bytes += static_cast<int64_t>(e.data.size());
      read += static_cast<int64_t>(entries->size());
      ++reads;
      reading = false;
    };
    auto maybe_read = [&] {
      if (reading || read >= kTimedAdds) return;
      if (added - read >= kReadBatch || (added == kTimedAdds && read < added)) {
        reading = true;
        asio::co_spawn(c.loop.executor(), read_task, asio::detached);
      }
    };
    const auto t0 = Clock::now();
    pump(
        c.loop, kTimedAdds, kWindow,
        [&](int& finished) {
          ml->async_add(BufferChain(Buffer::copy_of(payload)),
                        [&finished, &added](Result<mledger::Position> p) {
                          if (!p.ok()) die("managed ledger add: " + p.status().to_string());
                          ++finished;
                          ++added;
                        });
        },
        maybe_read);
    while (read < kTimedAdds) {
      maybe_read();
      if (c.loop.context().poll() == 0) {
        c.loop.context().run_one_for(std::chrono::milliseconds(1));
      }
    }
    const double wall = seconds_since(t0);
    report(state, read, read_bytes, read_seconds);
    state.counters["tail_per_s"] = static_cast<double>(read) / wall;
    state.counters["reads"] = static_cast<double>(reads);
    state.counters["from_cache"] =
        static_cast<double>(ml->counters().entries_read_from_cache - from_cache_before);
  }
  state.counters["from_bookies"] = static_cast<double>(ml->counters().entries_read_from_bookies);
  if (ml->counters().entries_read_from_bookies != 0) {
    state.SkipWithError("tailing reads went to the bookies");
  }
  if (!c.loop.await(factory.close()).ok()) die("factory close");
}

// ---------------------------------------------------------------------------------------
// Backlog reads from the bookies

void BM_RawBacklogRead(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const int bookies = static_cast<int>(state.range(1));
  Cluster c(bookies);
  auto lh = c.loop.await(c.bk->create(bookies, bookies, ack_quorum(bookies), "")).value();
  raw_adds(c.loop, lh, std::string(size, 'b'), kBacklogEntries);
  if (!c.loop.await(lh->close()).ok()) die("close");
  for (auto _ : state) {
    // A handle of its own, as a reader in another process would open it.
    auto rh = c.loop.await(c.bk->open(lh->id(), "", false)).value();
    const int64_t last = rh->last_add_confirmed().value();
    int64_t entries = 0, bytes = 0;
    auto read_all = [&]() -> Task<bool> {
      for (int64_t first = 0; first <= last; first += kReadBatch) {
        auto got = co_await rh->read(EntryId{first},
                                     EntryId{std::min<int64_t>(first + kReadBatch - 1, last)});
        if (!got.ok()) die("raw read: " + got.status().to_string());
        for (const auto& e : *got) bytes += static_cast<int64_t>(e.payload.size());
        entries += static_cast<int64_t>(got->size());
      }
      co_return true;
    };
    const auto t0 = Clock::now();
    c.loop.await(read_all());
    report(state, entries, bytes, seconds_since(t0));
    if (entries != kBacklogEntries) state.SkipWithError("read fewer entries than written");
  }
}

void BM_ManagedLedgerBacklogRead(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const auto size = static_cast<size_t>(state.range(0));
  const int bookies = static_cast<int>(state.range(1));
  const std::string name = "bench/ns/persistent/backlog";
  Cluster c(bookies);
  {
    mledger::ManagedLedgerFactory writer(c.store(), *c.bk, factory_config());
    auto ml = c.loop.await(writer.open(name, ml_config(bookies))).value();
    ml_adds(c.loop, *ml, std::string(size, 'b'), kBacklogEntries);
    if (!c.loop.await(writer.close()).ok()) die("factory close");
  }
  for (auto _ : state) {
    // A new factory: its cache is empty, as after a broker restart or a topic move.
    mledger::ManagedLedgerFactory factory(c.store(), *c.bk, factory_config());
    auto ml = c.loop.await(factory.open(name, ml_config(bookies))).value();
    auto cursor = ml->new_non_durable_cursor(ml->first_position(), "backlog-reader");
    const int batch = factory.config().read_batch_size;
    int64_t entries = 0, bytes = 0, reads = 0;
    auto read_all = [&]() -> Task<bool> {
      while (true) {
        auto got = co_await cursor->read(batch);
        if (!got.ok()) die("cursor read: " + got.status().to_string());
        if (got->empty()) break;
        for (const auto& e : *got) bytes += static_cast<int64_t>(e.data.size());
        entries += static_cast<int64_t>(got->size());
        ++reads;
      }
      co_return true;
    };
    const auto t0 = Clock::now();
    c.loop.await(read_all());
    report(state, entries, bytes, seconds_since(t0));
    state.counters["reads"] = static_cast<double>(reads);
    state.counters["from_bookies"] = static_cast<double>(ml->counters().entries_read_from_bookies);
    state.counters["bookie_batches"] = static_cast<double>(ml->counters().bookie_read_batches);
    if (entries != kBacklogEntries) state.SkipWithError("read fewer entries than written");
    if (ml->counters().entries_read_from_bookies != kBacklogEntries) {
      state.SkipWithError("backlog entries did not all come from the bookies");
    }
    if (!c.loop.await(factory.close()).ok()) die("factory close");
  }
}

// Raw and managed runs of one configuration are registered back to back, so they see the
// same machine and disk conditions.
const bool registered = [] {
  auto common = [](benchmark::internal::Benchmark* b, int64_t size, int64_t bookies) {
    b->ArgNames({"size", "bookies"})
        ->Args({size, bookies})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  };
  for (int64_t bookies : {1, 3}) {
    for (int64_t size : {100, 1024}) {
      common(benchmark::RegisterBenchmark("BM_RawLedgerAdd", BM_RawLedgerAdd), size, bookies);
      common(benchmark::RegisterBenchmark("BM_ManagedLedgerAdd", BM_ManagedLedgerAdd), size,
             bookies);
    }
  }
  for (int64_t size : {100, 1024}) {
    common(benchmark::RegisterBenchmark("BM_ManagedLedgerTailingRead", BM_ManagedLedgerTailingRead),
           size, 1);
  }
  for (int64_t bookies : {1, 3}) {
    common(benchmark::RegisterBenchmark("BM_RawBacklogRead", BM_RawBacklogRead), 1024, bookies);
    common(benchmark::RegisterBenchmark("BM_ManagedLedgerBacklogRead", BM_ManagedLedgerBacklogRead),
           1024, bookies);
  }
  return true;
}();

}  // namespace
