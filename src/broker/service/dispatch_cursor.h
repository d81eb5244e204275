#pragma once
// What a dispatcher needs of its subscription's cursor: read forward (waiting at the end),
// read one entry again for a redelivery, and move the read position. A seam so dispatchers
// are tested with a fake cursor, no bookie needed; managed_dispatch_cursor() is the real one.
//
// Threading: on the topic's loop, like the dispatcher.

#include <memory>
#include <optional>
#include <vector>

#include "common/asio.h"
#include "common/status.h"
#include "mledger/managed_ledger.h"

namespace magnetar::broker {

class DispatchCursor {
 public:
  virtual ~DispatchCursor() = default;
  // Up to `max` entries from the read position, waiting for new ones at the end. Errors:
  // mledger kNoMoreEntries (terminated and read to its end), Errc::kCancelled (cancel_wait()
  // or the cursor closed); any other failure is retried by the dispatcher.
  virtual Task<Result<std::vector<mledger::Entry>>> read_or_wait(int max) = 0;
  // The entry at `p` again, for a redelivery; nullopt when it cannot be read.
  virtual Task<std::optional<mledger::Entry>> read_at(mledger::Position p) = 0;
  virtual bool is_acknowledged(mledger::Position p) const = 0;
  // Entries between the read position and the end.
  virtual bool has_more_entries() const = 0;
  // The next read starts at `p`.
  virtual void seek(mledger::Position p) = 0;
  // The next read starts after the last entry acknowledged in order (the mark-delete position).
  virtual void rewind() = 0;
  // Ends a read_or_wait() waiting for new entries (kCancelled).
  virtual void cancel_wait() = 0;
};

// Over a managed ledger's cursor; both are kept alive by the result.
std::shared_ptr<DispatchCursor> managed_dispatch_cursor(
    std::shared_ptr<mledger::ManagedLedger> ledger, std::shared_ptr<mledger::ManagedCursor> cursor);

}  // namespace magnetar::broker
