#pragma once
// The ledger client, BookKeeper's model:
//
//  - create(): a new ledger id (cluster-wide counter), an ensemble of E bookies chosen by the
//    placement policy, metadata stored at ledger_path(id) with state OPEN.
//  - LedgerHandle::add(): entries are striped (entry e goes to the write set
//    (e + i) % E, i < Qw), sent in a pipeline, and completed strictly in order once Qa
//    bookies of each write set answered. Each entry carries the LAC (last add confirmed).
//    A bookie that fails is replaced (ensemble change recorded with CAS in the metadata,
//    a new segment starting at LAC + 1) and the unconfirmed entries are re-sent to its
//    replacement.
//  - read(): each entry from any replica of its write set, its CRC32C digest verified; a
//    corrupt or missing copy is read from the next replica. A range is read with up to
//    BookKeeperOptions::max_parallel_reads entries in flight at once (each with its own
//    replica fallback) and returned in entry order; the first entry (in entry order) that
//    no replica could serve fails the whole read, once every read in flight has finished.
//    When every bookie stores every entry (E == Qw), pieces of the range are read with one
//    read_range request each (see read_ranges); a piece that fails or comes back short is
//    read entry by entry, and the pieces after it go on as ranges.
//  - open(recovery = true): fences the last ensemble (no old writer can reach Qa again),
//    then reads the ledger forward from the highest LAC any bookie knows with the same bounded
//    read-ahead; past the LAC, each entry read is
//    re-replicated with a recovery add (those adds also run concurrently, bounded by the
//    same window), until the first entry that is missing (NO_ENTRY from enough replicas that
//    it can never have reached Qa). The ledger is closed at the last entry before that one.
//    Every entry's header carries the ledger's running length (payload bytes of entries
//    [0, entry], as BookKeeper does), so recovery starts reading at the highest LAC, not at
//    entry 0, and the closed metadata records the real `length`: the running length of the
//    last entry, what a writer's close() records. A confirmed entry that no replica can
//    serve fails recovery (kUnavailable; retry later).
//
// Threading: a BookKeeper object and its handles live on one executor (event loop); call
// them from coroutines running there.

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/ids.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "ledger/bookie_client.h"
#include "ledger/ledger_metadata.h"
#include "ledger/placement.h"
#include "metadata/id_generator.h"
#include "metadata/metadata_store.h"

namespace magnetar::ledger {

class LedgerHandle;

struct BookKeeperOptions {
  BookieClientOptions bookie_client;
  // Defaults to the random placement policy.
  std::shared_ptr<PlacementPolicy> placement;
  // Entry reads one LedgerHandle::read() or recovery keeps in flight at once (values below
  // 1 count as 1). Recovery also bounds its concurrent recovery adds by it.
  int max_parallel_reads = 128;
};

struct LedgerEntry {
  EntryId entry_id;
  Buffer payload;
};

class BookKeeper {
 public:
  // `store` (the cluster metadata store) must outlive this object.
  BookKeeper(metadata::MetadataStore& store, Executor executor, BookKeeperOptions options = {});
  ~BookKeeper();

  // `id_above`: the new ledger's id is greater (a managed ledger's ledgers are ordered by
  // id, and the broker creating the next one may hold an older block of ids than the one
  // that created the last); none (-1): any id.
  Task<Result<std::shared_ptr<LedgerHandle>>> create(
      int ensemble_size, int write_quorum, int ack_quorum, std::string password,
      std::map<std::string, std::string> custom = {}, LedgerId id_above = LedgerId());
  // recovery = false: read-only view up to the LAC known to the bookies (or the last entry
  // of a closed ledger). recovery = true: fence, recover, close (the new owner's way in).
  Task<Result<std::shared_ptr<LedgerHandle>>> open(LedgerId ledger, std::string password,
                                                   bool recovery);
  Task<Status> remove(LedgerId ledger);
  Task<Result<std::vector<LedgerId>>> list_ledgers();  // ascending
  Task<Result<LedgerMetadata>> read_metadata(LedgerId ledger);
  // Writable bookies registered under /ledgers/available (read-only ones excluded).
  Task<Result<std::vector<std::string>>> available_bookies();

  BookieClient& client() { return client_; }
  metadata::MetadataStore& store() { return store_; }
  PlacementPolicy& placement() { return *options_.placement; }
  // Counts a placement the policy could not make (magnetar_ledger_placement_failures_total,
  // op="new_ensemble" for a ledger's creation, "replace_bookie" for an ensemble change).
  void count_placement_failure(bool replacement);
  // Counts an add that had Qa acknowledgements the policy did not accept yet
  // (magnetar_ledger_adds_waiting_for_placement_total; BookKeeper's
  // WRITE_DELAYED_DUE_TO_NOT_ENOUGH_FAULT_DOMAINS).
  void count_add_waiting_for_placement() { adds_waiting_for_placement_->inc(); }
  const BookKeeperOptions& options() const { return options_; }
  const Executor& executor() const { return executor_; }

 private:
  metadata::MetadataStore& store_;
  Executor executor_;
  BookKeeperOptions options_;
  BookieClient client_;
  metadata::IdGenerator ids_;
  log::Logger log_;
  std::shared_ptr<metrics::Counter> new_ensemble_failures_;
  std::shared_ptr<metrics::Counter> replace_failures_;
  std::shared_ptr<metrics::Counter> adds_waiting_for_placement_;

