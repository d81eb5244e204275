#include "mledger/managed_ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "ledger/bookkeeper.h"
#include "metadata/metadata_store.h"
#include "proto/managed_ledger.pb.h"

namespace magnetar::mledger {

namespace wire = magnetar::mledger_wire;

namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status ml_error(Error e, std::string_view name, std::string what) {
  return Status(e, fmt::format("managed ledger {}: {}", name, what));
}

}  // namespace

std::string managed_ledger_path(std::string_view name) {
  return fmt::format("/managed-ledgers/{}", name);
}

struct ManagedLedger::OpAdd {
  BufferChain data;
  int64_t size = 0;
  AddCallback done;
  LedgerId ledger_id;  // ledger it was sent to (-1: not sent)
  EntryId entry_id;
  bool completed = false;
};

std::string_view ManagedLedger::to_string(State s) {
  switch (s) {
    case State::kLedgerOpened:
      return "LedgerOpened";
    case State::kClosingLedger:
      return "ClosingLedger";
    case State::kCreatingLedger:
      return "CreatingLedger";
    case State::kClosedLedger:
      return "ClosedLedger";
    case State::kTerminated:
      return "Terminated";
    case State::kFenced:
      return "Fenced";
    case State::kClosed:
      return "Closed";
  }
  return "Unknown";
}

ManagedLedger::ManagedLedger(ManagedLedgerFactory& factory, std::string name,
                             ManagedLedgerConfig config)
    : factory_(factory),
      name_(std::move(name)),
      config_(std::move(config)),
      log_(log::Logger("mledger").with("ml", name_)),
      cache_(factory.cache()) {
  // Spread the age-based rollovers of many ledgers opened together (as Pulsar does).
  std::mt19937 rng(std::random_device{}());
  rollover_jitter_ = std::uniform_real_distribution<double>(1.0, 1.05)(rng);
}

ManagedLedger::~ManagedLedger() = default;

std::string ManagedLedger::path() const {
  return managed_ledger_path(name_);
}
int64_t ManagedLedger::now_ms() const {
  return wall_ms();
}

void ManagedLedger::set_persistence(int32_t ensemble, int32_t write_quorum, int32_t ack_quorum,
                                    double mark_delete_rate) {
  config_.ensemble_size = ensemble;
  config_.write_quorum = write_quorum;
  config_.ack_quorum = ack_quorum;
  config_.mark_delete_rate_limit = mark_delete_rate;
}

void ManagedLedger::set_retention(double time_minutes, int64_t size_mb) {
  config_.retention_time_minutes = time_minutes;
  config_.retention_size_mb = size_mb;
}

std::map<std::string, std::string> ManagedLedger::ledger_custom_metadata() const {
  return {
      {"application", "pulsar"}, {"component", "managed-ledger"}, {"pulsar/managed-ledger", name_}};
}

ledger::BookKeeper& ManagedLedger::bookkeeper() const { return factory_.bookkeeper(); }

LedgerId ManagedLedger::current_ledger_id() const {
  return current_ ? current_->id() : LedgerId{};
}

// ---------------------------------------------------------------------------------------
// Metadata

std::string ManagedLedger::serialize_info() const {
  wire::ManagedLedgerInfo info;
  for (const auto& [id, li] : ledgers_) {
    auto* out = info.add_ledgerinfo();
    out->set_ledgerid(id.value());
    if (li.timestamp_ms != 0) {
      out->set_entries(li.entries);
      out->set_size(li.size);
      out->set_timestamp(li.timestamp_ms);
    }
  }
  if (terminated_) {
    info.mutable_terminatedposition()->set_ledgerid(terminated_->ledger_id.value());
    info.mutable_terminatedposition()->set_entryid(terminated_->entry_id.value());
  }
  for (const auto& [k, v] : properties_) {
    auto* kv = info.add_properties();
    kv->set_key(k);
    kv->set_value(v);
  }
  return info.SerializeAsString();
}

// Writes the ledger list with compare-and-set on the node version; a lost race means
// another broker owns this ledger now: fenced.
Task<Status> ManagedLedger::write_info() {
  auto self = shared_from_this();
  co_await info_mutex_.lock();
  metadata::PutOptions options;
  options.expected_version = info_version_;
  std::string value = serialize_info();
  const std::string node = path();
  auto r = co_await factory_.store().put(node, std::move(value), options);
  info_mutex_.unlock();
  if (!r.ok()) {
    if (r.status().is(Errc::kBadVersion)) {
      fence("the ledger list was changed by another owner");
      co_return ml_error(Error::kFenced, name_, "ledger list changed by another owner");
    }
    co_return ml_error(Error::kMetadata, name_,
                       "cannot write the ledger list: " + r.status().to_string());
  }
  info_version_ = r->stat.version;
  co_return Status::OK();
}

