#include "magnetar/message.h"

#include "protocol/message_id.h"

namespace magnetar::client {

namespace {
const std::string kEmpty;

protocol::MessageId to_protocol(const MessageId& id) {
  return protocol::MessageId{id.ledger_id(), id.entry_id(), id.partition(), id.batch_index(),
                             id.batch_size()};
}
}  // namespace

std::string MessageId::serialize() const {
  return to_protocol(*this).serialize();
}

Result<MessageId> MessageId::deserialize(std::string_view bytes) {
  auto id = protocol::MessageId::deserialize(bytes);
  if (!id.ok()) return id.status();
  return MessageId(id->ledger_id, id->entry_id, id->partition, id->batch_index, id->batch_size);
}

std::string MessageId::to_string() const {
  return to_protocol(*this).to_string();
}

const std::string& MessageId::topic() const {
  return topic_ ? *topic_ : kEmpty;
}

const std::string& Message::key() const {
  return key_ ? *key_ : kEmpty;
}
const std::string& Message::ordering_key() const {
  return ordering_key_ ? *ordering_key_ : kEmpty;
}

Message& Message::set_deliver_after(std::chrono::milliseconds delay) {
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  return set_deliver_at(static_cast<uint64_t>((now + delay).count()));
}

std::string Message::property(const std::string& key) const {
  auto it = properties_.find(key);
  return it == properties_.end() ? std::string() : it->second;
}

}  // namespace magnetar::client
