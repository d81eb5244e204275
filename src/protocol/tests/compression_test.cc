#include "protocol/compression.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr uint32_t kMax = 8 << 20;
constexpr size_t kMiB = 1 << 20;

// The plaintext behind every known-answer vector below.
constexpr std::string_view kFox =
    "The quick brown fox jumps over the lazy dog. "
    "The quick brown fox jumps over the lazy dog. "
    "The quick brown fox jumps over the lazy dog. ";

Bytes from_hex(std::string_view hex) {
  auto nibble = [](char c) -> uint8_t {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    ADD_FAILURE() << "bad hex digit " << c;
    return 0;
  };
  Bytes out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return out;
}

Bytes bytes_of(std::string_view s) {
  return Bytes(s.begin(), s.end());
}

// mt19937's output sequence is fixed by the standard, so these bytes are the same everywhere.
Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng() >> 24);
  return out;
}

// Text-like data: words from a small vocabulary in a random order.
Bytes compressible_bytes(size_t n, uint32_t seed) {
  static constexpr std::string_view kWords[] = {"ledger ", "bookie ", "cursor ", "topic ",
                                                "broker ", "entry ",  "fence ",  "ack "};
  std::mt19937 rng(seed);
  Bytes out;
  out.reserve(n);
  while (out.size() < n) {
    std::string_view w = kWords[rng() % 8];
    for (size_t i = 0; i < w.size() && out.size() < n; ++i) out.push_back(w[i]);
  }
  return out;
}

Bytes bytes_of(const Buffer& b) {
  return Bytes(b.data(), b.data() + b.size());
}

Bytes compress_ok(CompressionType type, const Bytes& in) {
  auto r = compress(type, in);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? bytes_of(*r) : Bytes{};
}

// A copy of some bytes that ends right where an inaccessible page begins: a codec reading
// one byte past the end faults, even inside the (uninstrumented) codec libraries.
class GuardedCopy {
 public:
  explicit GuardedCopy(const Bytes& in) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    data_pages_ = (in.size() + page - 1) / page * page;
    length_ = data_pages_ + page;
    void* mem = mmap(nullptr, length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
      ADD_FAILURE() << "mmap failed";
      return;
    }
    base_ = static_cast<uint8_t*>(mem);
    EXPECT_EQ(mprotect(base_ + data_pages_, page, PROT_NONE), 0);
    uint8_t* start = base_ + data_pages_ - in.size();
    if (!in.empty()) std::memcpy(start, in.data(), in.size());
    bytes_ = std::span<const uint8_t>(start, in.size());
  }
  ~GuardedCopy() {
    if (base_ != nullptr) munmap(base_, length_);
  }
  GuardedCopy(const GuardedCopy&) = delete;
  GuardedCopy& operator=(const GuardedCopy&) = delete;

  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  uint8_t* base_ = nullptr;
  size_t data_pages_ = 0;
  size_t length_ = 0;
  std::span<const uint8_t> bytes_;
};

// Decompresses a copy of `in` that ends at a guard page (see GuardedCopy).
Result<Buffer> decode(CompressionType type, const Bytes& in, uint32_t claimed,
                      uint32_t max = kMax) {
  GuardedCopy guarded(in);
  return decompress(type, guarded.bytes(), claimed, max);
}

void expect_compression_error(const Result<Buffer>& r, std::string_view what) {
  ASSERT_FALSE(r.ok()) << what << ": decoded " << r->size() << " bytes";
  EXPECT_EQ(r.status().code(), make_error_code(Error::kCompression)) << r.status().to_string();
}

constexpr CompressionType kCodecs[] = {CompressionType::kLz4, CompressionType::kZlib,
                                       CompressionType::kZstd, CompressionType::kSnappy};

