#include "bookie/storage/ledger_storage.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "common/metrics.h"

namespace magnetar::bookie {
namespace {

using Clock = std::chrono::steady_clock;

// Disk space is reserved ahead of entry-log writes in chunks of at most this size.
constexpr uint64_t kPreallocateChunk = 8ull << 20;
// A flush writes entry locations to the index in batches of this many, each after the entry
// log is synced up to them, rather than in one batch at the end: one RocksDB write of a whole
// write-cache half (a large WAL record and its fsync) holds the journal's fdatasyncs behind
// it (measurements: docs/performance.md).
constexpr size_t kLocationsPerIndexBatch = 4096;

// Ledger ids are non-negative (BookKeeper's are); INT64_MAX is excluded so that the key
// range of a ledger's entries, [ledger, ledger + 1), can always be written down.
bool valid_ledger_id(int64_t id) {
  return id >= 0 && id < INT64_MAX;
}

Status bad_ledger_id(int64_t id) {
  return Status(Errc::kInvalidArgument, fmt::format("invalid ledger id {}", id));
}

Status ledger_not_found(int64_t id) {
  return Status(Errc::kNotFound, fmt::format("ledger {} not found", id));
}

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

// This storage's children of the process-wide metric families, labelled with its dir.
struct LedgerStorage::Metrics {
  std::string dir;
  metrics::Family<metrics::Counter>* added_family = nullptr;
  metrics::Family<metrics::Counter>* rejected_family = nullptr;
  metrics::Family<metrics::Histogram>* flush_family = nullptr;
  metrics::Family<metrics::Gauge>* cache_family = nullptr;
  metrics::Family<metrics::Gauge>* log_family = nullptr;
  metrics::Family<metrics::Counter>* gc_family = nullptr;

  std::shared_ptr<metrics::Counter> entries_added;
  std::shared_ptr<metrics::Counter> adds_rejected;
  std::shared_ptr<metrics::Histogram> flush_latency_ms;
  std::shared_ptr<metrics::Gauge> write_cache_bytes;
  std::shared_ptr<metrics::Gauge> entry_log_bytes;
  std::shared_ptr<metrics::Counter> gc_reclaimed_bytes;

  static Result<std::unique_ptr<Metrics>> create(const std::string& dir) {
    auto& reg = metrics::default_registry();
    auto m = std::make_unique<Metrics>();
    m->dir = dir;
    MAGNETAR_ASSIGN_OR_RETURN(m->added_family,
                              reg.counter("magnetar_bookie_storage_entries_added_total",
                                          "Entries added to ledger storage", {"dir"}));
    MAGNETAR_ASSIGN_OR_RETURN(
        m->rejected_family,
        reg.counter("magnetar_bookie_storage_adds_throttled_total",
                    "Adds rejected because the write cache stayed full", {"dir"}));
    MAGNETAR_ASSIGN_OR_RETURN(
        m->flush_family,
        reg.histogram("magnetar_bookie_storage_flush_latency_ms",
                      "Time to flush the write cache to entry logs and index", {"dir"}));
    MAGNETAR_ASSIGN_OR_RETURN(m->cache_family,
                              reg.gauge("magnetar_bookie_storage_write_cache_bytes",
                                        "Bytes held by both halves of the write cache", {"dir"}));
    MAGNETAR_ASSIGN_OR_RETURN(m->log_family,
                              reg.gauge("magnetar_bookie_storage_entry_log_bytes",
                                        "Total size of the entry logs on disk", {"dir"}));
    MAGNETAR_ASSIGN_OR_RETURN(
        m->gc_family,
        reg.counter("magnetar_bookie_storage_gc_reclaimed_bytes_total",
                    "Entry-log bytes freed by garbage collection and compaction", {"dir"}));
    m->entries_added = m->added_family->get(dir);
    m->adds_rejected = m->rejected_family->get(dir);
    m->flush_latency_ms = m->flush_family->get(dir);
    m->write_cache_bytes = m->cache_family->get(dir);
    m->entry_log_bytes = m->log_family->get(dir);
    m->gc_reclaimed_bytes = m->gc_family->get(dir);
    return m;
  }

