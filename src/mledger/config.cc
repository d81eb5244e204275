#include "mledger/config.h"

#include <cmath>

#include "common/config.h"

namespace magnetar::mledger {
namespace {
Millis minutes(double m) {
  return Millis(static_cast<int64_t>(std::llround(m * 60000.0)));
}
}  // namespace

Millis ManagedLedgerConfig::max_rollover_time() const {
  return minutes(max_ledger_rollover_time_minutes);
}
Millis ManagedLedgerConfig::min_rollover_time() const {
  return minutes(min_ledger_rollover_time_minutes);
}
Millis ManagedLedgerConfig::retention_time() const {
  return retention_time_minutes < 0 ? Millis(-1) : minutes(retention_time_minutes);
}

void bind_managed_ledger_config(ConfigSchema& s, ManagedLedgerConfig* ml,
                                ManagedLedgerFactoryConfig* f) {
  s.bind("managedLedgerDefaultEnsembleSize", &ml->ensemble_size,
         "Bookies each ledger of a topic is striped over")
      .range(1, 64);
  s.bind("managedLedgerDefaultWriteQuorum", &ml->write_quorum, "Copies of every entry")
      .range(1, 64);
  s.bind("managedLedgerDefaultAckQuorum", &ml->ack_quorum,
         "Copies that must be stored before an add is acknowledged")
      .range(1, 64);
  s.bind("managedLedgerMaxEntriesPerLedger", &ml->max_entries_per_ledger,
         "Entries after which a ledger is closed and a new one started")
      .range(1, 1e18);
  s.bind("managedLedgerMaxSizePerLedgerMbytes", &ml->max_size_per_ledger_mb,
         "Size after which a ledger is closed and a new one started")
      .range(1, 1e18);
  s.bind("managedLedgerMinLedgerRolloverTimeMinutes", &ml->min_ledger_rollover_time_minutes,
         "Minimum age of a ledger before it may be rolled over");
  s.bind("managedLedgerMaxLedgerRolloverTimeMinutes", &ml->max_ledger_rollover_time_minutes,
         "Age after which a ledger with entries is rolled over");
  s.bind("defaultRetentionTimeInMinutes", &ml->retention_time_minutes,
         "How long consumed ledgers are kept (-1: forever, 0: deleted once consumed)");
  s.bind("defaultRetentionSizeInMB", &ml->retention_size_mb,
         "How many MB of consumed ledgers are kept (-1: unlimited)");
  s.bind("managedLedgerCursorMaxEntriesPerLedger", &ml->cursor_max_entries_per_ledger,
         "Position updates after which a cursor switches to a new ledger")
      .range(1, 1e18);
  s.bind("managedLedgerDefaultMarkDeleteRateLimit", &ml->mark_delete_rate_limit,
         "Persisted cursor position updates per second per cursor (0: unlimited)");
  s.bind("managedLedgerMaxUnackedRangesToPersist", &ml->max_unacked_ranges_to_persist,
         "Acknowledgement holes persisted per cursor; beyond them acks are kept in memory only")
      .range(0, 10000000);
  s.bind("managedLedgerMaxUnackedRangesToPersistInMetadataStore",
         &ml->max_unacked_ranges_to_persist_in_metadata_store,
         "Acknowledgement holes written to the metadata store when a cursor closes")
      .range(0, 1000000);
  s.bind("managedLedgerCacheSizeMB", &f->cache_size_mb,
         "Memory for entries just written, served to tailing readers (0: no cache)")
      .range(0, 1e18);
  s.bind("managedLedgerCacheEvictionWatermark", &f->cache_eviction_watermark,
         "Fraction of the cache size eviction frees down to");
  s.bind("managedLedgerCacheEvictionIntervalMs", &f->cache_eviction_interval_ms,
         "Period of the cache eviction task")
      .range(1, 3600000);
  s.bind("managedLedgerCacheEvictionTimeThresholdMillis", &f->cache_eviction_time_threshold_ms,
         "Age after which cached entries are evicted")
      .range(1, 1e18);
  s.bind("managedLedgerCursorPositionFlushSeconds", &f->cursor_position_flush_seconds,
         "Period after which rate-limited cursor positions are persisted");
  s.bind("retentionCheckIntervalInSeconds", &f->retention_check_interval_seconds,
         "Period of the retention (ledger trimming) check");
  s.bind("dispatcherMaxReadBatchSize", &f->read_batch_size,
         "Entries read from bookies per backlog read")
      .range(1, 10000);
}

}  // namespace magnetar::mledger
