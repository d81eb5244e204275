#pragma once
// AutoRecovery: what BookKeeper's AutoRecoveryMain runs, an auditor candidate and a
// replication worker, on a thread and event loop of their own. Runs inside bookies
// (autoRecoveryDaemonEnabled) and as the standalone `magnetar autorecovery` role.
//
// Configuration keys (BookKeeper's names, bookkeeper.conf):
//   autoRecoveryDaemonEnabled          false   run it inside the bookie (BookKeeper's default;
//                                              Pulsar's shipped bookkeeper.conf says true)
//   lostBookieRecoveryDelay            0 s     wait after a bookie disappears before auditing
//   auditorPeriodicBookieCheckInterval 86400 s audit without a trigger (0: never)
//   openLedgerRereplicationGracePeriod 30000 ms wait before recovering an open ledger
//   rereplicationEntryBatchSize        100     entries copied in parallel (Pulsar's value)
//   rwRereplicateBackoffMs             5000 ms back-off after a failed ledger
//   ensemblePlacementPolicy            rack-aware  replacements follow it (/bookies racks)
//
// Threading: start() and stop() block the calling thread until the service's own loop has
// started or stopped: call them from a thread that is not an event loop (main, a test).

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar {
class ConfigSchema;
}

namespace magnetar::autorecovery {

struct AutoRecoveryConfig {
  bool daemon_enabled = false;                        // autoRecoveryDaemonEnabled
  int32_t lost_bookie_recovery_delay_s = 0;           // lostBookieRecoveryDelay
  int64_t periodic_bookie_check_interval_s = 86400;   // auditorPeriodicBookieCheckInterval
  int32_t open_ledger_grace_ms = 30000;               // openLedgerRereplicationGracePeriod
  int32_t entry_batch_size = 100;                     // rereplicationEntryBatchSize
  int32_t backoff_ms = 5000;                          // rwRereplicateBackoffMs
  // ensemblePlacementPolicy: a class name of BookKeeper's; Rackaware (the default),
  // RegionAware or Default (random) is recognised in it.
  std::string placement_policy = "org.apache.bookkeeper.client.RackawareEnsemblePlacementPolicy";
};

// Declares the keys above on `schema`, bound to `config` (which must outlive the schema).
void bind_autorecovery_config(ConfigSchema& schema, AutoRecoveryConfig* config);

class AutoRecoveryService {
 public:
  // Starts the auditor candidate and the replication worker; `id` names this instance in
  // votes and locks (the bookie id). `store` is shared with the caller (thread-safe).
  static Result<std::unique_ptr<AutoRecoveryService>> start(
      const AutoRecoveryConfig& config, std::shared_ptr<metadata::MetadataStore> store,
      std::string id);
  ~AutoRecoveryService();  // stop()
  AutoRecoveryService(const AutoRecoveryService&) = delete;
  AutoRecoveryService& operator=(const AutoRecoveryService&) = delete;

  // Leaves the election, stops the worker (its locks released), joins the thread.
  void stop();
  bool is_auditor() const { return auditor_.load(); }

 private:
  struct Parts;
  AutoRecoveryService() = default;

  asio::io_context io_;
  std::thread thread_;
  std::unique_ptr<Parts> parts_;
  std::atomic<bool> auditor_{false};
  bool stopped_ = false;
};

}  // namespace magnetar::autorecovery
