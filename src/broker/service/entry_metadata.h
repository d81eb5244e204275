#pragma once
// What the service room reads from a stored entry's MessageMetadata (the entry is the
// message's metadata and payload as the producer sent them). Unreadable entries get
// defaults rather than errors: dispatch and expiry never stall on one bad entry.

#include <cstdint>
#include <optional>
#include <string>

#include "common/buffer.h"
#include "mledger/managed_ledger.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::broker {

struct EntryInfo {
  int messages = 1;  // messages in the batch (1 when not batched or unreadable)
  std::string key;   // ordering key, else partition key (Key_Shared routing)
  int32_t marker_type = 0;  // a server marker (never delivered): its type; 0: a message
  // deliver_at_time (ms since the epoch; delayed_delivery.h): not before then on Shared
  // kinds. -1: none. A batch carries one for all its messages.
  int64_t deliver_at_ms = -1;
};

// The entry's MessageMetadata; nullopt when the entry does not parse.
std::optional<wire::MessageMetadata> message_metadata(const Buffer& data);

EntryInfo entry_info(const Buffer& data);

// Whether a stored entry's message was published before `cutoff_ms` (an unreadable entry
// counts as old, so expiry never stalls on it).
bool published_before(const mledger::Entry& entry, uint64_t cutoff_ms);

}  // namespace magnetar::broker
