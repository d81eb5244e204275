// Metadata store operations per second, and their p99 latency, on each backend: memory,
// RocksDB (synced writes, on this machine's disk), and a real local ZooKeeper server and a
// real local etcd member started by the benchmark. "inflight" is how many operations are
// outstanding at once (1: latency-bound; 64: what group commit, ZooKeeper pipelining and
// etcd's batching make of concurrent callers).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/asio.h"
#include "metadata/metadata_store.h"
#include "testing/etcd_server.h"
#include "testing/zookeeper_server.h"

namespace {

using namespace magnetar;
using namespace magnetar::metadata;

enum Backend { kMemory = 0, kRocksDb = 1, kZooKeeper = 2, kEtcd = 3 };
constexpr int kBackendCount = 4;
enum Op { kPut = 0, kGet = 1, kCas = 2 };

// One store per backend for the whole run (ZooKeeper's JVM and etcd start once).
struct Fixture {
  asio::io_context io;
  std::unique_ptr<testing::ZooKeeperServer> zk;
  std::unique_ptr<testing::EtcdServer> etcd;
  std::filesystem::path dir;
  std::unique_ptr<MetadataStore> store;

  explicit Fixture(Backend b) {
    std::string url;
    if (b == kMemory) url = "memory:bench";
    if (b == kRocksDb) {
      dir = std::filesystem::temp_directory_path() / ("magnetar-bench-" + std::to_string(getpid()));
      std::filesystem::remove_all(dir);
      url = "rocksdb://" + dir.string();
    }
    if (b == kZooKeeper) {
      zk = testing::ZooKeeperServer::start().value();
      url = "zk:" + zk->connect_string() + "/bench";
    }
    if (b == kEtcd) {
      etcd = testing::EtcdServer::start().value();
      url = etcd->url() + "/bench";
    }
    store = await(open_store(url)).value();
  }
  ~Fixture() {
    (void)await(store->close());
    store.reset();
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }

  template <typename T>
  T await(Task<T> t) {
    std::optional<T> out;
    asio::co_spawn(
        io, [&]() -> Task<void> { out.emplace(co_await std::move(t)); }, asio::detached);
    io.restart();
    io.run();
    return std::move(*out);
  }
};

std::unique_ptr<Fixture> fixtures[kBackendCount];

void close_fixtures() {
  for (auto& f : fixtures) f.reset();
}

Fixture& fixture(Backend b) {
  if (!fixtures[b]) {
    fixtures[b] = std::make_unique<Fixture>(b);
    // Closed at exit before the statics the backend's library made while opening (RocksDB's
    // task scheduler, gRPC's): exit handlers run in reverse order of registration.
    std::atexit(close_fixtures);
  }
  return *fixtures[b];
}

void BM_MetadataOp(benchmark::State& state) {
  auto backend = static_cast<Backend>(state.range(0));
  auto op = static_cast<Op>(state.range(1));
  const int inflight = static_cast<int>(state.range(2));
  Fixture& f = fixture(backend);
  MetadataStore& store = *f.store;
  const std::string value(100, 'v');
  for (int i = 0; i < inflight; ++i) {
    (void)f.await(store.put("/bench-" + std::to_string(i), value));
  }
  int64_t ops = 0, failures = 0;
  std::vector<int64_t> latencies_us;
  for (auto _ : state) {
    // One round: `inflight` workers each do 16 operations back to back.
    for (int w = 0; w < inflight; ++w) {
      asio::co_spawn(
          f.io,
          [&, w]() -> Task<void> {
            std::string path = "/bench-" + std::to_string(w);
            for (int k = 0; k < 16; ++k) {
              const auto started = std::chrono::steady_clock::now();
              bool ok = true;
              if (op == kPut) ok = (co_await store.put(path, value)).ok();
              if (op == kGet) ok = (co_await store.get(path)).ok();
              if (op == kCas) {
                auto cur = co_await store.get(path);
                ok = cur.ok() && cur->has_value() &&
                     (co_await store.put(path, value,
                                         PutOptions{(*cur)->stat.version, false, false}))
                         .ok();
              }
              ++ops;
              failures += ok ? 0 : 1;
              latencies_us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                                         std::chrono::steady_clock::now() - started)
                                         .count());
            }
          },
          asio::detached);
    }
    f.io.restart();
    f.io.run();
  }
  state.SetItemsProcessed(ops);
  state.counters["failures"] = static_cast<double>(failures);
  if (!latencies_us.empty()) {
    auto p99 = latencies_us.begin() + static_cast<long>(latencies_us.size() * 99 / 100);
    std::nth_element(latencies_us.begin(), p99, latencies_us.end());
    state.counters["p99_us"] = static_cast<double>(*p99);
  }
}

const char* kBackends[] = {"memory", "rocksdb", "zookeeper", "etcd"};
const char* kOps[] = {"put", "get", "cas"};

void register_all() {
  for (int b = 0; b < kBackendCount; ++b) {
    for (int o = 0; o < 3; ++o) {
      for (int inflight : {1, 64}) {
        std::string name = std::string("BM_Metadata/") + kBackends[b] + "/" + kOps[o] +
                           "/inflight:" + std::to_string(inflight);
        benchmark::RegisterBenchmark(name.c_str(), BM_MetadataOp)
            ->Args({b, o, inflight})
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

const bool registered = (register_all(), true);

}  // namespace