  ~Metrics() {
    if (added_family != nullptr) added_family->remove(dir);
    if (rejected_family != nullptr) rejected_family->remove(dir);
    if (flush_family != nullptr) flush_family->remove(dir);
    if (cache_family != nullptr) cache_family->remove(dir);
    if (log_family != nullptr) log_family->remove(dir);
    if (gc_family != nullptr) gc_family->remove(dir);
  }
};

// ---- open / close ----

LedgerStorage::LedgerStorage(LedgerStorageOptions options, Env& env)
    : options_(std::move(options)),
      env_(env),
      current_dir_(options_.dir + "/current"),
      log_(log::Logger("bookie.storage").with("dir", options_.dir)) {}

Result<std::unique_ptr<LedgerStorage>> LedgerStorage::open(LedgerStorageOptions options, Env& env) {
  if (options.dir.empty()) return Status(Errc::kInvalidArgument, "ledger storage needs a dir");
  if (options.write_cache_bytes < 2) {
    return Status(Errc::kInvalidArgument, "write_cache_bytes must hold two halves");
  }
  if (options.entry_log_max_size <= kEntryLogHeaderSize ||
      options.entry_log_max_size > UINT32_MAX) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("entry_log_max_size {} is outside ({}, 4 GiB)",
                              options.entry_log_max_size, kEntryLogHeaderSize));
  }
  if (!(options.compaction_threshold <= 1.0)) {  // NaN too
    return Status(Errc::kInvalidArgument, "compaction_threshold must be at most 1");
  }
  if (options.max_throttle.count() < 0) {
    return Status(Errc::kInvalidArgument, "max_throttle must not be negative");
  }
  std::unique_ptr<LedgerStorage> storage(new LedgerStorage(std::move(options), env));
  MAGNETAR_TRY(storage->load());
  if (storage->options_.flush_when_full) {
    storage->flusher_ = std::thread([s = storage.get()] { s->run_flusher(); });
  }
  return storage;
}

// Runs before any other thread can see this object: no locks needed, none taken.
Status LedgerStorage::load() {
  MAGNETAR_TRY(env_.create_dirs(current_dir_));
  MAGNETAR_ASSIGN_OR_RETURN(index_, LedgerIndex::open(current_dir_ + "/index"));
  MAGNETAR_ASSIGN_OR_RETURN(metrics_, Metrics::create(options_.dir));

  MAGNETAR_TRY(index_->for_each_ledger([&](int64_t id, LedgerRecord r) {
    LedgerState st;
    st.fenced = r.fenced;
    st.master_key = std::move(r.master_key);
    st.lac = st.durable_lac = r.lac;
    st.last_entry_id = st.durable_last_entry_id = r.last_entry_id;
    ledgers_.emplace(id, std::move(st));
    return Status::OK();
  }));
  MAGNETAR_TRY(index_->for_each_log_usage([&](uint32_t id, LogUsage usage) {
    log_usage_.emplace(id, std::move(usage));
    return Status::OK();
  }));

  MAGNETAR_ASSIGN_OR_RETURN(std::vector<std::string> names, env_.list_dir(current_dir_));
  std::optional<uint32_t> max_id;
  for (const std::string& name : names) {
    std::optional<uint32_t> id = parse_entry_log_file_name(name);
    if (!id) continue;
    max_id = std::max(max_id.value_or(0), *id);
    std::string path = current_dir_ + "/" + name;
    auto reader = EntryLogReader::open(env_, path, *id);
    if (!reader.ok()) {
      if (log_usage_.contains(*id)) {
        return Status(reader.status().code(),
                      fmt::format("entry log {} is in the index but unreadable: {}", name,
                                  reader.status().message()));
      }
      // Created just before a crash, before anything in it was indexed.
      log_.warn("removing unindexed entry log {}: {}", name, reader.status().to_string());
      MAGNETAR_TRY(env_.remove_file(path));
      continue;
    }
    MAGNETAR_ASSIGN_OR_RETURN(uint64_t size, (*reader)->size());
    log_bytes_ += size;
    logs_.emplace(*id, std::move(*reader));
  }

  // Usage records of logs that are gone: fine if nothing live was in them (GC removed the
  // file after the record... or the reverse order crashed halfway), data loss otherwise.
  LedgerIndex::Batch batch(*index_);
  for (auto it = log_usage_.begin(); it != log_usage_.end();) {
    if (logs_.contains(it->first)) {
      ++it;
      continue;
    }
    for (const auto& [ledger, bytes] : it->second) {
      if (bytes > 0 && ledgers_.contains(ledger)) {
        return Status(Errc::kCorruption,
                      fmt::format("entry log {} holds entries of ledger {} but is missing",
                                  entry_log_file_name(it->first), ledger));
      }
    }
    max_id = std::max(max_id.value_or(0), it->first);
    batch.delete_log_usage(it->first);
    it = log_usage_.erase(it);
  }
  MAGNETAR_TRY(index_->write(batch));

  if (max_id) {
    if (*max_id == UINT32_MAX) return Status(Errc::kResourceExhausted, "entry log ids exhausted");
    next_log_id_ = *max_id + 1;
  }
  metrics_->entry_log_bytes->set(static_cast<double>(log_bytes_));
  log_.info("opened ledger storage: {} ledgers, {} entry logs, {} bytes", ledgers_.size(),
            logs_.size(), log_bytes_);
  return Status::OK();
}

