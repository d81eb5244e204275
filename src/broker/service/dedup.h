#pragma once
// Message deduplication, two kinds sharing one snapshot:
//
// - Producers (brokerDeduplicationEnabled or the namespace's deduplicationEnabled): per
//   producer name, the highest sequence id accepted (pushed) and stored (persisted). A send
//   at or below the pushed id is a duplicate when stored already, in flight otherwise.
// - Replicated sends (always, on topics other clusters replicate into): per source cluster,
//   the highest source position (the `__MSG_PROP_REPL_SOURCE_POSITION` of a `pulsar.repl.`
//   producer's send) accepted and stored. A replicator sends its source topic's entries in
//   order and re-sends from its mark-delete after a reconnect or a crash, so a send at or
//   below the stored position is one this topic applied already: it is acknowledged and not
//   stored again. Nothing is skipped: a position above the stored one is always new.
//
// Both are snapshotted as the properties of the `pulsar.dedup` cursor's mark-delete (a
// source's position as `pulsar.repl.<source>_LID` / `_EID`) every
// brokerDeduplicationEntriesInterval stored entries (1,000), and, when fewer came, every
// snapshot interval (brokerDeduplicationSnapshotIntervalSeconds, 120, or the namespace's or
// topic's deduplicationSnapshotIntervalSeconds; 0: by entries only) after the first entry
// not in a snapshot; rebuilt on load from that snapshot plus the entries after it. Producer names starting with `pulsar.repl.` are never producer-deduplicated,
// so the two kinds of keys cannot collide.
//
// Threading: on the topic's loop.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "common/asio.h"
#include "common/gate.h"
#include "common/status.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker {

class Deduplication {
 public:
  static constexpr const char* kCursor = "pulsar.dedup";
  enum class Verdict { kNew, kDuplicate, kInFlight };

  // Opens the cursor and replays what was stored after its snapshot. Snapshots are written
  // on `executor` (the topic's loop) by coroutines that join `gate`, which outlives this.
  // `producers`: whether producer deduplication is on (replicated sends always are).
  static Task<Result<std::unique_ptr<Deduplication>>> open(mledger::ManagedLedger& ledger,
                                                           Executor executor, Gate& gate,
                                                           bool producers);

  bool producers_enabled() const { return producers_; }
  void enable_producers() { producers_ = true; }
  // Producer deduplication off (the namespace policy changed): what it knew of producers is
  // forgotten, so that a later enable starts afresh, as Pulsar's does after it drops its
  // cursor. Replicated sends stay deduplicated.
  void disable_producers() {
    producers_ = false;
    pushed_.producers.clear();
    persisted_.producers.clear();
  }

  // Snapshots every `entries` stored entries (at least 1) and `seconds` after an entry
  // not in a snapshot yet (0: no timed snapshots).
  void set_snapshot_interval(int64_t entries, int64_t seconds) {
    snapshot_entries_ = std::max<int64_t>(1, entries);
    snapshot_seconds_ = std::max<int64_t>(0, seconds);
  }
  // Called periodically: takes the timed snapshot when it is due.
  void maybe_snapshot(std::chrono::steady_clock::time_point now);

  // Classifies a producer's send; kNew also records it as pushed.
  Verdict check(const std::string& producer, int64_t sequence_id, int64_t highest);
  // The send's entry is stored at `position`.
  void persisted(const std::string& producer, int64_t highest, mledger::Position position);
  // A send accepted by check() failed to be stored: what was pushed since the last stored
  // one may come again and must be taken (Pulsar resets its highest pushed id the same way).
  void failed(const std::string& producer);
  int64_t last_sequence_id(const std::string& producer) const;

  // The same for a replicated send from cluster `source` at `source_position` (a position in
  // the source topic, not in this one).
  Verdict check_replicated(const std::string& source, mledger::Position source_position);
  void persisted_replicated(const std::string& source, mledger::Position source_position,
                            mledger::Position position);
  void failed_replicated(const std::string& source);
  // The last source position stored from `source` ((-1, -1): none).
  mledger::Position last_replicated(const std::string& source) const;

 private:
  struct State {
    std::map<std::string, int64_t> producers;
    std::map<std::string, mledger::Position> sources;
  };
  Deduplication(std::shared_ptr<mledger::ManagedCursor> cursor, Executor executor, Gate& gate,
                State persisted, bool producers);
  static State from_snapshot(const std::map<std::string, int64_t>& properties);
  static std::map<std::string, int64_t> to_snapshot(const State& state);
  static void replay(const mledger::Entry& entry, State& state);
  void stored(mledger::Position position);
  void snapshot();

  std::shared_ptr<mledger::ManagedCursor> cursor_;
  Executor executor_;
  Gate& gate_;
  bool producers_;
  State pushed_;
  State persisted_;
  int64_t persisted_since_snapshot_ = 0;
  mledger::Position last_stored_;
  // When the oldest entry not in a snapshot was stored (meaningful while some are).
  std::chrono::steady_clock::time_point unsnapshotted_since_;
  int64_t snapshot_entries_ = 1000;
  int64_t snapshot_seconds_ = 120;
};

}  // namespace magnetar::broker
