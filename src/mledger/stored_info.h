#pragma once
// A managed ledger as its metadata nodes describe it, without opening it: Pulsar's
// ManagedLedgerInfo JSON (pulsar-admin topics info-internal), for a topic whether or not a
// broker has it loaded. The cursors' positions are those of their metadata nodes (a cursor
// that keeps its position in its own ledger shows the node's snapshot, as in Pulsar).

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::mledger {

// {"version", "creationDate", "modificationDate", "ledgers": [{"ledgerId", "entries", "size",
// "timestamp", "isOffloaded"}], "terminatedPosition", "cursors": {name: {"version",
// "creationDate", "modificationDate", "cursorsLedgerId", "markDelete",
// "individualDeletedMessages", "properties"}}, "properties"}; dates in ISO-8601 UTC.
// Errors: kNotFound (no such managed ledger), kCorruptMetadata, the store's.
Task<Result<nlohmann::json>> stored_ledger_info(metadata::MetadataStore& store, std::string name);

// Creates the node of a managed ledger without ledgers unless there is one (Pulsar's
// createMissedPartitions): true when it was created.
Task<Result<bool>> create_stored_ledger(metadata::MetadataStore& store, std::string name);

}  // namespace magnetar::mledger
