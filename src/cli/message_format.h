#pragma once
// How magnetar-client reads its message arguments and prints received messages, the way
// pulsar-client does. Pure functions: no I/O.

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "magnetar/client.h"

namespace magnetar::cli {

// Every value split at `separator` (pulsar-client's "-m a,b -m c" is a, b, c). An empty
// separator keeps the values whole.
std::vector<std::string> split_values(const std::vector<std::string>& values,
                                      std::string_view separator);

// "k=v" pairs, each argument possibly holding several separated by commas.
Result<std::map<std::string, std::string>> parse_properties(const std::vector<std::string>& args);

// Case-insensitive names as pulsar-client takes them: Exclusive, Shared, Failover, Key_Shared.
Result<client::SubscriptionType> parse_subscription_type(std::string_view name);
// Latest, Earliest.
Result<client::InitialPosition> parse_initial_position(std::string_view name);
// NONE, LZ4, ZLIB, ZSTD, SNAPPY (any case).
Result<client::CompressionType> parse_compression(std::string_view name);
// "earliest", "latest" or "ledgerId:entryId[:partition[:batchIndex]]".
Result<client::MessageId> parse_start_message_id(std::string_view text);

// 16 bytes a line: an 8-digit hex offset, the bytes in hex, then the printable ones ('.' for
// the rest); lines end with '\n'.
std::string hex_dump(std::string_view bytes);

// pulsar-client's line for a received message:
//   key:[<key or null>], properties:[k1=v1, k2=v2], content:<payload>
// `hex`: the content as hex_dump on the following lines; `hide_content`: no content part.
std::string describe_message(const client::Message& message, bool hex, bool hide_content);

}  // namespace magnetar::cli
