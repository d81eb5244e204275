#pragma once
// The auditor (BookKeeper's Auditor, reference §8): one instance at a time, elected among
// every auto-recovery instance by ephemeral sequential votes
//   /ledgers/underreplication/auditorelection/V_NNNNNNNNNN   value: bookieId: "<id>"
// (lowest vote wins; LeaderElection with prefix "V_"). While elected it
//  - follows /ledgers/available and /ledgers/available/readonly (both count as alive);
//  - when a bookie disappears, waits lostBookieRecoveryDelay (the live value of
//    /ledgers/underreplication/lostBookieRecoveryDelay, which it creates from its
//    configuration when missing; a change of the node applies to the wait in progress), then
//    audits: reads every ledger's metadata and marks each ledger whose segments name a bookie
//    that is not registered, with those bookies as its missing replicas. Bookies lost during
//    the wait are part of the same audit (the first loss starts the clock);
//  - audits once when elected (after the same delay), and every
//    auditorPeriodicBookieCheckInterval (no delay; 0 turns it off).
// A re-elected instance starts over; markers are idempotent, so a second audit of the same
// loss marks nothing new.
//
// Metrics (default registry), exported by every instance, meaningful on the auditor's:
//   magnetar_autorecovery_ledgers_marked_total        markers created or extended by audits
//   magnetar_autorecovery_under_replicated_ledgers    markers present after the last audit
//   magnetar_autorecovery_auditor                     1 while this instance is the auditor
//
// Threading: on `executor` (call start/stop from coroutines there); never blocks it.
// `store` outlives the auditor; stop() completes before destruction.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autorecovery/underreplication.h"
#include "common/asio.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/wakeup.h"
#include "metadata/leader_election.h"
#include "metadata/metadata_store.h"

namespace magnetar::autorecovery {

struct AuditorOptions {
  std::chrono::seconds lost_bookie_recovery_delay{0};  // lostBookieRecoveryDelay
  std::chrono::seconds periodic_bookie_check{86400};   // auditorPeriodicBookieCheckInterval
};

// The bookies each ledger's metadata names (every segment), by ledger id. Ledgers deleted
// during the scan are skipped.
Task<Result<std::map<int64_t, std::set<std::string>>>> scan_ledger_bookies(
    metadata::MetadataStore& store);

// One audit: marks every ledger naming a bookie not in `alive`, or one in `also_lost`.
// Returns the ledgers marked (with the bookies each was marked for).
Task<Result<std::map<int64_t, std::vector<std::string>>>> mark_ledgers_of_lost_bookies(
    metadata::MetadataStore& store, UnderreplicationManager& urm, std::set<std::string> alive,
    std::set<std::string> also_lost = {});

// The elected auditor's bookie id (whoisauditor), nullopt when no instance runs.
Task<Result<std::optional<std::string>>> current_auditor(metadata::MetadataStore& store);

class Auditor {
 public:
  // `id`: this instance's bookie id, its vote's value.
  Auditor(metadata::MetadataStore& store, Executor executor, std::string id,
          AuditorOptions options);
  ~Auditor();
  Auditor(const Auditor&) = delete;
  Auditor& operator=(const Auditor&) = delete;

  // Checks the layout and enters the election (when it wins at once, auditing starts).
  Task<Status> start();
  // Leaves the election (the next vote wins) and stops auditing. Idempotent.
  Task<void> stop();

  bool is_auditor() const { return term_running_; }
  uint64_t audits() const { return audits_; }  // audits completed by this instance

 private:
  void on_leadership(bool leading);
  Task<void> lead(uint64_t term);
  Task<void> audit(const char* why);

  metadata::MetadataStore& store_;
  const Executor executor_;
  const std::string id_;
  const AuditorOptions options_;
  log::Logger log_;
  UnderreplicationManager urm_;
  std::unique_ptr<metadata::LeaderElection> election_;
  Wakeup wake_;
  Wakeup done_;
  metadata::ListenerId listener_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // weak in the listener
  uint64_t term_ = 0;          // moves on every win, loss and stop: stale lead() loops end
  bool term_running_ = false;  // a lead() loop is auditing
  int leads_ = 0;              // lead() coroutines spawned and not finished
  bool stopping_ = false;
  uint64_t audits_ = 0;
  std::shared_ptr<metrics::Counter> marked_total_;
  std::shared_ptr<metrics::Gauge> under_replicated_;
  std::shared_ptr<metrics::Gauge> auditor_gauge_;
};

}  // namespace magnetar::autorecovery
