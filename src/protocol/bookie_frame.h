#pragma once
// Framing of Magnetar's bookie protocol (proto/bookie.proto), shared by the bookie server
// and the ledger client:
//
//   [totalSize u32][headerSize u32][header: BookieRequest | BookieResponse][body ...]
//
// big-endian sizes; totalSize counts every byte after itself; the body (an entry) is kept
// out of the protobuf so that neither side copies it. Decoding bounds every size and a
// decoder that failed stays failed (close the connection).

#include <cstdint>
#include <optional>
#include <vector>

#include "common/buffer.h"
#include "common/status.h"
#include "proto/bookie.pb.h"

namespace magnetar::protocol {

// Largest bookie frame by default: Pulsar's largest message plus room for headers.
inline constexpr uint32_t kDefaultMaxBookieFrameSize = 5 * 1024 * 1024 + 64 * 1024;

template <typename Header>
struct BookieFrame {
  Header header;
  Buffer body;  // shares the received bytes when the frame arrived in one read
};

// Header + body, the header encoded into one new buffer, the body referenced.
BufferChain encode_bookie_frame(const google::protobuf::MessageLite& header,
                                const BufferChain& body = {});

// Splits a byte stream into [header bytes, body] pairs; Header parsing is the template's job.
class BookieFrameSplitter {
 public:
  explicit BookieFrameSplitter(uint32_t max_frame_size) : max_frame_size_(max_frame_size) {}
  void feed(Buffer bytes) { pending_.append(std::move(bytes)); }
  // The next whole frame as (header bytes, body), nullopt when more bytes are needed.
  Result<std::optional<std::pair<Buffer, Buffer>>> next();
  bool failed() const { return !error_.ok(); }
  size_t buffered_bytes() const { return pending_.size(); }

 private:
  uint32_t max_frame_size_;
  BufferChain pending_;
  Status error_;
};

template <typename Header>
class BookieFrameDecoder {
 public:
  explicit BookieFrameDecoder(uint32_t max_frame_size = kDefaultMaxBookieFrameSize)
      : splitter_(max_frame_size) {}
  void feed(Buffer bytes) { splitter_.feed(std::move(bytes)); }
  Result<std::optional<BookieFrame<Header>>> next() {
    if (!error_.ok()) return error_;
    auto raw = splitter_.next();
    if (!raw.ok()) return raw.status();
    if (!raw->has_value()) return std::optional<BookieFrame<Header>>();
    BookieFrame<Header> frame;
    const Buffer& h = (*raw)->first;
    if (!frame.header.ParseFromArray(h.data(), static_cast<int>(h.size()))) {
      error_ = bad_header();
      return error_;
    }
    frame.body = std::move((*raw)->second);
    return std::optional<BookieFrame<Header>>(std::move(frame));
  }
  bool failed() const { return splitter_.failed() || !error_.ok(); }

 private:
  static Status bad_header();
  BookieFrameSplitter splitter_;
  Status error_;
};

using BookieRequestDecoder = BookieFrameDecoder<bookie_wire::BookieRequest>;
using BookieResponseDecoder = BookieFrameDecoder<bookie_wire::BookieResponse>;

// The entries of a read_range answer: `body` cut by its entry_sizes (slices, no copy).
// kCorruption when the sizes do not add up to the body exactly.
Result<std::vector<Buffer>> split_read_range(const bookie_wire::ReadRangeResponse& response,
                                             const Buffer& body);

}  // namespace magnetar::protocol
