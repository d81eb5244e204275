#pragma once
// Sizes and relative times as Pulsar's tools write them (pulsar-admin's 10M, 2G; 3h, 1d, 2w;
// `pulsar tokens create -e`). Pure functions.

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace magnetar {

// Bytes from "123" (bytes), "10k"/"10K", "10m"/"10M", "2g"/"2G", "1t"/"1T" (powers of 1024);
// "-1" gives -1 (no limit). Anything else, overflow included, is kInvalidArgument.
Result<int64_t> parse_size(std::string_view text);

// Seconds from "30" or "30s", "10m", "3h", "1d", "2w", "1y" (365 days); "-1" gives -1 when
// `allow_infinite`. Units are lower case, as pulsar-admin takes them.
Result<int64_t> parse_relative_seconds(std::string_view text, bool allow_infinite = false);

}  // namespace magnetar