LedgerStorage::~LedgerStorage() {
  {
    std::lock_guard lock(cache_mu_);
    stopping_ = true;
  }
  flusher_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
}

void LedgerStorage::run_flusher() {
  std::unique_lock lock(cache_mu_);
  while (true) {
    flusher_cv_.wait(lock, [&] { return stopping_ || flush_requested_; });
    if (stopping_) return;
    flush_requested_ = false;
    lock.unlock();
    Status s = flush();
    if (!s.ok()) log_.warn("write-cache flush failed: {}", s.to_string());
    lock.lock();
  }
}

// ---- ledgers ----

Status LedgerStorage::set_master_key(LedgerId ledger, std::string_view master_key) {
  return check_master_key(ledger, master_key).status();
}

Result<LedgerStorage::KeyCheck> LedgerStorage::check_master_key(LedgerId ledger,
                                                                std::string_view master_key) {
  const int64_t ledger_id = ledger.value();
  if (!valid_ledger_id(ledger_id)) return bad_ledger_id(ledger_id);
  std::lock_guard lock(ledgers_mu_);
  auto [it, created] = ledgers_.try_emplace(ledger_id);
  LedgerState& st = it->second;
  if (created || st.master_key.empty()) {
    if (created || !master_key.empty()) {
      st.master_key.assign(master_key);
      ++st.meta_version;
    }
    return KeyCheck{created, st.fenced};
  }
  if (st.master_key != master_key) {
    return Status(Errc::kPermissionDenied,
                  fmt::format("master key mismatch for ledger {}", ledger_id));
  }
  return KeyCheck{false, st.fenced};
}

Result<LedgerInfo> LedgerStorage::ledger_info(LedgerId ledger) const {
  const int64_t ledger_id = ledger.value();
  std::lock_guard lock(ledgers_mu_);
  auto it = ledgers_.find(ledger_id);
  if (it == ledgers_.end()) return ledger_not_found(ledger_id);
  const LedgerState& st = it->second;
  return LedgerInfo{st.fenced, st.master_key, EntryId{st.lac}, EntryId{st.last_entry_id}};
}

Result<bool> LedgerStorage::set_fenced(LedgerId ledger) {
  const int64_t ledger_id = ledger.value();
  std::lock_guard lock(ledgers_mu_);
  auto it = ledgers_.find(ledger_id);
  if (it == ledgers_.end()) return ledger_not_found(ledger_id);
  if (it->second.fenced) return false;
  it->second.fenced = true;
  ++it->second.meta_version;
  return true;
}

std::vector<LedgerId> LedgerStorage::ledgers() const {
  std::lock_guard lock(ledgers_mu_);
  std::vector<LedgerId> ids;
  ids.reserve(ledgers_.size());
  for (const auto& [id, st] : ledgers_) ids.emplace_back(id);
  return ids;
}

bool LedgerStorage::ledger_live(int64_t ledger_id) const {
  std::lock_guard lock(ledgers_mu_);
  return ledgers_.contains(ledger_id);
}

// ---- adds and reads ----

Status LedgerStorage::add_entry(LedgerId ledger, EntryId id, Buffer entry, EntryId entry_lac) {
  bool would_block = false;
  return store_entry(ledger, id, entry, entry_lac, true, &would_block);
}

Result<bool> LedgerStorage::try_add_entry(LedgerId ledger, EntryId id, const Buffer& entry,
                                          EntryId entry_lac) {
  bool would_block = false;
  MAGNETAR_TRY(store_entry(ledger, id, entry, entry_lac, false, &would_block));
  return !would_block;
}