Task<Status> ManagedLedger::initialize() {
  auto self = shared_from_this();
  auto& store = factory_.store();
  const std::string node = path();
  auto got = co_await store.get(node);
  if (!got.ok()) {
    co_return ml_error(Error::kMetadata, name_, "cannot read: " + got.status().to_string());
  }
  if (!got->has_value()) {
    metadata::PutOptions create;
    create.expected_version = -1;
    std::string empty;
    auto made = co_await store.put_recursive(node, std::move(empty), create);
    if (!made.ok()) {
      co_return ml_error(Error::kMetadata, name_,
                         "cannot create node: " + made.status().to_string());
    }
    info_version_ = made->stat.version;
  } else {
    info_version_ = (*got)->stat.version;
    wire::ManagedLedgerInfo info;
    if (!info.ParseFromString((*got)->value)) {
      co_return ml_error(Error::kCorruptMetadata, name_, "ledger list does not parse");
    }
    for (const auto& li : info.ledgerinfo()) {
      const LedgerId id{li.ledgerid()};
      ledgers_[id] = LedgerInfo{id, li.entries(), li.size(), li.timestamp()};
    }
    if (info.has_terminatedposition()) {
      terminated_ = Position{LedgerId{info.terminatedposition().ledgerid()},
                             EntryId{info.terminatedposition().entryid()}};
    }
    for (const auto& kv : info.properties()) properties_[kv.key()] = kv.value();
  }

  // Recover the last ledger: fencing it stops a previous owner still writing.
  std::vector<LedgerId> to_delete;
  if (!ledgers_.empty()) {
    const LedgerId last_id = ledgers_.rbegin()->first;
    auto lh = co_await factory_.bookkeeper().open(last_id, config_.password, true);
    if (!lh.ok() && lh.status().is(Errc::kNotFound)) {
      log_.warn("last ledger {} does not exist any more; dropped from the list", last_id);
      ledgers_.erase(last_id);
    } else if (!lh.ok()) {
      co_return ml_error(
          Error::kMetadata, name_,
          fmt::format("cannot recover ledger {}: {}", last_id, lh.status().to_string()));
    } else {
      LedgerInfo& li = ledgers_[last_id];
      li.entries = (*lh)->metadata().last_entry_id + 1;
      li.size = std::max<int64_t>(0, (*lh)->metadata().length);
      li.timestamp_ms = now_ms();
      read_handles_[last_id] = *lh;
    }
  }
  for (auto it = ledgers_.begin(); it != ledgers_.end();) {
    if (it->second.entries == 0) {
      to_delete.push_back(it->first);
      read_handles_.erase(it->first);
      it = ledgers_.erase(it);
    } else {
      ++it;
    }
  }
  total_size_ = 0;
  for (auto& [id, li] : ledgers_) {
    total_size_ += li.size;
    if (li.timestamp_ms == 0) li.timestamp_ms = now_ms();
  }
  if (!ledgers_.empty()) {
    const LedgerInfo& last = ledgers_.rbegin()->second;
    last_confirmed_ = Position{last.ledger_id, EntryId{last.entries - 1}};
  }

  if (terminated_) {
    state_ = State::kTerminated;
    Status st = co_await write_info();
    if (!st.ok()) co_return st;
  } else {
    Status st = co_await create_ledger();
    if (!st.ok()) co_return st;
  }
  if (ledgers_.size() == 1 && !last_confirmed_.ledger_id.valid()) {
    last_confirmed_ = Position{ledgers_.begin()->first, EntryId{}};
  }
  for (LedgerId id : to_delete) {
    Status st = co_await factory_.bookkeeper().remove(id);
    if (!st.ok() && !st.is(Errc::kNotFound)) {
      log_.warn("cannot delete empty ledger {}: {}", id, st.to_string());
    }
  }
  Status st = co_await recover_cursors();
  if (!st.ok()) co_return st;
  log_.info("opened: {} ledgers, {} entries, last confirmed {}, {} cursors", ledgers_.size(),
            number_of_entries(), last_confirmed_.to_string(), cursors_.size());
  co_return Status::OK();
}

Task<Status> ManagedLedger::recover_cursors() {
  auto self = shared_from_this();
  const std::string node = path();
  auto names = co_await factory_.store().children(node);
  if (!names.ok()) {
    co_return ml_error(Error::kMetadata, name_,
                       "cannot list cursors: " + names.status().to_string());
  }
  for (const std::string& cursor_name : *names) {
    const std::string cursor_path = metadata::join_path(node, cursor_name);
    auto got = co_await factory_.store().get(cursor_path);
    if (!got.ok()) {
      co_return ml_error(
          Error::kMetadata, name_,
          fmt::format("cannot read cursor {}: {}", cursor_name, got.status().to_string()));
    }
    if (!got->has_value()) continue;
    auto cursor = std::make_shared<ManagedCursor>(*this, cursor_name, true);
    std::string value = (*got)->value;
    const int64_t version = (*got)->stat.version;
    Status st = co_await cursor->recover(std::move(value), version);
    if (!st.ok()) co_return st;
    cursors_[cursor_name] = cursor;
  }
  co_return Status::OK();
}

// Creates a ledger, appends it to the list (CAS) and makes it current.
Task<Status> ManagedLedger::create_ledger() {
  auto self = shared_from_this();
  state_ = State::kCreatingLedger;
  auto& bk = factory_.bookkeeper();
  auto custom = ledger_custom_metadata();
  // Ledgers are ordered by id (positions compare by ledger id): the new one must come after
  // every ledger of this log, whichever broker made them.
  const LedgerId last = ledgers_.empty() ? LedgerId() : ledgers_.rbegin()->first;
  auto lh = co_await bk.create(config_.ensemble_size, config_.write_quorum, config_.ack_quorum,
                               config_.password, std::move(custom), last);
  if (state_ == State::kClosed || state_ == State::kFenced) {
    if (lh.ok()) (void)co_await bk.remove((*lh)->id());
    co_return ml_error(Error::kClosed, name_, "closed while creating a ledger");
  }
  if (!lh.ok()) {
    state_ = State::kClosedLedger;
    co_return ml_error(Error::kWriteFailed, name_,
                       "cannot create a ledger: " + lh.status().to_string());
  }
  const LedgerId id = (*lh)->id();
  ledgers_[id] = LedgerInfo{id, 0, 0, 0};
  Status st = co_await write_info();
  if (!st.ok()) {
    ledgers_.erase(id);
    (void)co_await bk.remove(id);
    if (state_ != State::kFenced) state_ = State::kClosedLedger;
    co_return st;
  }
  current_ = *lh;
  current_created_ms_ = now_ms();
  current_pushed_entries_ = 0;
  current_pushed_bytes_ = 0;
  inflight_ = 0;
  write_failed_ = false;
  state_ = State::kLedgerOpened;
  log_.info("new ledger {}", id);
  if (config_.max_rollover_time().count() > 0) {
    asio::co_spawn(factory_.executor(), rollover_timer(id), asio::detached);
  }
  co_return Status::OK();
}

// ---------------------------------------------------------------------------------------
// Adds

void ManagedLedger::async_add(BufferChain data, AddCallback done) {
  switch (state_) {
    case State::kTerminated:
      done(ml_error(Error::kTerminated, name_, "terminated: no more adds"));
      return;
    case State::kFenced:
      done(ml_error(Error::kFenced, name_, "fenced by another owner"));
      return;
    case State::kClosed:
      done(ml_error(Error::kClosed, name_, "closed"));
      return;
    default:
      break;
  }
  if (terminating_) {
    done(ml_error(Error::kTerminated, name_, "terminated: no more adds"));
    return;
  }
  if (closing_) {
    done(ml_error(Error::kClosed, name_, "closing"));
    return;
  }
  auto op = std::make_shared<OpAdd>();
  op->size = static_cast<int64_t>(data.size());
  op->data = std::move(data);
  op->done = std::move(done);
  pending_adds_.push_back(op);
  if (state_ == State::kLedgerOpened) {
    send(op);
  } else if (state_ == State::kClosedLedger) {
    // A previous creation failed: try again for this add.
    state_ = State::kCreatingLedger;
    auto self = shared_from_this();
    asio::co_spawn(
        factory_.executor(),
        [self]() -> Task<void> {
          Status st = co_await self->create_ledger();
          if (!st.ok()) {
            self->log_.error("{}", st.to_string());
            self->fail_pending(st);
            co_return;
          }
          for (auto& p : std::deque<std::shared_ptr<OpAdd>>(self->pending_adds_)) {
            if (self->state_ != State::kLedgerOpened) break;
            if (!p->ledger_id.valid()) self->send(p);
          }
        },
        asio::detached);
  }
  // Otherwise (rolling over) the op waits in pending_adds_ for the new ledger.
}

