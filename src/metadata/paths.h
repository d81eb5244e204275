#pragma once
// Where shared coordination state lives in the metadata store, for the modules that must
// agree on it without depending on each other (the ledger client writes ledger metadata,
// bookies read which ledgers still exist). The full layout is in docs/metadata.md.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace magnetar::metadata {

// Parent of every ledger's metadata node.
inline constexpr std::string_view kLedgersRoot = "/ledgers";

// "/ledgers/L" + the id zero-padded to 19 digits: children sort in id order, and the names
// cannot collide with /ledgers/available, /ledgers/cookies, /ledgers/INSTANCEID, ...
std::string ledger_path(int64_t ledger_id);
// The id of a child name of /ledgers made by ledger_path, or nullopt for any other name.
std::optional<int64_t> ledger_id_from_node_name(std::string_view name);

}  // namespace magnetar::metadata
