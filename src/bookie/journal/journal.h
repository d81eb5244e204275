#pragma once
// The bookie journal: a write-ahead log that makes every add durable before the bookie
// acknowledges it (BookKeeper's Journal; reference/bookkeeper.md §5.2, §5.4, §5.5).
//
// Appenders queue records; a writer thread drains the queue into one buffer and writes a
// whole group with one write(); a sync thread fdatasyncs it (one fsync per group, or fewer:
// it coalesces every group written while it was busy) and runs the group's callbacks, in
// order. Because the writer and the sync thread are separate, the next group's write()
// overlaps the previous group's fsync. Groups form only while a sync is in flight: when none
// is, the writer writes what it holds at once, so a lone record on an idle journal is synced
// without waiting; while one is, the group grows until that sync is done,
// journalBufferedWritesThreshold bytes wait, or its oldest record has waited
// journalMaxGroupWaitMSec. A small group written on an idle journal (up to 64 KiB) the
// writer syncs and completes itself, without waking the sync thread. A callback thread runs
// rejections and failures (and later completions while it has some of those, to keep the
// order).
//
// Failure is sticky: after a write or fsync error nothing more is written, the failing group
// and every later append complete with that error, and the bookie is told (on_failure) so it
// can turn read-only. A failed fsync is never retried: the kernel may have dropped the dirty
// pages it could not write, so a later "successful" fsync would prove nothing.
//
// Layout: <dir>/current/<16 hex digits of the file id>.txn (and, with reuse_files, one
// <id>.spare), plus <dir>/lastMark. The on-disk grammar is at the top of journal.cc.

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/buffer.h"
#include "common/env.h"
#include "common/ids.h"
#include "common/status.h"

namespace magnetar::bookie {

struct JournalOptions {
  std::string dir;                                 // journalDirectories (one dir)
  uint64_t max_file_size = 2048ull << 20;          // journalMaxSizeMB: roll past this
  uint64_t prealloc_size = 16ull << 20;            // journalPreAllocSizeMB: growth chunk
  // journalMaxGroupWaitMSec: the longest a record waits for its group while a sync is in
  // flight (<= 0: no wait). An idle journal never waits.
  std::chrono::microseconds max_group_wait{2000};
  // journalSyncPacingMicros (ours): an idle journal writes and syncs its group at once unless
  // the previous fdatasync began less than this long ago; then the group waits out the rest
  // and grows meanwhile. Under a steady trickle (10 k adds/s, a sync of ~0.2 ms) it bounds
  // the fdatasyncs to one per interval instead of one per two records, each costing ~45 µs of
  // CPU and a wake-up or two; a lone record after a quiet spell never waits, and no record
  // waits longer than max_group_wait. 0: no pacing.
  std::chrono::microseconds sync_pacing{0};
  size_t buffered_writes_threshold = 512 << 10;    // journalBufferedWritesThreshold (bytes)
  bool flush_when_queue_empty = false;             // journalFlushWhenQueueEmpty
  // journalSyncData. false: ack right after write(), fdatasync at least every second, at
  // every roll and at close — acked records can be lost on power loss (not on a crash).
  bool sync_data = true;
  int max_backups = 5;        // journalMaxBackups: files older than the mark kept by a checkpoint
  // journalReuseFiles: a file a checkpoint releases is kept (one at most) and written again
  // at the next roll instead of a new file, which needs no zeros written ahead of its data.
  bool reuse_files = false;
  // journalRemovePagesFromCache: the synced part of the current file leaves the page cache,
  // 2 MiB at a time, after the acknowledgements it holds were handed on. Nothing reads a journal
  // while it runs, and the kernel's pages for it are then the ones it just freed rather than new
  // ones, a third to a seventh of the CPU a buffered write costs on a virtual machine
  // (docs/performance.md).
  bool remove_pages_from_cache = true;
  size_t queue_size = 10000;  // journalQueueSize: records in flight (accepted, not completed);
                              // appenders wait beyond it
};

// A place in the journal: byte `offset` of file `file_id`. Ordered by file, then offset;
// positions handed out by the journal always point just past a record (or just past a file
// header).
struct JournalPosition {
  uint64_t file_id = 0;
  uint64_t offset = 0;
  auto operator<=>(const JournalPosition&) const = default;
};

enum class JournalRecordType : uint8_t { kEntry = 1, kMasterKey = 2, kFence = 3, kExplicitLac = 4 };

struct JournalRecord {
  JournalRecordType type = JournalRecordType::kEntry;
  LedgerId ledger_id{0};
  EntryId entry_id{0};  // -1 for records about the ledger (key, fence)
  Buffer payload;  // shared, never copied by append()
};

// The path of journal file `file_id` under `dir` (tests and tools).
std::string journal_file_path(const std::string& dir, uint64_t file_id);

class Journal {
 public:
  using AppendCallback = std::function<void(Status, JournalPosition)>;

