#pragma once
// Re-replication of one ledger away from lost bookies (BookKeeper's ReplicationWorker +
// LedgerFragmentReplicator, reference §8):
//
//  1. Read the ledger's metadata (and its version). Segments (fragments) naming a lost
//     bookie are the work; none: done.
//  2. A ledger not CLOSED whose last segment names a lost bookie: wait the grace period
//     (the writer may change its ensemble itself), read again, and if it still does, open
//     it with recovery (fences the writer, recovers the tail, closes it). A ledger not
//     CLOSED whose lost bookies are only in earlier segments is done at once, under its live
//     writer, as BookKeeper does: those segments are immutable (every entry below an
//     ensemble change was confirmed), and the writer's next metadata update takes the
//     replacement in (LedgerHandle::write_metadata rebases on a change to earlier segments).
//  3. For each segment and each position holding a lost bookie: a replacement chosen by the
//     placement policy (replace_bookie: never in the ensemble, never lost), then every entry
//     of the segment whose write set includes that position is read from a surviving replica
//     (digest checked) and written to the replacement with a recovery add (the ledger's
//     master key; allowed on fenced ledgers), `entry_batch_size` entries in flight. Only
//     after every entry is stored is the bookie replaced in that segment of the metadata,
//     by compare-and-set (re-read and retried on a version conflict).
//
// A failure anywhere leaves the metadata naming the lost bookie, so the next attempt (after
// the worker's back-off) starts again; copies already made are simply written again.
//
// Threading: lives on the BookKeeper's executor; call from coroutines there. `bk` outlives it.

#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "common/asio.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/status.h"
#include "ledger/bookkeeper.h"

namespace magnetar::autorecovery {

struct ReplicatorOptions {
  int entry_batch_size = 100;                          // rereplicationEntryBatchSize
  std::chrono::milliseconds open_ledger_grace{30000};  // openLedgerRereplicationGracePeriod
};

struct ReplicationOutcome {
  int fragments = 0;     // (segment, position) pairs moved to a replacement
  int64_t entries = 0;   // entries copied
  bool recovered = false;  // the ledger was open and was recovered (fenced and closed)
};

class LedgerReplicator {
 public:
  LedgerReplicator(ledger::BookKeeper& bk, ReplicatorOptions options);

  // Moves every copy the bookies in `lost` held of `ledger_id` to replacements. A ledger
  // that does not exist (deleted) is done. `stopping`, when set, is checked between
  // batches: true ends the work with kCancelled.
  Task<Result<ReplicationOutcome>> replicate(int64_t ledger_id, std::set<std::string> lost,
                                             const bool* stopping = nullptr);

 private:
  struct Stored;
  Task<Result<Stored>> read_stored(int64_t ledger_id);
  // Copies the entries of segment `segment_index` that position `position` stores to
  // `target`; returns how many.
  Task<Result<int64_t>> copy_fragment(const ledger::LedgerMetadata& md, size_t segment_index,
                                      int position, std::string target,
                                      std::set<std::string> lost, const bool* stopping);
  // Replaces `from` by `to` at `position` of the segment starting at `first_entry_id`, by
  // compare-and-set on the stored metadata. OK also when `from` is no longer there.
  Task<Status> replace_in_metadata(int64_t ledger_id, int64_t first_entry_id, int position,
                                   std::string from, std::string to);

  ledger::BookKeeper& bk_;
  ReplicatorOptions options_;
  log::Logger log_;
  std::shared_ptr<metrics::Counter> fragments_total_;
  std::shared_ptr<metrics::Counter> entries_total_;
};

}  // namespace magnetar::autorecovery