Status LedgerStorage::store_entry(LedgerId ledger, EntryId id, const Buffer& entry,
                                  EntryId entry_lac, bool wait, bool* would_block) {
  const int64_t ledger_id = ledger.value();
  const int64_t entry_id = id.value();
  const int64_t lac = entry_lac.value();
  if (!valid_ledger_id(ledger_id)) return bad_ledger_id(ledger_id);
  if (entry_id < 0) {
    return Status(Errc::kInvalidArgument, fmt::format("invalid entry id {}", entry_id));
  }
  if (failed_.load(std::memory_order_acquire)) return failure_status();
  // The cache copies the bytes: the caller's buffer may be a slice of a much larger network
  // read, which the cache would otherwise pin while charging only the slice.
  const size_t charge = WriteCache::charge(entry.size());
  const size_t half = options_.write_cache_bytes / 2;

  // Stored already (journal replay, a client's retry)? The cache check and the durable
  // high-water mark are read together, under cache_mu_, because a flush moves an entry from
  // the one to the other under that lock: an entry is always found in one of the two places.
  // An entry past the ledger's last added one is neither cached nor indexed: no look-ups (the
  // common case, an append), and the lock is held through to the insert. last_entry_id
  // moves under cache_mu_ with the insert, so two adds of one entry cannot both take it for
  // new. Not for a ledger created by this add: the cache may still hold entries of a deleted
  // ledger of that id, which the look-ups find.
  std::unique_lock lock(cache_mu_);
  auto cached = [&] {
    return active_->find(ledger_id, entry_id) || flushing_->find(ledger_id, entry_id);
  };
  bool beyond_last = false;
  int64_t durable_last = -1;
  {
    std::lock_guard ledgers_lock(ledgers_mu_);
    auto [it, created] = ledgers_.try_emplace(ledger_id);
    if (created) ++it->second.meta_version;  // persist the ledger with its first flush
    durable_last = it->second.durable_last_entry_id;
    beyond_last = !created && entry_id > it->second.last_entry_id;
  }
  if (!beyond_last) {
    if (cached()) return Status::OK();
    if (entry_id <= durable_last) {
      if (!wait) {  // the index is read from disk
        *would_block = true;
        return Status::OK();
      }
      lock.unlock();
      MAGNETAR_ASSIGN_OR_RETURN(std::optional<EntryLocation> loc,
                                index_->get_location(ledger_id, entry_id));
      if (loc) return Status::OK();
      lock.lock();
      if (cached()) return Status::OK();  // added meanwhile
    }
  }

  const auto deadline = Clock::now() + options_.max_throttle;
  // An entry larger than a half still goes into an empty one.
  auto fits = [&] { return active_->empty() || active_->bytes() + charge <= half; };
  while (!fits()) {
    if (failed_.load(std::memory_order_relaxed)) return failure_;
    if (options_.flush_when_full && !flush_requested_) {
      flush_requested_ = true;
      flusher_cv_.notify_one();
    }
    if (!wait) {
      *would_block = true;
      return Status::OK();
    }
    const bool timed_out = cache_cv_.wait_until(lock, deadline) == std::cv_status::timeout;
    if (cached()) return Status::OK();  // another add of this entry got in while we waited
    if (timed_out && !fits()) {
      if (failed_.load(std::memory_order_relaxed)) return failure_;
      metrics_->adds_rejected->inc();
      return Status(Errc::kResourceExhausted,
                    fmt::format("write cache full for {} ms: entry {} of ledger {} rejected",
                                options_.max_throttle.count(), entry_id, ledger_id));
    }
  }
  if (failed_.load(std::memory_order_relaxed)) return failure_;
  active_->insert(ledger_id, entry_id, entry.data(), entry.size(), lac);
  update_cache_gauge_locked();
  {
    std::lock_guard ledgers_lock(ledgers_mu_);
    auto it = ledgers_.find(ledger_id);
    if (it != ledgers_.end()) {  // absent only if deleted meanwhile; the flush drops the entry
      it->second.last_entry_id = std::max(it->second.last_entry_id, entry_id);
      it->second.lac = std::max(it->second.lac, lac);
    }
  }
  lock.unlock();
  metrics_->entries_added->inc();
  return Status::OK();
}

