#include "bookie/bookie.h"

#include <fmt/format.h>

#include <cmath>

#include "protocol/bookie_entry.h"

namespace magnetar::bookie {
namespace {

using bookie_wire::BookieStatus;

// Storage and journal errors as the bookie protocol reports them.
BookieStatus to_bookie_status(const Status& st) {
  if (st.ok()) return bookie_wire::OK;
  if (st.is(Errc::kNotFound)) return bookie_wire::NO_ENTRY;
  if (st.is(Errc::kPermissionDenied)) return bookie_wire::UNAUTHORIZED;
  if (st.is(Errc::kResourceExhausted)) return bookie_wire::TOO_MANY_REQUESTS;
  if (st.is(Errc::kInvalidArgument)) return bookie_wire::BAD_REQUEST;
  return bookie_wire::IO_ERROR;
}

JournalOptions journal_options(const BookieConfig& c, const std::string& dir) {
  JournalOptions o;
  o.dir = dir;
  o.max_file_size = static_cast<uint64_t>(c.journal_max_size_mb) << 20;
  o.prealloc_size = static_cast<uint64_t>(c.journal_pre_alloc_size_mb) << 20;
  o.max_group_wait = std::chrono::microseconds(
      static_cast<int64_t>(std::llround(c.journal_max_group_wait_msec * 1000.0)));
  o.sync_pacing = std::chrono::microseconds(c.journal_sync_pacing_micros);
  o.buffered_writes_threshold = static_cast<size_t>(c.journal_buffered_writes_threshold);
  o.flush_when_queue_empty = c.journal_flush_when_queue_empty;
  o.sync_data = c.journal_sync_data;
  o.max_backups = c.journal_max_backups;
  o.reuse_files = c.journal_reuse_files;
  o.remove_pages_from_cache = c.journal_remove_pages_from_cache;
  o.queue_size = static_cast<size_t>(c.journal_queue_size);
  return o;
}

LedgerStorageOptions storage_options(const BookieConfig& c) {
  LedgerStorageOptions o;
  o.dir = c.ledger_directories.empty() ? std::string() : c.ledger_directories.front();
  o.write_cache_bytes = static_cast<size_t>(c.write_cache_max_size_mb) << 20;
  o.entry_log_max_size = static_cast<uint64_t>(c.entry_log_size_limit);
  return o;
}

}  // namespace

Bookie::Bookie(const BookieConfig& config, Env& env)
    : config_(config), env_(env), log_(log::Logger("bookie").with("bookie", config.bookie_id())) {}

Result<std::unique_ptr<Bookie>> Bookie::open(const BookieConfig& config, Env& env) {
  if (config.journal_directories.empty()) {
    return Status(Errc::kInvalidArgument, "journalDirectories is empty");
  }
  if (config.ledger_directories.size() != 1) {
    return Status(Errc::kNotSupported,
                  fmt::format("ledgerDirectories lists {} directories; this bookie takes exactly "
                              "one (journalDirectories may list several)",
                              config.ledger_directories.size()));
  }
  std::unique_ptr<Bookie> b(new Bookie(config, env));
  MAGNETAR_TRY(b->start());
  return b;
}

Status Bookie::start() {
  MAGNETAR_ASSIGN_OR_RETURN(storage_, LedgerStorage::open(storage_options(config_), env_));

  // Replay what each journal holds past its last checkpoint into storage. A ledger's records
  // are all in one journal (journal_for()), so the journals replay independently.
  auto apply = [&](const JournalRecord& r) -> Status {
    switch (r.type) {
      case JournalRecordType::kMasterKey:
        return storage_->set_master_key(r.ledger_id, r.payload.view());
      case JournalRecordType::kFence:
        // The record carries the master key: the ledger may have had no entry here.
        if (!r.payload.empty()) MAGNETAR_TRY(storage_->set_master_key(r.ledger_id, r.payload.view()));
        return storage_->set_fenced(r.ledger_id).status();
      case JournalRecordType::kEntry: {
        auto header = protocol::peek_entry_header(r.payload);
        EntryId lac{header.ok() ? header->lac : -1};
        return storage_->add_entry(r.ledger_id, r.entry_id, r.payload, lac);
      }
      case JournalRecordType::kExplicitLac:
        return Status::OK();
    }
    return Status::OK();
  };
  const size_t n = config_.journal_directories.size();
  std::vector<JournalPosition> replayed_to(n);
  std::vector<uint64_t> replayed(n, 0);
  uint64_t records = 0;
  for (size_t j = 0; j < n; ++j) {
    auto replay = Journal::replay(
        journal_options(config_, config_.journal_directories[j]), env_,
        [&](const JournalRecord& r, JournalPosition after) -> Status {
          ++records;
          ++replayed[j];
          replayed_to[j] = after;
          return apply(r);
        });
    if (!replay.ok()) return replay.status();
  }
  if (records > 0) {
    MAGNETAR_TRY(storage_->flush());
    log_.info("replayed {} journal records into ledger storage", records);
  }

  for (size_t j = 0; j < n; ++j) {
    const std::string& dir = config_.journal_directories[j];
    MAGNETAR_ASSIGN_OR_RETURN(std::unique_ptr<Journal> journal,
                              Journal::open(journal_options(config_, dir), env_));
    if (replayed[j] > 0) MAGNETAR_TRY(journal->checkpoint_complete(replayed_to[j]));
    journal->on_failure([this, dir](const Status& st) {
      set_read_only(fmt::format("journal {} failed: {}", dir, st.to_string()));
    });
    journals_.push_back(std::move(journal));
  }

  timers_guard_.emplace(timers_.get_executor());
  timers_thread_ = std::thread([this] { timers_.run(); });
  checkpoint_thread_ = std::thread([this] { checkpoint_loop(); });
  return Status::OK();
}

Bookie::~Bookie() {
  {
    std::lock_guard<std::mutex> lock(loop_mu_);
    stopping_ = true;
  }
  loop_cv_.notify_all();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
  workers_.join();
  {
    // Long-poll readers still waiting get an answer rather than silence.
    std::lock_guard<std::mutex> lock(waiters_mu_);
    for (auto& [ledger, w] : waiters_) {
      w->timer->cancel();
      w->done(bookie_wire::TIMED_OUT, Buffer(), -1);
    }
    waiters_.clear();
  }
  if (timers_guard_) timers_guard_.reset();
  timers_.stop();
  if (timers_thread_.joinable()) timers_thread_.join();
  journals_.clear();  // completes or fails everything queued
  if (storage_) {
    Status st = storage_->flush();
    if (!st.ok()) log_.warn("final flush failed: {}", st.to_string());
  }
}

void Bookie::set_read_only(const std::string& reason) {
  if (!config_.read_only_mode_enabled) {
    log_.error("{}; readOnlyModeEnabled=false, refusing every add from now on", reason);
  }
  if (read_only_.exchange(true)) return;
  log_.error("bookie is now read-only: {}", reason);
  std::function<void()> cb;
  {
    std::lock_guard<std::mutex> lock(callbacks_mu_);
    cb = on_read_only_;
  }
  if (cb) cb();
}

void Bookie::on_read_only(std::function<void()> callback) {
  std::lock_guard<std::mutex> lock(callbacks_mu_);
  on_read_only_ = std::move(callback);
}

void Bookie::add_entry(bookie_wire::AddRequest request, Buffer entry, AddCallback done) {
  std::vector<Add> one;
  one.push_back(Add{std::move(request), std::move(entry), std::move(done)});
  add_entries(std::move(one));
}

void Bookie::add_entries(std::vector<Add> adds) {
  if (adds.empty()) return;
  post_add_job([this, adds = std::move(adds)]() mutable {
    for (Add& a : adds) store_add(std::move(a.request), std::move(a.entry), std::move(a.done));
  });
}

void Bookie::add_entries_inline(std::vector<Add> adds) {
  for (size_t i = 0; i < adds.size(); ++i) {
    if (worker_add_jobs_.load(std::memory_order_acquire) > 0) {
      adds.erase(adds.begin(), adds.begin() + static_cast<std::ptrdiff_t>(i));
      add_entries(std::move(adds));
      return;
    }
    Add& a = adds[i];
    std::optional<CheckedAdd> checked = check_add(a.request, a.entry, a.done);
    if (!checked || store_checked(*checked, false)) continue;
    // This add waits from where it stopped, then the ones after it, on a worker.
    adds.erase(adds.begin(), adds.begin() + static_cast<std::ptrdiff_t>(i + 1));
    post_add_job([this, add = std::move(*checked), rest = std::move(adds)]() mutable {
      store_checked(add, true);
      for (Add& a : rest) store_add(std::move(a.request), std::move(a.entry), std::move(a.done));
    });
    return;
  }
}

void Bookie::post_add_job(std::function<void()> job) {
  worker_add_jobs_.fetch_add(1, std::memory_order_acq_rel);
  asio::post(workers_, [this, job = std::move(job)] {
    job();
    worker_add_jobs_.fetch_sub(1, std::memory_order_acq_rel);
  });
}

void Bookie::store_add(bookie_wire::AddRequest request, Buffer entry, AddCallback done) {
  std::optional<CheckedAdd> checked = check_add(request, entry, done);
  if (checked) store_checked(*checked, true);
}

std::optional<Bookie::CheckedAdd> Bookie::check_add(bookie_wire::AddRequest& request, Buffer& entry,
                                                    AddCallback& done) {
  const LedgerId ledger{request.ledger_id()};
  const EntryId entry_id{request.entry_id()};
  auto refuse = [&](BookieStatus status) -> std::optional<CheckedAdd> {
    done(status);
    return std::nullopt;
  };
  if (read_only_) return refuse(bookie_wire::READ_ONLY);
  auto header = protocol::peek_entry_header(entry);
  if (!header.ok() || header->ledger_id != ledger.value() ||
      header->entry_id != entry_id.value() || !entry_id.valid()) {
    return refuse(bookie_wire::BAD_REQUEST);
  }
  auto key = storage_->check_master_key(ledger, request.master_key());
  if (!key.ok()) return refuse(to_bookie_status(key.status()));
  if (key->fenced && !request.recovery()) return refuse(bookie_wire::FENCED);
  CheckedAdd add;
  add.ledger = ledger;
  add.entry_id = entry_id;
  add.lac = EntryId{header->lac};
  add.entry = std::move(entry);
  if (key->created) add.new_ledger_key = request.master_key();
  add.done = std::move(done);
  return add;
}

bool Bookie::store_checked(CheckedAdd& add, bool wait) {
  using Stage = CheckedAdd::Stage;
  if (add.stage == Stage::kCache) {
    if (wait) {
      Status stored = storage_->add_entry(add.ledger, add.entry_id, add.entry, add.lac);
      if (!stored.ok()) {
        add.done(to_bookie_status(stored));
        return true;
      }
    } else {
      Result<bool> stored = storage_->try_add_entry(add.ledger, add.entry_id, add.entry, add.lac);
      if (!stored.ok()) {
        add.done(to_bookie_status(stored.status()));
        return true;
      }
      if (!*stored) return false;
    }
    add.stage = add.new_ledger_key ? Stage::kKey : Stage::kEntry;
  }
  Journal& journal = journal_for(add.ledger);
  if (add.stage == Stage::kKey) {
    JournalRecord key{JournalRecordType::kMasterKey, add.ledger, EntryId{},
                      Buffer::copy_of(*add.new_ledger_key)};
    Journal::AppendCallback ignored = [](Status, JournalPosition) {};
    if (wait) {
      journal.append(std::move(key), std::move(ignored));
    } else if (!journal.try_append(key, ignored)) {
      return false;
    }
    add.stage = Stage::kEntry;
  }
  if (!add.journal_done) {
    add.journal_done = [this, ledger = add.ledger, done = std::move(add.done)](Status st,
                                                                               JournalPosition) {
      done(st.ok() ? bookie_wire::OK : bookie_wire::IO_ERROR);
      if (st.ok()) complete_waiters(ledger);
    };
  }
  JournalRecord record{JournalRecordType::kEntry, add.ledger, add.entry_id, add.entry};
  if (wait) {
    journal.append(std::move(record), std::move(add.journal_done));
    return true;
  }
  return journal.try_append(record, add.journal_done);
}

void Bookie::read_entry(const bookie_wire::ReadRequest& request, ReadCallback done) {
  asio::post(workers_, [this, request, done = std::move(done)]() mutable {
    const LedgerId ledger{request.ledger_id()};
    if (request.fence()) {
      Status key = storage_->set_master_key(ledger, request.master_key());
      if (!key.ok()) return done(to_bookie_status(key), Buffer(), -1);
      auto fenced = storage_->set_fenced(ledger);
      if (!fenced.ok()) return done(to_bookie_status(fenced.status()), Buffer(), -1);
      if (*fenced) {
        // Answer only once the fence is durable: a fence lost in a crash would let the old
        // writer go on after recovery began.
        journal_for(ledger).append(JournalRecord{JournalRecordType::kFence, ledger, EntryId{},
                                       Buffer::copy_of(request.master_key())},
                         [this, request, done = std::move(done)](Status st,
                                                                 JournalPosition) mutable {
                           if (!st.ok()) return done(bookie_wire::IO_ERROR, Buffer(), -1);
                           do_read(request, std::move(done));
                         });
        return;
      }
    }
    do_read(request, std::move(done));
  });
}

void Bookie::read_range(const bookie_wire::ReadRangeRequest& request, ReadRangeCallback done) {
  asio::post(workers_, [this, request, done = std::move(done)]() mutable {
    const LedgerId ledger{request.ledger_id()};
    if (request.first_entry_id() < 0 || request.max_entries() == 0) {
      return done(bookie_wire::BAD_REQUEST, {}, -1);
    }
    auto info = storage_->ledger_info(ledger);
    if (!info.ok()) return done(bookie_wire::NO_LEDGER, {}, -1);
    const uint32_t max_entries = std::min(request.max_entries(), kMaxRangeEntries);
    const uint64_t frame_room = static_cast<uint64_t>(config_.max_frame_size) - (64 << 10);
    const uint64_t max_bytes =
        request.has_max_bytes() ? std::min(request.max_bytes(), frame_room) : frame_room;
    std::vector<Buffer> entries;
    uint64_t bytes = 0;
    BookieStatus stopped = bookie_wire::OK;
    for (EntryId e{request.first_entry_id()}; entries.size() < max_entries; ++e) {
      auto entry = storage_->read_entry(ledger, e);
      if (!entry.ok()) {
        if (entry.status().is(Errc::kCorruption)) {
          log_.with("ledger_id", ledger).with("entry_id", e)
              .error("stored entry is corrupt: {}", entry.status().to_string());
          stopped = bookie_wire::IO_ERROR;
        } else if (entry.status().is(Errc::kNotFound)) {
          stopped = bookie_wire::NO_ENTRY;
        } else {
          stopped = to_bookie_status(entry.status());
        }
        break;
      }
      if (!entries.empty() && bytes + entry->size() > max_bytes) break;
      bytes += entry->size();
      entries.push_back(std::move(entry).value());
    }
    BookieStatus status = entries.empty() ? stopped : bookie_wire::OK;
    done(status, std::move(entries), info->lac.value());
  });
}

void Bookie::do_read(const bookie_wire::ReadRequest& request, ReadCallback done) {
  const LedgerId ledger{request.ledger_id()};
  auto info = storage_->ledger_info(ledger);
  if (!info.ok()) return done(bookie_wire::NO_LEDGER, Buffer(), -1);
  const int64_t lac = info->lac.value();
  auto entry = storage_->read_entry(ledger, EntryId{request.entry_id()});
  if (entry.ok()) return done(bookie_wire::OK, std::move(entry).value(), lac);
  if (entry.status().is(Errc::kCorruption)) {
    log_.with("ledger_id", ledger).with("entry_id", request.entry_id())
        .error("stored entry is corrupt: {}", entry.status().to_string());
    return done(bookie_wire::IO_ERROR, Buffer(), lac);
  }
  if (!entry.status().is(Errc::kNotFound)) {
    return done(to_bookie_status(entry.status()), Buffer(), lac);
  }
  // Long poll: wait for the LAC to move past what the reader knows.
  if (request.has_previous_lac() && request.timeout_ms() > 0 &&
      lac <= request.previous_lac()) {
    auto w = std::make_shared<Waiter>();
    w->previous_lac = request.previous_lac();
    w->request = request;
    w->done = std::move(done);
    w->timer = std::make_shared<asio::steady_timer>(
        timers_, std::chrono::milliseconds(request.timeout_ms()));
    {
      std::lock_guard<std::mutex> lock(waiters_mu_);
      waiters_.emplace(ledger, w);
    }
    w->timer->async_wait([this, ledger, w](const boost::system::error_code& ec) {
      if (ec) return;  // cancelled: completed by an add
      std::shared_ptr<Waiter> mine;
      {
        std::lock_guard<std::mutex> lock(waiters_mu_);
        auto range = waiters_.equal_range(ledger);
        for (auto it = range.first; it != range.second; ++it) {
          if (it->second == w) {
            mine = w;
            waiters_.erase(it);
            break;
          }
        }
      }
      if (mine) mine->done(bookie_wire::TIMED_OUT, Buffer(), mine->previous_lac);
    });
    // An add may have landed between the read and the registration.
    complete_waiters(ledger);
    return;
  }
  done(bookie_wire::NO_ENTRY, Buffer(), lac);
}

void Bookie::complete_waiters(LedgerId ledger) {
  auto info = storage_->ledger_info(ledger);
  if (!info.ok()) return;
  std::vector<std::shared_ptr<Waiter>> ready;
  {
    std::lock_guard<std::mutex> lock(waiters_mu_);
    auto range = waiters_.equal_range(ledger);
    for (auto it = range.first; it != range.second;) {
      if (info->lac.value() > it->second->previous_lac ||
          storage_->read_entry(ledger, EntryId{it->second->request.entry_id()}).ok()) {
        ready.push_back(it->second);
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : ready) {
    w->timer->cancel();
    bookie_wire::ReadRequest plain = w->request;
    plain.clear_previous_lac();
    plain.clear_timeout_ms();
    asio::post(workers_, [this, plain, done = std::move(w->done)]() mutable {
      do_read(plain, std::move(done));
    });
  }
}

bookie_wire::ReadLacResponse Bookie::read_lac(LedgerId ledger) {
  bookie_wire::ReadLacResponse r;
  r.set_ledger_id(ledger.value());
  auto info = storage_->ledger_info(ledger);
  if (!info.ok()) {
    r.set_status(bookie_wire::NO_LEDGER);
    return r;
  }
  r.set_status(bookie_wire::OK);
  r.set_lac(info->lac.value());
  r.set_last_entry_id(info->last_entry_id.value());
  return r;
}

bookie_wire::BookieInfoResponse Bookie::info() {
  bookie_wire::BookieInfoResponse r;
  r.set_status(bookie_wire::OK);
  r.set_read_only(read_only_);
  auto usage = env_.disk_usage(config_.ledger_directories.front());
  if (usage.ok()) {
    r.set_total_disk_bytes(usage->total_bytes);
    r.set_free_disk_bytes(usage->free_bytes);
  }
  return r;
}

Journal& Bookie::journal_for(LedgerId ledger) {
  return *journals_[static_cast<uint64_t>(ledger.value()) % journals_.size()];
}

Status Bookie::checkpoint() {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  // The marks are taken before the flush: everything journaled before them is in storage
  // after it.
  std::vector<JournalPosition> marks;
  for (const auto& journal : journals_) marks.push_back(journal->last_durable());
  Status st = storage_->flush();
  if (!st.ok()) {
    set_read_only(fmt::format("ledger storage flush failed: {}", st.to_string()));
    return st;
  }
  Status result;
  for (size_t j = 0; j < journals_.size(); ++j) {
    Status done = journals_[j]->checkpoint_complete(marks[j]);
    if (!done.ok() && result.ok()) result = done;
  }
  return result;
}

std::vector<LedgerId> Bookie::ledgers() const { return storage_->ledgers(); }

Result<uint64_t> Bookie::garbage_collect(const std::vector<LedgerId>& deleted) {
  int dropped = 0;
  for (LedgerId ledger : deleted) {
    Status st = storage_->delete_ledger(ledger);
    if (!st.ok()) return st;
    ++dropped;
  }
  auto reclaimed = storage_->garbage_collect();
  if (reclaimed.ok() && (dropped > 0 || *reclaimed > 0)) {
    log_.info("garbage collection dropped {} deleted ledgers, reclaimed {} bytes", dropped,
              *reclaimed);
  }
  return reclaimed;
}

void Bookie::check_disks() {
  std::vector<std::string> dirs = config_.journal_directories;
  dirs.push_back(config_.ledger_directories.front());
  for (const auto& dir : dirs) {
    auto usage = env_.disk_usage(dir);
    if (!usage.ok() || usage->total_bytes == 0) continue;
    double used = 1.0 - static_cast<double>(usage->free_bytes) /
                            static_cast<double>(usage->total_bytes);
    if (used > config_.disk_usage_threshold) {
      set_read_only(fmt::format("disk of '{}' is {:.1f}% full (diskUsageThreshold {:.1f}%)", dir,
                                used * 100, config_.disk_usage_threshold * 100));
    }
  }
}

void Bookie::checkpoint_loop() {
  auto next_checkpoint = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(config_.flush_interval_ms);
  auto next_disk_check = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(loop_mu_);
  while (!stopping_) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_disk_check) {
      lock.unlock();
      check_disks();
      lock.lock();
      next_disk_check = now + std::chrono::milliseconds(config_.disk_check_interval_ms);
    }
    if (now >= next_checkpoint) {
      lock.unlock();
      Status st = checkpoint();
      if (!st.ok()) log_.warn("checkpoint failed: {}", st.to_string());
      lock.lock();
      next_checkpoint = now + std::chrono::milliseconds(config_.flush_interval_ms);
    }
    loop_cv_.wait_until(lock, std::min(next_checkpoint, next_disk_check),
                        [&] { return stopping_; });
  }
}

}  // namespace magnetar::bookie
