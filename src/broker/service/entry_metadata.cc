#include "broker/service/entry_metadata.h"

#include <algorithm>
#include <optional>

#include "protocol/frame.h"

namespace magnetar::broker {

std::optional<wire::MessageMetadata> message_metadata(const Buffer& data) {
  auto view = protocol::parse_entry(data);
  if (!view.ok()) return std::nullopt;
  wire::MessageMetadata md;
  if (!md.ParseFromArray(view->metadata_bytes.data(),
                         static_cast<int>(view->metadata_bytes.size()))) {
    return std::nullopt;
  }
  return md;
}

EntryInfo entry_info(const Buffer& data) {
  EntryInfo info;
  auto md = message_metadata(data);
  if (!md) return info;
  if (md->has_num_messages_in_batch()) info.messages = std::max(1, md->num_messages_in_batch());
  info.key = md->has_ordering_key() ? md->ordering_key() : md->partition_key();
  if (md->has_marker_type()) info.marker_type = std::max(1, md->marker_type());
  if (md->has_deliver_at_time()) info.deliver_at_ms = md->deliver_at_time();
  return info;
}

bool published_before(const mledger::Entry& entry, uint64_t cutoff_ms) {
  auto md = message_metadata(entry.data);
  return !md || md->publish_time() < cutoff_ms;
}

}  // namespace magnetar::broker