Task<Result<Position>> ManagedLedger::add(BufferChain data) {
  auto self = shared_from_this();
  auto waiting = await_callback<Result<Position>>(
      [self, data = std::move(data)](std::function<void(Result<Position>)> done) mutable {
        self->async_add(std::move(data), std::move(done));
      });
  co_return co_await std::move(waiting);
}

void ManagedLedger::send(const std::shared_ptr<OpAdd>& op) {
  op->ledger_id = current_->id();
  ++current_pushed_entries_;
  current_pushed_bytes_ += op->size;
  ++inflight_;
  auto written = [self = shared_from_this(), op, lh = current_](Result<EntryId> r) {
    self->on_written(op, lh, std::move(r));
  };
  current_->async_add(op->data, std::move(written));
  if (current_ledger_full()) {
    // This add is the last of the ledger; later ones wait for the next ledger.
    state_ = State::kClosingLedger;
  }
}

void ManagedLedger::on_written(const std::shared_ptr<OpAdd>& op,
                               const std::shared_ptr<ledger::LedgerHandle>& lh, Result<EntryId> r) {
  if (lh == current_) --inflight_;
  if (r.ok()) {
    op->entry_id = *r;
    op->completed = true;
  } else {
    // The op stays queued and is re-sent to the next ledger.
    op->ledger_id = LedgerId{};
    if (lh == current_ && !write_failed_) {
      write_failed_ = true;
      ++consecutive_write_failures_;
      log_.warn("add to ledger {} failed ({}); rolling over to a new ledger", lh->id(),
                r.status().to_string());
      if (r.status().is(Errc::kFenced)) {
        fence(fmt::format("ledger {} was fenced by another owner", lh->id()));
      } else if (state_ == State::kLedgerOpened) {
        state_ = State::kClosingLedger;
      }
    }
  }
  complete_ready_adds();
  maybe_start_rollover();
}

void ManagedLedger::complete_ready_adds() {
  bool any = false;
  const int64_t now = now_ms();
  const bool cache_it = std::any_of(cursors_.begin(), cursors_.end(),
                                    [](const auto& c) { return c.second->active(); }) ||
                        !non_durable_cursors_.empty();
  while (!pending_adds_.empty() && pending_adds_.front()->completed) {
    auto op = pending_adds_.front();
    pending_adds_.pop_front();
    const Position pos{op->ledger_id, op->entry_id};
    last_confirmed_ = pos;
    LedgerInfo& li = ledgers_[op->ledger_id];
    li.ledger_id = op->ledger_id;
    li.entries = op->entry_id.value() + 1;
    li.size += op->size;
    total_size_ += op->size;
    ++counters_.entries_added;
    counters_.bytes_added += op->size;
    if (cache_it) cache_.insert(pos, op->data.flatten(), now);
    any = true;
    consecutive_write_failures_ = 0;
    op->done(pos);
  }
  if (pending_adds_.empty() && !drained_waiters_.empty()) {
    auto waiters = std::move(drained_waiters_);
    drained_waiters_.clear();
    for (auto& w : waiters) w(true);
  }
  if (any) notify_cursors();
}

bool ManagedLedger::current_ledger_full() const {
  if (!current_) return false;
  const int64_t age = now_ms() - current_created_ms_;
  const auto max_age = static_cast<int64_t>(
      static_cast<double>(config_.max_rollover_time().count()) * rollover_jitter_);
  const bool full = current_pushed_entries_ >= config_.max_entries_per_ledger ||
                    current_pushed_bytes_ >= config_.max_size_per_ledger_mb * 1024 * 1024 ||
                    (max_age > 0 && age >= max_age && current_pushed_entries_ > 0);
  return full && age >= config_.min_rollover_time().count();
}

void ManagedLedger::maybe_start_rollover() {
  if (state_ == State::kClosingLedger && inflight_ == 0 && current_) {
    state_ = State::kCreatingLedger;  // nobody else starts one meanwhile
    asio::co_spawn(factory_.executor(), rollover(), asio::detached);
  }
}

Task<void> ManagedLedger::close_current_ledger() {
  auto self = shared_from_this();
  auto lh = std::move(current_);
  current_.reset();
  if (!lh) co_return;
  Status st = co_await lh->close();
  if (!st.ok()) {
    if (st.is(Errc::kFenced)) {
      fence(fmt::format("ledger {} was fenced by another owner", lh->id()));
    } else {
      log_.warn("closing ledger {}: {}", lh->id(), st.to_string());
    }
  }
  auto it = ledgers_.find(lh->id());
  if (it != ledgers_.end()) {
    it->second.timestamp_ms = now_ms();
    if (it->second.entries > 0) {
      read_handles_[lh->id()] = lh;
    }
  }
  ++counters_.ledgers_rolled;
}

