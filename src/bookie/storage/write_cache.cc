#include "bookie/storage/write_cache.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "common/status.h"

namespace magnetar::bookie {
namespace {

// Entries are packed into chunks of this size; a larger entry gets a chunk of its own.
constexpr size_t kChunkSize = 1 << 20;
constexpr size_t kMinTable = 1024;

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

bool before(const WriteCache::Slot* a, const WriteCache::Slot* b) {
  return std::tie(a->ledger_id, a->entry_id) < std::tie(b->ledger_id, b->entry_id);
}

}  // namespace

size_t WriteCache::probe_start(int64_t ledger_id, int64_t entry_id) const {
  uint64_t h = mix(static_cast<uint64_t>(ledger_id) * 0x9e3779b97f4a7c15ULL ^
                   static_cast<uint64_t>(entry_id));
  return static_cast<size_t>(h) & (table_.size() - 1);
}

const WriteCache::Slot* WriteCache::find(int64_t ledger_id, int64_t entry_id) const {
  if (table_.empty()) return nullptr;
  const size_t mask = table_.size() - 1;
  for (size_t i = probe_start(ledger_id, entry_id);; i = (i + 1) & mask) {
    uint32_t at = table_[i];
    if (at == 0) return nullptr;
    const Slot& s = slots_[at - 1];
    if (s.ledger_id == ledger_id && s.entry_id == entry_id) return &s;
  }
}

void WriteCache::rebuild_table(size_t capacity) {
  table_.assign(capacity, 0);
  const size_t mask = capacity - 1;
  for (size_t n = 0; n < slots_.size(); ++n) {
    const Slot& s = slots_[n];
    if (!s.live) continue;
    size_t i = probe_start(s.ledger_id, s.entry_id);
    while (table_[i] != 0) i = (i + 1) & mask;
    table_[i] = static_cast<uint32_t>(n + 1);
  }
}

// Room for `size` bytes: the rest of the current chunk, a new (or spare) chunk, or a chunk
// of its own for a large entry. Chunks become current only while this cache is their sole
// owner; readers then get slices of what is already written, never of the room past used_,
// so writing there through the pointer taken at that time changes nothing they can see.
uint8_t* WriteCache::reserve(size_t size, uint32_t* chunk, uint32_t* offset) {
  if (chunks_.empty() || chunks_.back().size() - used_ < size) {
    Buffer next;
    if (size > kChunkSize / 4) {
      next = Buffer::allocate(size);
    } else if (!spare_.empty()) {
      next = std::move(spare_.back());
      spare_.pop_back();
    } else {
      next = Buffer::allocate(kChunkSize);
    }
    (void)next.mutable_data();  // asserts sole ownership
    chunks_.push_back(std::move(next));
    used_ = 0;
  }
  MAGNETAR_ASSERT(chunks_.size() <= UINT32_MAX, "write cache: too many chunks");
  *chunk = static_cast<uint32_t>(chunks_.size() - 1);
  *offset = static_cast<uint32_t>(used_);
  uint8_t* at = const_cast<uint8_t*>(chunks_.back().data()) + used_;
  used_ += size;
  // A large entry's own chunk is full: the next entry starts a new one.
  if (size > kChunkSize / 4) used_ = chunks_.back().size();
  return at;
}

bool WriteCache::insert(int64_t ledger_id, int64_t entry_id, const void* data, size_t size,
                        int64_t lac) {
  MAGNETAR_ASSERT(size <= UINT32_MAX, "write cache: entry larger than 4 GiB");
  if ((slots_.size() + 1) * 2 > table_.size()) {
    rebuild_table(std::max(kMinTable, table_.size() * 2));
  }
  // One probe: the entry itself (refused), or the empty place that ends its run (taken).
  const size_t mask = table_.size() - 1;
  size_t i = probe_start(ledger_id, entry_id);
  for (; table_[i] != 0; i = (i + 1) & mask) {
    const Slot& other = slots_[table_[i] - 1];
    if (other.ledger_id == ledger_id && other.entry_id == entry_id) return false;
  }
  Slot s{ledger_id, entry_id, lac, 0, 0, static_cast<uint32_t>(size), true};
  if (size > 0) std::memcpy(reserve(size, &s.chunk, &s.offset), data, size);
  slots_.push_back(s);
  table_[i] = static_cast<uint32_t>(slots_.size());
  ++live_;
  bytes_ += charge(size);
  return true;
}

size_t WriteCache::erase_ledger(int64_t ledger_id) {
  size_t released = 0;
  for (Slot& s : slots_) {
    if (s.live && s.ledger_id == ledger_id) {
      s.live = false;
      released += charge(s.size);
      --live_;
    }
  }
  if (released > 0) {
    bytes_ -= released;
    rebuild_table(table_.size());  // rare: drops the dead slots from the table
  }
  return released;
}

std::vector<const WriteCache::Slot*> WriteCache::sorted() const {
  std::vector<const Slot*> order;
  order.reserve(live_);
  for (const Slot& s : slots_) {
    if (s.live) order.push_back(&s);
  }
  // Usually sorted already (one ledger, entries in order).
  if (!std::is_sorted(order.begin(), order.end(), before)) {
    std::sort(order.begin(), order.end(), before);
  }
  return order;
}

void WriteCache::clear() {
  for (Buffer& chunk : chunks_) {
    // Reused only when no reader holds a slice, and only the regular size.
    if (chunk.use_count() == 1 && chunk.size() == kChunkSize) spare_.push_back(std::move(chunk));
  }
  chunks_.clear();
  used_ = 0;
  slots_.clear();
  std::fill(table_.begin(), table_.end(), 0);
  live_ = 0;
  bytes_ = 0;
}

}  // namespace magnetar::bookie
