#pragma once
// Errors of the managed ledger (mapped onto the generic conditions of common/status.h).

#include <system_error>

#include "common/status.h"

namespace magnetar::mledger {

enum class Error {
  kOk = 0,
  kFenced = 1,       // another owner changed the metadata: this instance must close
  kTerminated,       // the ledger was terminated: no more adds
  kNoMoreEntries,    // a terminated ledger read to its end
  kClosed,           // the managed ledger or cursor was closed
  kWriteFailed,      // a new ledger could not be created; pending adds failed
  kInvalidPosition,  // a position that does not exist in this ledger
  kCursorNotFound,   // no cursor by that name
  kMetadata,         // the metadata store failed
  kCorruptMetadata,  // stored state that does not parse
  kCancelled,        // a waiting read was cancelled
};

const std::error_category& mledger_category() noexcept;
std::error_code make_error_code(Error e) noexcept;

}  // namespace magnetar::mledger

template <>
struct std::is_error_code_enum<magnetar::mledger::Error> : std::true_type {};
