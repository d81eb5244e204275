#pragma once
// Where shared coordination state lives in the metadata store, for the modules that must
// agree on it without depending on each other (the ledger client writes ledger metadata,
// bookies read which ledgers still exist). The full layout is in docs/metadata.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/asio.h"
#include "common/status.h"

namespace magnetar::metadata {

class MetadataStore;

// Parent of every ledger's metadata node.
inline constexpr std::string_view kLedgersRoot = "/ledgers";

// A ledger's metadata node in BookKeeper's hierarchical layout: an id below 2^31 - 1 as 10
// digits split 2/4/4 ("/ledgers/00/0000/L0042"), a larger one as 19 digits split 3/4/4/4/4
// ("/ledgers/000/0000/0021/4748/L3647"). No node gets more than 10 000 ledger children, so
// every listing stays far below ZooKeeper's packet limit, and the all-digit directory names
// cannot collide with /ledgers/available, /ledgers/cookies, /ledgers/INSTANCEID, ...
std::string ledger_path(int64_t ledger_id);
// Where versions before the hierarchical layout kept it: "/ledgers/L" + 19 digits. Such
// ledgers are still opened, updated, listed and deleted where they are.
std::string flat_ledger_path(int64_t ledger_id);
// The id of a child name of /ledgers made by flat_ledger_path, or nullopt for any other name.
std::optional<int64_t> ledger_id_from_node_name(std::string_view name);

// Every ledger id with metadata, in either layout, sorted. A walk of several listings, not a
// snapshot: a ledger created or deleted meanwhile may or may not be in it. Fails (never a
// partial answer) if any listing fails.
Task<Result<std::vector<int64_t>>> list_ledger_ids(MetadataStore& store);

}  // namespace magnetar::metadata
