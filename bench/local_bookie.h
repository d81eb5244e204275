#pragma once
// One bookie served in the benchmark's own process (journal, storage, TCP server on
// 127.0.0.1), shared by the benchmarks that need real bookies. Environment knobs:
//   MAGNETAR_BENCH_GROUP_WAIT_MS     journalMaxGroupWaitMSec (fractions allowed: 0.2)
//   MAGNETAR_BENCH_FLUSH_WHEN_EMPTY  1: journalFlushWhenQueueEmpty
//   MAGNETAR_BENCH_WRITE_CACHE_MB    the ledger storage's write cache
//   MAGNETAR_BENCH_FSYNC             0: journalSyncData off (diagnosis only)
//   MAGNETAR_BENCH_LEDGER_DIR        ledger storage here instead of beside the journal (a
//                                    second disk; /dev/shm to take storage out of the picture)

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "bookie/bookie.h"
#include "bookie/server/bookie_server.h"
#include "metadata/metadata_store.h"

namespace magnetar::bench {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// $MAGNETAR_BENCH_REUSE=1: bookies reuse their journal files (journalReuseFiles) and roll
// them at 64 MiB, so a warmed-up bookie writes over reused files, with no zeros ahead.
inline bool reuse_journal_files() {
  return env_int("MAGNETAR_BENCH_REUSE", 0) == 1;
}

struct LocalBookie {
  bookie::BookieConfig config;
  std::unique_ptr<bookie::Bookie> bookie;
  std::unique_ptr<bookie::BookieServer> server;
  std::filesystem::path separate_ledger_dir;  // MAGNETAR_BENCH_LEDGER_DIR's, removed at the end

  // `store` may be null (no registration: clients talk to the bookie by address).
  LocalBookie(const std::filesystem::path& dir, std::shared_ptr<metadata::MetadataStore> store) {
    config.journal_directories = {(dir / "journal").string()};
    if (const char* ledgers = std::getenv("MAGNETAR_BENCH_LEDGER_DIR")) {
      std::string flat = dir.string();
      std::replace(flat.begin(), flat.end(), '/', '_');
      separate_ledger_dir = std::filesystem::path(ledgers) / flat;
      config.ledger_directories = {(separate_ledger_dir / "ledgers").string()};
    } else {
      config.ledger_directories = {(dir / "ledgers").string()};
    }
    config.bookie_port = 0;
    config.http_server_enabled = false;
    config.flush_interval_ms = 10000;
    config.journal_sync_data = env_int("MAGNETAR_BENCH_FSYNC", 1) != 0;
    if (const char* wait = std::getenv("MAGNETAR_BENCH_GROUP_WAIT_MS")) {
      config.journal_max_group_wait_msec = std::atof(wait);
    }
    config.write_cache_max_size_mb =
        env_int("MAGNETAR_BENCH_WRITE_CACHE_MB", config.write_cache_max_size_mb);
    config.journal_flush_when_queue_empty = env_int("MAGNETAR_BENCH_FLUSH_WHEN_EMPTY", 0) == 1;
    if (reuse_journal_files()) {  // steady state: 64 MiB journal files, rolled and reused
      config.journal_reuse_files = true;
      config.journal_max_size_mb = 64;
      config.journal_max_backups = 0;
    }
    bookie = bookie::Bookie::open(config).value();
    server = bookie::BookieServer::start(config, *bookie, std::move(store)).value();
    config.bookie_port = server->port();
  }
  ~LocalBookie() {
    server->stop();
    server.reset();
    bookie.reset();
    if (!separate_ledger_dir.empty()) std::filesystem::remove_all(separate_ledger_dir);
  }
  LocalBookie(const LocalBookie&) = delete;
  LocalBookie& operator=(const LocalBookie&) = delete;
  std::string id() const { return config.bookie_id(); }
};

}  // namespace magnetar::bench