Result<Buffer> LedgerStorage::read_entry(LedgerId ledger, EntryId entry) const {
  const int64_t ledger_id = ledger.value();
  int64_t entry_id = entry.value();
  if (!valid_ledger_id(ledger_id)) return bad_ledger_id(ledger_id);
  if (entry_id < -1) {
    return Status(Errc::kInvalidArgument, fmt::format("invalid entry id {}", entry_id));
  }
  {
    std::lock_guard lock(ledgers_mu_);
    auto it = ledgers_.find(ledger_id);
    if (it == ledgers_.end()) return ledger_not_found(ledger_id);
    if (entry_id == -1) {
      entry_id = it->second.last_entry_id;
      if (entry_id < 0) {
        return Status(Errc::kNotFound, fmt::format("ledger {} has no entries", ledger_id));
      }
    }
  }
  {
    std::lock_guard lock(cache_mu_);
    if (const WriteCache::Slot* e = active_->find(ledger_id, entry_id)) return active_->bytes(*e);
    if (const WriteCache::Slot* e = flushing_->find(ledger_id, entry_id)) {
      return flushing_->bytes(*e);
    }
  }
  std::shared_lock lock(logs_mu_);
  MAGNETAR_ASSIGN_OR_RETURN(std::optional<EntryLocation> loc,
                            index_->get_location(ledger_id, entry_id));
  if (!loc) {
    return Status(Errc::kNotFound,
                  fmt::format("entry {} of ledger {} not found", entry_id, ledger_id));
  }
  auto it = logs_.find(loc->log_id);
  if (it == logs_.end()) {
    return Status(Errc::kCorruption,
                  fmt::format("entry {} of ledger {} is indexed in entry log {}, which is gone",
                              entry_id, ledger_id, entry_log_file_name(loc->log_id)));
  }
  return it->second->read(loc->offset, ledger_id, entry_id);
}

// ---- flush ----

Status LedgerStorage::flush() {
  std::lock_guard lock(flush_mu_);
  return flush_locked();
}

Status LedgerStorage::flush_locked() {
  if (failed_.load(std::memory_order_acquire)) return failure_status();
  const auto start = Clock::now();
  {
    std::lock_guard lock(cache_mu_);
    MAGNETAR_ASSERT(flushing_->empty(), "flushing half not empty at the start of a flush");
    std::swap(active_, flushing_);
    cache_cv_.notify_all();  // the active half is empty again
  }
  // Only holders of flush_mu_ change the flushing half, so it can be walked unlocked
  // while readers look entries up in it.
  const std::vector<const WriteCache::Slot*> entries = flushing_->sorted();

  // The ledger records this flush writes: ledgers with entries in this half, and those whose
  // fence bit or key changed. The LAC and last entry id written are those of flushed
  // entries only, so the index never names an entry a crash could lose.
  struct Pending {
    LedgerRecord record;
    uint64_t meta_version = 0;
  };
  std::map<int64_t, Pending> pending;
  {
    std::lock_guard lock(ledgers_mu_);
    auto snapshot = [&](int64_t id, const LedgerState& st) {
      pending.try_emplace(id, Pending{LedgerRecord{st.fenced, st.master_key, st.durable_lac,
                                                   st.durable_last_entry_id},
                                      st.meta_version});
    };
    for (const auto& [id, st] : ledgers_) {
      if (st.meta_version != st.durable_meta_version) snapshot(id, st);
    }
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i > 0 && entries[i]->ledger_id == entries[i - 1]->ledger_id) continue;
      auto lit = ledgers_.find(entries[i]->ledger_id);
      if (lit != ledgers_.end()) snapshot(lit->first, lit->second);
    }
  }

  LedgerIndex::Batch batch(*index_);
  std::map<uint32_t, LogUsage> added;
  // Entries come sorted by ledger: the ledger's record and the bytes it adds to the current
  // log are looked up once per run of one ledger in one log, not once per entry.
  auto p = pending.end();
  int64_t run_ledger = INT64_MIN;
  uint32_t run_log = 0;
  uint64_t run_bytes = 0;
  auto end_run = [&] {
    if (run_bytes > 0) added[run_log][run_ledger] += run_bytes;
    run_bytes = 0;
  };
  // Puts the usage of every log this flush wrote to, its records so far included.
  auto put_usage = [&](LedgerIndex::Batch& b) {
    end_run();
    return put_merged_usage(added, b);
  };
  for (const WriteCache::Slot* e : entries) {
    if (e->ledger_id != run_ledger) {
      end_run();
      run_ledger = e->ledger_id;
      p = pending.find(e->ledger_id);
    }
    if (p == pending.end()) continue;  // the ledger was deleted while its entry was cached
    MAGNETAR_ASSIGN_OR_RETURN(EntryLocation loc,
                              append_record(e->ledger_id, e->entry_id, flushing_->view(*e)));
    batch.put_location(e->ledger_id, e->entry_id, loc);
    if (loc.log_id != run_log) {
      end_run();
      run_log = loc.log_id;
    }
    run_bytes += WriteCache::charge(e->size);
    if (batch.count() >= kLocationsPerIndexBatch) {
      // With the usage of the logs so far, this record's included (GC never takes a log
      // whose records the index names for dead), but ahead of the ledger records written at
      // the end: see ledger_index.h for why a crash in between loses nothing.
      if (Status s = writer_->sync(); !s.ok()) return fail(std::move(s));
      (void)put_usage(batch);
      if (Status s = index_->write(batch); !s.ok()) return fail(std::move(s));
    }
    LedgerRecord& r = p->second.record;
    r.last_entry_id = std::max(r.last_entry_id, e->entry_id);
    r.lac = std::max(r.lac, e->lac);
  }
  end_run();
  if (!added.empty()) {
    if (Status s = writer_->sync(); !s.ok()) return fail(std::move(s));
  }
  for (const auto& [id, p] : pending) batch.put_ledger(id, p.record);
  std::map<uint32_t, LogUsage> usage = put_usage(batch);
  if (Status s = index_->write(batch); !s.ok()) return fail(std::move(s));

  for (auto& [log_id, u] : usage) log_usage_[log_id] = std::move(u);
  metrics_->entry_log_bytes->set(static_cast<double>(log_bytes_));
  {
    std::lock_guard lock(cache_mu_);
    {
      std::lock_guard ledgers_lock(ledgers_mu_);
      for (const auto& [id, p] : pending) {
        auto it = ledgers_.find(id);
        if (it == ledgers_.end()) continue;
        LedgerState& st = it->second;
        st.durable_lac = p.record.lac;
        st.durable_last_entry_id = p.record.last_entry_id;
        st.durable_meta_version = std::max(st.durable_meta_version, p.meta_version);
      }
    }
    flushing_->clear();  // cheap: no per-entry allocation to free
    update_cache_gauge_locked();
    cache_cv_.notify_all();
  }
  metrics_->flush_latency_ms->observe(ms_since(start));
  log_.debug("write cache flushed: {} entries in {:.1f} ms", entries.size(), ms_since(start));
  return Status::OK();
}

