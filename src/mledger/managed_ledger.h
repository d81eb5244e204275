#pragma once
// The managed ledger: a topic's durable log, stored as a sequence of BookKeeper ledgers,
// read by many cursors each with its own durable position (docs/managed-ledger.md).
//
//  - ManagedLedgerFactory::open() recovers a ledger's state from the metadata store node
//    /managed-ledgers/<name> (the ledger list), recovers its last ledger with fencing (a
//    previous owner can no longer write) and starts a new ledger for adds.
//  - add() completes in order with the entry's Position. A ledger is rolled over after the
//    add that makes it full (entries, size or age) and after a write failure; adds queued
//    meanwhile are written to the new ledger, in order, invisibly to the caller.
//  - ManagedCursor: a durable subscription position (mark-delete position plus individually
//    acknowledged positions), persisted in its own cursor ledger with a snapshot in the
//    metadata store; or a non-durable one (readers).
//  - Entries just added are kept in the entry cache while cursors tail the ledger; backlog
//    reads go to the bookies in parallel batches.
//  - Ledgers consumed by every durable cursor are deleted as the retention policy allows.
//
// Threading: a factory, its ledgers and cursors live on one executor (the BookKeeper
// client's event loop); call them from coroutines running there. The entry cache budget
// may be shared by factories on several loops.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/buffer.h"
#include "common/logging.h"
#include "mledger/async_mutex.h"
#include "mledger/config.h"
#include "mledger/entry_cache.h"
#include "mledger/errors.h"
#include "mledger/position.h"

namespace magnetar::metadata {
class MetadataStore;
}
namespace magnetar::ledger {
class BookKeeper;
class LedgerHandle;
}  // namespace magnetar::ledger

namespace magnetar::mledger {

class ManagedCursor;
class ManagedLedgerFactory;

struct Entry {
  Position position;
  Buffer data;
};

enum class InitialPosition { kLatest, kEarliest };

struct LedgerInfo {
  LedgerId ledger_id;
  int64_t entries = 0;
  int64_t size = 0;
  int64_t timestamp_ms = 0;  // close time; 0 while written
};

// Where a durable cursor can lose acknowledgements in a crash (docs/managed-ledger.md).
struct Counters {
  int64_t entries_added = 0;
  int64_t bytes_added = 0;
  int64_t entries_read_from_cache = 0;
  int64_t entries_read_from_bookies = 0;
  int64_t bookie_read_batches = 0;
  int64_t ledgers_rolled = 0;
  int64_t ledgers_trimmed = 0;
};

class ManagedLedger : public std::enable_shared_from_this<ManagedLedger> {
 public:
  enum class State {
    kLedgerOpened,    // adds go to the current ledger
    kClosingLedger,   // rolling over: adds wait for the new ledger
    kCreatingLedger,  // a new ledger is being created
    kClosedLedger,    // no current ledger (creation failed); the next add creates one
    kTerminated,      // no more adds, ever
    kFenced,          // another owner took over: this instance must be closed
    kClosed,
  };
  using AddCallback = std::function<void(Result<Position>)>;

  ManagedLedger(ManagedLedgerFactory& factory, std::string name, ManagedLedgerConfig config);
  ~ManagedLedger();
  ManagedLedger(const ManagedLedger&) = delete;
  ManagedLedger& operator=(const ManagedLedger&) = delete;

  const std::string& name() const { return name_; }
  State state() const { return state_; }
  static std::string_view to_string(State s);
  const ManagedLedgerConfig& config() const { return config_; }
  // The BookKeeper client its ledgers are written with (for ledgers a topic keeps beside its
  // log, such as a compacted ledger).
  ledger::BookKeeper& bookkeeper() const;
  // Retention from namespace policies (takes effect at the next trim).
  void set_retention(double time_minutes, int64_t size_mb);
  // The quorums of the ledgers created from now on, and the cursors' mark-delete rate limit.
  void set_persistence(int32_t ensemble, int32_t write_quorum, int32_t ack_quorum,
                       double mark_delete_rate);

  // --- Writes ---
  // Appends an entry; `done` is called on this ledger's executor, in add order.
  void async_add(BufferChain data, AddCallback done);
  Task<Result<Position>> add(BufferChain data);
  // No more adds: waits for pending adds, records the last position and closes the current
  // ledger. Cursors at the end then get kNoMoreEntries. Returns the last position.
  Task<Result<Position>> terminate();
  bool terminated() const { return terminated_.has_value(); }