Task<void> ManagedLedger::rollover() {
  auto self = shared_from_this();
  const LedgerId old_id = current_ ? current_->id() : LedgerId{};
  co_await close_current_ledger();
  if (state_ == State::kFenced || state_ == State::kClosed) co_return;
  bool drop_old = false;
  if (auto it = ledgers_.find(old_id); it != ledgers_.end() && it->second.entries == 0) {
    ledgers_.erase(it);
    drop_old = true;
  }
  if (consecutive_write_failures_ >= kMaxWriteAttempts) {
    // The same adds failed on several fresh ledgers: give up on them (the next add starts
    // over) rather than cycle through ledgers forever.
    log_.error("{} ledgers in a row failed the same adds; failing {} pending adds",
               consecutive_write_failures_, pending_adds_.size());
    consecutive_write_failures_ = 0;
    state_ = State::kClosedLedger;
    fail_pending(ml_error(Error::kWriteFailed, name_,
                          fmt::format("adds failed on {} ledgers in a row", kMaxWriteAttempts)));
    if (drop_old) (void)co_await factory_.bookkeeper().remove(old_id);
    co_return;
  }
  Status st = co_await create_ledger();
  if (!st.ok()) {
    log_.error("rollover failed: {}", st.to_string());
    if (state_ != State::kFenced && state_ != State::kClosed) {
      fail_pending(ml_error(Error::kWriteFailed, name_, st.message()));
      state_ = State::kClosedLedger;
    }
    co_return;
  }
  if (drop_old) (void)co_await factory_.bookkeeper().remove(old_id);
  // Re-send, in order, every add that was waiting or failed on the old ledger.
  for (auto& op : std::deque<std::shared_ptr<OpAdd>>(pending_adds_)) {
    if (state_ != State::kLedgerOpened) break;
    if (!op->ledger_id.valid() && !op->completed) send(op);
  }
  auto trimming = trim();
  (void)co_await std::move(trimming);
}

Task<void> ManagedLedger::rollover_timer(LedgerId ledger_id) {
  auto self = shared_from_this();
  asio::steady_timer timer(factory_.executor());
  while (current_ && current_->id() == ledger_id && state_ == State::kLedgerOpened) {
    const auto wait = std::max<int64_t>(
        10, static_cast<int64_t>(static_cast<double>(config_.max_rollover_time().count()) *
                                 rollover_jitter_) -
                (now_ms() - current_created_ms_));
    timer.expires_after(std::chrono::milliseconds(wait));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!current_ || current_->id() != ledger_id || state_ != State::kLedgerOpened) co_return;
    if (current_ledger_full()) {
      log_.info("ledger {} reached its maximum age; rolling over", ledger_id);
      state_ = State::kClosingLedger;
      maybe_start_rollover();
      co_return;
    }
  }
}

void ManagedLedger::fail_pending(const Status& status) {
  auto ops = std::move(pending_adds_);
  pending_adds_.clear();
  for (auto& op : ops) op->done(status);
  auto waiters = std::move(drained_waiters_);
  drained_waiters_.clear();
  for (auto& w : waiters) w(false);
}

void ManagedLedger::fence(const std::string& why) {
  if (state_ == State::kFenced) return;
  log_.error("fenced: {}", why);
  state_ = State::kFenced;
  fail_pending(ml_error(Error::kFenced, name_, why));
  notify_cursors();
}

