#pragma once
// Ledger storage: where a bookie keeps entries for reading, modelled on BookKeeper's
// DbLedgerStorage (one instance per ledger directory).
//
//   add_entry ──► write cache (active half) ──flush()──► entry log (<hex id>.log, fdatasync)
//                                                  └──► RocksDB index (one synced batch)
//   read_entry ◄── active half ◄── flushing half ◄── index ──► entry log record (crc checked)
//
// The journal makes adds durable; this storage makes them readable and, at each checkpoint
// (flush()), durable in their final place so that the journal can be trimmed. Entries added
// but not flushed are lost in a crash; the bookie re-adds them by replaying the journal,
// which is why add_entry() is idempotent.
//
// Files, all under `<dir>/current/`: entry logs (format in entry_log.h) and the RocksDB
// index in `index/` (format in ledger_index.h).
//
// Thread-safety: every public method may be called from any thread. Request threads add and
// read concurrently with a flush; flush(), delete_ledger() and each step of
// garbage_collect() are serialised with one another. Locks, always taken in this order:
//   flush_mu_   → cache_mu_ → ledgers_mu_      (flush_mu_ → logs_mu_ for log files)
// and no lock but flush_mu_ (and a log's own read lock) is held across file I/O.
//
// Failure is sticky: once a flush (or a GC write) fails, the entry logs and index may not
// agree with what was acknowledged, so every later add, flush, delete and GC returns the
// first failure. Reads go on working, from the cache included (the bookie turns read-only).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bookie/storage/entry_log.h"
#include "bookie/storage/ledger_index.h"
#include "bookie/storage/write_cache.h"
#include "common/buffer.h"
#include "common/env.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/status.h"

namespace magnetar::bookie {

struct LedgerStorageOptions {
  std::string dir;                                // a ledgerDirectories entry; files go in <dir>/current/
  size_t write_cache_bytes = 64ull << 20;         // dbStorage_writeCacheMaxSizeMb (two halves, as DbLedgerStorage)
  uint64_t entry_log_max_size = 1ull << 30;       // logSizeLimit: rotate entry logs past this (at most 4 GiB - 1)
  std::chrono::milliseconds max_throttle{10000};  // dbStorage_maxThrottleTimeMs: add waits this long when both cache halves are full
  double compaction_threshold = 0.5;              // majorCompactionThreshold: compact logs whose live fraction is below (<= 0: never)
  // When the active half fills, start a flush on a background thread (as DbLedgerStorage
  // does) instead of waiting for the bookie's next checkpoint. Tests turn it off to see
  // throttling.
  bool flush_when_full = true;
};

// A ledger as this storage knows it. `lac` is the highest LAC carried by an added entry,
// `last_entry_id` the highest entry id added (-1: none).
struct LedgerInfo {
  bool fenced = false;
  std::string master_key;
  EntryId lac;            // -1: none
  EntryId last_entry_id;  // -1: none
};

class LedgerStorage {
 public:
  // Opens (creating if needed) the storage of `options.dir`, loading the index. `env` must
  // outlive the storage; every entry-log file operation goes through it.
  static Result<std::unique_ptr<LedgerStorage>> open(LedgerStorageOptions options,
                                                     Env& env = posix_env());
  // Stops the background flusher. Does not flush: what is still cached is the journal's to
  // replay (call flush() first for a clean shutdown).
  ~LedgerStorage();
  LedgerStorage(const LedgerStorage&) = delete;
  LedgerStorage& operator=(const LedgerStorage&) = delete;

  // Creates the ledger on first use; later calls must present the same key (else
  // Errc::kPermissionDenied, the bookie's EUA). A ledger first created by add_entry() has
  // no key yet and takes the first one presented.
  Status set_master_key(LedgerId ledger, std::string_view master_key);
  // set_master_key() that also says, under the same lock, whether the ledger was created by
  // this call and whether it is fenced (what an add needs to know, without copying the key).
  struct KeyCheck {
    bool created = false;
    bool fenced = false;
  };
  Result<KeyCheck> check_master_key(LedgerId ledger, std::string_view master_key);
  Result<LedgerInfo> ledger_info(LedgerId ledger) const;  // kNotFound if unknown
  // Fences; returns true if it was not fenced before. Fencing is persisted (at the next
  // flush; the journal's fence record covers the gap). kNotFound if the ledger is unknown.
  Result<bool> set_fenced(LedgerId ledger);
  // Stores an entry (its bytes exactly as received; copied) in the write cache; `lac` is the
  // LAC carried by that entry. Creates the ledger if unknown. Adding an entry that is stored
  // already succeeds and keeps the first copy. kResourceExhausted if the cache stays full
  // past max_throttle; the sticky failure after a failed flush.
  Status add_entry(LedgerId ledger, EntryId id, Buffer entry, EntryId lac);
  // add_entry() that never waits: false (nothing stored) where add_entry() would wait for
  // room in the cache (a flush is requested then) or read the index from disk (an entry at
  // or below the ledger's durable last entry: a replay or a retry). For an event loop, which
  // hands the add to a thread that may wait instead.
  Result<bool> try_add_entry(LedgerId ledger, EntryId id, const Buffer& entry, EntryId lac);
  // entry_id -1: the last entry. kNotFound if absent (the message says whether the ledger or
  // the entry); kCorruption if the stored record fails its checksum.
  Result<Buffer> read_entry(LedgerId ledger, EntryId entry) const;
  // Everything added before this call becomes durable in entry logs + index (fdatasync of
  // the entry log, then one synced RocksDB batch), with the ledgers' fence bits, keys, LACs.
  Status flush();
  // Forgets the ledger: its state and index entries go now (durably), its bytes in entry
  // logs at the next garbage_collect(). Deleting an unknown ledger succeeds.
  Status delete_ledger(LedgerId ledger);
  // Known ledger ids, ascending.
  std::vector<LedgerId> ledgers() const;
  // Drops entry logs holding only deleted ledgers; compacts logs whose live fraction is
  // below the threshold (copy live entries to the current log, update the index durably,
  // then delete the old log). Never touches the current log. Returns bytes reclaimed.
  Result<uint64_t> garbage_collect();
  // Sticky: after a failed flush (fsync error, disk full) the storage refuses adds.
  Status failure() const;

