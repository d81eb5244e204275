#pragma once
// The Pulsar binary protocol framing.
//
// Every frame is one BaseCommand, all lengths unsigned 32-bit big-endian:
//
//   simple command:   [totalSize][commandSize][BaseCommand]
//   payload command:  [totalSize][commandSize][BaseCommand]
//                     [0x0e02][bemSize][BrokerEntryMetadata]      optional, MESSAGE only
//                     [0x0e01][crc32c]                            optional (always sent by us)
//                     [metadataSize][MessageMetadata][payload ...]
//
// totalSize counts every byte after itself. The CRC32C covers metadataSize, metadata and
// payload. SEND (client -> broker) and MESSAGE (broker -> client) are the payload commands.
//
// The "entry" of a payload frame is [0x0e01][crc32c][metadataSize][MessageMetadata][payload]:
// what a broker stores in a ledger and later sends behind a new MESSAGE command, so that
// dispatch re-encodes nothing.
//
// Decoding never trusts a length: a size larger than the configured maximum fails at once
// (before any allocation), sizes that contradict each other fail, and a decoder that failed
// stays failed (the connection must be closed).

#include <cstdint>
#include <optional>

#include "common/buffer.h"
#include "common/status.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::protocol {

// Pulsar's maxMessageSize (5 MiB) plus its frame padding (10 KiB): the largest frame,
// counting the 4-byte length field, that a broker accepts by default.
inline constexpr uint32_t kDefaultMaxFrameSize = 5 * 1024 * 1024 + 10 * 1024;
inline constexpr uint16_t kMagicCrc32c = 0x0e01;
inline constexpr uint16_t kMagicBrokerEntryMetadata = 0x0e02;

struct DecoderOptions {
  uint32_t max_frame_size = kDefaultMaxFrameSize;
  // Parse MessageMetadata of payload frames (a broker needs it; a relay may not).
  bool parse_metadata = true;
};

// One decoded frame. Buffers share the received bytes where the frame arrived in one piece.
struct Frame {
  wire::BaseCommand command;

  // Payload commands only:
  bool has_payload = false;
  bool had_checksum = false;  // the sender included [0x0e01][crc32c] (verified if so)
  std::optional<wire::BrokerEntryMetadata> broker_entry_metadata;
  wire::MessageMetadata metadata;  // parsed when DecoderOptions::parse_metadata
  Buffer metadata_bytes;           // the MessageMetadata exactly as received
  Buffer payload;                  // the bytes after the metadata
  Buffer entry;                    // [magic][crc][metadataSize][metadata][payload]; built
                                   // with a fresh checksum when the sender sent none
};

// Incremental decoder for one connection's byte stream. Not thread-safe: owned by the
// connection's event loop.
class FrameDecoder {
 public:
  explicit FrameDecoder(DecoderOptions options = {}) : options_(options) {}

  // Queues bytes read from the socket (no copy).
  void feed(Buffer bytes) { pending_.append(std::move(bytes)); }
  // The next whole frame, std::nullopt when more bytes are needed, or an error after which
  // the stream cannot be trusted.
  Result<std::optional<Frame>> next();
  // As next(), decoded into a Frame this decoder keeps and reuses (nullptr when more bytes
  // are needed): valid until the next call or the decoder's end. A connection's hot path
  // then parses into protobuf messages whose sub-messages and strings are already allocated,
  // instead of building and destroying a command per frame.
  Result<Frame*> next_frame();

  size_t buffered_bytes() const noexcept { return pending_.size(); }
  // The bytes fed but not decoded yet, handed over (a relay that stops decoding passes them
  // on as they are); the decoder is empty afterwards.
  BufferChain take_buffered() {
    BufferChain out = std::move(pending_);
    pending_.clear();
    return out;
  }
  bool failed() const noexcept { return !error_.ok(); }

 private:
  // The next whole frame's bytes, an empty Buffer when more are needed, or the error.
  Result<Buffer> take_frame();

  DecoderOptions options_;
  BufferChain pending_;
  Status error_;
  Frame frame_;  // next_frame()'s
};

// Decodes exactly one frame held whole in `frame` (starting at its totalSize field).
Result<Frame> decode_frame(const Buffer& frame, const DecoderOptions& options = {});
// The same into `out`, whose earlier contents are all replaced (on an error, `out` is left
// half-decoded and must not be used): one Frame reused for a stream keeps its messages'
// allocations.
Status decode_frame_into(const Buffer& frame, const DecoderOptions& options, Frame& out);

// Encodes a command without payload. Asserts the command is fully initialised (all proto2
// required fields set): sending a half-built command is a programming error.
Buffer encode_command(const wire::BaseCommand& command);

// Encodes SEND or MESSAGE: the returned chain is one new header buffer followed by the
// payload buffers themselves (no payload copy). The checksum is always written.
BufferChain encode_payload_command(const wire::BaseCommand& command,
                                   const wire::MessageMetadata& metadata,
                                   const BufferChain& payload);

// Builds an entry ([magic][crc][metadataSize][metadata][payload]) from parts.
BufferChain encode_entry(const wire::MessageMetadata& metadata, const BufferChain& payload);

// Encodes a MESSAGE (or SEND) around an already-encoded entry, optionally preceded by
// broker entry metadata. The entry is referenced, not copied.
BufferChain encode_with_entry(const wire::BaseCommand& command, const Buffer& entry,
                              const wire::BrokerEntryMetadata* broker_entry_metadata = nullptr);

// Splits a stored entry into its parts, verifying the checksum (used on dispatch and
// by readers of ledgers). Accepts entries with or without the checksum pair.
struct EntryView {
  Buffer metadata_bytes;
  Buffer payload;
  bool had_checksum = false;
};
Result<EntryView> parse_entry(const Buffer& entry);

}  // namespace magnetar::protocol