TEST(CompressionTest, GuardPageFaultsOnAnOverRead) {
  GuardedCopy guarded(bytes_of("abc"));
  EXPECT_EQ(guarded.bytes()[2], 'c');
  EXPECT_DEATH(
      {
        volatile const uint8_t* p = guarded.bytes().data();
        volatile uint8_t past_end = p[3];
        (void)past_end;
      },
      "");
}

// --- names ----------------------------------------------------------------------------------

TEST(CompressionTest, WireValuesMatchMessageMetadata) {
  EXPECT_EQ(static_cast<int>(CompressionType::kNone), 0);
  EXPECT_EQ(static_cast<int>(CompressionType::kLz4), 1);
  EXPECT_EQ(static_cast<int>(CompressionType::kZlib), 2);
  EXPECT_EQ(static_cast<int>(CompressionType::kZstd), 3);
  EXPECT_EQ(static_cast<int>(CompressionType::kSnappy), 4);
}

TEST(CompressionTest, NamesParseInAnyCase) {
  for (CompressionType t : {CompressionType::kNone, CompressionType::kLz4, CompressionType::kZlib,
                            CompressionType::kZstd, CompressionType::kSnappy}) {
    auto r = compression_from_string(to_string(t));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, t);
  }
  EXPECT_EQ(*compression_from_string("lz4"), CompressionType::kLz4);
  EXPECT_EQ(*compression_from_string("Zstd"), CompressionType::kZstd);
  EXPECT_EQ(*compression_from_string("snappy"), CompressionType::kSnappy);
  EXPECT_EQ(to_string(static_cast<CompressionType>(9)), "UNKNOWN");
}

TEST(CompressionTest, UnknownNamesAreRejected) {
  for (std::string_view bad : {"", "gzip", "lz4 ", "ZLIB2", "deflate"}) {
    auto r = compression_from_string(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), make_error_code(Error::kUnsupportedCompression));
    std::string quoted = "'";
    quoted.append(bad).append("'");
    EXPECT_NE(r.status().message().find(quoted), std::string::npos) << r.status().message();
  }
}

TEST(CompressionTest, UnknownTypeIsUnsupported) {
  const auto bogus = static_cast<CompressionType>(7);
  Bytes data = bytes_of("abc");
  EXPECT_EQ(compress(bogus, data).status().code(), make_error_code(Error::kUnsupportedCompression));
  EXPECT_EQ(decompress(bogus, data, 3, kMax).status().code(),
            make_error_code(Error::kUnsupportedCompression));
}

TEST(CompressionTest, NoneCopiesAndChecksTheSize) {
  Bytes data = bytes_of("plain");
  EXPECT_EQ(compress_ok(CompressionType::kNone, data), data);
  auto r = decode(CompressionType::kNone, data, 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(bytes_of(*r), data);
  expect_compression_error(decode(CompressionType::kNone, data, 4), "short claim");
  expect_compression_error(decode(CompressionType::kNone, data, 6), "long claim");
}

// --- every codec ----------------------------------------------------------------------------

class CodecTest : public ::testing::TestWithParam<CompressionType> {
 protected:
  CompressionType type() const { return GetParam(); }

  void expect_round_trip(const Bytes& in) {
    Bytes packed = compress_ok(type(), in);
    auto r = decode(type(), packed, static_cast<uint32_t>(in.size()));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(bytes_of(*r) == in) << "round trip of " << in.size() << " bytes differs";
  }
};

TEST_P(CodecTest, RoundTripsEmptyInput) {
  expect_round_trip({});
  // What a producer sends for an empty payload, and what the Java ZLIB codec sends (nothing).
  auto r = decode(type(), {}, 0);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->size(), 0u);
}

TEST_P(CodecTest, RoundTripsTinyInputs) {
  expect_round_trip(bytes_of("x"));
  expect_round_trip(bytes_of("hello world"));
  expect_round_trip(Bytes(3, 0));
  expect_round_trip(bytes_of(kFox));
}

TEST_P(CodecTest, RoundTripsOneMebibyteOfRandomBytes) {
  expect_round_trip(random_bytes(kMiB, 1));
}

