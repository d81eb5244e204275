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
// threads (never on the caller's thread, so an event loop is never blocked by storage).

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
