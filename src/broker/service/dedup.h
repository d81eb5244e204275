#pragma once
// Message deduplication (brokerDeduplicationEnabled or the namespace's deduplicationEnabled):
// per producer name, the highest sequence id accepted (pushed) and stored (persisted). A
// send at or below the pushed id is a duplicate when stored already, in flight otherwise.
// The persisted ids are snapshotted every 1,000 stored entries as the properties of the
// `pulsar.dedup` cursor's mark-delete (brokerDeduplicationEntriesInterval), and rebuilt on
// load from that snapshot plus the entries after it.
//
// Threading: on the topic's loop.

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
  static Task<Result<std::unique_ptr<Deduplication>>> open(mledger::ManagedLedger& ledger,
                                                           Executor executor, Gate& gate);

  // Classifies a send; kNew also records it as pushed.
  Verdict check(const std::string& producer, int64_t sequence_id, int64_t highest);
  // The send's entry is stored at `position`.
  void persisted(const std::string& producer, int64_t highest, mledger::Position position);
  int64_t last_sequence_id(const std::string& producer) const;

 private:
  Deduplication(std::shared_ptr<mledger::ManagedCursor> cursor, Executor executor, Gate& gate,
                std::map<std::string, int64_t> persisted);

  std::shared_ptr<mledger::ManagedCursor> cursor_;
  Executor executor_;
  Gate& gate_;
  std::map<std::string, int64_t> pushed_;
  std::map<std::string, int64_t> persisted_;
  int64_t persisted_since_snapshot_ = 0;
};

}  // namespace magnetar::broker