TEST_P(CodecTest, RoundTripsOneMebibyteOfText) {
  Bytes in = compressible_bytes(kMiB, 2);
  EXPECT_LT(compress_ok(type(), in).size(), in.size() / 2);
  expect_round_trip(in);
}

TEST_P(CodecTest, RejectsAClaimAboveTheLimit) {
  Bytes in = compressible_bytes(4096, 3);
  Bytes packed = compress_ok(type(), in);
  auto r = decode(type(), packed, 4096, 4095);
  expect_compression_error(r, "claim above limit");
  EXPECT_NE(r.status().message().find("4096"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("limit of 4095"), std::string::npos) << r.status().message();
  // A claim of 4 GiB - 1 is refused before anything is allocated.
  expect_compression_error(decode(type(), packed, UINT32_MAX, kMax), "huge claim");
  // At the limit it is fine.
  EXPECT_TRUE(decode(type(), packed, 4096, 4096).ok());
}

TEST_P(CodecTest, RejectsAClaimOneByteOff) {
  for (const Bytes& in :
       {bytes_of("x"), bytes_of(kFox), compressible_bytes(65536, 4), random_bytes(65536, 5)}) {
    Bytes packed = compress_ok(type(), in);
    const auto n = static_cast<uint32_t>(in.size());
    expect_compression_error(decode(type(), packed, n - 1), "claim one byte short");
    expect_compression_error(decode(type(), packed, n + 1), "claim one byte long");
  }
  // An empty payload claiming one byte.
  expect_compression_error(decode(type(), compress_ok(type(), {}), 1), "empty, claim 1");
}

TEST_P(CodecTest, RejectsTruncatedInput) {
  Bytes small = bytes_of(kFox);
  Bytes packed = compress_ok(type(), small);
  for (size_t len = 0; len < packed.size(); ++len) {
    Bytes cut(packed.begin(), packed.begin() + len);
    expect_compression_error(decode(type(), cut, static_cast<uint32_t>(small.size())),
                             "cut to " + std::to_string(len));
  }
  Bytes big = compressible_bytes(256 * 1024, 6);
  packed = compress_ok(type(), big);
  for (size_t len : {size_t{1}, packed.size() / 2, packed.size() - 5, packed.size() - 1}) {
    Bytes cut(packed.begin(), packed.begin() + len);
    expect_compression_error(decode(type(), cut, static_cast<uint32_t>(big.size())),
                             "cut to " + std::to_string(len));
  }
}

TEST_P(CodecTest, RejectsTrailingBytes) {
  Bytes packed = compress_ok(type(), bytes_of(kFox));
  packed.push_back(0);
  expect_compression_error(decode(type(), packed, kFox.size()), "trailing zero byte");
}

TEST_P(CodecTest, RejectsRandomGarbage) {
  for (uint32_t seed = 0; seed < 200; ++seed) {
    Bytes junk = random_bytes(1 + seed * 7, 1000 + seed);
    for (uint32_t claimed : {1u, 100u, 5000u}) {
      expect_compression_error(
          decode(type(), junk, claimed),
          "seed " + std::to_string(seed) + " claim " + std::to_string(claimed));
    }
  }
  expect_compression_error(decode(type(), bytes_of("this is not compressed"), 22), "ascii");
}

// Corrupted payloads must not crash, hang or read past the input (decode() puts a guard page
// there); whatever a codec then accepts must have exactly the claimed size.
TEST_P(CodecTest, SurvivesCorruptedPayloads) {
  Bytes in = compressible_bytes(20000, 7);
  Bytes packed = compress_ok(type(), in);
  std::mt19937 rng(8);
  for (int round = 0; round < 500; ++round) {
    Bytes bad = packed;
    for (int flips = 1 + round % 4; flips > 0; --flips) {
      bad[rng() % bad.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    }
    auto r = decode(type(), bad, static_cast<uint32_t>(in.size()));
    if (r.ok()) {
      EXPECT_EQ(r->size(), in.size());
    } else {
      EXPECT_EQ(r.status().code(), make_error_code(Error::kCompression));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Compression, CodecTest, ::testing::ValuesIn(kCodecs),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// --- known answers: bytes made by other producers, and format landmarks -----------------------

// `lz4 -c --no-frame-crc` (lz4 1.9.4 CLI) over kFox. The CLI writes the LZ4 *frame* format;
// Pulsar payloads are the raw block inside it, which this test digs out per the frame spec:
// magic 04 22 4D 18, FLG, BD, HC, then [u32 LE block size][block] ... and a zero end mark.
constexpr std::string_view kFoxLz4Frame =
    "04224d1860408238000000ff1e54686520717569636b2062726f776e20666f78206a756d7073206f7665722074"
    "6865206c617a7920646f672e202d004250646f672e2000000000";

TEST(CompressionKnownAnswerTest, Lz4DecodesTheBlockInsideAnLz4CliFrame) {
  Bytes frame = from_hex(kFoxLz4Frame);
  ASSERT_EQ(Bytes(frame.begin(), frame.begin() + 4), from_hex("04224d18"));
  ASSERT_EQ(frame[4] & 0x08, 0) << "no content-size field expected";
  size_t pos = 7;
  const uint32_t block_size = frame[pos] | frame[pos + 1] << 8 | frame[pos + 2] << 16 |
                              static_cast<uint32_t>(frame[pos + 3]) << 24;
  ASSERT_EQ(block_size & 0x80000000u, 0u) << "block must be compressed";
  pos += 4;
  Bytes block(frame.begin() + pos, frame.begin() + pos + block_size);
  ASSERT_EQ(Bytes(frame.begin() + pos + block_size, frame.end()), Bytes(4, 0));

  auto r = decode(CompressionType::kLz4, block, kFox.size());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->view(), kFox);

  // The frame itself is not what Pulsar sends; it must not decode as a payload.
  expect_compression_error(decode(CompressionType::kLz4, frame, kFox.size()), "whole frame");
}

TEST(CompressionKnownAnswerTest, Lz4DecodesAHandAssembledBlock) {
  // Per the LZ4 block format: token 0x3F = 3 literals "abc" and a match of 15+2+4 = 21 bytes
  // at offset 3; then token 0x50 = 5 final literals.
  Bytes block = from_hex(
      "3f61626303000250"
      "58595a5756");
  auto r = decode(CompressionType::kLz4, block, 29);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->view(), "abcabcabcabcabcabcabcabcXYZWV");
}

TEST(CompressionKnownAnswerTest, Lz4OutputIsARawBlock) {
  Bytes packed = compress_ok(CompressionType::kLz4, bytes_of(kFox));
  ASSERT_GE(packed.size(), 4u);
  EXPECT_NE(Bytes(packed.begin(), packed.begin() + 4), from_hex("04224d18")) << "frame magic";
  // A raw block of kFox starts with a token whose literal nibble is 15 (more than 14
  // literals before the first match), followed by the literals themselves.
  EXPECT_EQ(packed[0] >> 4, 15);
  EXPECT_EQ(compress_ok(CompressionType::kLz4, {}), from_hex("00")) << "empty block: one token";
}

// Python 3 `zlib.compress(kFox)`: a complete zlib stream ending with Adler-32 f93c3076.
constexpr std::string_view kFoxZlibComplete =
    "789c0bc94855282ccd4cce56482aca2fcf5348cbaf50c82acd2d2856c82f4b2d5228014ae72456552aa4e4a7eb"
    "2984d04c3100f93c3076";
// What Pulsar's Java codec emits for kFox (java.util.zip.Deflater, SYNC_FLUSH, never
// finished; generated on OpenJDK 17): no final block, no Adler-32, ends with 00 00 FF FF.
constexpr std::string_view kFoxZlibJavaSyncFlush =
    "789c0ac94855282ccd4cce56482aca2fcf5348cbaf50c82acd2d2856c82f4b2d5228014ae72456552aa4e4a7eb"
    "2984d04c31000000ffff";

TEST(CompressionKnownAnswerTest, ZlibDecodesACompleteStream) {
  auto r = decode(CompressionType::kZlib, from_hex(kFoxZlibComplete), kFox.size());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->view(), kFox);
  // zlib.compress(b"") is a stream too.
  r = decode(CompressionType::kZlib, from_hex("789c030000000001"), 0);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->size(), 0u);
}

TEST(CompressionKnownAnswerTest, ZlibDecodesTheJavaClientsSyncFlushedStream) {
  Bytes java = from_hex(kFoxZlibJavaSyncFlush);
  auto r = decode(CompressionType::kZlib, java, kFox.size());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->view(), kFox);
  // Without the complete sync marker the stream stops mid-block header: truncated.
  for (size_t cut = 1; cut <= 4; ++cut) {
    Bytes shorter(java.begin(), java.end() - cut);
    expect_compression_error(decode(CompressionType::kZlib, shorter, kFox.size()),
                             "java stream minus " + std::to_string(cut));
  }
  expect_compression_error(decode(CompressionType::kZlib, java, kFox.size() + 1), "claim + 1");
  expect_compression_error(decode(CompressionType::kZlib, java, kFox.size() - 1), "claim - 1");
}

