// Topic compaction over an in-process bookie (journal fsync on): a managed ledger holding
// `messages` keyed messages (`keys` distinct keys, 100-byte values, one message per entry)
// is compacted:
//  - BM_CompactFromScratch: the first compaction of the whole topic (phase one reads every
//    entry, phase two reads them again and writes the latest of each key). Items/s are
//    messages read by phase one over the whole run; `kept` the entries written.
//  - BM_CompactIncrementally: after a first compaction, 10 % more messages, then a second
//    compaction: the previous compacted ledger plus only the new entries are read.
// Directories under $MAGNETAR_BENCH_DIR (default /tmp).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "broker/compaction/compactor.h"
#include "common/logging.h"
#include "local_cluster.h"
#include "mledger/managed_ledger.h"
#include "protocol/frame.h"

namespace {

using namespace magnetar;
using bench::Cluster;
using bench::pump;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "compaction_bench: %s\n", what.c_str());
  std::abort();
}

// Appends messages [first, first + count) with keys "key-<i % keys>".
void produce(Cluster& c, mledger::ManagedLedger& ml, int64_t first, int64_t count, int64_t keys) {
  const std::string value(100, 'v');
  int64_t next = first;
  pump(c.loop, static_cast<int>(count), 1000, [&](int& finished) {
    wire::MessageMetadata md;
    md.set_producer_name("bench");
    md.set_sequence_id(static_cast<uint64_t>(next));
    md.set_publish_time(1);
    md.set_partition_key("key-" + std::to_string(next % keys));
    ++next;
    BufferChain payload;
    payload.append(Buffer::copy_of(value.data(), value.size()));
    ml.async_add(protocol::encode_entry(md, payload), [&finished](Result<mledger::Position> p) {
      if (!p.ok()) die("add: " + p.status().to_string());
      ++finished;
    });
  });
}

using broker::compaction::CompactedLedger;
using broker::compaction::CompactionResult;

CompactionResult compact(Cluster& c, std::shared_ptr<mledger::ManagedLedger> ml,
                         std::shared_ptr<CompactedLedger> previous) {
  broker::compaction::CompactorOptions o;
  o.topic = "persistent://bench/ns/compacted";
  auto r = c.loop.await(broker::compaction::compact(std::move(ml), std::move(previous), o));
  if (!r.ok()) die("compaction: " + r.status().to_string());
  if (!r->has_value()) die("compaction: nothing to compact");
  return **r;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

mledger::ManagedLedgerConfig one_bookie() {
  mledger::ManagedLedgerConfig m;
  m.ensemble_size = m.write_quorum = m.ack_quorum = 1;
  return m;
}

// A managed ledger of `messages` keyed messages on one in-process bookie.
struct Topic {
  explicit Topic(int64_t messages, int64_t keys) : keys(keys), factory(c.store(), *c.bk) {
    ml = c.loop.await(factory.open("bench/ns/persistent/compacted", one_bookie())).value();
    produce(c, *ml, 0, messages, keys);
  }
  ~Topic() {
    if (!c.loop.await(factory.close()).ok()) die("factory close");
  }
  void run(benchmark::State& state, const std::shared_ptr<CompactedLedger>& previous) {
    for (auto _ : state) {
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = compact(c, ml, previous);
      state.SetIterationTime(seconds_since(t0));
      state.SetItemsProcessed(r.messages_read);
      state.counters["kept"] = static_cast<double>(r.entries_written);
      if (r.entries_written != keys) state.SkipWithError("not one entry per key");
    }
  }
  const int64_t keys;
  Cluster c{1};
  mledger::ManagedLedgerFactory factory;
  std::shared_ptr<mledger::ManagedLedger> ml;
};

void BM_CompactFromScratch(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  Topic t(state.range(0), state.range(1));
  t.run(state, nullptr);
}

void BM_CompactIncrementally(benchmark::State& state) {
  log::set_level(log::Level::kWarn);
  const int64_t messages = state.range(0);
  Topic t(messages, state.range(1));
  const auto first = compact(t.c, t.ml, nullptr);
  auto previous =
      t.c.loop.await(CompactedLedger::open(*t.c.bk, first.ledger, first.horizon, "")).value();
  produce(t.c, *t.ml, messages, messages / 10, t.keys);
  t.run(state, previous);
}

const bool registered = [] {
  for (auto* fn : {&BM_CompactFromScratch, &BM_CompactIncrementally}) {
    benchmark::RegisterBenchmark(fn == &BM_CompactFromScratch ? "BM_CompactFromScratch"
                                                              : "BM_CompactIncrementally",
                                 fn)
        ->ArgNames({"messages", "keys"})
        ->Args({100000, 1000})
        ->Args({100000, 50000})
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(1);
  }
  return true;
}();

}  // namespace
