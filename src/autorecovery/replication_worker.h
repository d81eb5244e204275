#pragma once
// The replication worker (BookKeeper's ReplicationWorker, reference §8): claims one marked
// ledger at a time (UnderreplicationManager::claim: random order, locked ones skipped),
// finds the bookies of its metadata that are no longer registered under /ledgers/available
// (writable or read-only), moves their copies to replacements (LedgerReplicator) and
// completes the marker. With no marker free it sleeps until the marker tree or a lock
// changes (store notifications), or `poll` passes. While the `disable` node exists it claims
// nothing.
//
// Failures keep the ledger's lock for a back-off (rwRereplicateBackoffMs, doubled for each
// further failure of the same ledger up to 8x) so that no worker retries it at once, then
// release it; the worker goes on with other ledgers meanwhile. An open ledger whose lost
// bookies lie only in earlier segments is released the same way after six back-offs (30 s by
// default), without counting a failure.
//
// Metrics (default registry):
//   magnetar_autorecovery_ledgers_rereplicated_total   markers completed by this worker
//   magnetar_autorecovery_rereplication_failures_total attempts that failed (retried later)
//   and the replicator's fragments/entries counters (ledger_replicator.h).
//
// Threading: lives on the BookKeeper's executor; start() and stop() are coroutines there;
// stop() must complete before destruction. `bk` outlives the worker.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "autorecovery/ledger_replicator.h"
#include "autorecovery/underreplication.h"
#include "common/asio.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/wakeup.h"
#include "ledger/bookkeeper.h"

namespace magnetar::autorecovery {

struct WorkerOptions {
  ReplicatorOptions replicator;
  std::chrono::milliseconds backoff{5000};  // rwRereplicateBackoffMs
  std::chrono::milliseconds poll{10000};    // walk the markers at least this often
};

class ReplicationWorker {
 public:
  // `id`: this worker's bookie id (or host), written into the locks it takes.
  ReplicationWorker(ledger::BookKeeper& bk, std::string id, WorkerOptions options);
  ~ReplicationWorker();
  ReplicationWorker(const ReplicationWorker&) = delete;
  ReplicationWorker& operator=(const ReplicationWorker&) = delete;

  // Checks the layout (ensure_layout) and starts the claim loop.
  Task<Status> start();
  // Stops claiming, waits for the ledger in progress (its copy stops at the next batch) and
  // releases every lock held. Idempotent.
  Task<void> stop();

  uint64_t completed() const { return completed_; }
  uint64_t failures() const { return failures_; }

 private:
  Task<void> run();
  // One claimed ledger, start to end (complete, or release now or later).
  Task<void> handle(Claim claim);
  Task<void> release_after(int64_t ledger_id, std::chrono::milliseconds delay);

  ledger::BookKeeper& bk_;
  UnderreplicationManager urm_;
  LedgerReplicator replicator_;
  const WorkerOptions options_;
  log::Logger log_;
  Wakeup wake_;
  Wakeup done_;
  metadata::ListenerId listener_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // weak in the listener
  bool started_ = false;
  bool stopping_ = false;
  int tasks_ = 0;                           // run() and release_after() still running
  std::map<int64_t, int> failed_attempts_;  // by ledger: consecutive failures
  uint64_t completed_ = 0;
  uint64_t failures_ = 0;
  std::shared_ptr<metrics::Counter> completed_total_;
  std::shared_ptr<metrics::Counter> failures_total_;
};

}  // namespace magnetar::autorecovery
