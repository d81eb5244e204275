#pragma once
// One half of the DbLedgerStorage-style write cache: the entries added since the last swap.
// Their bytes are copied into large chunks (an arena, reused after a flush when no reader
// still holds a slice of them), and an open-addressing table indexes them by (ledger,
// entry): an add costs one copy and one probe, with no allocation per entry. sorted() gives
// the flush its (ledger, entry) order, so a ledger's entries end up next to each other on
// disk.
//
// Not thread-safe: LedgerStorage guards both halves with its cache lock (the flushing half
// is read without it, while nothing changes it). bytes() is what the entries are charged,
// not the chunks' size.

#include <cstdint>
#include <vector>

#include "bookie/storage/entry_log.h"
#include "common/buffer.h"

namespace magnetar::bookie {

class WriteCache {
 public:
  struct Slot {
    int64_t ledger_id;
    int64_t entry_id;
    int64_t lac;  // the LAC carried by this entry
    uint32_t chunk;
    uint32_t offset;
    uint32_t size;
    bool live;  // false once erase_ledger() dropped it
  };

  // What an entry counts against the cache limit: its bytes plus its record header.
  static size_t charge(size_t size) { return size + kEntryLogRecordHeaderSize; }

  const Slot* find(int64_t ledger_id, int64_t entry_id) const;
  // The entry's bytes: a slice that stays valid after clear().
  Buffer bytes(const Slot& s) const { return chunks_[s.chunk].slice(s.offset, s.size); }
  // A view, valid until clear().
  std::string_view view(const Slot& s) const {
    return {reinterpret_cast<const char*>(chunks_[s.chunk].data()) + s.offset, s.size};
  }

  // Copies the entry in. False (and nothing changes) when it is present already: first
  // write wins.
  bool insert(int64_t ledger_id, int64_t entry_id, const void* data, size_t size, int64_t lac);
  // Drops every entry of the ledger; returns the bytes released.
  size_t erase_ledger(int64_t ledger_id);
  // The live entries in (ledger, entry) order; valid until the next change.
  std::vector<const Slot*> sorted() const;
  void clear();

  size_t bytes() const noexcept { return bytes_; }
  bool empty() const noexcept { return live_ == 0; }

 private:
  uint8_t* reserve(size_t size, uint32_t* chunk, uint32_t* offset);
  void rebuild_table(size_t capacity);
  size_t probe_start(int64_t ledger_id, int64_t entry_id) const;

  std::vector<Buffer> chunks_;  // chunks_.back() is being filled
  size_t used_ = 0;             // bytes of chunks_.back() in use
  std::vector<Buffer> spare_;   // chunks of earlier rounds no reader holds: reused
  std::vector<Slot> slots_;     // in arrival order
  std::vector<uint32_t> table_;  // slot index + 1; 0 is empty. Size: a power of two, or 0
  size_t live_ = 0;
  size_t bytes_ = 0;  // sum of charge() over live slots
};

}  // namespace magnetar::bookie
