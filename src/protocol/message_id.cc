#include "protocol/message_id.h"

#include <charconv>

#include <fmt/format.h>

#include "protocol/errors.h"

namespace magnetar::protocol {

void MessageId::to_wire(wire::MessageIdData* out) const {
  out->Clear();
  out->set_ledgerid(static_cast<uint64_t>(ledger_id));
  out->set_entryid(static_cast<uint64_t>(entry_id));
  if (partition != -1) out->set_partition(partition);
  if (batch_index != -1) out->set_batch_index(batch_index);
  if (batch_size != 0) out->set_batch_size(batch_size);
}

wire::MessageIdData MessageId::to_wire() const {
  wire::MessageIdData d;
  to_wire(&d);
  return d;
}

MessageId MessageId::from_wire(const wire::MessageIdData& d) {
  MessageId id;
  id.ledger_id = static_cast<int64_t>(d.ledgerid());
  id.entry_id = static_cast<int64_t>(d.entryid());
  id.partition = d.partition();
  id.batch_index = d.batch_index();
  id.batch_size = d.batch_size();
  return id;
}

std::string MessageId::serialize() const { return to_wire().SerializeAsString(); }

Result<MessageId> MessageId::deserialize(std::string_view bytes) {
  wire::MessageIdData d;
  if (!d.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status(Error::kInvalidMessageId,
                  fmt::format("{} bytes do not hold a MessageIdData", bytes.size()));
  }
  return from_wire(d);
}

std::string MessageId::to_string() const {
  return fmt::format("{}:{}:{}:{}", ledger_id, entry_id, partition, batch_index);
}

Result<MessageId> MessageId::parse(std::string_view text) {
  if (text == "earliest") return earliest();
  if (text == "latest") return latest();
  int64_t parts[4] = {-1, -1, -1, -1};
  size_t n = 0;
  std::string_view rest = text;
  while (true) {
    size_t colon = rest.find(':');
    std::string_view item = rest.substr(0, colon);
    if (n == 4) break;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), parts[n]);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size()) {
      return Status(Error::kInvalidMessageId,
                    fmt::format("'{}' is not a message id (ledgerId:entryId[:partition"
                                "[:batchIndex]])",
                                text));
    }
    ++n;
    if (colon == std::string_view::npos) {
      rest = {};
      break;
    }
    rest.remove_prefix(colon + 1);
  }
  if (n < 2 || !rest.empty()) {
    return Status(Error::kInvalidMessageId,
                  fmt::format("'{}' is not a message id (ledgerId:entryId[:partition"
                              "[:batchIndex]])",
                              text));
  }
  if (parts[2] < -1 || parts[2] > INT32_MAX || parts[3] < -1 || parts[3] > INT32_MAX) {
    return Status(Error::kInvalidMessageId,
                  fmt::format("'{}': partition and batch index must be -1 or more", text));
  }
  return MessageId{parts[0], parts[1], static_cast<int32_t>(parts[2]),
                   static_cast<int32_t>(parts[3]), 0};
}

}  // namespace magnetar::protocol
