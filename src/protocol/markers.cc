#include "protocol/markers.h"

#include "protocol/frame.h"

namespace magnetar::protocol {

BufferChain encode_marker(wire::MarkerType type, const google::protobuf::MessageLite& body,
                          const std::vector<std::string>& replicate_to, uint64_t publish_time_ms) {
  wire::MessageMetadata md;
  md.set_producer_name(std::string(kMarkerProducerName));
  md.set_sequence_id(0);
  md.set_publish_time(publish_time_ms);
  md.set_marker_type(static_cast<int32_t>(type));
  for (const auto& cluster : replicate_to) md.add_replicate_to(cluster);
  const std::string bytes = body.SerializeAsString();
  BufferChain payload;
  payload.append(Buffer::copy_of(bytes.data(), bytes.size()));
  return encode_entry(md, payload);
}

bool is_replicated_subscription_marker(int32_t marker_type) {
  return marker_type >= wire::REPLICATED_SUBSCRIPTION_SNAPSHOT_REQUEST &&
         marker_type <= wire::REPLICATED_SUBSCRIPTION_UPDATE;
}

}  // namespace magnetar::protocol
