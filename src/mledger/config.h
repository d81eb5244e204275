#pragma once
// Settings of managed ledgers, with Pulsar's broker.conf key names (bind_managed_ledger_config).
// Times are in Pulsar's units but fractional, so tests can use sub-second limits.

#include <chrono>
#include <cstdint>
#include <string>

namespace magnetar {
class ConfigSchema;
}

namespace magnetar::mledger {

using Millis = std::chrono::milliseconds;

// Per managed ledger (a broker's defaults; namespace policies override retention).
struct ManagedLedgerConfig {
  int32_t ensemble_size = 2;  // managedLedgerDefaultEnsembleSize
  int32_t write_quorum = 2;   // managedLedgerDefaultWriteQuorum
  int32_t ack_quorum = 2;     // managedLedgerDefaultAckQuorum
  std::string password;       // ledger password (the digest key); Pulsar's default is empty

  // Rollover: a ledger is closed after the add that makes it full (entries or size or max
  // age), but never before the minimum age.
  int64_t max_entries_per_ledger = 50000;         // managedLedgerMaxEntriesPerLedger
  int64_t max_size_per_ledger_mb = 2048;          // managedLedgerMaxSizePerLedgerMbytes
  double min_ledger_rollover_time_minutes = 10;   // managedLedgerMinLedgerRolloverTimeMinutes
  double max_ledger_rollover_time_minutes = 240;  // managedLedgerMaxLedgerRolloverTimeMinutes

  // Retention of consumed ledgers: < 0 keeps forever, 0 deletes as soon as consumed.
  double retention_time_minutes = 0;  // defaultRetentionTimeInMinutes
  int64_t retention_size_mb = 0;      // defaultRetentionSizeInMB

  // Cursors.
  int64_t cursor_max_entries_per_ledger = 50000;  // managedLedgerCursorMaxEntriesPerLedger
  double mark_delete_rate_limit = 1.0;  // managedLedgerDefaultMarkDeleteRateLimit (per s; 0: none)
  int32_t max_unacked_ranges_to_persist = 10000;  // managedLedgerMaxUnackedRangesToPersist
  int32_t max_unacked_ranges_to_persist_in_metadata_store = 1000;
  // managedLedgerMaxUnackedRangesToPersistInMetadataStore

  Millis max_rollover_time() const;
  Millis min_rollover_time() const;
  Millis retention_time() const;  // negative: forever
};

// Shared by every managed ledger of a process.
struct ManagedLedgerFactoryConfig {
  int64_t cache_size_mb = 1024;             // managedLedgerCacheSizeMB (0: no cache)
  double cache_eviction_watermark = 0.9;    // managedLedgerCacheEvictionWatermark
  int32_t cache_eviction_interval_ms = 10;  // managedLedgerCacheEvictionIntervalMs
  int64_t cache_eviction_time_threshold_ms = 1000;
  // managedLedgerCacheEvictionTimeThresholdMillis
  double cursor_position_flush_seconds = 60;      // managedLedgerCursorPositionFlushSeconds
  double retention_check_interval_seconds = 120;  // retentionCheckIntervalInSeconds
  // Parallel bookie reads of one backlog read (and the read-ahead batch).
  int32_t read_batch_size = 100;  // dispatcherMaxReadBatchSize

  int64_t cache_size_bytes() const { return cache_size_mb * 1024 * 1024; }
};

void bind_managed_ledger_config(ConfigSchema& schema, ManagedLedgerConfig* ml,
                                ManagedLedgerFactoryConfig* factory);

}  // namespace magnetar::mledger