  struct StoredMetadata {
    std::string path;
    std::string json;
    int64_t version = 0;
  };
  // The ledger's metadata node: at ledger_path, else at flat_ledger_path; kNotFound if neither.
  Task<Result<StoredMetadata>> find_metadata(LedgerId ledger);
};

// Every bookie registered under /ledgers/available, writable or read-only, sorted (what
// Pulsar's admin API lists at /admin/v2/bookies/all).
Task<Result<std::vector<std::string>>> registered_bookies(metadata::MetadataStore& store);

class LedgerHandle : public std::enable_shared_from_this<LedgerHandle> {
 public:
  // `metadata_path`: where the metadata node is (ledger_path, or flat_ledger_path for a ledger
  // of an earlier version); updates go there.
  LedgerHandle(BookKeeper& bk, LedgerMetadata metadata, int64_t metadata_version,
               std::string metadata_path, bool writable);
  ~LedgerHandle();

  LedgerId id() const { return LedgerId{metadata_.ledger_id}; }
  const LedgerMetadata& metadata() const { return metadata_; }
  EntryId last_add_confirmed() const { return EntryId{lac_}; }
  bool closed() const { return metadata_.state == LedgerState::kClosed; }

  // Appends; returns the entry id once Qa bookies of its write set stored it. Adds complete
  // in order; after a failure of the handle (fenced, no replacement bookie) every pending
  // and later add fails.
  Task<Result<EntryId>> add(BufferChain payload);
  // add() without a coroutine per entry (the managed ledger's write path): `done` gets the
  // entry id or the failure, later on the executor, never inside this call.
  using AddCallback = std::function<void(Result<EntryId>)>;
  void async_add(BufferChain payload, AddCallback done);
  // Entries [first, last], which must not be past the LAC (or the last entry when closed), in
  // entry order; read max_parallel_reads at a time. Fails with the error of the first entry
  // no replica could serve (after every read in flight finished).
  Task<Result<std::vector<LedgerEntry>>> read(EntryId first, EntryId last);
  // Waits for pending adds, then records state CLOSED with the last entry in the metadata.
  // Also after a write failure (closed at the last confirmed entry), but not once fenced.
  Task<Status> close();

  // Recovery (used by BookKeeper::open): fence, find the end, re-replicate, close with the
  // last entry and the ledger's length (see the top of this file).
  Task<Status> recover();
  // Reads the LAC known to the bookies of the last ensemble (for open without recovery).
  Task<Status> refresh_lac();

 private:
  struct PendingAdd;
  // What reading one entry from the replicas of its write set found.
  struct EntryRead {
    Status status;   // OK: `payload` holds the entry; otherwise the last replica's error
    Buffer payload;  // the entry's payload, digest verified
    int64_t running_length = 0;  // from its header: payload bytes of entries [0, entry]
    int negatives = 0;           // replicas that answered NO_ENTRY or NO_LEDGER
    int unreachable = 0;         // replicas that failed, answered an error or sent a bad copy
  };
  class ReadAhead;
  // read()'s fast path when every bookie of an ensemble stores every entry (E == Qw): the
  // range in pieces of kRangeEntries, each from one bookie in one round trip (rotating over
  // the ensemble), a few pieces in flight, appended to `out` in order. What a piece lacks
  // (the bookie failed, held a bad copy, or does not have the entries yet: a replica
  // outside the ack quorum may lag) is read entry by entry, and the rest of this read's
  // pieces avoid that bookie. Bookies that cannot serve ranges (older versions) leave the
  // rest to the per-entry reads. Fails as read() does.
  static constexpr int kRangeEntries = 32;
  Task<Status> read_ranges(int64_t first, int64_t last, std::vector<LedgerEntry>& out);
  // Entries [first, last] one read each (ReadAhead), appended to `out` in order; the error
  // of the first entry no replica could serve.
  Task<Status> read_singly(int64_t first, int64_t last, std::vector<LedgerEntry>& out);
  void send(const std::shared_ptr<PendingAdd>& p, int index);
  void on_add_answer(PendingAdd& p, int index, const std::string& bookie, Result<AddResult> r);
  void try_complete();
  // Qa acknowledgements, and with a policy that checks them (region-aware with
  // acks_span_regions), bookies that satisfy it.
  bool add_is_complete(PendingAdd& p);
  void fail(Status status);
  // Completes close()'s waits once nothing is pending.
  void wake_drain_waiters();
  Task<void> change_ensemble();
  // True when every write set still has Qa bookies outside failed_bookies_ (that satisfy
  // a policy that checks acknowledgements).
  bool ack_quorum_survives() const;
  Task<void> retry_change_later();
  Task<Status> write_metadata(LedgerMetadata updated);
  // Tries the replicas of entry_id's write set in turn (recent failures last).
  Task<EntryRead> read_entry(int64_t entry_id);

  BookKeeper& bk_;
  LedgerMetadata metadata_;
  int64_t metadata_version_;
  const std::string metadata_path_;
  const bool writable_;
  const std::string master_key_;  // SHA-1 of the password, sent with every request
  log::Logger log_;

  int64_t last_pushed_ = -1;   // last entry id handed out
  int64_t lac_ = -1;           // last entry confirmed (all before it confirmed too)
  int64_t length_ = 0;         // bytes of confirmed entries written through this handle
  int64_t pushed_length_ = 0;  // bytes of entries handed out (the running length in headers)
  Status failed_;              // sticky
  std::deque<std::shared_ptr<PendingAdd>> pending_;
  std::vector<std::function<void(bool)>> drain_waiters_;  // close() waiting for pending_
  bool changing_ensemble_ = false;
  std::set<std::string> failed_bookies_;  // waiting for (or excluded by) an ensemble change
  std::set<std::string> suspects_;        // failed a read: tried last until they answer again
  std::set<std::string> no_range_reads_;  // answered read_range as unsupported (older bookies)
  bool change_retry_scheduled_ = false;   // degraded: no replacement yet, retry on a timer
  bool recovering_ = false;  // recover() reads the tail: Qw - Qa + 1 negatives are enough
};

}  // namespace magnetar::ledger
