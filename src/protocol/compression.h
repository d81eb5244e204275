#pragma once
// Payload codecs named by MessageMetadata.compression.
//
// A producer compresses the whole payload of a message (for a batch: the concatenated
// batch) as one unit and records the original length in MessageMetadata.uncompressed_size.
// The payload bytes are exactly what Pulsar's Java and C++ clients write and read:
//
//   LZ4     a single raw LZ4 block: no frame magic, no size prefix, no checksum.
//   ZLIB    a zlib stream (RFC 1950: CMF/FLG header, deflate data, Adler-32 trailer).
//           The Java client flushes with SYNC_FLUSH and never finishes the stream, so its
//           payloads stop after an empty stored block (00 00 FF FF) with no final block and
//           no Adler-32. decompress() accepts both shapes; compress() writes complete streams.
//   ZSTD    zstd frames (magic 28 B5 2F FD); compress() writes one frame at level 3.
//   SNAPPY  the raw snappy format (varint length, then elements), not the framing format.
//
// None of these formats is self-delimiting in a way we may trust, so decompress() takes the
// size the metadata claims, refuses it above a caller-set limit before allocating anything,
// and fails unless the payload decodes to exactly that many bytes. Garbage input yields an
// Error::kCompression status, never a crash, a hang or a read outside `input`.
//
// All functions are thread-safe; each thread keeps its own zstd contexts.

#include <cstdint>
#include <span>
#include <string_view>

#include "common/buffer.h"
#include "common/status.h"

namespace magnetar::protocol {

// Values are the wire values of MessageMetadata.compression.
enum class CompressionType : int {
  kNone = 0,
  kLz4 = 1,
  kZlib = 2,
  kZstd = 3,
  kSnappy = 4,
};

// "NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"; "UNKNOWN" for a value outside the enum.
std::string_view to_string(CompressionType type) noexcept;

// Parses a codec name as written above, in any letter case (for command-line flags).
Result<CompressionType> compression_from_string(std::string_view name);

// Compresses `input` in the wire format of `type`. kNone returns a copy. Fails with
// kUnsupportedCompression for a value outside the enum, kCompression if `input` is larger
// than the codec (or uncompressed_size, a uint32) can describe.
Result<Buffer> compress(CompressionType type, std::span<const uint8_t> input);

// Decodes a payload whose metadata claims `uncompressed_size` bytes. Fails with kCompression
// when that claim exceeds `max_uncompressed_size` (checked before allocating), when the
// payload is corrupt or truncated, or when it decodes to any other length; with
// kUnsupportedCompression for a value outside the enum. For kNone the input must already be
// `uncompressed_size` bytes long. An empty input with a claimed size of 0 decodes to an empty
// buffer for every codec (the Java client's ZLIB codec emits nothing for an empty payload).
Result<Buffer> decompress(CompressionType type, std::span<const uint8_t> input,
                          uint32_t uncompressed_size, uint32_t max_uncompressed_size);

}  // namespace magnetar::protocol