Task<Result<Position>> ManagedLedger::terminate() {
  auto self = shared_from_this();
  if (terminated_ && state_ == State::kTerminated) co_return *terminated_;
  terminating_ = true;
  if (state_ == State::kFenced || state_ == State::kClosed) {
    co_return ml_error(state_ == State::kFenced ? Error::kFenced : Error::kClosed, name_,
                       "cannot terminate");
  }
  if (!pending_adds_.empty()) {
    auto drained = await_callback<bool>([self](std::function<void(bool)> done) {
      self->drained_waiters_.push_back(std::move(done));
    });
    bool ok = co_await std::move(drained);
    if (!ok) co_return ml_error(Error::kWriteFailed, name_, "pending adds failed");
  }
  // A rollover may be in flight: wait until it settles.
  while (state_ == State::kCreatingLedger || state_ == State::kClosingLedger) {
    asio::steady_timer timer(factory_.executor(), std::chrono::milliseconds(5));
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  terminated_ = last_confirmed_;
  co_await close_current_ledger();
  state_ = State::kTerminated;
  // Drop the empty current ledger, so the list ends at the terminated position.
  std::vector<LedgerId> empty;
  for (auto it = ledgers_.begin(); it != ledgers_.end();) {
    if (it->second.entries == 0 && ledgers_.size() > 1) {
      empty.push_back(it->first);
      it = ledgers_.erase(it);
    } else {
      ++it;
    }
  }
  Status st = co_await write_info();
  if (!st.ok()) co_return st;
  for (LedgerId id : empty) (void)co_await factory_.bookkeeper().remove(id);
  log_.info("terminated at {}", terminated_->to_string());
  notify_cursors();
  co_return *terminated_;
}

// ---------------------------------------------------------------------------------------
// Positions

int64_t ManagedLedger::entries_in(LedgerId ledger) const {
  auto it = ledgers_.find(ledger);
  return it == ledgers_.end() ? 0 : it->second.entries;
}

int64_t ManagedLedger::number_of_entries() const {
  int64_t n = 0;
  for (const auto& [id, li] : ledgers_) n += li.entries;
  return n;
}

Position ManagedLedger::first_position() const {
  for (const auto& [id, li] : ledgers_) {
    if (li.entries > 0) return Position{id, EntryId{0}};
  }
  return next_position(last_confirmed_);
}

Position ManagedLedger::next_position(Position p) const {
  const Position after{p.ledger_id, p.entry_id.next()};
  if (after.entry_id.value() < entries_in(p.ledger_id)) return after;
  for (auto it = ledgers_.upper_bound(p.ledger_id); it != ledgers_.end(); ++it) {
    if (it->second.entries > 0) return Position{it->first, EntryId{0}};
  }
  // Past the end: where the next add goes (the current ledger), or just after p.
  if (current_ && current_->id() >= p.ledger_id) {
    if (current_->id() == p.ledger_id) return after;
    return Position{current_->id(), EntryId{0}};
  }
  return after;
}

Position ManagedLedger::previous_position(Position p) const {
  if (p.entry_id > EntryId{0}) return Position{p.ledger_id, p.entry_id.prev()};
  // Before the first entry of p's ledger: the last entry of the previous non-empty ledger.
  auto it = ledgers_.lower_bound(p.ledger_id);
  while (it != ledgers_.begin()) {
    --it;
    if (it->second.entries > 0) return Position{it->first, EntryId{it->second.entries - 1}};
  }
  return Position{p.ledger_id, EntryId{}};
}

int64_t ManagedLedger::count_entries(Position from, Position to) const {
  if (to <= from) return 0;
  int64_t n = 0;
  for (auto it = ledgers_.lower_bound(from.ledger_id);
       it != ledgers_.end() && it->first <= to.ledger_id; ++it) {
    const int64_t last = it->second.entries - 1;
    const int64_t lo = it->first == from.ledger_id ? from.entry_id.value() + 1 : 0;
    const int64_t hi = it->first == to.ledger_id ? std::min(to.entry_id.value(), last) : last;
    if (hi >= lo) n += hi - lo + 1;
  }
  return n;
}

// ---------------------------------------------------------------------------------------
// Reads

Task<Result<std::shared_ptr<ledger::LedgerHandle>>> ManagedLedger::read_handle(LedgerId ledger_id) {
  auto self = shared_from_this();
  if (current_ && current_->id() == ledger_id) co_return current_;
  if (auto it = read_handles_.find(ledger_id); it != read_handles_.end()) co_return it->second;
  auto lh = co_await factory_.bookkeeper().open(ledger_id, config_.password, false);
  if (!lh.ok()) co_return lh.status();
  read_handles_[ledger_id] = *lh;
  co_return *lh;
}

Task<Result<std::vector<Entry>>> ManagedLedger::read_from_bookies(LedgerId ledger_id, EntryId first,
                                                                  EntryId last) {
  auto self = shared_from_this();
  auto lh = co_await read_handle(ledger_id);
  if (!lh.ok()) co_return lh.status();
  std::shared_ptr<ledger::LedgerHandle> handle = *lh;
  if (handle->last_add_confirmed() < last && !handle->closed()) {
    Status st = co_await handle->refresh_lac();
    if (!st.ok()) co_return st;
  }
  if (handle->last_add_confirmed() < last && !handle->closed() && handle != current_) {
    // A past ledger whose close never reached the metadata (its writer failed): the bookies
    // know its LAC only up to the entry before the last. Recover it (it is ours: no other
    // writer can be adding to it).
    log_.warn("ledger {} was never closed; recovering it to read entry {}", ledger_id, last);
    auto recovered = co_await factory_.bookkeeper().open(ledger_id, config_.password, true);
    if (!recovered.ok()) co_return recovered.status();
    handle = *recovered;
    read_handles_[ledger_id] = handle;
  }
  auto entries = co_await handle->read(first, last);
  if (!entries.ok()) co_return entries.status();
  ++counters_.bookie_read_batches;
  counters_.entries_read_from_bookies += static_cast<int64_t>(entries->size());
  std::vector<Entry> out;
  out.reserve(entries->size());
  for (auto& e : *entries)
    out.push_back(Entry{Position{ledger_id, e.entry_id}, std::move(e.payload)});
  co_return out;
}

Task<Result<std::vector<Entry>>> ManagedLedger::read(Position from, int max_entries,
                                                     int64_t max_bytes) {
  auto self = shared_from_this();
  std::vector<Entry> out;
  if (state_ == State::kClosed) co_return ml_error(Error::kClosed, name_, "closed");
  if (max_entries <= 0) co_return out;
  // A position past its ledger's end, or in a deleted ledger, moves to the next entry.
  if (!from.entry_id.valid()) from.entry_id = EntryId{0};
  if (from.entry_id.value() >= entries_in(from.ledger_id)) {
    auto it = ledgers_.upper_bound(from.ledger_id);
    while (it != ledgers_.end() && it->second.entries == 0) ++it;
    if (it == ledgers_.end()) co_return out;
    from = Position{it->first, EntryId{0}};
  }
  if (from > last_confirmed_) co_return out;
  EntryId last{entries_in(from.ledger_id) - 1};
  if (from.ledger_id == last_confirmed_.ledger_id) last = std::min(last, last_confirmed_.entry_id);
  int64_t count = std::min<int64_t>(max_entries, last - from.entry_id + 1);
  if (max_bytes > 0) {
    const int64_t entries = std::max<int64_t>(1, number_of_entries());
    const int64_t avg = std::max<int64_t>(1, total_size_ / entries);
    count = std::max<int64_t>(1, std::min(count, max_bytes / avg));
  }
  const EntryId end = from.entry_id + (count - 1);
  out.reserve(static_cast<size_t>(count));
  // Cached entries are served from memory; runs of misses are read from the bookies.
  EntryId e = from.entry_id;
  while (e <= end) {
    if (auto hit = cache_.get(Position{from.ledger_id, e})) {
      out.push_back(Entry{Position{from.ledger_id, e}, std::move(*hit)});
      ++counters_.entries_read_from_cache;
      ++e;
      continue;
    }
    EntryId run_end = e;
    while (run_end < end && !cache_.get(Position{from.ledger_id, run_end.next()})) ++run_end;
    auto batch = co_await read_from_bookies(from.ledger_id, e, run_end);
    if (!batch.ok()) {
      if (!out.empty()) co_return out;  // what was read so far; the rest on the next call
      co_return batch.status();
    }
    for (auto& entry : *batch) out.push_back(std::move(entry));
    e = run_end.next();
  }
  co_return out;
}

Task<Result<std::optional<Position>>> ManagedLedger::find_newest_matching(
    Position start, std::function<bool(const Entry&)> matches) {
  auto self = shared_from_this();
  // Positions in [start, last_confirmed] are numbered 0..n-1 over the ledger list.
  std::vector<Position> spans;   // the first position of each ledger's span
  std::vector<int64_t> offsets;  // index of each span's first position
  int64_t n = 0;
  for (const auto& [id, li] : ledgers_) {
    if (id < start.ledger_id || li.entries == 0) continue;
    const int64_t lo = id == start.ledger_id ? std::max<int64_t>(0, start.entry_id.value()) : 0;
    int64_t hi = li.entries - 1;
    if (id == last_confirmed_.ledger_id) hi = std::min(hi, last_confirmed_.entry_id.value());
    if (id > last_confirmed_.ledger_id || hi < lo) continue;
    spans.push_back(Position{id, EntryId{lo}});
    offsets.push_back(n);
    n += hi - lo + 1;
  }
  auto at = [&](int64_t index) {
    size_t s = static_cast<size_t>(std::upper_bound(offsets.begin(), offsets.end(), index) -
                                   offsets.begin() - 1);
    return Position{spans[s].ledger_id, spans[s].entry_id + (index - offsets[s])};
  };
  std::optional<Position> best;
  int64_t lo = 0, hi = n - 1;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const Position p = at(mid);
    auto entries = co_await read(p, 1);
    if (!entries.ok()) co_return entries.status();
    if (entries->empty()) break;
    if (matches(entries->front())) {
      best = p;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  co_return best;
}

// ---------------------------------------------------------------------------------------
// Cursors

Task<Result<std::shared_ptr<ManagedCursor>>> ManagedLedger::open_cursor(
    std::string name, InitialPosition initial,
    std::map<std::string, std::string> cursor_properties) {
  auto self = shared_from_this();
  if (auto it = cursors_.find(name); it != cursors_.end()) co_return it->second;
  if (state_ == State::kClosed || state_ == State::kFenced) {
    co_return ml_error(Error::kClosed, name_, "cannot open a cursor: closed or fenced");
  }
  auto cursor = std::make_shared<ManagedCursor>(*this, name, true);
  cursor->cursor_properties_ = std::move(cursor_properties);
  const Position mark_delete =
      initial == InitialPosition::kLatest ? last_confirmed_ : previous_position(first_position());
  Status st = co_await cursor->create(mark_delete);
  if (!st.ok()) co_return st;
  if (auto it = cursors_.find(name); it != cursors_.end()) co_return it->second;  // raced
  cursors_[name] = cursor;
  co_return cursor;
}

std::shared_ptr<ManagedCursor> ManagedLedger::new_non_durable_cursor(Position start,
                                                                     std::string name) {
  auto cursor = std::make_shared<ManagedCursor>(*this, std::move(name), false);
  if (start > next_position(last_confirmed_)) start = next_position(last_confirmed_);
  cursor->set_mark_delete(previous_position(start));
  cursor->read_position_ = start;
  cursor->last_active_ms_ = now_ms();
  non_durable_cursors_.push_back(cursor);
  return cursor;
}

void ManagedLedger::remove_non_durable_cursor(const std::shared_ptr<ManagedCursor>& cursor) {
  cursor->cancel_wait();
  std::erase(non_durable_cursors_, cursor);
  evict_cache();
}

std::shared_ptr<ManagedCursor> ManagedLedger::find_cursor(const std::string& name) const {
  auto it = cursors_.find(name);
  return it == cursors_.end() ? nullptr : it->second;
}

Task<Status> ManagedLedger::delete_cursor(std::string name) {
  auto self = shared_from_this();
  auto it = cursors_.find(name);
  if (it == cursors_.end()) {
    co_return Status(Error::kCursorNotFound,
                     fmt::format("managed ledger {}: no cursor {}", name_, name));
  }
  auto cursor = it->second;
  cursors_.erase(it);
  cursor->cancel_wait();
  cursor->closed_ = true;
  Status st = co_await cursor->remove_state();
  if (!st.ok()) co_return st;
  log_.info("deleted cursor {}", name);
  auto trimming = trim();
  (void)co_await std::move(trimming);
  co_return Status::OK();
}

void ManagedLedger::notify_cursors() {
  auto wake_all = [](auto& cursor) {
    if (cursor->waiter_) {
      auto w = std::move(cursor->waiter_);
      cursor->waiter_ = nullptr;
      w(Status::OK());
    }
  };
  for (auto& [n, c] : cursors_) wake_all(c);
  for (auto& c : non_durable_cursors_) wake_all(c);
}

std::optional<Position> ManagedLedger::slowest_durable_mark_delete() const {
  std::optional<Position> slowest;
  for (const auto& [n, c] : cursors_) {
    if (!slowest || c->mark_delete_ < *slowest) slowest = c->mark_delete_;
  }
  return slowest;
}

std::optional<Position> ManagedLedger::slowest_active_read_position() const {
  std::optional<Position> slowest;
  for (const auto& [n, c] : cursors_) {
    if (c->active_ && (!slowest || c->read_position_ < *slowest)) slowest = c->read_position_;
  }
  for (const auto& c : non_durable_cursors_) {
    if (!slowest || c->read_position_ < *slowest) slowest = c->read_position_;
  }
  return slowest;
}

void ManagedLedger::evict_cache() {
  auto slowest = slowest_active_read_position();
  if (!slowest) {
    cache_.clear();
  } else {
    cache_.evict_before(*slowest);
  }
}

void ManagedLedger::on_cursor_moved(Position old_md, Position new_md) {
  evict_cache();
  if (old_md.ledger_id != new_md.ledger_id) {
    auto self = shared_from_this();
    asio::co_spawn(
        factory_.executor(), [self]() -> Task<void> { (void)co_await self->trim(); },
        asio::detached);
  }
}

// ---------------------------------------------------------------------------------------
// Retention

Task<Status> ManagedLedger::trim() {
  auto self = shared_from_this();
  if (trimming_) {
    trim_again_ = true;
    co_return Status::OK();
  }
  if (state_ == State::kClosed || state_ == State::kFenced) co_return Status::OK();
  trimming_ = true;
  Status result;
  do {
    trim_again_ = false;
    const auto retention_ms = config_.retention_time().count();
    const int64_t retention_bytes =
        config_.retention_size_mb < 0 ? -1 : config_.retention_size_mb * 1024 * 1024;
    if (retention_ms < 0 && retention_bytes < 0) break;
    // Ledgers strictly before the one holding the slowest durable mark-delete (that one too
    // when fully consumed); never the current ledger.
    const LedgerId current_id = current_ledger_id();
    auto slowest = slowest_durable_mark_delete();
    std::vector<LedgerId> candidates;
    for (const auto& [id, li] : ledgers_) {
      if (id == current_id) break;
      if (!terminated_ && id == ledgers_.rbegin()->first) break;  // keep the write ledger
      if (slowest) {
        if (id > slowest->ledger_id) break;
        if (id == slowest->ledger_id && slowest->entry_id.value() < li.entries - 1) break;
      }
      candidates.push_back(id);
    }
    if (terminated_ && !candidates.empty() && candidates.back() == ledgers_.rbegin()->first) {
      candidates.pop_back();  // a terminated ledger keeps its last ledger (the end marker)
    }
    const int64_t now = now_ms();
    std::vector<LedgerId> doomed;
    int64_t selected = 0;
    for (LedgerId id : candidates) {
      const LedgerInfo& li = ledgers_[id];
      const bool expired = retention_ms >= 0 && now - li.timestamp_ms > retention_ms;
      const bool over_size =
          retention_bytes >= 0 && total_size_ - (selected + li.size) >= retention_bytes;
      if (!expired && !over_size) break;
      selected += li.size;
      doomed.push_back(id);
    }
    if (doomed.empty()) break;
    std::map<LedgerId, LedgerInfo> removed;
    for (LedgerId id : doomed) {
      removed[id] = ledgers_[id];
      ledgers_.erase(id);
    }
    Status st = co_await write_info();
    if (!st.ok()) {
      for (auto& [id, li] : removed) ledgers_[id] = li;
      result = st;
      break;
    }
    for (auto& [id, li] : removed) total_size_ -= li.size;
    // Non-durable cursors in a deleted ledger move past it.
    const Position first_kept = first_position();
    for (auto& c : non_durable_cursors_) {
      if (c->mark_delete_.ledger_id <= doomed.back()) {
        c->set_mark_delete(previous_position(first_kept));
        if (c->read_position_ < first_kept) c->read_position_ = first_kept;
      }
    }
    for (LedgerId id : doomed) {
      read_handles_.erase(id);
      Status removed_st = co_await factory_.bookkeeper().remove(id);
      if (!removed_st.ok() && !removed_st.is(Errc::kNotFound)) {
        log_.warn("ledger {} left behind: {}", id, removed_st.to_string());
      }
      ++counters_.ledgers_trimmed;
    }
    log_.info("trimmed {} consumed ledgers ({} bytes)", doomed.size(), selected);
  } while (trim_again_);
  trimming_ = false;
  co_return result;
}

int64_t ManagedLedger::estimated_backlog_size() const {
  auto slowest = slowest_durable_mark_delete();
  return slowest ? estimated_backlog_size(*slowest) : 0;
}

int64_t ManagedLedger::estimated_backlog_size(Position consumed) const {
  // Total size minus the ledgers before the position's and the consumed part of its ledger.
  int64_t size = total_size_;
  for (const auto& [id, li] : ledgers_) {
    if (id < consumed.ledger_id) {
      size -= li.size;
    } else if (id == consumed.ledger_id) {
      const int64_t upto = std::min(consumed.entry_id.value() + 1, li.entries);
      if (li.entries > 0 && upto > 0) size -= li.size * upto / li.entries;
    } else {
      break;
    }
  }
  return std::max<int64_t>(0, size);
}

// ---------------------------------------------------------------------------------------
// Lifecycle

Task<Status> ManagedLedger::close() {
  auto self = shared_from_this();
  if (state_ == State::kClosed) co_return Status::OK();
  if (closing_) {
    // A close is under way (the topic's and the factory's, say): wait for it, not a second
    // round of cursor and ledger closes racing the first.
    co_await wait_closed();
    co_return Status::OK();
  }
  closing_ = true;  // from here on adds fail: the current ledger is going away
  const bool was_fenced = state_ == State::kFenced;
  Status result;
  for (auto& [n, c] : cursors_) {
    c->cancel_wait();
    if (!was_fenced) {
      Status st = co_await c->close();
      if (!st.ok() && result.ok()) result = st;
    }
  }
  for (auto& c : non_durable_cursors_) c->cancel_wait();
  fail_pending(ml_error(Error::kClosed, name_, "closed"));
  if (current_ && !was_fenced) co_await close_current_ledger();
  state_ = State::kClosed;
  cache_.clear();
  read_handles_.clear();
  log_.info("closed");
  auto waiters = std::move(close_waiters_);
  for (auto& w : waiters) w(true);
  co_return result;
}

Task<void> ManagedLedger::wait_closed() {
  if (!closing_ || state_ == State::kClosed) co_return;
  auto turn = await_callback<bool>(
      [this](std::function<void(bool)> done) { close_waiters_.push_back(std::move(done)); });
  (void)co_await std::move(turn);
}

Task<Status> ManagedLedger::remove() {
  auto self = shared_from_this();
  Status st = co_await close();
  if (!st.ok()) log_.warn("close before delete: {}", st.to_string());
  for (auto& [n, c] : cursors_) {
    Status removed = co_await c->remove_state();
    if (!removed.ok()) co_return removed;
  }
  cursors_.clear();
  for (const auto& [id, li] : ledgers_) {
    Status removed = co_await factory_.bookkeeper().remove(id);
    if (!removed.ok() && !removed.is(Errc::kNotFound)) co_return removed;
  }
  ledgers_.clear();
  const std::string node = path();
  Status removed = co_await factory_.store().remove_recursive(node);
  if (!removed.ok()) co_return removed;
  log_.info("deleted");
  co_return Status::OK();
}

nlohmann::json ManagedLedger::internal_stats() const {
  nlohmann::json j;
  j["entriesAddedCounter"] = counters_.entries_added;
  j["numberOfEntries"] = number_of_entries();
  j["totalSize"] = total_size_;
  const LedgerId current_id = current_ledger_id();
  j["currentLedgerEntries"] = entries_in(current_id);
  j["currentLedgerSize"] = ledgers_.count(current_id) ? ledgers_.at(current_id).size : 0;
  j["lastLedgerCreatedTimestamp"] = current_created_ms_;
  int waiting = 0;
  for (const auto& [n, c] : cursors_) waiting += c->waiter_ ? 1 : 0;
  j["waitingCursorsCount"] = waiting;
  j["pendingAddEntriesCount"] = pending_adds_.size();
  j["lastConfirmedEntry"] = last_confirmed_.to_string();
  j["state"] = std::string(to_string(state_));
  nlohmann::json ledgers = nlohmann::json::array();
  for (const auto& [id, li] : ledgers_) {
    ledgers.push_back({{"ledgerId", id.value()},
                       {"entries", li.entries},
                       {"size", li.size},
                       {"timestamp", li.timestamp_ms},
                       {"offloaded", false},
                       {"underReplicated", false}});
  }
  j["ledgers"] = std::move(ledgers);
  nlohmann::json cursors = nlohmann::json::object();
  for (const auto& [n, c] : cursors_) cursors[n] = c->stats();
  j["cursors"] = std::move(cursors);
  if (terminated_) j["terminatedPosition"] = terminated_->to_string();
  j["cacheSize"] = cache_.size_bytes();
  j["cacheEntries"] = cache_.count();
  return j;
}

// ---------------------------------------------------------------------------------------
// Factory

ManagedLedgerFactory::ManagedLedgerFactory(metadata::MetadataStore& store, ledger::BookKeeper& bk,
                                           ManagedLedgerFactoryConfig config,
                                           std::shared_ptr<EntryCacheManager> cache)
    : store_(store),
      bk_(bk),
      config_(config),
      cache_(cache ? std::move(cache)
                   : std::make_shared<EntryCacheManager>(config.cache_size_bytes(),
                                                         config.cache_eviction_watermark)),
      log_(log::Logger("mledger")) {
  last_flush_ms_ = last_retention_ms_ = wall_ms();
  background_ = std::make_shared<Background>(bk_.executor());
  asio::co_spawn(bk_.executor(), background_loop(background_, this), asio::detached);
}

ManagedLedgerFactory::~ManagedLedgerFactory() {
  closed_ = true;
  background_->stopped = true;
  background_->timer.cancel();
}

const Executor& ManagedLedgerFactory::executor() const {
  return bk_.executor();
}

std::shared_ptr<ManagedLedger> ManagedLedgerFactory::find(const std::string& name) const {
  auto it = ledgers_.find(name);
  return it == ledgers_.end() ? nullptr : it->second;
}

Task<Result<std::shared_ptr<ManagedLedger>>> ManagedLedgerFactory::open(
    std::string name, ManagedLedgerConfig config) {
  if (closed_) co_return ml_error(Error::kClosed, name, "factory closed");
  if (auto path_ok = metadata::validate_path(managed_ledger_path(name)); !path_ok.ok()) {
    co_return ml_error(Error::kInvalidPosition, name, "invalid name: " + path_ok.message());
  }
  // One open at a time per name: later callers wait for the first.
  while (opening_.count(name)) {
    auto turn = await_callback<bool>([this, name](std::function<void(bool)> done) {
      opening_[name].push_back(std::move(done));
    });
    (void)co_await std::move(turn);
  }
  if (auto it = ledgers_.find(name); it != ledgers_.end()) {
    std::shared_ptr<ManagedLedger> cached = it->second;
    // One being closed (its topic unloading) is not handed out: a fresh one is opened once
    // the close has finished (it closes the ledger the new one then recovers).
    if (cached->closing()) co_await cached->wait_closed();
    if (cached->state() != ManagedLedger::State::kClosed &&
        cached->state() != ManagedLedger::State::kFenced) {
      co_return cached;
    }
    if (auto again = ledgers_.find(name); again != ledgers_.end() && again->second == cached) {
      ledgers_.erase(again);
    }
    // Another open may have started while this one waited.
    while (opening_.count(name)) {
      auto turn = await_callback<bool>([this, name](std::function<void(bool)> done) {
        opening_[name].push_back(std::move(done));
      });
      (void)co_await std::move(turn);
    }
    if (auto fresh = ledgers_.find(name); fresh != ledgers_.end() && !fresh->second->closing() &&
                                          fresh->second->state() != ManagedLedger::State::kClosed &&
                                          fresh->second->state() != ManagedLedger::State::kFenced) {
      co_return fresh->second;
    }
  }
  opening_[name];
  auto ml = std::make_shared<ManagedLedger>(*this, name, std::move(config));
  Status st = co_await ml->initialize();
  auto waiters = std::move(opening_[name]);
  opening_.erase(name);
  for (auto& w : waiters) w(true);
  if (!st.ok()) {
    (void)co_await ml->close();
    co_return st;
  }
  ledgers_[name] = ml;
  co_return ml;
}

Task<Status> ManagedLedgerFactory::remove(std::string name, ManagedLedgerConfig config) {
  auto ml = co_await open(name, std::move(config));
  if (!ml.ok()) co_return ml.status();
  Status st = co_await (*ml)->remove();
  ledgers_.erase(name);
  co_return st;
}

Task<Status> ManagedLedgerFactory::close() {
  closed_ = true;
  background_->stopped = true;
  background_->timer.cancel();
  Status result;
  auto ledgers = std::move(ledgers_);
  ledgers_.clear();
  for (auto& [name, ml] : ledgers) {
    Status st = co_await ml->close();
    if (!st.ok() && result.ok()) result = st;
  }
  co_return result;
}

void ManagedLedgerFactory::run_background_tasks(bool force_all) {
  const int64_t now = wall_ms();
  // Cache: entries older than the threshold, then the largest caches while over budget.
  const int64_t cutoff = now - config_.cache_eviction_time_threshold_ms;
  for (auto& [n, ml] : ledgers_) ml->cache_.evict_older_than(cutoff);
  if (int64_t excess = cache_->excess_bytes(); excess > 0) {
    std::vector<ManagedLedger*> by_size;
    for (auto& [n, ml] : ledgers_) by_size.push_back(ml.get());
    std::sort(by_size.begin(), by_size.end(),
              [](auto* a, auto* b) { return a->cache_.size_bytes() > b->cache_.size_bytes(); });
    for (auto* ml : by_size) {
      if (excess <= 0) break;
      excess -= ml->cache_.evict_bytes(excess);
    }
  }
  const auto flush_ms = static_cast<int64_t>(config_.cursor_position_flush_seconds * 1000);
  if (force_all || now - last_flush_ms_ >= flush_ms) {
    last_flush_ms_ = now;
    for (auto& [n, ml] : ledgers_) {
      for (auto& entry : ml->cursors_) {
        std::shared_ptr<ManagedCursor> cursor = entry.second;
        if (cursor->persisted_generation_ < cursor->generation_ && !cursor->persisting_) {
          asio::co_spawn(
              executor(), [cursor]() -> Task<void> { (void)co_await cursor->flush(); },
              asio::detached);
        }
      }
    }
  }
  const auto retention_ms = static_cast<int64_t>(config_.retention_check_interval_seconds * 1000);
  if (force_all || now - last_retention_ms_ >= retention_ms) {
    last_retention_ms_ = now;
    for (auto& [n, ml] : ledgers_) {
      auto target = ml;
      asio::co_spawn(
          executor(), [target]() -> Task<void> { (void)co_await target->trim(); }, asio::detached);
    }
  }
}

// Static, holding the shared state: it must not touch the factory once it is destroyed.
Task<void> ManagedLedgerFactory::background_loop(std::shared_ptr<Background> bg,
                                                 ManagedLedgerFactory* factory) {
  const auto interval = std::chrono::milliseconds(factory->config_.cache_eviction_interval_ms);
  while (!bg->stopped) {
    bg->timer.expires_after(interval);
    boost::system::error_code ec;
    co_await bg->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (bg->stopped) co_return;
    factory->run_background_tasks(false);
  }
}

}  // namespace magnetar::mledger
