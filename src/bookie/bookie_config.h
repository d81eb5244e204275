#pragma once
// A bookie's configuration, with BookKeeper's key names (conf/bookkeeper.conf).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metadata/metadata_store.h"

namespace magnetar {
class ConfigSchema;
}

namespace magnetar::bookie {

struct BookieConfig {
  int32_t bookie_port = 3181;
  std::string advertised_address = "127.0.0.1";
  std::vector<std::string> journal_directories = {"data/bookkeeper/journal"};
  std::vector<std::string> ledger_directories = {"data/bookkeeper/ledgers"};
  int64_t journal_max_size_mb = 2048;
  int32_t journal_pre_alloc_size_mb = 16;
  double journal_max_group_wait_msec = 2;  // fractions allowed (0.2 = 200 us)
  int32_t journal_sync_pacing_micros = 300;  // ours: JournalOptions::sync_pacing
  int32_t journal_buffered_writes_threshold = 512 * 1024;
  bool journal_flush_when_queue_empty = false;
  bool journal_sync_data = true;
  int32_t journal_max_backups = 5;
  bool journal_reuse_files = false;
  bool journal_remove_pages_from_cache = true;
  int32_t journal_queue_size = 10000;
  int32_t write_cache_max_size_mb = 64;        // dbStorage_writeCacheMaxSizeMb
  int64_t entry_log_size_limit = 1ll << 30;    // logSizeLimit
  int32_t flush_interval_ms = 60000;           // flushInterval: checkpoint period
  int32_t gc_wait_time_ms = 900000;            // gcWaitTime
  bool read_only_mode_enabled = true;
  double disk_usage_threshold = 0.95;
  int32_t disk_check_interval_ms = 10000;
  int32_t num_io_threads = 2;                  // event loops serving connections
  bool http_server_enabled = true;             // /metrics (Prometheus)
  int32_t http_server_port = 8000;
  int32_t max_frame_size = 5 * 1024 * 1024 + 64 * 1024;  // nettyMaxFrameSizeBytes
  // maxAddsInProgressLimit: adds received and not yet answered, over all connections, past
  // which connections stop reading until answers bring the count back under it (0: no limit).
  int64_t max_adds_in_progress = 0;
  metadata::MetadataConfig metadata;

  // "address:port", the bookie's id in the metadata store.
  std::string bookie_id() const;
};

// Declares every key above on `schema`, bound to `config` (which must outlive the schema).
// Every key of the bookkeeper.conf Pulsar ships: a bookie accepts them all, acting on those
// bind_bookie_config binds (the others are listed in a warning).
std::span<const std::string_view> bookkeeper_keys();

void bind_bookie_config(ConfigSchema& schema, BookieConfig* config);
// Only the storage keys (journal, ledger directories, cache, checkpoints, GC, disk checks):
// what an embedded bookie (magnetar standalone) takes from its host's configuration.
void bind_bookie_storage_config(ConfigSchema& schema, BookieConfig* config);

}  // namespace magnetar::bookie