std::map<uint32_t, LogUsage> LedgerStorage::put_merged_usage(
    const std::map<uint32_t, LogUsage>& added, LedgerIndex::Batch& batch) {
  std::map<uint32_t, LogUsage> usage;
  for (const auto& [log_id, delta] : added) {
    LogUsage merged = log_usage_[log_id];
    for (const auto& [ledger, bytes] : delta) merged[ledger] += bytes;
    batch.put_log_usage(log_id, merged);
    usage.emplace(log_id, std::move(merged));
  }
  return usage;
}

Result<EntryLocation> LedgerStorage::append_record(int64_t ledger_id, int64_t entry_id,
                                                   std::string_view bytes) {
  const uint64_t need = kEntryLogRecordHeaderSize + bytes.size();
  if (writer_ == nullptr || (writer_->size() > kEntryLogHeaderSize &&
                             writer_->size() + need > options_.entry_log_max_size)) {
    MAGNETAR_TRY(roll_log());
  }
  const uint64_t before = writer_->size();
  Result<uint32_t> offset = writer_->add(ledger_id, entry_id, bytes);
  if (!offset.ok()) return fail(std::move(offset).status());
  log_bytes_ += writer_->size() - before;
  return EntryLocation{writer_->log_id(), *offset};
}

Status LedgerStorage::roll_log() {
  if (writer_ != nullptr) {
    // The index will point into the old log as well: it must be durable first.
    if (Status s = writer_->sync(); !s.ok()) return fail(std::move(s));
    if (Status s = writer_->close(); !s.ok()) return fail(std::move(s));
    writer_.reset();
  }
  if (next_log_id_ == UINT32_MAX) {
    return fail(Status(Errc::kResourceExhausted, "entry log ids exhausted"));
  }
  const uint32_t id = next_log_id_++;
  std::string path = current_dir_ + "/" + entry_log_file_name(id);
  auto writer = EntryLogWriter::create(env_, path, id,
                                       std::min(options_.entry_log_max_size, kPreallocateChunk));
  if (!writer.ok()) return fail(std::move(writer).status());
  // The new name must survive a crash before the index points into the file.
  if (Status s = env_.sync_dir(current_dir_); !s.ok()) return fail(std::move(s));
  auto reader = EntryLogReader::open(env_, path, id);
  if (!reader.ok()) return fail(std::move(reader).status());
  {
    std::unique_lock lock(logs_mu_);
    logs_[id] = std::move(*reader);
  }
  log_bytes_ += (*writer)->size();
  writer_ = std::move(*writer);
  log_.info("new entry log {}", entry_log_file_name(id));
  return Status::OK();
}

