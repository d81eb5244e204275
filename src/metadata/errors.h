#pragma once
// Errors of the metadata module (all backends).

#include <system_error>

#include "common/status.h"

namespace magnetar::metadata {

enum class Error {
  kOk = 0,
  kNotFound = 1,     // the node (or its parent, on create) does not exist
  kBadVersion,       // expected version did not match, or "must not exist" but it does
  kNotEmpty,         // delete of a node that has children
  kInvalidPath,      // a path that breaks the naming rules
  kTooLarge,         // a value above the store's maximum value size
  kSessionLost,      // our session expired: ephemerals are gone; the store opens a new one
  kConnectionLost,   // no server reachable right now; the session may still be alive
  kTimeout,          // the operation got no answer in time; its outcome is unknown
  kClosed,           // the store was closed
  kBadUrl,           // a metadata store URL we cannot parse
  kBackend,          // the backend failed (I/O error, corrupt database, server error)
};

const std::error_category& metadata_category() noexcept;
std::error_code make_error_code(Error e) noexcept;

}  // namespace magnetar::metadata

template <>
struct std::is_error_code_enum<magnetar::metadata::Error> : std::true_type {};
