#pragma once
// The embedded backends: `memory:` (tests) and `rocksdb:` (standalone).
//
// Both keep the whole tree in memory, served by one worker thread per database; `rocksdb:`
// also writes every change through to RocksDB with synced writes (group commit: the worker
// applies everything queued, writes one synced batch, then completes the group), and loads
// the tree at open, dropping ephemeral nodes left by a previous process. Operations complete
// only after their group is durable, reads included, so nothing is ever observed that a
// crash could take back. A failed write makes the database fail every later operation.

#include <memory>
#include <string>

#include "metadata/metadata_store.h"

namespace magnetar::metadata {

enum class LocalBackend { kMemory, kRocksDb };

// Opens a new session on the named in-memory tree or RocksDB directory. Sessions of one
// process share the database; the database closes with its last session.
Result<std::unique_ptr<MetadataStore>> open_local_store(LocalBackend backend, std::string name,
                                                        StoreOptions options);

}  // namespace magnetar::metadata