// ---- delete and GC ----

Status LedgerStorage::delete_ledger(LedgerId ledger) {
  const int64_t ledger_id = ledger.value();
  if (!valid_ledger_id(ledger_id)) return bad_ledger_id(ledger_id);
  std::lock_guard flush_lock(flush_mu_);
  if (failed_.load(std::memory_order_acquire)) return failure_status();
  {
    std::lock_guard lock(ledgers_mu_);
    ledgers_.erase(ledger_id);
  }
  {
    // No flush runs (we hold flush_mu_), so the flushing half is empty.
    std::lock_guard lock(cache_mu_);
    if (active_->erase_ledger(ledger_id) > 0) {
      update_cache_gauge_locked();
      cache_cv_.notify_all();
    }
  }
  LedgerIndex::Batch batch(*index_);
  batch.delete_ledger(ledger_id);
  if (Status s = index_->write(batch); !s.ok()) return fail(std::move(s));
  log_.info("deleted ledger {}", ledger_id);
  return Status::OK();
}

Result<uint64_t> LedgerStorage::garbage_collect() {
  std::vector<uint32_t> ids;
  {
    std::shared_lock lock(logs_mu_);
    for (const auto& [id, reader] : logs_) ids.push_back(id);
  }
  uint64_t reclaimed = 0;
  for (uint32_t id : ids) {
    // One log per turn of flush_mu_, so that flushes are not held up for the whole pass.
    MAGNETAR_ASSIGN_OR_RETURN(uint64_t freed, collect_log(id));
    reclaimed += freed;
  }
  return reclaimed;
}

Result<uint64_t> LedgerStorage::collect_log(uint32_t log_id) {
  std::lock_guard flush_lock(flush_mu_);
  if (failed_.load(std::memory_order_acquire)) return failure_status();
  if (writer_ != nullptr && writer_->log_id() == log_id) return uint64_t{0};
  const EntryLogReader* reader = nullptr;  // stays valid: only flush_mu_ holders erase logs
  {
    std::shared_lock lock(logs_mu_);
    auto it = logs_.find(log_id);
    if (it == logs_.end()) return uint64_t{0};
    reader = it->second.get();
  }
  MAGNETAR_ASSIGN_OR_RETURN(uint64_t file_size, reader->size());

  uint64_t live_bytes = 0;
  bool has_dead = false;
  LogUsage live_usage;
  if (auto u = log_usage_.find(log_id); u != log_usage_.end()) {
    std::lock_guard lock(ledgers_mu_);
    for (const auto& [ledger, bytes] : u->second) {
      if (ledgers_.contains(ledger)) {
        live_usage[ledger] = bytes;
        live_bytes += bytes;
      } else {
        has_dead = true;
      }
    }
  }

  LedgerIndex::Batch batch(*index_);
  if (live_bytes == 0) {
    if (log_usage_.contains(log_id)) {
      batch.delete_log_usage(log_id);
      if (Status s = index_->write(batch); !s.ok()) return fail(std::move(s));
      log_usage_.erase(log_id);
    }
    uint64_t freed = remove_log(log_id);
    metrics_->gc_reclaimed_bytes->inc(freed);
    log_.info("removed entry log {} ({} bytes, nothing live)", entry_log_file_name(log_id), freed);
    return freed;
  }
  const uint64_t data_bytes = file_size > kEntryLogHeaderSize ? file_size - kEntryLogHeaderSize : 0;
  if (options_.compaction_threshold > 0 &&
      static_cast<double>(live_bytes) <
          options_.compaction_threshold * static_cast<double>(data_bytes)) {
    return compact_log(log_id, live_bytes);
  }
  if (has_dead) {  // forget deleted ledgers so the record does not grow forever
    batch.put_log_usage(log_id, live_usage);
    if (Status s = index_->write(batch); !s.ok()) return fail(std::move(s));
    log_usage_[log_id] = std::move(live_usage);
  }
  return uint64_t{0};
}

