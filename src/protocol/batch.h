#pragma once
// Batched messages: one entry, one MessageMetadata with num_messages_in_batch = N, and a
// payload (after decompression) of N repetitions of
//
//   [singleMetaSize u32][SingleMessageMetadata][payload (payload_size bytes)]
//
// The parser treats the payload as untrusted: the count is bounded by the bytes present
// before anything is reserved, every size is checked, trailing bytes are an error.

#include <cstdint>
#include <vector>

#include "common/buffer.h"
#include "common/status.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::protocol {

struct SingleMessage {
  wire::SingleMessageMetadata metadata;
  Buffer payload;  // shares the batch buffer
};

// Parses exactly `count` messages from an uncompressed batch payload.
Result<std::vector<SingleMessage>> parse_batch(const Buffer& payload, int32_t count);

// Decompresses an entry's payload per its metadata (compression, uncompressed_size) and
// returns its messages: the batch's messages, or one message for a non-batched entry
// (whose SingleMessageMetadata then carries only payload_size). `max_uncompressed_size`
// bounds the untrusted uncompressed_size.
Result<std::vector<SingleMessage>> unpack_messages(const wire::MessageMetadata& metadata,
                                                   const Buffer& payload,
                                                   uint32_t max_uncompressed_size);

// Accumulates messages into one uncompressed batch payload.
class BatchBuilder {
 public:
  // `metadata.payload_size` is set from `payload` here.
  void add(wire::SingleMessageMetadata metadata, std::string_view payload);
  int32_t count() const noexcept { return count_; }
  size_t size_bytes() const noexcept { return bytes_.size(); }
  bool empty() const noexcept { return count_ == 0; }
  // The batch payload; the builder is empty afterwards.
  Buffer finish();

 private:
  std::string bytes_;
  int32_t count_ = 0;
};

}  // namespace magnetar::protocol
