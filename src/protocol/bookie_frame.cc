#include "protocol/bookie_frame.h"

#include <fmt/format.h>

#include "common/endian.h"
#include "protocol/errors.h"

namespace magnetar::protocol {

BufferChain encode_bookie_frame(const google::protobuf::MessageLite& header,
                                const BufferChain& body) {
  MAGNETAR_ASSERT(header.IsInitialized(), "bookie frame header with required fields unset");
  size_t header_size = header.ByteSizeLong();
  Buffer head = Buffer::allocate(8 + header_size);
  uint8_t* p = head.mutable_data();
  store_be32(p, static_cast<uint32_t>(4 + header_size + body.size()));
  store_be32(p + 4, static_cast<uint32_t>(header_size));
  header.SerializeWithCachedSizesToArray(p + 8);
  BufferChain out(std::move(head));
  out.append(body);
  return out;
}

Result<std::optional<std::pair<Buffer, Buffer>>> BookieFrameSplitter::next() {
  using Out = std::optional<std::pair<Buffer, Buffer>>;
  if (!error_.ok()) return error_;
  if (pending_.size() < 4) return Out();
  uint8_t len[4];
  pending_.copy_to(0, 4, len);
  uint64_t frame_size = uint64_t{load_be32(len)} + 4;
  if (frame_size > max_frame_size_) {
    error_ = Status(Error::kFrameTooLarge, fmt::format("bookie frame of {} bytes exceeds the "
                                                       "maximum of {}",
                                                       frame_size, max_frame_size_));
    return error_;
  }
  if (frame_size < 8) {
    error_ = Status(Error::kMalformedFrame, "bookie frame shorter than its header size field");
    return error_;
  }
  if (pending_.size() < frame_size) return Out();
  Buffer frame = pending_.take_front(frame_size);
  uint32_t header_size = load_be32(frame.data() + 4);
  if (header_size > frame_size - 8) {
    error_ = Status(Error::kMalformedFrame,
                    fmt::format("bookie frame header size {} exceeds the frame", header_size));
    return error_;
  }
  Buffer header = frame.slice(8, header_size);
  Buffer body = frame.slice(8 + header_size);
  return Out(std::make_pair(std::move(header), std::move(body)));
}

template <typename Header>
Status BookieFrameDecoder<Header>::bad_header() {
  return Status(Error::kBadCommand, "bookie frame header does not parse or lacks required fields");
}

template class BookieFrameDecoder<bookie_wire::BookieRequest>;
template class BookieFrameDecoder<bookie_wire::BookieResponse>;

Result<std::vector<Buffer>> split_read_range(const bookie_wire::ReadRangeResponse& response,
                                             const Buffer& body) {
  std::vector<Buffer> entries;
  entries.reserve(static_cast<size_t>(response.entry_sizes_size()));
  size_t at = 0;
  for (uint32_t size : response.entry_sizes()) {
    if (size > body.size() - at) {
      return Status(Errc::kCorruption,
                    fmt::format("read-range answer: entry {} of {} bytes runs past its body of {}",
                                entries.size(), size, body.size()));
    }
    entries.push_back(body.slice(at, size));
    at += size;
  }
  if (at != body.size()) {
    return Status(Errc::kCorruption,
                  fmt::format("read-range answer: {} entry sizes cover {} of its {} body bytes",
                              response.entry_sizes_size(), at, body.size()));
  }
  return entries;
}

}  // namespace magnetar::protocol
