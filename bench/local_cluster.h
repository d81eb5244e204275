#pragma once
// A memory: store with in-process bookies and a BookKeeper client on the benchmark's own
// loop, and the pump that keeps a window of operations in flight: shared by the benchmarks
// of the managed ledger and of what is built on it.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ledger/bookkeeper.h"
#include "local_bookie.h"
#include "metadata/metadata_store.h"
#include "testing/event_loop.h"

namespace magnetar::bench {

// A memory: store, `n` bookies registered in it and a BookKeeper client, all on one loop
// (the benchmark's thread). Removes its directories when destroyed.
class Cluster {
 public:
  explicit Cluster(int n) {
    static int clusters = 0;
    const char* d = std::getenv("MAGNETAR_BENCH_DIR");
    dir_ = std::filesystem::path(d != nullptr ? d : "/tmp") /
           ("magnetar-mledger-bench-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    store_ = std::shared_ptr<metadata::MetadataStore>(
        loop.await(metadata::open_store("memory:mledger-bench-" + std::to_string(++clusters)))
            .value());
    for (int i = 0; i < n; ++i) {
      bookies_.push_back(std::make_unique<LocalBookie>(dir_ / std::to_string(i), store_));
    }
    bk = std::make_unique<ledger::BookKeeper>(*store_, loop.executor());
  }
  ~Cluster() {
    bk.reset();
    bookies_.clear();
    (void)loop.await(store_->close());
    std::filesystem::remove_all(dir_);
  }
  metadata::MetadataStore& store() { return *store_; }

  magnetar::testing::EventLoop loop;  // first: destroyed last
  std::unique_ptr<ledger::BookKeeper> bk;

 private:
  std::filesystem::path dir_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::vector<std::unique_ptr<LocalBookie>> bookies_;
};

// Starts `count` operations with at most `window` outstanding, refilling as they complete,
// and turns the loop until all completed. `start(finished)` starts one; its completion must
// increment `finished`. `on_turn()` runs after every turn of the loop. Returns seconds.
template <typename Start, typename OnTurn>
double pump(magnetar::testing::EventLoop& loop, int count, int window, Start start,
            OnTurn on_turn) {
  int started = 0, finished = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (finished < count) {
    while (started < count && started - finished < window) {
      ++started;
      start(finished);
    }
    if (loop.context().poll() == 0) {
      loop.context().run_one_for(std::chrono::milliseconds(1));
    }
    on_turn();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

template <typename Start>
double pump(magnetar::testing::EventLoop& loop, int count, int window, Start start) {
  return pump(loop, count, window, start, [] {});
}

}  // namespace magnetar::bench
