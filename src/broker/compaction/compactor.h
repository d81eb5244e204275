#pragma once
// Topic compaction (Pulsar's two-phase compactor): the latest message of every key, up to
// the topic's last entry when compaction starts (the new horizon), written to a new
// compacted ledger.
//
//  - Phase one reads the previous compacted ledger, then the topic from the previous horizon
//    on, and records for every key the position (and batch index) of its latest message. A
//    message with an empty payload is a tombstone: its key is dropped. Messages without a
//    key are dropped unless `retain_null_key` (Pulsar's topicCompactionRetainNullKey, false
//    since 3.2). Server markers are dropped. A chunked message counts as its last chunk and
//    is kept whole.
//  - Phase two reads the same entries again and writes those still latest; a batch keeps
//    its size and indexes, the messages no longer latest replaced by empty ones marked
//    compacted_out (clients skip them). An entry that cannot be parsed (or is encrypted) is
//    kept as it is.
//
// Only message ids are held in memory (per key), never payloads. The compactor writes the
// ledger and closes it; recording it (the __compaction cursor) and deleting the previous
// one is the caller's. On failure the new ledger is deleted.
//
// Threading: on the topic's loop (the managed ledger's and the BookKeeper client's).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "broker/compaction/compacted_ledger.h"
#include "common/asio.h"
#include "common/status.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker::compaction {

struct CompactorOptions {
  std::string topic;  // for the ledger's metadata and logs
  bool retain_null_key = false;
  int read_batch = 100;                         // entries per read
  uint32_t max_uncompressed_size = 5u << 20;    // of a batch (maxMessageSize)
  int max_outstanding_adds = 500;               // writes in flight to the new ledger
};

struct CompactionResult {
  LedgerId ledger;            // the new compacted ledger
  mledger::Position horizon;  // the last topic entry it covers
  int64_t messages_read = 0;
  int64_t messages_kept = 0;
  int64_t entries_written = 0;
  int64_t bytes_written = 0;
  int64_t removed() const { return messages_read - messages_kept; }
};

// Compacts `ml`, merging `previous` (null: none). nullopt when there is nothing after the
// previous horizon (nothing written).
Task<Result<std::optional<CompactionResult>>> compact(
    std::shared_ptr<mledger::ManagedLedger> ml, std::shared_ptr<CompactedLedger> previous,
    CompactorOptions options);

}  // namespace magnetar::broker::compaction
