#pragma once
// Parsing of magnetar-admin's argument values the way pulsar-admin reads them: sizes (10M,
// 2G), relative times (3h, 1d, 2w), message ids, namespace and topic names, and their REST
// paths. Pure functions: no I/O.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "protocol/message_id.h"

namespace magnetar::cli {

// Bytes from "123" (bytes), "10k"/"10K", "10m"/"10M", "2g"/"2G", "1t"/"1T" (powers of 1024);
// "-1" gives -1 (no limit). Anything else, overflow included, is kInvalidArgument.
Result<int64_t> parse_size(std::string_view text);

// Seconds from "30" or "30s", "10m", "3h", "1d", "2w", "1y" (365 days); "-1" gives -1 when
// `allow_infinite`. Units are lower case, as pulsar-admin takes them.
Result<int64_t> parse_relative_seconds(std::string_view text, bool allow_infinite = false);

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
