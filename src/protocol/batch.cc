#include "protocol/batch.h"

#include <fmt/format.h>

#include "common/endian.h"
#include "protocol/compression.h"
#include "protocol/errors.h"

namespace magnetar::protocol {

Result<std::vector<SingleMessage>> parse_batch(const Buffer& payload, int32_t count) {
  // Each message takes at least its 4-byte size field.
  if (count < 0 || static_cast<uint64_t>(count) * 4 > payload.size()) {
    return Status(Error::kBadBatch, fmt::format("batch claims {} messages in {} bytes", count,
                                                payload.size()));
  }
  std::vector<SingleMessage> out;
  out.reserve(static_cast<size_t>(count));
  size_t pos = 0;
  for (int32_t i = 0; i < count; ++i) {
    if (payload.size() - pos < 4) {
      return Status(Error::kBadBatch, fmt::format("batch ends before message {} of {}", i, count));
    }
    uint32_t meta_size = load_be32(payload.data() + pos);
    pos += 4;
    if (meta_size > payload.size() - pos) {
      return Status(Error::kBadBatch,
                    fmt::format("message {}: metadata size {} exceeds the {} bytes left", i,
                                meta_size, payload.size() - pos));
    }
    SingleMessage m;
    if (!m.metadata.ParseFromArray(payload.data() + pos, static_cast<int>(meta_size))) {
      return Status(Error::kBadBatch, fmt::format("message {}: metadata does not parse", i));
    }
    pos += meta_size;
    int32_t size = m.metadata.payload_size();
    if (size < 0 || static_cast<size_t>(size) > payload.size() - pos) {
      return Status(Error::kBadBatch, fmt::format("message {}: payload size {} exceeds the {} "
                                                  "bytes left",
                                                  i, size, payload.size() - pos));
    }
    m.payload = payload.slice(pos, static_cast<size_t>(size));
    pos += static_cast<size_t>(size);
    out.push_back(std::move(m));
  }
  if (pos != payload.size()) {
    return Status(Error::kBadBatch, fmt::format("{} bytes left after the {} messages of the batch",
                                                payload.size() - pos, count));
  }
  return out;
}

Result<std::vector<SingleMessage>> unpack_messages(const wire::MessageMetadata& metadata,
                                                   const Buffer& payload,
                                                   uint32_t max_uncompressed_size) {
  Buffer plain = payload;
  auto type = static_cast<CompressionType>(metadata.compression());
  if (type != CompressionType::kNone) {
    MAGNETAR_ASSIGN_OR_RETURN(plain, decompress(type, payload.span(), metadata.uncompressed_size(),
                                                max_uncompressed_size));
  }
  if (metadata.has_num_messages_in_batch()) {
    return parse_batch(plain, metadata.num_messages_in_batch());
  }
  std::vector<SingleMessage> out(1);
  out[0].metadata.set_payload_size(static_cast<int32_t>(plain.size()));
  out[0].payload = std::move(plain);
  return out;
}

void BatchBuilder::add(wire::SingleMessageMetadata metadata, std::string_view payload) {
  metadata.set_payload_size(static_cast<int32_t>(payload.size()));
  size_t meta_size = metadata.ByteSizeLong();
  size_t at = bytes_.size();
  bytes_.resize(at + 4 + meta_size);
  auto* p = reinterpret_cast<uint8_t*>(bytes_.data() + at);
  store_be32(p, static_cast<uint32_t>(meta_size));
  metadata.SerializeWithCachedSizesToArray(p + 4);
  bytes_.append(payload);
  ++count_;
}

Buffer BatchBuilder::finish() {
  Buffer out = Buffer::copy_of(bytes_);
  bytes_.clear();
  count_ = 0;
  return out;
}

}  // namespace magnetar::protocol
