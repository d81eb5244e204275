#pragma once
// Server markers (proto/pulsar_markers.proto): entries brokers write into a topic for other
// brokers, as Pulsar writes them, never delivered to consumers.
//
//   metadata  producer_name "pulsar.marker", sequence_id 0, publish_time now, marker_type,
//             replicate_to as the marker needs (none: every peer; [cluster]: one; [local]:
//             never leaves)
//   payload   the marker message

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/buffer.h"
#include "common/status.h"
#include "proto/pulsar_api.pb.h"
#include "proto/pulsar_markers.pb.h"

namespace magnetar::protocol {

inline constexpr std::string_view kMarkerProducerName = "pulsar.marker";

// The stored entry of a marker.
BufferChain encode_marker(wire::MarkerType type, const google::protobuf::MessageLite& body,
                          const std::vector<std::string>& replicate_to, uint64_t publish_time_ms);

// Whether replicators carry markers of this type to the clusters they name (the replicated
// subscription markers); others stay where they were written.
bool is_replicated_subscription_marker(int32_t marker_type);

// The marker message of a stored entry whose metadata says `marker_type`; kCorruption when
// its payload does not parse as one.
template <typename Marker>
Result<Marker> parse_marker(const Buffer& payload) {
  Marker m;
  if (!m.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    return Status(Errc::kCorruption, "marker payload does not parse");
  }
  return m;
}

}  // namespace magnetar::protocol
