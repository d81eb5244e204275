#include "protocol/compression.h"

#include <lz4.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <climits>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>

#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

// Both Pulsar clients compress zstd at level 3; we match them so sizes are comparable.
constexpr int kZstdLevel = 3;

// Codec libraries want non-null pointers even for empty ranges.
constexpr uint8_t kEmptyInput[1] = {0};

const char* as_chars(std::span<const uint8_t> bytes) {
  return reinterpret_cast<const char*>(bytes.empty() ? kEmptyInput : bytes.data());
}

bool is_known(CompressionType type) {
  switch (type) {
    case CompressionType::kNone:
    case CompressionType::kLz4:
    case CompressionType::kZlib:
    case CompressionType::kZstd:
    case CompressionType::kSnappy:
      return true;
  }
  return false;
}

Status unsupported(CompressionType type) {
  return Status(Error::kUnsupportedCompression,
                "compression type " + std::to_string(static_cast<int>(type)) +
                    " is not one of NONE(0), LZ4(1), ZLIB(2), ZSTD(3), SNAPPY(4)");
}

Status codec_error(CompressionType type, const std::string& what) {
  return Status(Error::kCompression, std::string(to_string(type)) + " payload: " + what);
}

Status size_mismatch(CompressionType type, size_t decoded, uint32_t claimed) {
  return codec_error(type, "decodes to " + std::to_string(decoded) +
                               " bytes but the metadata claims " + std::to_string(claimed));
}

Status too_long(CompressionType type, uint32_t claimed) {
  return codec_error(
      type, "decodes to more than the " + std::to_string(claimed) + " bytes the metadata claims");
}

// Returns the first `used` bytes of `out`. When that is under half of the block (a
// compress bound is mostly slack for compressible data) the bytes move to a block of their
// own so that a long-lived payload does not pin the slack.
Buffer fit(Buffer out, size_t used) {
  if (used < out.size() / 2) return Buffer::copy_of(out.data(), used);
  out.truncate(used);
  return out;
}

struct ZstdCCtxFree {
  void operator()(ZSTD_CCtx* ctx) const noexcept { ZSTD_freeCCtx(ctx); }
};
struct ZstdDCtxFree {
  void operator()(ZSTD_DCtx* ctx) const noexcept { ZSTD_freeDCtx(ctx); }
};

// Per-thread contexts: creating one per call costs an allocation of tens to hundreds of KiB.
// Null if the allocation failed.
ZSTD_CCtx* thread_cctx() {
  thread_local std::unique_ptr<ZSTD_CCtx, ZstdCCtxFree> ctx(ZSTD_createCCtx());
  return ctx.get();
}
ZSTD_DCtx* thread_dctx() {
  thread_local std::unique_ptr<ZSTD_DCtx, ZstdDCtxFree> ctx(ZSTD_createDCtx());
  return ctx.get();
}

// --- compress -----------------------------------------------------------------------------

Result<Buffer> compress_lz4(std::span<const uint8_t> in) {
  if (in.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
    return codec_error(CompressionType::kLz4, "cannot compress " + std::to_string(in.size()) +
                                                  " bytes (LZ4 blocks hold at most " +
                                                  std::to_string(LZ4_MAX_INPUT_SIZE) + ")");
  }
  const int n = static_cast<int>(in.size());
  const int bound = LZ4_compressBound(n);
  Buffer out = Buffer::allocate(static_cast<size_t>(bound));
  const int written =
      LZ4_compress_default(as_chars(in), reinterpret_cast<char*>(out.mutable_data()), n, bound);
  if (written <= 0) return codec_error(CompressionType::kLz4, "LZ4_compress_default failed");
  return fit(std::move(out), static_cast<size_t>(written));
}

Result<Buffer> compress_zlib(std::span<const uint8_t> in) {
  uLongf written = compressBound(static_cast<uLong>(in.size()));
  Buffer out = Buffer::allocate(written);
  const int rc =
      compress2(out.mutable_data(), &written, reinterpret_cast<const Bytef*>(as_chars(in)),
                static_cast<uLong>(in.size()), Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) {
    return codec_error(CompressionType::kZlib, "compress2 failed with code " + std::to_string(rc));
  }
  return fit(std::move(out), written);
}

Result<Buffer> compress_zstd(std::span<const uint8_t> in) {
  ZSTD_CCtx* ctx = thread_cctx();
  if (ctx == nullptr) return codec_error(CompressionType::kZstd, "cannot allocate a context");
  const size_t bound = ZSTD_compressBound(in.size());
  Buffer out = Buffer::allocate(bound);
  const size_t written =
      ZSTD_compressCCtx(ctx, out.mutable_data(), bound, as_chars(in), in.size(), kZstdLevel);
  if (ZSTD_isError(written)) {
    return codec_error(CompressionType::kZstd, ZSTD_getErrorName(written));
  }
  return fit(std::move(out), written);
}

