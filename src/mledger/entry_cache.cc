#include "mledger/entry_cache.h"

#include <algorithm>

namespace magnetar::mledger {

int64_t EntryCacheManager::excess_bytes() const {
  const auto target = static_cast<int64_t>(static_cast<double>(max_bytes_) * watermark_);
  return std::max<int64_t>(0, used_bytes() - target);
}

bool EntryCacheManager::try_reserve(int64_t bytes) {
  int64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (used + bytes > max_bytes_) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

bool EntryCache::insert(Position position, Buffer data, int64_t now_ms) {
  if (!manager_.enabled()) return false;
  if (!entries_.empty() && position <= entries_.back().position) return false;
  const auto size = static_cast<int64_t>(data.size());
  if (!manager_.try_reserve(size)) return false;
  bytes_ += size;
  entries_.push_back(Cached{position, std::move(data), now_ms});
  return true;
}

std::optional<Buffer> EntryCache::get(Position position) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), position,
                             [](const Cached& c, const Position& p) { return c.position < p; });
  if (it == entries_.end() || it->position != position) {
    manager_.misses.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  manager_.hits.fetch_add(1, std::memory_order_relaxed);
  return it->data;
}

void EntryCache::pop_front() {
  const auto size = static_cast<int64_t>(entries_.front().data.size());
  bytes_ -= size;
  manager_.release(size);
  manager_.evicted.fetch_add(1, std::memory_order_relaxed);
  entries_.pop_front();
}

void EntryCache::evict_before(Position p) {
  while (!entries_.empty() && entries_.front().position < p) pop_front();
}

void EntryCache::evict_older_than(int64_t cutoff_ms) {
  while (!entries_.empty() && entries_.front().inserted_ms < cutoff_ms) pop_front();
}

int64_t EntryCache::evict_bytes(int64_t bytes) {
  int64_t freed = 0;
  while (!entries_.empty() && freed < bytes) {
    freed += static_cast<int64_t>(entries_.front().data.size());
    pop_front();
  }
  return freed;
}

void EntryCache::clear() {
  while (!entries_.empty()) pop_front();
}

}  // namespace magnetar::mledger