  // --- Reads ---
  // Up to max_entries entries (and about max_bytes; <= 0: no limit) from `from` (or the next
  // existing position after it) within one ledger, never past last_confirmed(). Empty when
  // nothing is available yet.
  Task<Result<std::vector<Entry>>> read(Position from, int max_entries, int64_t max_bytes = 0);
  Position last_confirmed() const { return last_confirmed_; }
  // The first position of the ledger (may not exist yet when the ledger is empty).
  Position first_position() const;
  // The next position after p: the following entry, the first entry of the next non-empty
  // ledger, or (when p is the last entry) the position the next add will get.
  Position next_position(Position p) const;
  // The position before p ((L, -1) before the first entry of L).
  Position previous_position(Position p) const;
  // Entries in (from, to]; both may be "before first" positions.
  int64_t count_entries(Position from_exclusive, Position to_inclusive) const;
  // Entries in the ledger (sum over ledgers) and their bytes.
  int64_t number_of_entries() const;
  int64_t total_size() const { return total_size_; }
  // Binary search for the newest entry in [start, last_confirmed] for which `matches` holds,
  // assuming matches is true up to some position and false after it (publish time <= t).
  // nullopt when even the first entry does not match.
  Task<Result<std::optional<Position>>> find_newest_matching(
      Position start, std::function<bool(const Entry&)> matches);

  // --- Cursors ---
  Task<Result<std::shared_ptr<ManagedCursor>>> open_cursor(
      std::string name, InitialPosition initial = InitialPosition::kLatest,
      std::map<std::string, std::string> cursor_properties = {});
  // Not persisted and not retaining data: reads start at `start` (inclusive).
  std::shared_ptr<ManagedCursor> new_non_durable_cursor(Position start, std::string name = {});
  Task<Status> delete_cursor(std::string name);
  std::shared_ptr<ManagedCursor> find_cursor(const std::string& name) const;
  const std::map<std::string, std::shared_ptr<ManagedCursor>>& cursors() const { return cursors_; }
  void remove_non_durable_cursor(const std::shared_ptr<ManagedCursor>& cursor);

  // --- Retention and quotas ---
  // Deletes ledgers consumed by every durable cursor, as the retention policy allows.
  Task<Status> trim();
  // Bytes between the slowest durable cursor and the end (estimated as Pulsar does).
  int64_t estimated_backlog_size() const;
  // Bytes after `consumed` to the end, estimated as Pulsar does: all of the ledgers after its
  // ledger, and of its ledger the part after its entry at the ledger's average entry size.
  // A position before the first ledger (e.g. -1:-1) gives the whole size.
  int64_t estimated_backlog_size(Position consumed) const;
  bool backlog_quota_exceeded(int64_t limit_bytes) const {
    return limit_bytes >= 0 && estimated_backlog_size() > limit_bytes;
  }

  // --- Lifecycle ---
  // Flushes cursors, closes the current ledger; pending adds and waiting reads fail.
  Task<Status> close();
  // Whether close() has begun (adds fail from then on); wait_closed() returns once it ended.
  bool closing() const { return closing_; }
  Task<void> wait_closed();
  // Deletes every cursor, every ledger and the metadata node.
  Task<Status> remove();

  // Pulsar's internal stats shape (topics stats-internal).
  nlohmann::json internal_stats() const;
  const Counters& counters() const { return counters_; }
  const std::map<LedgerId, LedgerInfo>& ledgers() const { return ledgers_; }
  LedgerId current_ledger_id() const;

 private:
  friend class ManagedLedgerFactory;
  friend class ManagedCursor;
  struct OpAdd;

  Task<Status> initialize();
  Task<Status> recover_cursors();
  void send(const std::shared_ptr<OpAdd>& op);
  // The answer to one add sent to `lh` (async_add's callback).
  void on_written(const std::shared_ptr<OpAdd>& op, const std::shared_ptr<ledger::LedgerHandle>& lh,
                  Result<EntryId> r);
  void complete_ready_adds();
  bool current_ledger_full() const;
  void maybe_start_rollover();
  Task<void> rollover();
  Task<Status> create_ledger();
  Task<void> close_current_ledger();
  void fail_pending(const Status& status);
  void fence(const std::string& why);
  Task<Status> write_info();
  std::string serialize_info() const;
  Task<void> rollover_timer(LedgerId ledger);
  Task<Result<std::shared_ptr<ledger::LedgerHandle>>> read_handle(LedgerId ledger);
  Task<Result<std::vector<Entry>>> read_from_bookies(LedgerId ledger, EntryId first, EntryId last);
  int64_t entries_in(LedgerId ledger) const;  // 0 for a ledger not in the list
  // Advance waiting cursors after adds, termination or close.
  void notify_cursors();
  void on_cursor_moved(Position old_mark_delete, Position new_mark_delete);
  std::optional<Position> slowest_durable_mark_delete() const;
  std::optional<Position> slowest_active_read_position() const;
  void evict_cache();
  int64_t now_ms() const;
  std::string path() const;
  std::map<std::string, std::string> ledger_custom_metadata() const;