Result<Buffer> compress_snappy(std::span<const uint8_t> in) {
  Buffer out = Buffer::allocate(snappy::MaxCompressedLength(in.size()));
  size_t written = 0;
  snappy::RawCompress(as_chars(in), in.size(), reinterpret_cast<char*>(out.mutable_data()),
                      &written);
  return fit(std::move(out), written);
}

// --- decompress ---------------------------------------------------------------------------

Result<Buffer> decompress_lz4(std::span<const uint8_t> in, uint32_t size) {
  constexpr CompressionType kType = CompressionType::kLz4;
  if (in.size() > static_cast<size_t>(INT_MAX) || size > static_cast<uint32_t>(INT_MAX)) {
    return codec_error(kType, "sizes beyond 2 GiB are not supported");
  }
  Buffer out = Buffer::allocate(size);
  // decompress_safe never reads outside [in, in + size()) nor writes past `size` bytes; it
  // fails on a malformed or truncated block and on one that would decode to more.
  const int got = LZ4_decompress_safe(as_chars(in), reinterpret_cast<char*>(out.mutable_data()),
                                      static_cast<int>(in.size()), static_cast<int>(size));
  if (got < 0) {
    return codec_error(kType, "corrupt or truncated block, or one that decodes to more than the " +
                                  std::to_string(size) + " bytes the metadata claims");
  }
  if (static_cast<uint32_t>(got) != size) return size_mismatch(kType, got, size);
  return out;
}

// Inflates a zlib stream into exactly `size` bytes. Accepts a complete stream (ending in the
// Adler-32 trailer) and the Java client's unfinished one, which stops at a block boundary
// after a sync flush; rejects streams that stop anywhere else.
Result<Buffer> decompress_zlib(std::span<const uint8_t> in, uint32_t size) {
  constexpr CompressionType kType = CompressionType::kZlib;
  if (in.size() > std::numeric_limits<uInt>::max()) {
    return codec_error(kType, "payloads beyond 4 GiB are not supported");
  }
  Buffer out = Buffer::allocate(size);

  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  // inflateInit expects the zlib wrapper; raw deflate and gzip streams fail on the header.
  if (inflateInit(&zs) != Z_OK) return codec_error(kType, "inflateInit failed");
  struct InflateEnd {
    z_stream* zs;
    ~InflateEnd() { inflateEnd(zs); }
  } end_guard{&zs};

  auto corrupt = [&](int rc) {
    std::string what = "corrupt stream (zlib code " + std::to_string(rc);
    if (zs.msg != nullptr) what += std::string(": ") + zs.msg;
    return codec_error(kType, what + ")");
  };

  zs.next_in = const_cast<Bytef*>(reinterpret_cast<const Bytef*>(as_chars(in)));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.mutable_data();
  zs.avail_out = size;
  int rc = inflate(&zs, Z_NO_FLUSH);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return corrupt(rc);
  if (zs.avail_out > 0) {
    // Inflate stops early only at the end of the stream or of the input.
    if (rc == Z_STREAM_END) return size_mismatch(kType, zs.total_out, size);
    return codec_error(kType, "stream ends after " + std::to_string(zs.total_out) + " of the " +
                                  std::to_string(size) + " bytes the metadata claims");
  }
  if (rc != Z_STREAM_END && zs.avail_in > 0) {
    // The output is full but input is left: an end-of-block code, the sync flush marker or
    // the Adler-32 trailer. Let inflate consume it; a byte of output means the stream is
    // longer than claimed. (Probe only when input is left: a call that consumes nothing
    // resets the block-boundary bit of data_type read below.)
    uint8_t extra = 0;
    zs.next_out = &extra;
    zs.avail_out = 1;
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return corrupt(rc);
    if (zs.avail_out == 0) return too_long(kType, size);
  }
  if (zs.avail_in > 0) {
    return codec_error(kType, std::to_string(zs.avail_in) + " bytes follow the end of the stream");
  }
  if (rc == Z_STREAM_END) return out;
  // Input exhausted without a trailer: fine only at a block boundary (data_type bit 7) that
  // is not inside the final block (bit 6), which is where a sync-flushed stream stops.
  const bool at_block_boundary = (zs.data_type & 128) != 0;
  const bool after_final_block = (zs.data_type & 64) != 0;
  if (!at_block_boundary || after_final_block) {
    return codec_error(kType, "stream stops inside a block after " + std::to_string(zs.total_out) +
                                  " bytes (truncated, or longer than the metadata claims)");
  }
  return out;
}

