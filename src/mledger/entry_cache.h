#pragma once
// The entry cache: entries just added, kept in memory so tailing cursors read them without
// touching a bookie.
//
// One EntryCacheManager per process holds the budget (managedLedgerCacheSizeMB) as an
// atomic counter; each managed ledger has its own EntryCache, used only on that ledger's
// event loop. An insert that would exceed the budget is refused (the entry is then read
// from the bookies when needed), and every loop's eviction task trims its own caches back
// under the watermark, largest first.

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>

#include "common/buffer.h"
#include "mledger/position.h"

namespace magnetar::mledger {

class EntryCacheManager {
 public:
  explicit EntryCacheManager(int64_t max_bytes, double watermark = 0.9)
      : max_bytes_(max_bytes), watermark_(watermark) {}

  bool enabled() const { return max_bytes_ > 0; }
  int64_t max_bytes() const { return max_bytes_; }
  int64_t used_bytes() const { return used_.load(std::memory_order_relaxed); }
  // Bytes eviction should free to get back under the watermark (0 when under it).
  int64_t excess_bytes() const;

  bool try_reserve(int64_t bytes);
  void release(int64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  // Counters, for metrics.
  std::atomic<int64_t> hits{0};
  std::atomic<int64_t> misses{0};
  std::atomic<int64_t> evicted{0};

 private:
  const int64_t max_bytes_;
  const double watermark_;
  std::atomic<int64_t> used_{0};
};

class EntryCache {
 public:
  explicit EntryCache(EntryCacheManager& manager) : manager_(manager) {}
  ~EntryCache() { clear(); }
  EntryCache(const EntryCache&) = delete;
  EntryCache& operator=(const EntryCache&) = delete;

  // Positions must be inserted in increasing order (as adds complete); false when refused.
  bool insert(Position position, Buffer data, int64_t now_ms);
  std::optional<Buffer> get(Position position) const;
  // Drops entries with position < p.
  void evict_before(Position p);
  // Drops entries inserted before `cutoff_ms`.
  void evict_older_than(int64_t cutoff_ms);
  // Drops the oldest entries until `bytes` are freed; returns what was freed.
  int64_t evict_bytes(int64_t bytes);
  void clear();

  int64_t size_bytes() const { return bytes_; }
  size_t count() const { return entries_.size(); }

 private:
  struct Cached {
    Position position;
    Buffer data;
    int64_t inserted_ms;
  };
  void pop_front();

  EntryCacheManager& manager_;
  std::deque<Cached> entries_;
  int64_t bytes_ = 0;
};

}  // namespace magnetar::mledger