 private:
  struct LedgerState {
    bool fenced = false;
    std::string master_key;
    int64_t lac = -1;                    // max over added entries (cached ones included)
    int64_t last_entry_id = -1;          // ditto
    int64_t durable_lac = -1;            // as last written to the index
    int64_t durable_last_entry_id = -1;  // every indexed entry id is <= this
    uint64_t meta_version = 0;           // bumped when fenced or master_key change
    uint64_t durable_meta_version = 0;   // meta_version the index holds
  };
  struct Metrics;

  LedgerStorage(LedgerStorageOptions options, Env& env);
  Status load();
  void run_flusher();

  // add_entry() (wait) and try_add_entry() (!wait: *would_block set where it would wait).
  Status store_entry(LedgerId ledger, EntryId id, const Buffer& entry, EntryId lac, bool wait,
                     bool* would_block);

  // The following need flush_mu_.
  Status flush_locked();
  // Appends a record to the current log, rotating first if it would grow past the limit.
  Result<EntryLocation> append_record(int64_t ledger_id, int64_t entry_id, std::string_view bytes);
  Status roll_log();
  // One GC step for log `log_id`: drop, compact or leave it. Returns the bytes freed.
  Result<uint64_t> collect_log(uint32_t log_id);
  // Copies the live records of `log_id` into the current log and deletes it. Returns the
  // bytes freed (0 when it declines, for instance when it finds fewer live bytes than
  // `live_bytes`, the index's count).
  Result<uint64_t> compact_log(uint32_t log_id, uint64_t live_bytes);
  // log_usage_ of each log in `added` plus the bytes `added` gives it per ledger, put into
  // `batch`; returned so the caller adopts it once the batch is written. Needs flush_mu_.
  std::map<uint32_t, LogUsage> put_merged_usage(const std::map<uint32_t, LogUsage>& added,
                                                LedgerIndex::Batch& batch);
  // Forgets and deletes the file of a log nothing points into; returns its size.
  uint64_t remove_log(uint32_t log_id);

  // Records the first failure (sticky) and wakes throttled adds. Returns `s`. Must not be
  // called with cache_mu_ held.
  Status fail(Status s);
  Status failure_status() const;  // failure_ or OK; takes cache_mu_
  void update_cache_gauge_locked();
  bool ledger_live(int64_t ledger_id) const;

  const LedgerStorageOptions options_;
  Env& env_;
  const std::string current_dir_;
  const log::Logger log_;
  std::unique_ptr<LedgerIndex> index_;  // thread-safe itself
  std::unique_ptr<Metrics> metrics_;

  // Serialises flush, delete and GC steps. Guards the members below it.
  mutable std::mutex flush_mu_;
  std::unique_ptr<EntryLogWriter> writer_;  // the current log; null until first needed
  std::map<uint32_t, LogUsage> log_usage_;  // mirror of the index's entry_logs family
  uint32_t next_log_id_ = 0;
  uint64_t log_bytes_ = 0;  // total size of the entry logs

  // Guards the write cache, the failure and the flusher handshake.
  mutable std::mutex cache_mu_;
  std::condition_variable cache_cv_;    // room in the cache, or a failure
  std::condition_variable flusher_cv_;  // flush_requested_ or stopping_
  WriteCache halves_[2];
  WriteCache* active_ = &halves_[0];    // adds go here
  WriteCache* flushing_ = &halves_[1];  // being written by flush(); empty otherwise. Only
                                        // a holder of flush_mu_ changes its contents.
  Status failure_;
  std::atomic<bool> failed_{false};  // failure_ is set; readable without the lock
  bool flush_requested_ = false;
  bool stopping_ = false;
  std::thread flusher_;  // runs flush() on request when flush_when_full

  // Guards ledgers_.
  mutable std::mutex ledgers_mu_;  // a plain mutex: tiny sections, taken several times per add
  std::map<int64_t, LedgerState> ledgers_;

  // Guards the set of readable logs. Readers hold it shared from the index look-up to the
  // end of the read, so GC (exclusive) never deletes a log under a read that found it.
  mutable std::shared_mutex logs_mu_;
  std::map<uint32_t, std::unique_ptr<EntryLogReader>> logs_;
};

}  // namespace magnetar::bookie