// The stream shape of Pulsar's Java codec for any input: java.util.zip.Deflater is zlib, and
// the codec calls deflate with SYNC_FLUSH until the input is used up, never with FINISH.
Bytes java_style_zlib(const Bytes& in) {
  z_stream zs{};
  EXPECT_EQ(deflateInit(&zs, Z_DEFAULT_COMPRESSION), Z_OK);
  Bytes out(deflateBound(&zs, in.size()) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_SYNC_FLUSH), Z_OK);
  EXPECT_EQ(zs.avail_in, 0u);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

TEST(CompressionKnownAnswerTest, ZlibDecodesSyncFlushedStreamsOfAnySize) {
  EXPECT_EQ(java_style_zlib(bytes_of(kFox)), from_hex(kFoxZlibJavaSyncFlush));
  for (const Bytes& in : {bytes_of("x"), random_bytes(kMiB, 9), compressible_bytes(kMiB, 10)}) {
    Bytes java = java_style_zlib(in);
    ASSERT_EQ(Bytes(java.end() - 4, java.end()), from_hex("0000ffff"));
    const auto n = static_cast<uint32_t>(in.size());
    auto r = decode(CompressionType::kZlib, java, n);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_TRUE(bytes_of(*r) == in);
    expect_compression_error(decode(CompressionType::kZlib, java, n - 1), "claim - 1");
    expect_compression_error(decode(CompressionType::kZlib, java, n + 1), "claim + 1");
    // Cutting part of the trailing empty stored block (00 00 FF FF) leaves a block header
    // unfinished; cutting into the data loses bytes. (Dropping the whole empty block, header
    // bits included, would leave a shorter stream that is just as complete and valid.)
    for (size_t len : {size_t{0}, size_t{2}, java.size() / 2, java.size() - 6, java.size() - 4,
                       java.size() - 1}) {
      Bytes cut(java.begin(), java.begin() + len);
      expect_compression_error(decode(CompressionType::kZlib, cut, n),
                               "cut to " + std::to_string(len));
    }
  }
}

