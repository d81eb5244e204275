#include "metadata/metadata_cache.h"

#include <algorithm>

namespace magnetar::metadata::internal {

Status json_decode_error(const std::string& path, const char* what) {
  // Stored bytes that fail validation: retrying the read will not help.
  return Status(Errc::kCorruption,
                fmt::format("metadata node '{}' does not hold a valid JSON value of the expected "
                            "type: {}",
                            path, what));
}

Status json_encode_error(const std::string& path, const char* what) {
  return Status(
      Errc::kInvalidArgument,
      fmt::format("value for metadata node '{}' cannot be encoded as JSON: {}", path, what));
}

Status update_gave_up(const std::string& path, int attempts) {
  return Status(Error::kBadVersion,
                fmt::format("read-modify-update of '{}' lost the race to concurrent writers {} "
                            "times; giving up",
                            path, attempts));
}

std::chrono::milliseconds update_retry_delay(int attempt, std::minstd_rand& rng) {
  if (attempt <= 1) return std::chrono::milliseconds(0);  // first retry: at once
  int ceiling = std::min(attempt, 8);
  std::uniform_int_distribution<int> pick(0, ceiling);
  return std::chrono::milliseconds(pick(rng));
}

}  // namespace magnetar::metadata::internal