  // Creates <dir>/current if needed and starts a new file whose id is greater than every
  // existing one; never writes into an old file. `env` must outlive the Journal. Replay (if
  // any) must be done before open.
  static Result<std::unique_ptr<Journal>> open(JournalOptions options, Env& env = posix_env());

  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  // Completes (or, after a failure, fails) everything accepted so far — with a final fsync
  // even when sync_data is false — runs every callback, then stops the threads. No append()
  // may race with or follow the destructor.
  ~Journal();

  // Thread-safe. Never blocks on I/O, but while queue_size records are in flight it waits
  // for one of them to complete (back-pressure, as BookKeeper's bounded journal queue: a
  // disk that falls behind slows the appenders down instead of failing their adds). Never
  // call it from a journal callback. `done` runs on a journal thread (the sync thread or the
  // callback thread; it must be quick: the next fdatasync waits for it), never on the caller's: with sync_data, once the record is fdatasync'd; without, once it is
  // written. It receives the position just past the record, or an error: kIoError or
  // kResourceExhausted (disk full) after a failure, kCancelled once the journal is closing,
  // kInvalidArgument for a payload too large to encode. Accepted records complete in append
  // order; a rejected append may complete before records accepted earlier.
  void append(JournalRecord record, AppendCallback done);
  // append() that never waits: while queue_size records are in flight it takes nothing
  // (`record` and `done` are left as they were) and returns false. Otherwise it does what
  // append() does, moving from both, and returns true. For a caller that must not block (an
  // event loop), which hands the append to a thread that may wait instead.
  bool try_append(JournalRecord& record, AppendCallback& done);

  // Position just past the last fdatasync'd record: a valid checkpoint mark.
  JournalPosition last_durable() const;
  // OK, or the sticky error that made the journal fail.
  Status failure() const;

  // Ledger storage has persisted everything before `mark` (taken with last_durable() before
  // its flush began). Writes the mark to <dir>/lastMark atomically unless it would move the
  // mark backwards, then deletes the journal files wholly before the mark except the newest
  // `max_backups` of them. Thread-safe; calls are serialized. kInvalidArgument for a mark
  // beyond last_durable().
  Status checkpoint_complete(JournalPosition mark);

  // Startup recovery, before open(): reads <dir>/lastMark (absent: replay everything), then
  // calls `fn` for every record after the mark, in order, across every newer file, with the
  // position just past the record. A torn tail (short record, impossible length, CRC
  // mismatch) ends the scan of that file cleanly. An error from `fn` stops the replay and is
  // returned. Returns the mark. kCorruption when a file header is wrong or the mark names a
  // missing file.
  static Result<JournalPosition> replay(
      const JournalOptions& options, Env& env,
      const std::function<Status(const JournalRecord&, JournalPosition after)>& fn);

  // Registered by the bookie: called once, on the journal's callback thread, when the journal
  // fails (fsync error, disk full), so the bookie turns read-only. If the journal has already
  // failed, the call is scheduled at once. Replaces any earlier callback.
  void on_failure(std::function<void(const Status&)> callback);

 private:
  struct Impl;
  explicit Journal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace magnetar::bookie
