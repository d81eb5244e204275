#include "broker/service/dedup.h"

#include <algorithm>

#include "broker/service/entry_metadata.h"
#include "common/logging.h"
#include "protocol/replication.h"

namespace magnetar::broker {

using mledger::Position;

namespace {

constexpr std::string_view kLedgerSuffix = "_LID";
constexpr std::string_view kEntrySuffix = "_EID";

bool is_replicator(const std::string& producer) {
  return producer.starts_with(protocol::kReplicatorPrefix);
}

// The two kinds keep the same bookkeeping over different values (sequence ids, source
// positions): `value` is new above what was pushed for `key`, a duplicate at or below what
// was stored, in flight in between; a new one is recorded as pushed (up to `record`).
template <typename Map, typename V>
Deduplication::Verdict classify(Map& pushed, const Map& persisted, const std::string& key, V value,
                                V record) {
  auto p = pushed.find(key);
  if (p != pushed.end() && value <= p->second) {
    auto stored = persisted.find(key);
    if (stored != persisted.end() && value <= stored->second) {
      return Deduplication::Verdict::kDuplicate;
    }
    return Deduplication::Verdict::kInFlight;
  }
  pushed[key] = std::max(record, value);
  return Deduplication::Verdict::kNew;
}

template <typename Map, typename V>
void record_stored(Map& persisted, const std::string& key, V value) {
  auto [it, inserted] = persisted.try_emplace(key, value);
  if (!inserted) it->second = std::max(it->second, value);
}

// A send accepted as new failed to be stored: pushed goes back to stored.
template <typename Map>
void roll_back(Map& pushed, const Map& persisted, const std::string& key) {
  auto stored = persisted.find(key);
  if (stored == persisted.end()) {
    pushed.erase(key);
  } else {
    pushed[key] = stored->second;
  }
}

}  // namespace

Deduplication::Deduplication(std::shared_ptr<mledger::ManagedCursor> cursor, Executor executor,
                             Gate& gate, State persisted, bool producers)
    : cursor_(std::move(cursor)),
      executor_(std::move(executor)),
      gate_(gate),
      producers_(producers),
      pushed_(persisted),
      persisted_(std::move(persisted)) {}

Deduplication::State Deduplication::from_snapshot(const std::map<std::string, int64_t>& props) {
  State state;
  for (const auto& [key, value] : props) {
    if (!is_replicator(key)) {
      state.producers[key] = value;
      continue;
    }
    // "pulsar.repl.<source>_LID" and "..._EID".
    std::string_view rest = std::string_view(key).substr(protocol::kReplicatorPrefix.size());
    if (rest.ends_with(kLedgerSuffix)) {
      rest.remove_suffix(kLedgerSuffix.size());
      state.sources[std::string(rest)].ledger_id = LedgerId{value};
    } else if (rest.ends_with(kEntrySuffix)) {
      rest.remove_suffix(kEntrySuffix.size());
      state.sources[std::string(rest)].entry_id = EntryId{value};
    }
  }
  return state;
}

std::map<std::string, int64_t> Deduplication::to_snapshot(const State& state) {
  std::map<std::string, int64_t> props = state.producers;
  for (const auto& [source, p] : state.sources) {
    const std::string key = std::string(protocol::kReplicatorPrefix) + source;
    props[key + std::string(kLedgerSuffix)] = p.ledger_id.value();
    props[key + std::string(kEntrySuffix)] = p.entry_id.value();
  }
  return props;
}

void Deduplication::replay(const mledger::Entry& entry, State& state) {
  auto md = message_metadata(entry.data);
  if (!md) return;
  // Replicated entries keep their original producer's name and sequence id, which belong to
  // the source cluster's deduplication, not this topic's.
  if (md->has_replicated_from()) {
    if (auto source = protocol::source_position(*md)) {
      record_stored(state.sources, md->replicated_from(), Position{source->ledger, source->entry});
    }
    return;
  }
  if (is_replicator(md->producer_name())) return;
  const auto seq = static_cast<int64_t>(md->has_highest_sequence_id() ? md->highest_sequence_id()
                                                                      : md->sequence_id());
  record_stored(state.producers, md->producer_name(), seq);
}

Task<Result<std::unique_ptr<Deduplication>>> Deduplication::open(mledger::ManagedLedger& ml,
                                                                 Executor executor, Gate& gate,
                                                                 bool producers) {
  auto cursor = co_await ml.open_cursor(kCursor, mledger::InitialPosition::kEarliest);
  if (!cursor.ok()) co_return cursor.status();
  (*cursor)->set_active(false);
  State persisted = from_snapshot((*cursor)->properties());
  // Replay what was stored after the snapshot.
  Position from = ml.next_position((*cursor)->mark_delete_position());
  int64_t replayed = 0;
  while (from <= ml.last_confirmed()) {
    auto entries = co_await ml.read(from, 1000);
    if (!entries.ok()) co_return entries.status();
    if (entries->empty()) break;
    for (const auto& e : *entries) {
      replay(e, persisted);
      ++replayed;
    }
    from = ml.next_position(entries->back().position);
  }
  log::Logger("broker")
      .with("topic", ml.name())
      .info(
          "deduplication on ({}): {} producers and {} source clusters known, {} entries "
          "replayed",
          producers ? "producers and replicated sends" : "replicated sends",
          persisted.producers.size(), persisted.sources.size(), replayed);
  co_return std::unique_ptr<Deduplication>(
      new Deduplication(*cursor, std::move(executor), gate, std::move(persisted), producers));
}

Deduplication::Verdict Deduplication::check(const std::string& producer, int64_t sequence_id,
                                            int64_t highest) {
  return classify(pushed_.producers, persisted_.producers, producer, sequence_id, highest);
}

void Deduplication::persisted(const std::string& producer, int64_t highest, Position position) {
  record_stored(persisted_.producers, producer, highest);
  stored(position);
}

void Deduplication::failed(const std::string& producer) {
  roll_back(pushed_.producers, persisted_.producers, producer);
}

int64_t Deduplication::last_sequence_id(const std::string& producer) const {
  auto it = pushed_.producers.find(producer);
  return it == pushed_.producers.end() ? -1 : it->second;
}

Deduplication::Verdict Deduplication::check_replicated(const std::string& source,
                                                       Position source_position) {
  return classify(pushed_.sources, persisted_.sources, source, source_position, source_position);
}

void Deduplication::persisted_replicated(const std::string& source, Position source_position,
                                         Position position) {
  record_stored(persisted_.sources, source, source_position);
  stored(position);
}

void Deduplication::failed_replicated(const std::string& source) {
  roll_back(pushed_.sources, persisted_.sources, source);
}

Position Deduplication::last_replicated(const std::string& source) const {
  auto it = persisted_.sources.find(source);
  return it == persisted_.sources.end() ? Position{} : it->second;
}

void Deduplication::stored(Position position) {
  last_stored_ = position;
  if (persisted_since_snapshot_++ == 0) unsnapshotted_since_ = std::chrono::steady_clock::now();
  if (persisted_since_snapshot_ >= snapshot_entries_) snapshot();
}

void Deduplication::maybe_snapshot(std::chrono::steady_clock::time_point now) {
  if (persisted_since_snapshot_ == 0 || snapshot_seconds_ == 0) return;
  if (now - unsnapshotted_since_ >= std::chrono::seconds(snapshot_seconds_)) snapshot();
}

void Deduplication::snapshot() {
  persisted_since_snapshot_ = 0;
  auto cursor = cursor_;
  const Position position = last_stored_;
  std::map<std::string, int64_t> snapshot = to_snapshot(persisted_);
  spawn_in(gate_, executor_, [cursor, position, snapshot]() -> Task<void> {
    (void)co_await cursor->mark_delete(position, snapshot);
  });
}

}  // namespace magnetar::broker
