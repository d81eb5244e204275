#include "broker/service/topic_compaction.h"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <string>
#include <nlohmann/json.hpp>

#include "ledger/bookkeeper.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* state_name(TopicCompaction::State s) {
  switch (s) {
    case TopicCompaction::State::kNotRun:
      return "NOT_RUN";
    case TopicCompaction::State::kRunning:
      return "RUNNING";
    case TopicCompaction::State::kSuccess:
      return "SUCCESS";
    case TopicCompaction::State::kError:
      return "ERROR";
  }
  return "NOT_RUN";
}

}  // namespace

TopicCompaction::TopicCompaction(std::shared_ptr<mledger::ManagedLedger> ml,
                                 compaction::CompactorOptions options)
    : ml_(std::move(ml)),
      options_(std::move(options)),
      log_(log::Logger("compaction").with("topic", options_.topic)) {
  if (auto cursor = ml_->find_cursor(compaction::kCursor)) {
    cursor->set_active(false);
    const auto& props = cursor->properties();
    if (auto it = props.find(compaction::kLedgerProperty); it != props.end()) {
      ledger_ = LedgerId{it->second};
      horizon_ = cursor->mark_delete_position();
    }
  }
}

std::optional<Position> TopicCompaction::horizon() const {
  if (!ledger_.valid()) return std::nullopt;
  return horizon_;
}

Task<Result<std::shared_ptr<compaction::CompactedLedger>>> TopicCompaction::view() {
  auto self = shared_from_this();
  if (!ledger_.valid()) co_return std::shared_ptr<compaction::CompactedLedger>();
  if (view_ && view_->id() == ledger_) co_return view_;
  const LedgerId wanted = ledger_;
  auto opened = co_await compaction::CompactedLedger::open(ml_->bookkeeper(), wanted, horizon_,
                                                           ml_->config().password);
  if (!opened.ok()) {
    co_return Status(opened.status().code(),
                     fmt::format("compacted ledger {} of {}: {}", wanted.value(), options_.topic,
                                 opened.status().message()));
  }
  if (ledger_ == wanted) view_ = *opened;
  co_return *opened;
}

int64_t TopicCompaction::uncompacted_bytes() const {
  if (auto cursor = ml_->find_cursor(compaction::kCursor)) {
    return ml_->estimated_backlog_size(cursor->mark_delete_position());
  }
  return ml_->total_size();
}

Task<Status> TopicCompaction::run() {
  auto self = shared_from_this();
  if (state_ == State::kRunning) {
    co_return Status(Errc::kAlreadyExists, "Compaction already in progress");
  }
  state_ = State::kRunning;
  const int64_t started = wall_ms();
  auto fail = [this, started](const Status& st) {
    state_ = State::kError;
    last_error_ = st.message();
    failed_ms_ = wall_ms();
    duration_ms_ = failed_ms_ - started;
    log_.warn("compaction failed: {}", st.to_string());
    return st;
  };
  auto previous = co_await view();
  if (!previous.ok()) co_return fail(previous.status());
  std::shared_ptr<mledger::ManagedCursor> cursor = ml_->find_cursor(compaction::kCursor);
  if (!cursor) {
    std::string name = compaction::kCursor;
    auto opened = co_await ml_->open_cursor(std::move(name), mledger::InitialPosition::kEarliest);
    if (!opened.ok()) co_return fail(opened.status());
    cursor = *opened;
    cursor->set_active(false);
  }
  auto result = co_await compaction::compact(ml_, *previous, options_);
  if (!result.ok()) co_return fail(result.status());
  if (*result) {
    const compaction::CompactionResult& r = **result;
    std::map<std::string, int64_t> properties;
    properties[compaction::kLedgerProperty] = r.ledger.value();
    Status st = co_await cursor->mark_delete(r.horizon, std::move(properties));
    if (st.ok()) st = co_await cursor->flush();
    if (!st.ok()) {
      (void)co_await ml_->bookkeeper().remove(r.ledger);
      co_return fail(st);
    }
    const LedgerId old = ledger_;
    ledger_ = r.ledger;
    horizon_ = r.horizon;
    view_.reset();
    removed_events_ = r.removed();
    if (old.valid() && old != ledger_) {
      Status removed = co_await ml_->bookkeeper().remove(old);
      if (!removed.ok()) {
        log_.warn("previous compacted ledger {} not deleted: {}", old.value(),
                  removed.to_string());
      }
    }
  } else {
    removed_events_ = 0;
  }
  state_ = State::kSuccess;
  last_error_.clear();
  succeeded_ms_ = wall_ms();
  duration_ms_ = succeeded_ms_ - started;
  co_return Status::OK();
}

Task<void> TopicCompaction::remove() {
  auto self = shared_from_this();
  if (!ledger_.valid()) co_return;
  const LedgerId id = ledger_;
  ledger_ = LedgerId{};
  view_.reset();
  Status st = co_await ml_->bookkeeper().remove(id);
  if (!st.ok()) log_.warn("compacted ledger {} not deleted: {}", id.value(), st.to_string());
}

nlohmann::json TopicCompaction::status_json() const {
  return {{"status", state_name(state_)}, {"lastError", last_error_}};
}

nlohmann::json TopicCompaction::stats_json() const {
  return {{"lastCompactionRemovedEventCount", removed_events_},
          {"lastCompactionSucceedTimestamp", succeeded_ms_},
          {"lastCompactionFailedTimestamp", failed_ms_},
          {"lastCompactionDurationTimeInMills", duration_ms_}};
}

nlohmann::json TopicCompaction::internal_stats_json() const {
  const bool known = view_ && view_->id() == ledger_;
  return {{"ledgerId", ledger_.valid() ? ledger_.value() : -1},
          {"entries", known ? view_->entries() : -1},
          {"size", known ? view_->size_bytes() : -1},
          {"offloaded", false},
          {"underReplicated", false}};
}

}  // namespace magnetar::broker