Result<uint64_t> LedgerStorage::compact_log(uint32_t log_id, uint64_t live_bytes) {
  const EntryLogReader* reader = nullptr;
  {
    std::shared_lock lock(logs_mu_);
    reader = logs_.at(log_id).get();
  }
  LedgerIndex::Batch batch(*index_);
  std::map<uint32_t, LogUsage> added;
  uint64_t copied = 0;
  Status scanned = reader->scan([&](uint32_t offset, int64_t ledger_id, int64_t entry_id,
                                    Buffer bytes) -> Status {
    if (!ledger_live(ledger_id)) return Status::OK();
    MAGNETAR_ASSIGN_OR_RETURN(std::optional<EntryLocation> loc,
                              index_->get_location(ledger_id, entry_id));
    if (!loc || *loc != EntryLocation{log_id, offset}) return Status::OK();  // superseded
    MAGNETAR_ASSIGN_OR_RETURN(EntryLocation to, append_record(ledger_id, entry_id, bytes.view()));
    batch.put_location(ledger_id, entry_id, to);
    const uint64_t charge = kEntryLogRecordHeaderSize + bytes.size();
    added[to.log_id][ledger_id] += charge;
    copied += charge;
    return Status::OK();
  });
  if (failed_.load(std::memory_order_acquire)) return failure_status();
  // Records already copied are unindexed garbage in the current log; the old log stays.
  if (!scanned.ok()) {
    log_.error("not compacting entry log {}: {}", entry_log_file_name(log_id), scanned.to_string());
    return uint64_t{0};
  }
  if (copied != live_bytes) {
    log_.error("not compacting entry log {}: found {} live bytes, the index counts {}",
               entry_log_file_name(log_id), copied, live_bytes);
    return uint64_t{0};
  }
  if (!added.empty()) {
    if (Status s = writer_->sync(); !s.ok()) return fail(std::move(s));
  }
  batch.delete_log_usage(log_id);
  std::map<uint32_t, LogUsage> usage = put_merged_usage(added, batch);
  if (Status s = index_->write(batch); !s.ok()) return fail(std::move(s));
  log_usage_.erase(log_id);
  for (auto& [to_log, u] : usage) log_usage_[to_log] = std::move(u);

  const uint64_t size = remove_log(log_id);
  const uint64_t freed = size > copied ? size - copied : 0;
  metrics_->gc_reclaimed_bytes->inc(freed);
  log_.info("compacted entry log {}: {} live bytes copied, {} bytes freed",
            entry_log_file_name(log_id), copied, freed);
  return freed;
}

uint64_t LedgerStorage::remove_log(uint32_t log_id) {
  std::string path;
  uint64_t size = 0;
  {
    // Exclusive: waits for reads that found this log through the old index to finish.
    std::unique_lock lock(logs_mu_);
    auto it = logs_.find(log_id);
    if (it == logs_.end()) return 0;
    path = it->second->path();
    size = it->second->size().value_or(0);
    logs_.erase(it);
  }
  // A failure here leaves a file nothing points into: the next garbage_collect() retries.
  Status s = env_.remove_file(path);
  if (s.ok()) s = env_.sync_dir(current_dir_);
  if (!s.ok()) log_.warn("removing entry log: {}", s.to_string());
  log_bytes_ -= std::min(size, log_bytes_);
  metrics_->entry_log_bytes->set(static_cast<double>(log_bytes_));
  return size;
}

// ---- failure ----

Status LedgerStorage::fail(Status s) {
  {
    std::lock_guard lock(cache_mu_);
    if (!failed_.load(std::memory_order_relaxed)) {
      failure_ = s;
      failed_.store(true, std::memory_order_release);
      log_.error("ledger storage failed, refusing writes from now on: {}", s.to_string());
    }
  }
  cache_cv_.notify_all();
  return s;
}

Status LedgerStorage::failure_status() const {
  std::lock_guard lock(cache_mu_);
  return failure_;
}

Status LedgerStorage::failure() const {
  return failure_status();
}

void LedgerStorage::update_cache_gauge_locked() {
  metrics_->write_cache_bytes->set(static_cast<double>(active_->bytes() + flushing_->bytes()));
}

}  // namespace magnetar::bookie