Result<Buffer> decompress_zstd(std::span<const uint8_t> in, uint32_t size) {
  constexpr CompressionType kType = CompressionType::kZstd;
  ZSTD_DCtx* ctx = thread_dctx();
  if (ctx == nullptr) return codec_error(kType, "cannot allocate a context");
  Buffer out = Buffer::allocate(size);
  // One-shot decoding writes straight into `out`; no window buffer sized by the frame header.
  const size_t got = ZSTD_decompressDCtx(ctx, out.mutable_data(), size, as_chars(in), in.size());
  if (ZSTD_isError(got)) {
    if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall) return too_long(kType, size);
    return codec_error(kType,
                       std::string("corrupt or truncated frame (") + ZSTD_getErrorName(got) + ")");
  }
  if (got != size) return size_mismatch(kType, got, size);
  return out;
}

Result<Buffer> decompress_snappy(std::span<const uint8_t> in, uint32_t size) {
  constexpr CompressionType kType = CompressionType::kSnappy;
  size_t header_size = 0;
  if (!snappy::GetUncompressedLength(as_chars(in), in.size(), &header_size)) {
    return codec_error(kType, "malformed length header");
  }
  if (header_size != size) {
    return codec_error(kType, "length header says " + std::to_string(header_size) +
                                  " bytes but the metadata claims " + std::to_string(size));
  }
  Buffer out = Buffer::allocate(size);
  // RawUncompress writes at most the header's length (checked equal to `size` above) and
  // fails unless it produces exactly that many bytes.
  if (!snappy::RawUncompress(as_chars(in), in.size(),
                             reinterpret_cast<char*>(out.mutable_data()))) {
    return codec_error(kType, "corrupt or truncated data");
  }
  return out;
}

}  // namespace

std::string_view to_string(CompressionType type) noexcept {
  switch (type) {
    case CompressionType::kNone:
      return "NONE";
    case CompressionType::kLz4:
      return "LZ4";
    case CompressionType::kZlib:
      return "ZLIB";
    case CompressionType::kZstd:
      return "ZSTD";
    case CompressionType::kSnappy:
      return "SNAPPY";
  }
  return "UNKNOWN";
}

Result<CompressionType> compression_from_string(std::string_view name) {
  auto equals_ignoring_case = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      char c = a[i];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (c != b[i]) return false;
    }
    return true;
  };
  for (CompressionType type :
       {CompressionType::kNone, CompressionType::kLz4, CompressionType::kZlib,
        CompressionType::kZstd, CompressionType::kSnappy}) {
    if (equals_ignoring_case(name, to_string(type))) return type;
  }
  return Status(Error::kUnsupportedCompression, "unknown compression '" + std::string(name) +
                                                    "' (expected NONE, LZ4, ZLIB, ZSTD or SNAPPY)");
}

Result<Buffer> compress(CompressionType type, std::span<const uint8_t> input) {
  if (!is_known(type)) return unsupported(type);
  if (input.size() > std::numeric_limits<uint32_t>::max()) {
    return codec_error(type, "cannot compress " + std::to_string(input.size()) +
                                 " bytes: uncompressed_size is a uint32");
  }
  try {
    switch (type) {
      case CompressionType::kNone:
        return Buffer::copy_of(input.data(), input.size());
      case CompressionType::kLz4:
        return compress_lz4(input);
      case CompressionType::kZlib:
        return compress_zlib(input);
      case CompressionType::kZstd:
        return compress_zstd(input);
      case CompressionType::kSnappy:
        return compress_snappy(input);
    }
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, std::string(to_string(type)) +
                                                ": out of memory compressing " +
                                                std::to_string(input.size()) + " bytes");
  }
  return unsupported(type);
}

Result<Buffer> decompress(CompressionType type, std::span<const uint8_t> input,
                          uint32_t uncompressed_size, uint32_t max_uncompressed_size) {
  if (!is_known(type)) return unsupported(type);
  if (uncompressed_size > max_uncompressed_size) {
    return codec_error(type, "the metadata claims an uncompressed size of " +
                                 std::to_string(uncompressed_size) + " bytes, above the limit of " +
                                 std::to_string(max_uncompressed_size));
  }
  if (input.empty() && uncompressed_size == 0) return Buffer();
  try {
    switch (type) {
      case CompressionType::kNone:
        if (input.size() != uncompressed_size)
          return size_mismatch(type, input.size(), uncompressed_size);
        return Buffer::copy_of(input.data(), input.size());
      case CompressionType::kLz4:
        return decompress_lz4(input, uncompressed_size);
      case CompressionType::kZlib:
        return decompress_zlib(input, uncompressed_size);
      case CompressionType::kZstd:
        return decompress_zstd(input, uncompressed_size);
      case CompressionType::kSnappy:
        return decompress_snappy(input, uncompressed_size);
    }
  } catch (const std::bad_alloc&) {
    return Status(Errc::kResourceExhausted, std::string(to_string(type)) + ": out of memory for " +
                                                std::to_string(uncompressed_size) +
                                                " decompressed bytes");
  }
  return unsupported(type);
}

}  // namespace magnetar::protocol
