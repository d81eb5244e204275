#pragma once
// Sizes and relative times as Pulsar's tools write them (pulsar-admin's 10M, 2G; 3h, 1d, 2w;
// `pulsar tokens create -e`). Pure functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace magnetar {

// Bytes from "123" (bytes), "10k"/"10K", "10m"/"10M", "2g"/"2G", "1t"/"1T" (powers of 1024);
// "-1" gives -1 (no limit). Anything else, overflow included, is kInvalidArgument.
Result<int64_t> parse_size(std::string_view text);

// Seconds from "30" or "30s", "10m", "3h", "1d", "2w", "1y" (365 days); "-1" gives -1 when
// `allow_infinite`. Units are lower case, as pulsar-admin takes them.
Result<int64_t> parse_relative_seconds(std::string_view text, bool allow_infinite = false);

// ISO-8601 in UTC with milliseconds, "2021-06-28T19:01:17.120Z" (Pulsar's message headers);
// `trim`: as Java's ISO_OFFSET_DATE_TIME writes it, trailing zeros of the fraction dropped
// ("...17.12Z", "...17Z": Pulsar's internal-info dates).
std::string format_iso_time(int64_t epoch_ms, bool trim = false);

// Milliseconds since the epoch of an ISO-8601 date-time with an offset, as pulsar-admin's
// `-d/--datetime` takes it: YYYY-MM-DDTHH:MM[:SS[.fraction]] then Z or +HH:MM / -HH:MM.
// Anything else is kInvalidArgument.
Result<int64_t> parse_iso_time(std::string_view text);

}  // namespace magnetar
