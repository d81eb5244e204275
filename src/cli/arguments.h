#pragma once
// Parsing of magnetar-admin's argument values the way pulsar-admin reads them (sizes and
// relative times: common/units.h), message ids, namespace and topic names, and their REST
// paths. Pure functions: no I/O.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/units.h"
#include "protocol/message_id.h"

namespace magnetar::cli {

// A comma separated list as pulsar-admin splits it ("a,b" gives {"a", "b"}; "" gives {""}).
std::vector<std::string> split_list(std::string_view text);

// "earliest", "latest", "ledger:entry[:partition[:batchIndex]]".
Result<protocol::MessageId> parse_message_id(std::string_view text);

// Pulsar's ResetCursorData body for a message id: ledgerId, entryId, partitionIndex,
// isExcluded, batchIndex.
std::string reset_cursor_body(const protocol::MessageId& id, bool excluded);

// "tenant/namespace" (both parts non-empty, [A-Za-z0-9_=:.-]) as a REST path suffix,
// percent-encoded: "tenant/namespace".
Result<std::string> namespace_path(std::string_view name);

// The admin REST path of a topic given as "persistent://t/ns/x", "non-persistent://t/ns/x",
// "t/ns/x" or just "x" (persistent://public/default/x): "/admin/v2/persistent/t/ns/x".
Result<std::string> topic_path(std::string_view name);

// The domain's REST root for a namespace: "/admin/v2/persistent/t/ns".
Result<std::string> namespace_topics_root(std::string_view name, std::string_view domain);

// One URL path segment with everything but [A-Za-z0-9-._~] percent-encoded.
std::string encode_segment(std::string_view s);

}  // namespace magnetar::cli
