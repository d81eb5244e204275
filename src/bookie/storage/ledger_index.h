#pragma once
// The RocksDB index of one ledger directory, in `<dir>/current/index`: where each entry
// lives, each ledger's persisted state, and how many bytes each entry log holds per ledger
// (what GC needs to tell a dead log from a live one without reading it).
//
// Column families (integers big-endian, so keys sort by ledger, then entry):
//
//   locations   key   := ledger_id u64 | entry_id u64           -- 16 bytes
//               value := location u64                           -- log_id << 32 | offset
//   ledgers     key   := ledger_id u64
//               value := version u8 (= 1) | flags u8 (bit 0: fenced) | lac i64
//                        | last_entry_id i64 | key_len u32 | master_key[key_len]
//   entry_logs  key   := log_id u64
//               value := (ledger_id u64 | bytes u64)*           -- sorted by ledger
//
// `bytes` counts whole records (header included) written for that ledger into that log.
// Every mutation goes through a Batch written with sync. A flush writes its locations in
// several batches, each with the usage of the logs written so far, and the ledger records
// in its last one. After a crash in between, the index may locate entries past a ledger's
// durable last entry id: the journal replays every entry past that id into the write cache
// (add_entry consults the index only at or below it) and the next flush writes them again
// and points the index at the new copies. The old copies stay counted in their log's usage
// (a little space GC will not reclaim after such a crash), never the other way round.
//
// Thread-safety: all methods may be called from any thread (RocksDB is thread-safe). A
// Batch belongs to one thread.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bookie/storage/entry_log.h"
#include "common/status.h"

namespace rocksdb {
class DB;
class ColumnFamilyHandle;
class WriteBatch;
}  // namespace rocksdb

namespace magnetar::bookie {

// What the `ledgers` family stores for one ledger.
struct LedgerRecord {
  bool fenced = false;
  std::string master_key;
  int64_t lac = -1;
  int64_t last_entry_id = -1;

  friend bool operator==(const LedgerRecord&, const LedgerRecord&) = default;
};
std::string encode_ledger_record(const LedgerRecord& r);
// kCorruption when `bytes` does not follow the grammar above.
Result<LedgerRecord> decode_ledger_record(std::string_view bytes);

// Record bytes per ledger held by one entry log.
using LogUsage = std::map<int64_t, uint64_t>;
std::string encode_log_usage(const LogUsage& usage);
Result<LogUsage> decode_log_usage(std::string_view bytes);

class LedgerIndex {
 public:
  // Opens or creates the database at `path`.
  static Result<std::unique_ptr<LedgerIndex>> open(const std::string& path);
  ~LedgerIndex();
  LedgerIndex(const LedgerIndex&) = delete;
  LedgerIndex& operator=(const LedgerIndex&) = delete;

  // nullopt when the entry is not indexed.
  Result<std::optional<EntryLocation>> get_location(int64_t ledger_id, int64_t entry_id) const;

  Status for_each_ledger(const std::function<Status(int64_t, LedgerRecord)>& fn) const;
  Status for_each_log_usage(const std::function<Status(uint32_t, LogUsage)>& fn) const;

  // A set of mutations applied atomically by write().
  class Batch {
   public:
    explicit Batch(const LedgerIndex& index);
    ~Batch();
    Batch(Batch&&) noexcept;

    void put_location(int64_t ledger_id, int64_t entry_id, EntryLocation location);
    void put_ledger(int64_t ledger_id, const LedgerRecord& record);
    // Removes the ledger's record and every location of its entries.
    void delete_ledger(int64_t ledger_id);
    void put_log_usage(uint32_t log_id, const LogUsage& usage);
    void delete_log_usage(uint32_t log_id);
    size_t count() const;

   private:
    friend class LedgerIndex;
    const LedgerIndex* index_;
    std::unique_ptr<rocksdb::WriteBatch> batch_;
  };

  // Applies `batch` durably (WAL fsync) or not at all.
  Status write(Batch& batch);

 private:
  LedgerIndex() = default;

  std::string path_;
  std::unique_ptr<rocksdb::DB> db_;
  // Owned here, destroyed before db_. Never null after open().
  rocksdb::ColumnFamilyHandle* default_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* locations_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* ledgers_cf_ = nullptr;
  rocksdb::ColumnFamilyHandle* logs_cf_ = nullptr;
};

}  // namespace magnetar::bookie
