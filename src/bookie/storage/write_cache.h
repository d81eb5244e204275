#pragma once
// One half of DbLedgerStorage-style write cache: the entries added since the last swap,
// ordered by (ledger, entry) so that a flush writes them to the entry log sorted, and a
// ledger's entries end up next to each other on disk.
//
// Not thread-safe: LedgerStorage guards both halves with its cache lock. The Buffers are
// private copies (see LedgerStorage::add_entry), so bytes() is the memory really held.

#include <cstdint>
#include <map>
#include <utility>

#include "bookie/storage/entry_log.h"
#include "common/buffer.h"

namespace magnetar::bookie {

class WriteCache {
 public:
  struct Entry {
    Buffer bytes;
    int64_t lac = -1;  // the LAC carried by this entry
  };
  using Key = std::pair<int64_t, int64_t>;  // (ledger id, entry id)
  using Map = std::map<Key, Entry>;

  // What an entry counts against the cache limit: its bytes plus its record header.
  static size_t charge(const Buffer& bytes) { return bytes.size() + kEntryLogRecordHeaderSize; }

  const Entry* find(int64_t ledger_id, int64_t entry_id) const {
    auto it = entries_.find(Key{ledger_id, entry_id});
    return it == entries_.end() ? nullptr : &it->second;
  }

  // False (and nothing changes) when the entry is present already: first write wins.
  bool insert(int64_t ledger_id, int64_t entry_id, Buffer bytes, int64_t lac) {
    size_t c = charge(bytes);
    bool inserted =
        entries_.try_emplace(Key{ledger_id, entry_id}, Entry{std::move(bytes), lac}).second;
    if (inserted) bytes_ += c;
    return inserted;
  }

  // Drops every entry of the ledger; returns the bytes released.
  size_t erase_ledger(int64_t ledger_id) {
    auto first = entries_.lower_bound(Key{ledger_id, INT64_MIN});
    auto last = entries_.lower_bound(Key{ledger_id + 1, INT64_MIN});
    size_t released = 0;
    for (auto it = first; it != last; ++it) released += charge(it->second.bytes);
    entries_.erase(first, last);
    bytes_ -= released;
    return released;
  }

  void clear() {
    entries_.clear();
    bytes_ = 0;
  }

  const Map& entries() const noexcept { return entries_; }
  size_t bytes() const noexcept { return bytes_; }
  bool empty() const noexcept { return entries_.empty(); }

 private:
  Map entries_;
  size_t bytes_ = 0;  // sum of charge() over entries_
};

}  // namespace magnetar::bookie