TEST(CompressionKnownAnswerTest, ZlibOutputIsAZlibStream) {
  Bytes packed = compress_ok(CompressionType::kZlib, bytes_of(kFox));
  ASSERT_GE(packed.size(), 6u);
  EXPECT_EQ(packed[0], 0x78) << "CMF: deflate with a 32 KiB window";
  EXPECT_EQ((packed[0] << 8 | packed[1]) % 31, 0) << "FCHECK";
  EXPECT_EQ(Bytes(packed.end() - 4, packed.end()), from_hex("f93c3076")) << "Adler-32 trailer";
}

TEST(CompressionKnownAnswerTest, ZlibRejectsRawDeflateAndGzip) {
  Bytes complete = from_hex(kFoxZlibComplete);
  Bytes raw(complete.begin() + 2, complete.end() - 4);
  expect_compression_error(decode(CompressionType::kZlib, raw, kFox.size()), "raw deflate");
  // `gzip -c` of the same text (header with a file name, then the same deflate data).
  Bytes gzip = from_hex("1f8b080856f30c6b0003702e747874000bc94855282ccd4cce56482aca2f");
  expect_compression_error(decode(CompressionType::kZlib, gzip, kFox.size()), "gzip");
}

// `zstd -c --no-check` and `zstd -c` (zstd 1.5.4 CLI) over kFox.
constexpr std::string_view kFoxZstd =
    "28b52ffd2087ad0100d40254686520717569636b2062726f776e20666f78206a756d7073206f76657220746865"
    "206c617a7920646f672e2001003d38a932";
