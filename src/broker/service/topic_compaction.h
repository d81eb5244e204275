#pragma once
// A topic's compaction (broker/compaction): its compacted ledger and horizon, recorded on the
// `__compaction` cursor as Pulsar records them, the compaction run (one at a time) and what
// `topics compaction-status` and the topic's stats report of it.
//
// Threading: on the topic's loop. Owned by the topic (shared with the compacted readers of
// its subscriptions, which see the newest compacted ledger once a run ends).

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "broker/compaction/compacted_ledger.h"
#include "broker/compaction/compactor.h"
#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker {

class TopicCompaction : public std::enable_shared_from_this<TopicCompaction> {
 public:
  // Pulsar's LongRunningProcessStatus.
  enum class State { kNotRun, kRunning, kSuccess, kError };

  // Reads the state left by earlier runs from the `__compaction` cursor, if open.
  TopicCompaction(std::shared_ptr<mledger::ManagedLedger> ml, compaction::CompactorOptions options);

  // The horizon of the current compacted ledger; nullopt when the topic was never compacted.
  std::optional<mledger::Position> horizon() const;
  // The current compacted ledger, opened on first use; null when there is none.
  Task<Result<std::shared_ptr<compaction::CompactedLedger>>> view();

  // Runs one compaction to its end: the new ledger is recorded on the cursor before the
  // previous one is deleted. kAlreadyExists while one runs (Pulsar's 409).
  bool running() const { return state_ == State::kRunning; }
  Task<Status> run();
  // The backlog compaction has not covered yet, in bytes (what the threshold is checked
  // against): after the horizon, or the whole topic when never compacted.
  int64_t uncompacted_bytes() const;

  // Deletes the compacted ledger (the topic is being deleted).
  Task<void> remove();

  // {"status": "NOT_RUN"|"RUNNING"|"SUCCESS"|"ERROR", "lastError": ...}
  nlohmann::json status_json() const;
  // The topic stats' "compaction" object, as Pulsar's CompactionStatsImpl.
  nlohmann::json stats_json() const;
  // The internal stats' "compactedLedger" object.
  nlohmann::json internal_stats_json() const;

 private:
  std::shared_ptr<mledger::ManagedLedger> ml_;
  const compaction::CompactorOptions options_;
  log::Logger log_;
  LedgerId ledger_;  // invalid: none
  mledger::Position horizon_;
  std::shared_ptr<compaction::CompactedLedger> view_;
  State state_ = State::kNotRun;
  std::string last_error_;
  int64_t removed_events_ = 0;
  int64_t succeeded_ms_ = 0, failed_ms_ = 0, duration_ms_ = 0;
};

}  // namespace magnetar::broker
