#pragma once
// The bookie's request semantics, independent of the network: BookKeeper's rules for adds
// (master key, fencing, recovery adds), fence reads, long-poll reads, the LAC, read-only
// mode and checkpoints.
//
// Durability: an add is written to ledger storage (memory first) and appended to the
// journal; it is acknowledged only once the journal record is synced. Every
// `flushInterval` a checkpoint takes the journal position, flushes ledger storage, and only
// then lets the journal delete what storage now holds. At start the journal is replayed
// from the last checkpoint into storage, so an acknowledged entry survives any crash.
//
// Threading: every public method is thread-safe. Callbacks run on the bookie's worker
// threads or its journal's threads, so an event loop is never blocked by storage; only
// add_entries_inline() does work on the caller's thread, and only work that never waits
// (a refused add is answered there too).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "bookie/bookie_config.h"
#include "bookie/journal/journal.h"
#include "bookie/storage/ledger_storage.h"
#include "common/asio.h"
#include "common/env.h"
#include "common/logging.h"
#include "proto/bookie.pb.h"

#include <boost/asio/thread_pool.hpp>

namespace magnetar::bookie {

using bookie_wire::BookieStatus;

class Bookie {
 public:
  // Opens ledger storage, replays the journal into it, then opens the journal for appends.
  static Result<std::unique_ptr<Bookie>> open(const BookieConfig& config,
                                              Env& env = posix_env());
  ~Bookie();
  Bookie(const Bookie&) = delete;
  Bookie& operator=(const Bookie&) = delete;

  using AddCallback = std::function<void(BookieStatus)>;
  using ReadCallback = std::function<void(BookieStatus, Buffer entry, int64_t lac)>;

  // `entry` is the packaged entry (protocol/bookie_entry.h) exactly as the client sent it.
  void add_entry(bookie_wire::AddRequest request, Buffer entry, AddCallback done);
  struct Add {
    bookie_wire::AddRequest request;
    Buffer entry;
    AddCallback done;
  };
  // add_entry() for several adds at once, in order: one hand-off to the storage workers (the
  // server passes the adds of one socket read).
  void add_entries(std::vector<Add> adds);
  // add_entries() from a thread that must not block (an event loop: the in-process bookie's
  // callers). An add is stored right here (checks, write cache, journal append) when nothing
  // on the way would wait; from the first one that would (a full write cache, an index read,
  // a full journal queue), it and the adds after it go to the storage workers. While adds
  // handed to the workers are unfinished, new ones go there too: adds are stored in the
  // order they came, as add_entries() stores them.
  void add_entries_inline(std::vector<Add> adds);
  // Fence reads, plain reads, reads of the last entry (-1) and long-poll reads.
  void read_entry(const bookie_wire::ReadRequest& request, ReadCallback done);
  // Consecutive entries in one answer (bookie_wire::ReadRangeRequest): at most
  // kMaxRangeEntries, and within nettyMaxFrameSizeBytes less 64 KiB once the first is in.
  static constexpr uint32_t kMaxRangeEntries = 1024;
  using ReadRangeCallback =
      std::function<void(BookieStatus, std::vector<Buffer> entries, int64_t lac)>;
  void read_range(const bookie_wire::ReadRangeRequest& request, ReadRangeCallback done);
  bookie_wire::ReadLacResponse read_lac(LedgerId ledger);
  bookie_wire::BookieInfoResponse info();

  bool read_only() const { return read_only_.load(); }
  // Turns the bookie read-only (adds answer READ_ONLY; reads and fences go on).
  void set_read_only(const std::string& reason);
  // Registered by the server: called when the bookie turns read-only.
  void on_read_only(std::function<void()> callback);

  // One checkpoint now (also run every flushInterval by the bookie's own thread).
  Status checkpoint();

  // The ledgers this bookie holds entries or state of, ascending.
  std::vector<LedgerId> ledgers() const;
  // Drops the local ledgers in `deleted` (their metadata is gone), then reclaims entry-log
  // space. Blocking: call from a thread that may wait on disk. Returns the bytes reclaimed.
  Result<uint64_t> garbage_collect(const std::vector<LedgerId>& deleted);

 private:
  // An add, on a storage worker.
  void store_add(bookie_wire::AddRequest request, Buffer entry, AddCallback done);
  // An add past its checks, and how far its storing got.
  struct CheckedAdd {
    enum class Stage { kCache, kKey, kEntry };
    LedgerId ledger{0};
    EntryId entry_id{0};
    EntryId lac{-1};
    Buffer entry;
    // The key of the ledger this add created: journaled before the entry.
    std::optional<std::string> new_ledger_key;
    Stage stage = Stage::kCache;
    AddCallback done;
    Journal::AppendCallback journal_done;  // made from `done` at the kEntry stage
  };
  // The checks of an add that never wait (read-only, header, master key, fence); nullopt
  // once `done` was called with the refusal.
  std::optional<CheckedAdd> check_add(bookie_wire::AddRequest& request, Buffer& entry,
                                      AddCallback& done);
  // Stores a checked add from its stage on: write cache, the new ledger's key, the entry's
  // journal record. `wait` false: returns false, at the stage to resume from, where a step
  // would wait; true once the add is done with (stored or answered).
  bool store_checked(CheckedAdd& add, bool wait);
  // Posts `job` to the storage workers, counted in worker_add_jobs_ until it returns.
  void post_add_job(std::function<void()> job);
  Bookie(const BookieConfig& config, Env& env);
  Status start();
  void checkpoint_loop();
  void check_disks();
  void complete_waiters(LedgerId ledger);
  void do_read(const bookie_wire::ReadRequest& request, ReadCallback done);

  struct Waiter {
    int64_t previous_lac;
    bookie_wire::ReadRequest request;
    ReadCallback done;
    std::shared_ptr<asio::steady_timer> timer;
  };

  const BookieConfig config_;
  Env& env_;
  log::Logger log_;
  std::unique_ptr<LedgerStorage> storage_;
  // One per journalDirectories entry; a ledger's records all go to journal_for(ledger).
  std::vector<std::unique_ptr<Journal>> journals_;
  Journal& journal_for(LedgerId ledger);
  std::atomic<bool> read_only_{false};
  std::function<void()> on_read_only_;
  std::mutex callbacks_mu_;

  asio::thread_pool workers_{2};  // storage reads, adds, fences
  // Add jobs posted to workers_ and not finished: add_entries_inline() stores inline only
  // while there are none.
  std::atomic<int64_t> worker_add_jobs_{0};
  asio::io_context timers_;       // long-poll deadlines
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> timers_guard_;
  std::thread timers_thread_;

  std::mutex waiters_mu_;
  std::multimap<LedgerId, std::shared_ptr<Waiter>> waiters_;  // by ledger id

  std::mutex checkpoint_mu_;  // one checkpoint at a time
  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  bool stopping_ = false;
  std::thread checkpoint_thread_;
};

}  // namespace magnetar::bookie