  ManagedLedgerFactory& factory_;
  const std::string name_;
  ManagedLedgerConfig config_;
  log::Logger log_;
  State state_ = State::kClosedLedger;

  std::map<LedgerId, LedgerInfo> ledgers_;
  std::map<std::string, std::string> properties_;
  std::optional<Position> terminated_;
  bool terminating_ = false;
  bool closing_ = false;                                  // close() has begun: adds fail at once
  std::vector<std::function<void(bool)>> close_waiters_;  // woken when close() has finished
  int64_t info_version_ = -1;
  AsyncMutex info_mutex_;

  std::shared_ptr<ledger::LedgerHandle> current_;
  int64_t current_created_ms_ = 0;
  int64_t current_pushed_entries_ = 0;
  int64_t current_pushed_bytes_ = 0;
  int inflight_ = 0;  // adds sent to current_ and not yet answered
  bool write_failed_ = false;
  int consecutive_write_failures_ = 0;  // ledgers that failed since the last successful add
  static constexpr int kMaxWriteAttempts = 3;
  std::deque<std::shared_ptr<OpAdd>> pending_adds_;
  std::vector<std::function<void(bool)>> drained_waiters_;  // terminate(): pending adds done

  Position last_confirmed_;
  int64_t total_size_ = 0;
  std::map<LedgerId, std::shared_ptr<ledger::LedgerHandle>> read_handles_;
  EntryCache cache_;
  Counters counters_;

  std::map<std::string, std::shared_ptr<ManagedCursor>> cursors_;
  std::vector<std::shared_ptr<ManagedCursor>> non_durable_cursors_;
  bool trimming_ = false;
  bool trim_again_ = false;
  double rollover_jitter_ = 1.0;
};

class ManagedCursor : public std::enable_shared_from_this<ManagedCursor> {
 public:
  ManagedCursor(ManagedLedger& ml, std::string name, bool durable);
  ~ManagedCursor();

  const std::string& name() const { return name_; }
  bool durable() const { return durable_; }
  Position mark_delete_position() const { return mark_delete_; }
  Position read_position() const { return read_position_; }

  // Entries from the read position (skipping individually acknowledged ones), advancing it.
  // Empty when nothing is available now. A read served by the bookies starts reading the
  // next batch ahead (one batch per cursor). One read at a time per cursor.
  Task<Result<std::vector<Entry>>> read(int max_entries, int64_t max_bytes = 0);
  // As read(), but waits for at least one entry. kNoMoreEntries at the end of a terminated
  // ledger; kCancelled after cancel_wait() or close.
  Task<Result<std::vector<Entry>>> read_or_wait(int max_entries, int64_t max_bytes = 0);
  void cancel_wait();
  bool has_more_entries() const;

  // Cumulative acknowledgement: everything up to and including p is consumed. Persisted
  // before completing unless the mark-delete rate limit defers it (then within
  // managedLedgerCursorPositionFlushSeconds, or at the next permitted update).
  Task<Status> mark_delete(Position p, std::map<std::string, int64_t> properties = {});
  // Individual acknowledgements.
  Task<Status> delete_positions(std::vector<Position> positions);
  bool is_acknowledged(Position p) const;
  // Moves the read position (rewind for redelivery, or forward); acknowledgements stay.
  void seek(Position read_from);
  // Resets the subscription: everything before `read_from` consumed, nothing after it.
  Task<Status> reset(Position read_from);
  Task<Status> skip_entries(int64_t n);
  Task<Status> clear_backlog();
  // Persists now if anything changed since the last persist.
  Task<Status> flush();

  // Entries after the mark-delete position not acknowledged individually.
  int64_t backlog_entries() const;
  int64_t backlog_bytes() const;
  int64_t acked_ranges() const { return acked_.range_count(); }
  const AckSet& acked() const { return acked_; }
  const std::map<std::string, int64_t>& properties() const { return properties_; }
  const std::map<std::string, std::string>& cursor_properties() const { return cursor_properties_; }
  Task<Status> set_cursor_properties(std::map<std::string, std::string> properties);
  // Active cursors keep the entries they are about to read in the cache.
  void set_active(bool active) { active_ = active; }
  bool active() const { return active_; }
  LedgerId cursor_ledger_id() const;
  int64_t last_active_ms() const { return last_active_ms_; }
  nlohmann::json stats() const;

