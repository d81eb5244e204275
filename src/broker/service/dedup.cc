#include "broker/service/dedup.h"

#include "broker/service/entry_metadata.h"
#include "common/logging.h"

namespace magnetar::broker {

using mledger::Position;

Deduplication::Deduplication(std::shared_ptr<mledger::ManagedCursor> cursor, Executor executor,
                             Gate& gate, std::map<std::string, int64_t> persisted)
    : cursor_(std::move(cursor)),
      executor_(std::move(executor)),
      gate_(gate),
      pushed_(persisted),
      persisted_(std::move(persisted)) {}

Task<Result<std::unique_ptr<Deduplication>>> Deduplication::open(mledger::ManagedLedger& ml,
                                                                 Executor executor, Gate& gate) {
  auto cursor = co_await ml.open_cursor(kCursor, mledger::InitialPosition::kEarliest);
  if (!cursor.ok()) co_return cursor.status();
  (*cursor)->set_active(false);
  std::map<std::string, int64_t> persisted = (*cursor)->properties();
  // Replay what was stored after the snapshot.
  Position from = ml.next_position((*cursor)->mark_delete_position());
  int64_t replayed = 0;
  while (from <= ml.last_confirmed()) {
    auto entries = co_await ml.read(from, 1000);
    if (!entries.ok()) co_return entries.status();
    if (entries->empty()) break;
    for (const auto& e : *entries) {
      auto md = message_metadata(e.data);
      if (!md) continue;
      const auto seq = static_cast<int64_t>(
          md->has_highest_sequence_id() ? md->highest_sequence_id() : md->sequence_id());
      auto [it, inserted] = persisted.try_emplace(md->producer_name(), seq);
      if (!inserted) it->second = std::max(it->second, seq);
      ++replayed;
    }
    from = ml.next_position(entries->back().position);
  }
  log::Logger("broker")
      .with("topic", ml.name())
      .info("deduplication on: {} producers known, {} entries replayed", persisted.size(),
            replayed);
  co_return std::unique_ptr<Deduplication>(
      new Deduplication(*cursor, std::move(executor), gate, std::move(persisted)));
}

Deduplication::Verdict Deduplication::check(const std::string& producer, int64_t sequence_id,
                                            int64_t highest) {
  auto pushed = pushed_.find(producer);
  if (pushed != pushed_.end() && sequence_id <= pushed->second) {
    auto stored = persisted_.find(producer);
    if (stored != persisted_.end() && sequence_id <= stored->second) return Verdict::kDuplicate;
    return Verdict::kInFlight;
  }
  pushed_[producer] = std::max(highest, sequence_id);
  return Verdict::kNew;
}

void Deduplication::persisted(const std::string& producer, int64_t highest, Position position) {
  auto [it, inserted] = persisted_.try_emplace(producer, highest);
  if (!inserted) it->second = std::max(it->second, highest);
  if (++persisted_since_snapshot_ < 1000) return;
  persisted_since_snapshot_ = 0;
  auto cursor = cursor_;
  std::map<std::string, int64_t> snapshot = persisted_;
  spawn_in(gate_, executor_, [cursor, position, snapshot]() -> Task<void> {
    (void)co_await cursor->mark_delete(position, snapshot);
  });
}

int64_t Deduplication::last_sequence_id(const std::string& producer) const {
  auto it = pushed_.find(producer);
  return it == pushed_.end() ? -1 : it->second;
}

}  // namespace magnetar::broker
