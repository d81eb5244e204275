#include "broker/service/compacted_cursor.h"

#include "broker/service/topic_compaction.h"

namespace magnetar::broker {

using mledger::Entry;
using mledger::Position;

namespace {

const Position kBeforeEverything{LedgerId{-1}, EntryId{-1}};

// The position just after p within its ledger: compacted entries of deleted ledgers keep
// their order, which the managed ledger's next_position() (skipping deleted ledgers) loses.
Position successor(Position p) { return Position{p.ledger_id, EntryId{p.entry_id.value() + 1}}; }

}  // namespace

CompactedDispatchCursor::CompactedDispatchCursor(std::shared_ptr<mledger::ManagedLedger> ml,
                                                 std::shared_ptr<mledger::ManagedCursor> cursor,
                                                 std::shared_ptr<TopicCompaction> compaction)
    : ml_(std::move(ml)),
      cursor_(std::move(cursor)),
      compaction_(std::move(compaction)),
      inner_(managed_dispatch_cursor(ml_, cursor_)) {}

void CompactedDispatchCursor::set_read_compacted(bool on, bool from_earliest) {
  enabled_ = on;
  from_earliest_ = on && from_earliest;
  earliest_mark_delete_ = cursor_->mark_delete_position();
  from_.reset();
  hint_ = -1;
  if (from_earliest_) {
    from_ = kBeforeEverything;
    hint_ = 0;
  }
}

void CompactedDispatchCursor::leave_compacted(Position horizon) {
  // The compacted ledger is read: on with the topic after its horizon (unless a seek already
  // moved the cursor past it).
  from_.reset();
  hint_ = -1;
  if (cursor_->read_position() <= horizon) inner_->seek(ml_->next_position(horizon));
}

Position CompactedDispatchCursor::compacted_from() const {
  return from_ ? *from_ : cursor_->read_position();
}

Task<Result<std::vector<Entry>>> CompactedDispatchCursor::read_or_wait(int max) {
  // Off, the plain cursor's read itself: no coroutine of this one on the dispatch path.
  if (!enabled_) return inner_->read_or_wait(max);
  return compacted_read(max);
}

Task<Result<std::vector<Entry>>> CompactedDispatchCursor::compacted_read(int max) {
  auto self = shared_from_this();
  while (enabled_) {
    const auto horizon = compaction_->horizon();
    if (!horizon) break;
    const Position from = compacted_from();
    if (from > *horizon) {
      if (from_) leave_compacted(*horizon);
      break;
    }
    auto view = co_await compaction_->view();
    if (!view.ok()) co_return view.status();  // retried by the dispatcher
    if (!*view) break;
    auto got = co_await (*view)->read_from(from, max, hint_);
    if (!got.ok()) {
      hint_ = -1;
      co_return got.status();
    }
    if (got->empty()) {
      leave_compacted((*view)->horizon());
      break;
    }
    from_ = successor(got->back().position);
    std::vector<Entry> out;
    out.reserve(got->size());
    // From the earliest message, what lies below the cursor's first mark-delete position (the
    // compacted messages of deleted ledgers) is due too, unless acknowledged one by one.
    const bool from_start = from_earliest_ &&
                            cursor_->mark_delete_position() == earliest_mark_delete_;
    for (auto& e : *got) {
      const bool acked = from_start && e.position <= earliest_mark_delete_
                             ? cursor_->acked().contains(e.position)
                             : cursor_->is_acknowledged(e.position);
      if (!acked) out.push_back(std::move(e));
    }
    if (!out.empty()) co_return out;
  }
  co_return co_await inner_->read_or_wait(max);
}

Task<std::optional<Entry>> CompactedDispatchCursor::read_at(Position p) {
  const auto horizon = compaction_->horizon();
  if (!enabled_ || !horizon || p > *horizon) return inner_->read_at(p);
  return compacted_read_at(p);
}

Task<std::optional<Entry>> CompactedDispatchCursor::compacted_read_at(Position p) {
  auto self = shared_from_this();
  {
    auto view = co_await compaction_->view();
    if (view.ok() && *view) {
      auto found = co_await (*view)->find(p);
      if (found.ok() && *found) co_return std::move(**found);
    }
  }
  co_return co_await inner_->read_at(p);
}

bool CompactedDispatchCursor::is_acknowledged(Position p) const {
  return inner_->is_acknowledged(p);
}

bool CompactedDispatchCursor::has_more_entries() const {
  if (enabled_) {
    const auto horizon = compaction_->horizon();
    if (horizon && compacted_from() <= *horizon) return true;
  }
  return inner_->has_more_entries();
}

void CompactedDispatchCursor::seek(Position p) {
  inner_->seek(p);
  from_earliest_ = false;
  hint_ = -1;
  if (enabled_) from_ = p;
}

void CompactedDispatchCursor::rewind() {
  inner_->rewind();
  if (!enabled_) return;
  hint_ = -1;
  const Position md = cursor_->mark_delete_position();
  if (from_earliest_ && md == earliest_mark_delete_) {
    from_ = kBeforeEverything;
    hint_ = 0;
  } else {
    from_earliest_ = false;
    from_ = successor(md);
  }
}

void CompactedDispatchCursor::cancel_wait() { inner_->cancel_wait(); }

}  // namespace magnetar::broker
