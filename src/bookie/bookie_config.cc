#include "bookie/bookie_config.h"

#include <fmt/format.h>

#include "common/config.h"

namespace magnetar::bookie {

std::string BookieConfig::bookie_id() const {
  return fmt::format("{}:{}", advertised_address, bookie_port);
}

void bind_bookie_config(ConfigSchema& s, BookieConfig* c) {
  s.bind("bookiePort", &c->bookie_port, "TCP port of the bookie protocol").range(0, 65535);
  s.bind("advertisedAddress", &c->advertised_address,
         "Address other processes use to reach this bookie (also its id with the port)");
  bind_bookie_storage_config(s, c);
  s.bind("numIOThreads", &c->num_io_threads, "Event loops serving connections").range(1, 64);
  s.bind("httpServerEnabled", &c->http_server_enabled,
         "Serve Prometheus metrics at http://advertisedAddress:httpServerPort/metrics");
  s.bind("httpServerPort", &c->http_server_port, "HTTP port (0 picks a free one)").range(0, 65535);
  s.bind("nettyMaxFrameSizeBytes", &c->max_frame_size, "Largest request frame accepted")
      .range(64 * 1024, 1 << 30);
  s.bind("maxAddsInProgressLimit", &c->max_adds_in_progress,
         "Adds received and not yet answered (all connections) past which the bookie stops "
         "reading requests until some are answered; 0: no limit")
      .range(0, int64_t{1} << 40);
  metadata::bind_metadata_config(s, &c->metadata);
  // BookKeeper's names of the metadata store: zkServers=host:port[,host:port] and
  // metadataServiceUri=metadata-store:zk:host:port/ledgers or zk+hierarchical://host:port/ledgers
  // (the ledgers root is where this bookie keeps its registration anyway).
  s.alias("zkServers", "metadataStoreUrl", [](std::string_view v) { return "zk:" + std::string(v); });
  s.alias("metadataServiceUri", "metadataStoreUrl", [](std::string_view v) {
    std::string uri(v);
    for (std::string_view scheme : {"metadata-store:", "zk+hierarchical://", "zk+longhierarchical://",
                                    "zk+flat://", "zk+null://", "zk://"}) {
      if (uri.starts_with(scheme)) {
        uri = uri.substr(scheme.size());
        if (!uri.starts_with("zk:") && !uri.starts_with("rocksdb:") &&
            !uri.starts_with("memory:")) {
          uri = "zk:" + uri;
        }
        break;
      }
    }
    if (uri.ends_with("/ledgers")) uri.resize(uri.size() - std::string_view("/ledgers").size());
    return uri;
  });
}

void bind_bookie_storage_config(ConfigSchema& s, BookieConfig* c) {
  s.accept_foreign(bookkeeper_keys());
  s.alias("journalDirectory", "journalDirectories");
  s.bind("journalDirectories", &c->journal_directories,
         "Journal directories (write-ahead logs), each best on its own disk; a ledger's "
         "records go to journal (ledger id mod count)");
  s.bind("ledgerDirectories", &c->ledger_directories,
         "Ledger storage directory (entry logs + index); exactly one");
  s.bind("journalMaxSizeMB", &c->journal_max_size_mb, "Roll journal files past this size")
      .range(1, 1 << 20);
  s.bind("journalPreAllocSizeMB", &c->journal_pre_alloc_size_mb,
         "Journal files grow by this much at a time")
      .range(1, 1024);
  s.bind("journalMaxGroupWaitMSec", &c->journal_max_group_wait_msec,
         "Longest time an add waits for its group while a sync is in flight; an idle journal "
         "writes and syncs at once (fractions of a millisecond allowed)")
      .range(0, 1000);
  s.bind("journalSyncPacingMicros", &c->journal_sync_pacing_micros,
         "An idle journal syncs at once unless the previous fdatasync began less than this "
         "many microseconds ago; then the group waits out the rest (fewer fdatasyncs under a "
         "steady trickle of adds; 0: none)")
      .range(0, 100000);
  s.bind("journalBufferedWritesThreshold", &c->journal_buffered_writes_threshold,
         "Write and sync the group once this many bytes wait")
      .range(1, 1 << 30);
  s.bind("journalFlushWhenQueueEmpty", &c->journal_flush_when_queue_empty,
         "Write and sync as soon as no more adds are queued");
  s.bind("journalSyncData", &c->journal_sync_data,
         "fdatasync before acknowledging (false risks acknowledged data on power loss)");
  s.bind("journalMaxBackups", &c->journal_max_backups, "Journal files kept after a checkpoint")
      .range(0, 1000);
  s.bind("journalReuseFiles", &c->journal_reuse_files,
         "Keep a journal file a checkpoint releases and write it again at the next roll (no "
         "zeros written ahead of the data)");
  s.bind("journalRemovePagesFromCache", &c->journal_remove_pages_from_cache,
         "Drop journal pages from the page cache once synced (nothing reads them back while the "
         "bookie runs)");
  s.bind("journalQueueSize", &c->journal_queue_size, "Journal records in flight before further adds wait (back-pressure, never an error)")
      .range(1, 10000000);
  s.bind("dbStorage_writeCacheMaxSizeMb", &c->write_cache_max_size_mb,
         "Memory for entries not yet flushed to entry logs")
      .range(1, 1 << 20);
  s.bind("logSizeLimit", &c->entry_log_size_limit, "Rotate entry logs past this many bytes")
      .range(1 << 20, 1ll << 40);
  s.bind("flushInterval", &c->flush_interval_ms,
         "Checkpoint period: flush ledger storage, then trim the journal (ms)")
      .range(10, 3600000);
  s.bind("gcWaitTime", &c->gc_wait_time_ms, "Period of garbage collection of deleted ledgers (ms)")
      .range(1000, 86400000);
  s.bind("readOnlyModeEnabled", &c->read_only_mode_enabled,
         "Turn read-only (instead of shutting down) when disks fill up or fail");
  s.bind("diskUsageThreshold", &c->disk_usage_threshold,
         "Fraction of a disk in use past which the bookie turns read-only")
      .range(0.01, 1.0);
  s.bind("diskCheckInterval", &c->disk_check_interval_ms, "Disk usage check period (ms)")
      .range(100, 3600000);
}

}  // namespace magnetar::bookie