constexpr std::string_view kFoxZstdChecksummed =
    "28b52ffd2487ad0100d40254686520717569636b2062726f776e20666f78206a756d7073206f76657220746865"
    "206c617a7920646f672e2001003d38a93258a7a5fa";

TEST(CompressionKnownAnswerTest, ZstdDecodesZstdCliFrames) {
  for (std::string_view hex : {kFoxZstd, kFoxZstdChecksummed}) {
    auto r = decode(CompressionType::kZstd, from_hex(hex), kFox.size());
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->view(), kFox);
  }
  Bytes bad_checksum = from_hex(kFoxZstdChecksummed);
  bad_checksum.back() ^= 1;
  expect_compression_error(decode(CompressionType::kZstd, bad_checksum, kFox.size()), "checksum");
}

TEST(CompressionKnownAnswerTest, ZstdOutputIsAFrame) {
  Bytes packed = compress_ok(CompressionType::kZstd, bytes_of(kFox));
  ASSERT_GE(packed.size(), 4u);
  EXPECT_EQ(Bytes(packed.begin(), packed.begin() + 4), from_hex("28b52ffd"));
}

// snappy-java 1.1.8 `Snappy.compress(kFox)`: raw format, varint length 135 = 87 01.
constexpr std::string_view kFoxSnappy =
    "8701b054686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a792064"
    "6f672e20fe2d00662d00";

TEST(CompressionKnownAnswerTest, SnappyDecodesSnappyJavaOutput) {
  auto r = decode(CompressionType::kSnappy, from_hex(kFoxSnappy), kFox.size());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->view(), kFox);
}

TEST(CompressionKnownAnswerTest, SnappyDecodesAHandAssembledBuffer) {
  // Per the snappy format: varint 12, literal tag 0x08 ("abc"), copy-1 tag 0x15 (length 9)
  // with offset 3.
  auto r = decode(CompressionType::kSnappy,
                  from_hex("0c08616263"
                           "1503"),
                  12);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->view(), "abcabcabcabc");
}

TEST(CompressionKnownAnswerTest, SnappyOutputIsTheRawFormat) {
  Bytes packed = compress_ok(CompressionType::kSnappy, bytes_of(kFox));
  ASSERT_GE(packed.size(), 2u);
  EXPECT_EQ(Bytes(packed.begin(), packed.begin() + 2), from_hex("8701")) << "varint length";
  // The framing format starts with a stream identifier chunk; it is not a Pulsar payload.
  Bytes framed = from_hex("ff060000734e61507059");
  framed.insert(framed.end(), packed.begin(), packed.end());
  expect_compression_error(decode(CompressionType::kSnappy, framed, kFox.size()), "framed");
}

}  // namespace
}  // namespace magnetar::protocol
