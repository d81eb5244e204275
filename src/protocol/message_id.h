#pragma once
// Message ids as Pulsar clients see them: (ledger, entry) is the position of one stored
// entry; partition and batch index are filled in by clients. Ordering is ledger, entry,
// then batch index (a whole entry, batch_index -1, sorts before its first message).
//
// Serialised bytes are the protobuf encoding of MessageIdData, with partition and
// batch_index omitted when -1 and batch_size when 0, as Pulsar's clients do, so ids can be
// passed between our client and theirs.

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::protocol {

struct MessageId {
  int64_t ledger_id = -1;
  int64_t entry_id = -1;
  int32_t partition = -1;
  int32_t batch_index = -1;
  int32_t batch_size = 0;

  // Before every message: (-1, -1). On the wire the uint64 fields hold 0xFFFF...FF.
  static constexpr MessageId earliest() { return MessageId{-1, -1, -1, -1, 0}; }
  // After every message: (INT64_MAX, INT64_MAX).
  static constexpr MessageId latest() {
    return MessageId{INT64_MAX, INT64_MAX, -1, -1, 0};
  }
  bool is_earliest() const { return ledger_id == -1 && entry_id == -1; }
  bool is_latest() const { return ledger_id == INT64_MAX && entry_id == INT64_MAX; }

  // Position order only (partition and batch size do not take part).
  std::strong_ordering operator<=>(const MessageId& o) const {
    if (auto c = ledger_id <=> o.ledger_id; c != 0) return c;
    if (auto c = entry_id <=> o.entry_id; c != 0) return c;
    return batch_index <=> o.batch_index;
  }
  bool operator==(const MessageId& o) const {
    return ledger_id == o.ledger_id && entry_id == o.entry_id && batch_index == o.batch_index &&
           partition == o.partition;
  }

  wire::MessageIdData to_wire() const;
  void to_wire(wire::MessageIdData* out) const;
  static MessageId from_wire(const wire::MessageIdData& data);

  std::string serialize() const;
  static Result<MessageId> deserialize(std::string_view bytes);

  // "ledger:entry:partition:batchIndex" as Pulsar's CLI prints it.
  std::string to_string() const;
  // Accepts "ledger:entry", "ledger:entry:partition", "ledger:entry:partition:batchIndex",
  // and the words "earliest" and "latest".
  static Result<MessageId> parse(std::string_view text);
};

}  // namespace magnetar::protocol
