// ManagedCursor: a subscription's position in a managed ledger and its persistence.
//
// Durable state is the mark-delete position, the individually acknowledged positions after
// it (as ranges) and the mark-delete properties. Every persisted update appends one
// PositionInfo to the cursor's own ledger; the metadata node (ManagedCursorInfo) points at
// that ledger, or holds the position itself (cursorsLedgerId = -1) after a clean close or a
// cursor-ledger failure. Persistence is serialised: one write at a time, later changes
// coalesced into the next write.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "ledger/bookkeeper.h"
#include "metadata/metadata_store.h"
#include "mledger/managed_ledger.h"
#include "proto/managed_ledger.pb.h"

namespace magnetar::mledger {

namespace wire = magnetar::mledger_wire;

namespace {

void set_position(wire::NestedPositionInfo* out, LedgerId ledger, int64_t entry_id) {
  out->set_ledgerid(ledger.value());
  out->set_entryid(entry_id);
}

// Ranges as Pulsar stores them: (first - 1, last], lowest first, at most `max`.
template <typename Message>
void add_ranges(const AckSet& acked, size_t max, Message* out,
                wire::MessageRange* (Message::*add)()) {
  acked.for_each_range([&](const AckSet::Range& r) {
    if (max == 0) return false;
    --max;
    wire::MessageRange* range = (out->*add)();
    set_position(range->mutable_lowerendpoint(), r.ledger_id, r.first - 1);
    set_position(range->mutable_upperendpoint(), r.ledger_id, r.last);
    return true;
  });
}

}  // namespace

ManagedCursor::ManagedCursor(ManagedLedger& ml, std::string name, bool durable)
    : ml_(ml),
      name_(std::move(name)),
      durable_(durable),
      log_(log::Logger("mledger").with("ml", ml.name()).with("cursor", name_)) {}

ManagedCursor::~ManagedCursor() = default;

std::string ManagedCursor::path() const {
  return metadata::join_path(managed_ledger_path(ml_.name()), name_);
}

LedgerId ManagedCursor::cursor_ledger_id() const {
  return ledger_ ? ledger_->id() : node_ledger_id_;
}

// ---------------------------------------------------------------------------------------
// Position bookkeeping

void ManagedCursor::set_mark_delete(Position p) {
  mark_delete_ = p;
  acked_.remove_through(p);
}

// Moves the mark-delete position over individually acknowledged entries that follow it.
void ManagedCursor::advance_mark_delete() {
  const Position last = ml_.last_confirmed();
  while (true) {
    const Position next = ml_.next_position(mark_delete_);
    if (next > last || !acked_.contains(next)) break;
    int64_t end = acked_.first_absent(next.ledger_id, next.entry_id.value()) - 1;
    end = std::min(end, ml_.entries_in(next.ledger_id) - 1);
    mark_delete_ = Position{next.ledger_id, EntryId{end}};
  }
  acked_.remove_through(mark_delete_);
  if (read_position_ <= mark_delete_) read_position_ = ml_.next_position(mark_delete_);
}

bool ManagedCursor::is_acknowledged(Position p) const {
  return p <= mark_delete_ || acked_.contains(p);
}

bool ManagedCursor::has_more_entries() const {
  return ml_.count_entries(Position{read_position_.ledger_id, read_position_.entry_id.prev()},
                           ml_.last_confirmed()) > 0;
}

int64_t ManagedCursor::backlog_entries() const {
  return std::max<int64_t>(0,
                           ml_.count_entries(mark_delete_, ml_.last_confirmed()) - acked_.size());
}

int64_t ManagedCursor::backlog_bytes() const {
  const int64_t entries = std::max<int64_t>(1, ml_.number_of_entries());
  return backlog_entries() * (ml_.total_size() / entries);
}

// ---------------------------------------------------------------------------------------
// Reads

// A backlog read started ahead of the cursor's next read (see read()).
struct ManagedCursor::ReadAhead {
  Position from;
  int max_entries = 0;
  int64_t max_bytes = 0;
  std::optional<Result<std::vector<Entry>>> result;
  std::function<void()> waiter;
};

Task<Result<std::vector<Entry>>> ManagedCursor::fetch(int max_entries, int64_t max_bytes) {
  auto self = shared_from_this();
  auto ahead = std::move(read_ahead_);
  read_ahead_.reset();
  if (ahead && ahead->from == read_position_ && ahead->max_entries == max_entries &&
      ahead->max_bytes == max_bytes) {
    auto ready = await_callback<bool>([ahead](std::function<void(bool)> done) {
      if (ahead->result) {
        done(true);
        return;
      }
      ahead->waiter = [done = std::move(done)] { done(true); };
    });
    (void)co_await std::move(ready);
    co_return std::move(*ahead->result);
  }
  co_return co_await ml_.read(read_position_, max_entries, max_bytes);
}

void ManagedCursor::start_read_ahead(int max_entries, int64_t max_bytes) {
  auto ahead = std::make_shared<ReadAhead>();
  ahead->from = read_position_;
  ahead->max_entries = max_entries;
  ahead->max_bytes = max_bytes;
  read_ahead_ = ahead;
  auto ml = ml_.shared_from_this();
  asio::co_spawn(
      ml_.factory_.executor(),
      [ml, ahead]() -> Task<void> {
        auto entries = co_await ml->read(ahead->from, ahead->max_entries, ahead->max_bytes);
        ahead->result.emplace(std::move(entries));
        if (ahead->waiter) {
          auto w = std::move(ahead->waiter);
          ahead->waiter = nullptr;
          w();
        }
      },
      asio::detached);
}

Task<Result<std::vector<Entry>>> ManagedCursor::read(int max_entries, int64_t max_bytes) {
  auto self = shared_from_this();
  while (true) {
    if (closed_) co_return Status(Error::kClosed, "cursor " + name_ + " closed");
    const int64_t from_bookies = ml_.counters().entries_read_from_bookies;
    auto entries = co_await fetch(max_entries, max_bytes);
    if (!entries.ok() || entries->empty()) co_return entries;
    read_position_ = ml_.next_position(entries->back().position);
    // A backlogged cursor reading from the bookies: the next batch is read while this one is
    // dispatched.
    if (ml_.counters().entries_read_from_bookies > from_bookies && has_more_entries()) {
      start_read_ahead(max_entries, max_bytes);
    }
    std::erase_if(*entries, [this](const Entry& e) { return is_acknowledged(e.position); });
    if (!entries->empty()) {
      last_active_ms_ = ml_.now_ms();
      ml_.evict_cache();
      co_return entries;
    }
  }
}

Task<Result<std::vector<Entry>>> ManagedCursor::read_or_wait(int max_entries, int64_t max_bytes) {
  auto self = shared_from_this();
  while (true) {
    auto entries = co_await read(max_entries, max_bytes);
    if (!entries.ok() || !entries->empty()) co_return entries;
    if (ml_.terminated() && !has_more_entries()) {
      co_return Status(Error::kNoMoreEntries,
                       fmt::format("managed ledger {} terminated at {}", ml_.name(),
                                   ml_.last_confirmed().to_string()));
    }
    if (ml_.state() == ManagedLedger::State::kClosed ||
        ml_.state() == ManagedLedger::State::kFenced) {
      co_return Status(Error::kClosed, "managed ledger " + ml_.name() + " closed");
    }
    auto waiting = await_callback<Status>([self](std::function<void(Status)> wake) {
      if (self->has_more_entries() || self->closed_) {
        wake(Status::OK());
        return;
      }
      if (self->waiter_) {  // a second reader replaces the first, which is cancelled
        self->waiter_(Status(Error::kCancelled, "read replaced"));
      }
      self->waiter_ = std::move(wake);
    });
    Status st = co_await std::move(waiting);
    if (!st.ok()) co_return st;
  }
}

void ManagedCursor::cancel_wait() {
  if (!waiter_) return;
  auto w = std::move(waiter_);
  waiter_ = nullptr;
  w(Status(Error::kCancelled, "read cancelled"));
}

// ---------------------------------------------------------------------------------------
// Acknowledgements

Task<Status> ManagedCursor::mark_delete(Position p, std::map<std::string, int64_t> properties) {
  auto self = shared_from_this();
  if (p > ml_.last_confirmed()) {
    co_return Status(Error::kInvalidPosition,
                     fmt::format("cursor {}: mark-delete {} is past the last entry {}", name_,
                                 p.to_string(), ml_.last_confirmed().to_string()));
  }
  if (p < mark_delete_) co_return Status::OK();  // already consumed
  const Position old = mark_delete_;
  set_mark_delete(p);
  advance_mark_delete();
  properties_ = std::move(properties);
  ml_.on_cursor_moved(old, mark_delete_);
  co_return co_await changed(false);
}

Task<Status> ManagedCursor::delete_positions(std::vector<Position> positions) {
  auto self = shared_from_this();
  const Position last = ml_.last_confirmed();
  bool any = false;
  for (const Position& p : positions) {
    if (p <= mark_delete_ || p > last || !p.entry_id.valid()) continue;
    if (p.entry_id.value() >= ml_.entries_in(p.ledger_id)) continue;
    any |= acked_.insert(p);
  }
  if (!any) co_return Status::OK();
  const Position old = mark_delete_;
  advance_mark_delete();
  ml_.on_cursor_moved(old, mark_delete_);
  co_return co_await changed(false);
}

void ManagedCursor::seek(Position read_from) {
  const Position first_unconsumed = ml_.next_position(mark_delete_);
  read_position_ = std::max(read_from, first_unconsumed);
}

Task<Status> ManagedCursor::reset(Position read_from) {
  auto self = shared_from_this();
  const Position end = ml_.next_position(ml_.last_confirmed());
  if (read_from > end) read_from = end;
  if (read_from < ml_.first_position()) read_from = ml_.first_position();
  const Position old = mark_delete_;
  acked_.clear();
  mark_delete_ = ml_.previous_position(read_from);
  read_position_ = read_from;
  log_.info("reset to {} (mark-delete {})", read_from.to_string(), mark_delete_.to_string());
  ml_.on_cursor_moved(old, mark_delete_);
  co_return co_await changed(true);
}

Task<Status> ManagedCursor::skip_entries(int64_t n) {
  auto self = shared_from_this();
  const Position last = ml_.last_confirmed();
  Position p = mark_delete_;
  while (n > 0) {
    const Position next = ml_.next_position(p);
    if (next > last) break;
    p = next;
    if (!acked_.contains(p)) --n;
  }
  if (p == mark_delete_) co_return Status::OK();
  const Position old = mark_delete_;
  set_mark_delete(p);
  advance_mark_delete();
  ml_.on_cursor_moved(old, mark_delete_);
  co_return co_await changed(true);
}

Task<Status> ManagedCursor::clear_backlog() {
  auto self = shared_from_this();
  const Position old = mark_delete_;
  set_mark_delete(std::max(mark_delete_, ml_.last_confirmed()));
  advance_mark_delete();
  ml_.on_cursor_moved(old, mark_delete_);
  co_return co_await changed(true);
}

Task<Status> ManagedCursor::set_cursor_properties(std::map<std::string, std::string> props) {
  auto self = shared_from_this();
  cursor_properties_ = std::move(props);
  if (!durable_) co_return Status::OK();
  co_return co_await write_node(node_ledger_id_);
}

// ---------------------------------------------------------------------------------------
// Persistence

bool ManagedCursor::rate_allows_persist() const {
  const double rate = ml_.config().mark_delete_rate_limit;
  if (rate <= 0) return true;
  return static_cast<double>(ml_.now_ms() - last_persist_ms_) >= 1000.0 / rate;
}

// Records a state change. Durable cursors persist it (and the returned task waits for
// that) unless the rate limit defers it to the periodic flush.
Task<Status> ManagedCursor::changed(bool force) {
  auto self = shared_from_this();
  ++generation_;
  last_active_ms_ = ml_.now_ms();
  if (!durable_ || closed_) co_return Status::OK();
  if (!force && !rate_allows_persist()) co_return Status::OK();
  co_return co_await flush();
}

Task<Status> ManagedCursor::flush() {
  auto self = shared_from_this();
  if (!durable_ || persisted_generation_ >= generation_) co_return Status::OK();
  const uint64_t wanted = generation_;
  if (!persisting_) {
    // Marked here, not when the loop starts running: several updates in one turn of the
    // loop must not start several persist loops (each would create a cursor ledger).
    persisting_ = true;
    asio::co_spawn(ml_.factory_.executor(), persist_loop(), asio::detached);
  }
  auto waiting = await_callback<Status>([self, wanted](std::function<void(Status)> done) {
    if (self->persisted_generation_ >= wanted) {
      done(Status::OK());
      return;
    }
    self->persist_waiters_.push_back(PersistWaiter{wanted, std::move(done)});
  });
  co_return co_await std::move(waiting);
}

Task<void> ManagedCursor::persist_loop() {
  auto self = shared_from_this();
  persisting_ = true;
  while (persisted_generation_ < generation_) {
    const uint64_t target = generation_;
    last_persist_ms_ = ml_.now_ms();
    Status st = co_await persist_once();
    if (st.ok()) persisted_generation_ = target;
    std::vector<PersistWaiter> waiting;
    std::swap(waiting, persist_waiters_);
    for (auto& w : waiting) {
      if (w.generation <= target) {
        w.done(st);
      } else {
        persist_waiters_.push_back(std::move(w));
      }
    }
    if (!st.ok()) {
      log_.warn("cannot persist position {}: {}", mark_delete_.to_string(), st.to_string());
      break;
    }
  }
  persisting_ = false;
}

std::string ManagedCursor::position_info_bytes() const {
  wire::PositionInfo info;
  info.set_ledgerid(mark_delete_.ledger_id.value());
  info.set_entryid(mark_delete_.entry_id.value());
  add_ranges(acked_, static_cast<size_t>(ml_.config().max_unacked_ranges_to_persist), &info,
             &wire::PositionInfo::add_individualdeletedmessages);
  for (const auto& [k, v] : properties_) {
    auto* p = info.add_properties();
    p->set_name(k);
    p->set_value(v);
  }
  return info.SerializeAsString();
}

Task<Status> ManagedCursor::persist_once() {
  auto self = shared_from_this();
  std::string bytes = position_info_bytes();
  if (ledger_ && ledger_entries_ < ml_.config().cursor_max_entries_per_ledger) {
    BufferChain payload(Buffer::copy_of(bytes));
    auto added = co_await ledger_->add(std::move(payload));
    if (added.ok()) {
      ++ledger_entries_;
      co_return Status::OK();
    }
    log_.warn("cursor ledger {} failed ({}); position goes to the metadata store", ledger_->id(),
              added.status().to_string());
    ledger_.reset();
    const LedgerId old = node_ledger_id_;
    Status st = co_await write_node(LedgerId{});
    if (st.ok() && old.valid()) (void)co_await ml_.factory_.bookkeeper().remove(old);
    co_return st;
  }
  co_return co_await switch_ledger(std::move(bytes));
}

// A new cursor ledger: write the position to it, point the node at it, drop the old one.
Task<Status> ManagedCursor::switch_ledger(std::string position_info) {
  auto self = shared_from_this();
  auto& bk = ml_.factory_.bookkeeper();
  const auto& config = ml_.config();
  auto custom = ml_.ledger_custom_metadata();
  custom["pulsar/cursor"] = name_;
  auto created = co_await bk.create(config.ensemble_size, config.write_quorum, config.ack_quorum,
                                    config.password, std::move(custom));
  Status failure;
  if (created.ok()) {
    BufferChain payload(Buffer::copy_of(position_info));
    auto added = co_await (*created)->add(std::move(payload));
    if (added.ok()) {
      const LedgerId old = node_ledger_id_;
      Status st = co_await write_node((*created)->id());
      if (st.ok()) {
        auto previous = std::move(ledger_);
        ledger_ = *created;
        ledger_entries_ = 1;
        if (previous) (void)co_await previous->close();
        if (old.valid() && old != ledger_->id()) {
          Status removed = co_await bk.remove(old);
          if (!removed.ok() && !removed.is(Errc::kNotFound)) {
            log_.warn("old cursor ledger {} left behind: {}", old, removed.to_string());
          }
        }
        co_return Status::OK();
      }
      failure = st;
    } else {
      failure = added.status();
    }
    (void)co_await bk.remove((*created)->id());
  } else {
    failure = created.status();
  }
  if (failure.is(Errc::kBadVersion) || failure.is(Errc::kFenced)) co_return failure;
  // No usable ledger: the metadata store holds the position (and some ranges) instead.
  log_.warn("no cursor ledger ({}); position goes to the metadata store", failure.to_string());
  const LedgerId old = node_ledger_id_;
  Status st = co_await write_node(LedgerId{});
  if (st.ok() && old.valid()) (void)co_await bk.remove(old);
  co_return st;
}

// The metadata node; with ledger id -1 it carries the position and ranges itself.
Task<Status> ManagedCursor::write_node(LedgerId cursors_ledger) {
  auto self = shared_from_this();
  wire::ManagedCursorInfo info;
  info.set_cursorsledgerid(cursors_ledger.value());
  info.set_markdeleteledgerid(mark_delete_.ledger_id.value());
  info.set_markdeleteentryid(mark_delete_.entry_id.value());
  if (!cursors_ledger.valid()) {
    add_ranges(acked_,
               static_cast<size_t>(ml_.config().max_unacked_ranges_to_persist_in_metadata_store),
               &info, &wire::ManagedCursorInfo::add_individualdeletedmessages);
  }
  for (const auto& [k, v] : properties_) {
    auto* p = info.add_properties();
    p->set_name(k);
    p->set_value(v);
  }
  info.set_lastactive(last_active_ms_);
  for (const auto& [k, v] : cursor_properties_) {
    auto* p = info.add_cursorproperties();
    p->set_name(k);
    p->set_value(v);
  }
  metadata::PutOptions options;
  options.expected_version = node_version_;
  const std::string node = path();
  std::string value = info.SerializeAsString();
  auto r = co_await ml_.factory_.store().put(node, std::move(value), options);
  if (!r.ok()) {
    co_return Status(
        r.status().is(Errc::kBadVersion) ? Error::kFenced : Error::kMetadata,
        fmt::format("cursor {}: cannot write its node: {}", name_, r.status().to_string()));
  }
  node_version_ = r->stat.version;
  node_ledger_id_ = cursors_ledger;
  co_return Status::OK();
}

Task<Status> ManagedCursor::create(Position mark_delete) {
  auto self = shared_from_this();
  set_mark_delete(mark_delete);
  read_position_ = ml_.next_position(mark_delete_);
  last_active_ms_ = ml_.now_ms();
  node_version_ = -1;  // must not exist yet
  Status st = co_await write_node(LedgerId{});
  if (st.ok()) log_.info("created at {}", mark_delete_.to_string());
  co_return st;
}

namespace {

// Acknowledged ranges from their stored form; a range spanning ledgers (possible in state
// written by others) is split over the ledgers in between.
void load_ranges(const google::protobuf::RepeatedPtrField<wire::MessageRange>& ranges,
                 const std::map<LedgerId, LedgerInfo>& ledgers, AckSet* acked) {
  for (const auto& r : ranges) {
    const LedgerId lo_ledger{r.lowerendpoint().ledgerid()};
    const LedgerId hi_ledger{r.upperendpoint().ledgerid()};
    const int64_t lo_entry = r.lowerendpoint().entryid() + 1,
                  hi_entry = r.upperendpoint().entryid();
    if (lo_ledger == hi_ledger) {
      acked->insert_range(lo_ledger, lo_entry, hi_entry);
      continue;
    }
    for (auto it = ledgers.lower_bound(lo_ledger); it != ledgers.end() && it->first <= hi_ledger;
         ++it) {
      const int64_t first = it->first == lo_ledger ? lo_entry : 0;
      const int64_t last = it->first == hi_ledger ? hi_entry : it->second.entries - 1;
      acked->insert_range(it->first, first, last);
    }
  }
}

void load_properties(const google::protobuf::RepeatedPtrField<wire::LongProperty>& props,
                     std::map<std::string, int64_t>* out) {
  out->clear();
  for (const auto& p : props) (*out)[p.name()] = p.value();
}

}  // namespace

Task<Status> ManagedCursor::recover(std::string value, int64_t version) {
  auto self = shared_from_this();
  wire::ManagedCursorInfo info;
  if (!info.ParseFromString(value)) {
    co_return Status(Error::kCorruptMetadata,
                     fmt::format("cursor {} of {}: node does not parse", name_, ml_.name()));
  }
  node_version_ = version;
  node_ledger_id_ = LedgerId{info.cursorsledgerid()};
  last_active_ms_ = info.lastactive();
  for (const auto& p : info.cursorproperties()) cursor_properties_[p.name()] = p.value();
  Position md{LedgerId{info.markdeleteledgerid()}, EntryId{info.markdeleteentryid()}};
  load_properties(info.properties(), &properties_);
  bool from_ledger = false;
  if (node_ledger_id_.valid()) {
    // The last entry of the cursor ledger is the newest persisted position. Opening it with
    // recovery also fences a previous owner's writes.
    auto& bk = ml_.factory_.bookkeeper();
    auto lh = co_await bk.open(node_ledger_id_, ml_.config().password, true);
    if (lh.ok() && (*lh)->metadata().last_entry_id >= 0) {
      const EntryId last{(*lh)->metadata().last_entry_id};
      auto entries = co_await (*lh)->read(last, last);
      wire::PositionInfo pi;
      if (entries.ok() && !entries->empty() &&
          pi.ParseFromString(std::string(entries->front().payload.view()))) {
        md = Position{LedgerId{pi.ledgerid()}, EntryId{pi.entryid()}};
        load_ranges(pi.individualdeletedmessages(), ml_.ledgers(), &acked_);
        load_properties(pi.properties(), &properties_);
        from_ledger = true;
      } else {
        log_.warn("cursor ledger {}: last entry unreadable; using the metadata snapshot",
                  node_ledger_id_);
      }
    } else {
      log_.warn("cursor ledger {} unusable ({}); using the metadata snapshot", node_ledger_id_,
                lh.ok() ? std::string("empty") : lh.status().to_string());
    }
  }
  if (!from_ledger) load_ranges(info.individualdeletedmessages(), ml_.ledgers(), &acked_);
  if (md > ml_.last_confirmed()) md = ml_.last_confirmed();
  set_mark_delete(md);
  read_position_ = ml_.next_position(mark_delete_);
  advance_mark_delete();
  generation_ = persisted_generation_ = 0;
  log_.info("recovered at {} with {} acknowledged ranges (from {})", mark_delete_.to_string(),
            acked_.range_count(), from_ledger ? "cursor ledger" : "metadata");
  co_return Status::OK();
}

Task<Status> ManagedCursor::close() {
  auto self = shared_from_this();
  cancel_wait();
  if (!durable_ || closed_) {
    closed_ = true;
    co_return Status::OK();
  }
  Status st = co_await flush();
  closed_ = true;
  if (!st.ok()) co_return st;
  const auto limit =
      static_cast<int64_t>(ml_.config().max_unacked_ranges_to_persist_in_metadata_store);
  if (acked_.range_count() <= limit) {
    // Everything fits the node: the cursor ledger is no longer needed.
    const LedgerId old = node_ledger_id_;
    st = co_await write_node(LedgerId{});
    if (!st.ok()) co_return st;
    if (ledger_) (void)co_await ledger_->close();
    ledger_.reset();
    if (old.valid()) (void)co_await ml_.factory_.bookkeeper().remove(old);
  } else if (ledger_) {
    (void)co_await ledger_->close();
    ledger_.reset();
  }
  co_return Status::OK();
}

Task<Status> ManagedCursor::remove_state() {
  auto self = shared_from_this();
  closed_ = true;
  if (!durable_) co_return Status::OK();
  const std::string node = path();
  Status st = co_await ml_.factory_.store().remove(node);
  if (!st.ok() && !st.is(Errc::kNotFound)) co_return st;
  if (ledger_) (void)co_await ledger_->close();
  const LedgerId id = cursor_ledger_id();
  ledger_.reset();
  if (id.valid()) {
    Status removed = co_await ml_.factory_.bookkeeper().remove(id);
    if (!removed.ok() && !removed.is(Errc::kNotFound)) {
      log_.warn("cursor ledger {} left behind: {}", id, removed.to_string());
    }
  }
  co_return Status::OK();
}

nlohmann::json ManagedCursor::stats() const {
  nlohmann::json j;
  j["markDeletePosition"] = mark_delete_.to_string();
  j["readPosition"] = read_position_.to_string();
  j["waitingReadOp"] = static_cast<bool>(waiter_);
  j["pendingReadOps"] = 0;
  j["messagesConsumedCounter"] = ml_.counters().entries_added - backlog_entries();
  j["cursorLedger"] = cursor_ledger_id().value();
  j["cursorLedgerLastEntry"] = ledger_entries_ - 1;
  std::string ranges = "[";
  int shown = 0;
  acked_.for_each_range([&](const AckSet::Range& r) {
    if (shown++ > 0) ranges += ", ";
    ranges += fmt::format("({}:{}..{}:{}]", r.ledger_id, r.first - 1, r.ledger_id, r.last);
    return shown < 1000;
  });
  ranges += "]";
  j["individuallyDeletedMessages"] = ranges;
  j["lastLedgerSwitchTimestamp"] = "";
  j["state"] = closed_ ? "Closed" : (ledger_ ? "Open" : "NoLedger");
  j["active"] = active_;
  j["numberOfEntriesSinceFirstNotAckedMessage"] =
      ml_.count_entries(mark_delete_, read_position_) + 1;
  j["totalNonContiguousDeletedMessagesRange"] = acked_.range_count();
  j["properties"] = properties_;
  return j;
}

}  // namespace magnetar::mledger
