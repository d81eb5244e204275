#include "broker/service/dispatch_cursor.h"

namespace magnetar::broker {

namespace {

class ManagedDispatchCursor final : public DispatchCursor {
 public:
  ManagedDispatchCursor(std::shared_ptr<mledger::ManagedLedger> ledger,
                        std::shared_ptr<mledger::ManagedCursor> cursor)
      : ledger_(std::move(ledger)), cursor_(std::move(cursor)) {}

  Task<Result<std::vector<mledger::Entry>>> read_or_wait(int max) override {
    co_return co_await cursor_->read_or_wait(max);
  }
  Task<std::optional<mledger::Entry>> read_at(mledger::Position p) override {
    auto one = co_await ledger_->read(p, 1);
    if (!one.ok() || one->empty() || one->front().position != p) co_return std::nullopt;
    co_return std::move(one->front());
  }
  bool is_acknowledged(mledger::Position p) const override { return cursor_->is_acknowledged(p); }
  bool has_more_entries() const override { return cursor_->has_more_entries(); }
  void seek(mledger::Position p) override { cursor_->seek(p); }
  void rewind() override { cursor_->seek(ledger_->next_position(cursor_->mark_delete_position())); }
  void cancel_wait() override { cursor_->cancel_wait(); }

 private:
  std::shared_ptr<mledger::ManagedLedger> ledger_;
  std::shared_ptr<mledger::ManagedCursor> cursor_;
};

}  // namespace

std::shared_ptr<DispatchCursor> managed_dispatch_cursor(
    std::shared_ptr<mledger::ManagedLedger> ledger,
    std::shared_ptr<mledger::ManagedCursor> cursor) {
  return std::make_shared<ManagedDispatchCursor>(std::move(ledger), std::move(cursor));
}

}  // namespace magnetar::broker