 private:
  friend class ManagedLedger;
  friend class ManagedLedgerFactory;
  struct PersistWaiter {
    uint64_t generation;
    std::function<void(Status)> done;
  };

  struct ReadAhead;
  Task<Result<std::vector<Entry>>> fetch(int max_entries, int64_t max_bytes);
  void start_read_ahead(int max_entries, int64_t max_bytes);
  Task<Status> create(Position mark_delete);
  Task<Status> recover(std::string value, int64_t version);
  void advance_mark_delete();
  void set_mark_delete(Position p);
  Task<Status> changed(bool force);
  Task<void> persist_loop();
  Task<Status> persist_once();
  Task<Status> switch_ledger(std::string position_info);
  Task<Status> write_node(LedgerId cursors_ledger);
  std::string position_info_bytes() const;
  Task<Status> close();
  Task<Status> remove_state();
  bool rate_allows_persist() const;
  std::string path() const;

  ManagedLedger& ml_;
  const std::string name_;
  const bool durable_;
  log::Logger log_;

  Position mark_delete_;
  Position read_position_;
  AckSet acked_;
  std::map<std::string, int64_t> properties_;
  std::map<std::string, std::string> cursor_properties_;
  int64_t last_active_ms_ = 0;
  bool active_ = true;
  bool closed_ = false;

  // Persistence (durable cursors).
  std::shared_ptr<ledger::LedgerHandle> ledger_;  // writable cursor ledger, or null
  int64_t ledger_entries_ = 0;
  LedgerId node_ledger_id_;  // the cursor ledger the metadata node points to (-1: none)
  int64_t node_version_ = -1;
  uint64_t generation_ = 0;            // bumped by every state change
  uint64_t persisted_generation_ = 0;  // state up to this generation is durable
  bool persisting_ = false;
  int64_t last_persist_ms_ = 0;
  std::vector<PersistWaiter> persist_waiters_;

  std::function<void(Status)> waiter_;     // a read_or_wait() waiting for entries
  std::shared_ptr<ReadAhead> read_ahead_;  // the next backlog batch, being read
};

class ManagedLedgerFactory {
 public:
  // `store` and `bk` must outlive the factory; everything runs on bk's executor.
  ManagedLedgerFactory(metadata::MetadataStore& store, ledger::BookKeeper& bk,
                       ManagedLedgerFactoryConfig config = {},
                       std::shared_ptr<EntryCacheManager> cache = nullptr);
  ~ManagedLedgerFactory();

  // Opens (creating if missing) and recovers a managed ledger; one instance per name.
  Task<Result<std::shared_ptr<ManagedLedger>>> open(std::string name,
                                                    ManagedLedgerConfig config = {});
  // Deletes a managed ledger whether open or not.
  Task<Status> remove(std::string name, ManagedLedgerConfig config = {});
  std::shared_ptr<ManagedLedger> find(const std::string& name) const;
  // Closes every ledger and stops background tasks.
  Task<Status> close();

  metadata::MetadataStore& store() { return store_; }
  ledger::BookKeeper& bookkeeper() { return bk_; }
  const Executor& executor() const;
  EntryCacheManager& cache() { return *cache_; }
  const ManagedLedgerFactoryConfig& config() const { return config_; }
  // Runs the periodic work now (cache eviction, cursor flush, retention): for tests.
  void run_background_tasks(bool force_all);

 private:
  friend class ManagedLedger;
  struct Background {
    explicit Background(const Executor& executor) : timer(executor) {}
    asio::steady_timer timer;
    bool stopped = false;
  };
  static Task<void> background_loop(std::shared_ptr<Background> bg, ManagedLedgerFactory* factory);

  metadata::MetadataStore& store_;
  ledger::BookKeeper& bk_;
  ManagedLedgerFactoryConfig config_;
  std::shared_ptr<EntryCacheManager> cache_;
  log::Logger log_;
  std::map<std::string, std::shared_ptr<ManagedLedger>> ledgers_;
  std::map<std::string, std::vector<std::function<void(bool)>>> opening_;
  std::shared_ptr<Background> background_;
  bool closed_ = false;
  int64_t last_flush_ms_ = 0;
  int64_t last_retention_ms_ = 0;
};

// The metadata store path of a managed ledger: /managed-ledgers/<name>.
std::string managed_ledger_path(std::string_view name);

}  // namespace magnetar::mledger
