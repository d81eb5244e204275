#include "common/crc32c.h"

#include <array>
#include <atomic>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#define MAGNETAR_CRC32C_X86 1
#else
#define MAGNETAR_CRC32C_X86 0
#endif

namespace magnetar::crc32c {
namespace {

// Polynomials are kept reflected, as the CRC register holds them: bit 31 is the coefficient
// of x^0 and bit 0 that of x^31. All arithmetic below is modulo P(x), the Castagnoli
// polynomial, whose terms below x^32 are kPoly.
constexpr uint32_t kPoly = 0x82F63B78u;
constexpr uint32_t kOne = 0x80000000u;

constexpr uint32_t times_x(uint32_t a) {
  return (a >> 1) ^ ((a & 1) != 0 ? kPoly : 0);
}

constexpr uint32_t multiply(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (int degree = 0; degree < 32; ++degree) {
    if ((a & (kOne >> degree)) != 0) product ^= b;
    b = times_x(b);
  }
  return product;
}

// x^n mod P.
constexpr uint32_t x_pow(uint64_t n) {
  uint32_t result = kOne;
  uint32_t square = times_x(kOne);
  for (; n != 0; n >>= 1) {
    if ((n & 1) != 0) result = multiply(result, square);
    square = multiply(square, square);
  }
  return result;
}

// Slicing-by-8: kSlices[k][b] is the register after byte b followed by k zero bytes.
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables make_slice_tables() {
  SliceTables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t r = b;
    for (int bit = 0; bit < 8; ++bit) r = times_x(r);
    t[0][b] = r;
  }
  for (size_t k = 1; k < t.size(); ++k) {
    for (size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}

constexpr SliceTables kSlices = make_slice_tables();

uint32_t load_le32(const uint8_t* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

}  // namespace

namespace detail {

uint32_t extend_portable(uint32_t crc, const void* data, size_t n) noexcept {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t r = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    const uint32_t lo = load_le32(p) ^ r;
    const uint32_t hi = load_le32(p + 4);
    r = kSlices[7][lo & 0xff] ^ kSlices[6][(lo >> 8) & 0xff] ^ kSlices[5][(lo >> 16) & 0xff] ^
        kSlices[4][lo >> 24] ^ kSlices[3][hi & 0xff] ^ kSlices[2][(hi >> 8) & 0xff] ^
        kSlices[1][(hi >> 16) & 0xff] ^ kSlices[0][hi >> 24];
  }
  for (; n != 0; ++p, --n) r = kSlices[0][(r ^ *p) & 0xff] ^ (r >> 8);
  return ~r;
}

}  // namespace detail

#if MAGNETAR_CRC32C_X86
namespace {

// The SSE4.2 path takes the input three adjacent blocks at a time and runs one CRC32
// instruction stream over each block (the instruction's latency is three times its
// throughput), then joins the three registers. Joining needs r x^(8 * block length) mod P:
// a linear map of r, applied one byte of r at a time through a 4 x 256 table.
using ShiftTable = std::array<std::array<uint32_t, 256>, 4>;

constexpr ShiftTable make_shift_table(size_t block_bytes) {
  const uint32_t factor = x_pow(8 * uint64_t{block_bytes});
  ShiftTable t{};
  for (uint32_t k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = multiply(b << (8 * k), factor);
  }
  return t;
}

uint32_t shift(const ShiftTable& t, uint32_t r) noexcept {
  return t[0][r & 0xff] ^ t[1][(r >> 8) & 0xff] ^ t[2][(r >> 16) & 0xff] ^ t[3][r >> 24];
}

// Block lengths, in bytes, of the three streams, chosen by measurement: with the shifts off
// the streams' critical path, 128-byte blocks already run at the instruction's throughput,
// and longer blocks gained nothing. One step with 64-byte blocks then takes most of the rest.
constexpr size_t kBlock = 128;
constexpr size_t kTailBlock = 64;
constexpr ShiftTable kBlockShift = make_shift_table(kBlock);
constexpr ShiftTable kTailBlockShift = make_shift_table(kTailBlock);

uint64_t load64(const uint8_t* p) noexcept {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One CRC32 instruction stream over any n bytes; r is the raw register.
__attribute__((target("sse4.2"))) inline uint32_t crc_serial(uint32_t r, const uint8_t* p,
                                                             size_t n) noexcept {
  uint64_t r64 = r;
  for (; n >= 8; p += 8, n -= 8) r64 = _mm_crc32_u64(r64, load64(p));
  r = static_cast<uint32_t>(r64);
  if ((n & 4) != 0) {
    uint32_t v;
    std::memcpy(&v, p, sizeof(v));
    r = _mm_crc32_u32(r, v);
    p += 4;
  }
  if ((n & 2) != 0) {
    uint16_t v;
    std::memcpy(&v, p, sizeof(v));
    r = _mm_crc32_u16(r, v);
    p += 2;
  }
  if ((n & 1) != 0) r = _mm_crc32_u8(r, *p);
  return r;
}

template <size_t kBytes>
__attribute__((target("sse4.2"))) inline uint32_t crc_three_way(uint32_t r, const uint8_t* p,
                                                                const ShiftTable& t) noexcept {
  // All three streams start from zero and r joins at the end, so that successive calls
  // depend on each other only through the shifts, never through a CRC32 stream.
  uint64_t a = 0;
  uint64_t b = 0;
  uint64_t c = 0;
  for (size_t i = 0; i < kBytes; i += 8) {
    a = _mm_crc32_u64(a, load64(p + i));
    b = _mm_crc32_u64(b, load64(p + kBytes + i));
    c = _mm_crc32_u64(c, load64(p + 2 * kBytes + i));
  }
  r = shift(t, r) ^ static_cast<uint32_t>(a);
  r = shift(t, r) ^ static_cast<uint32_t>(b);
  return shift(t, r) ^ static_cast<uint32_t>(c);
}

__attribute__((target("sse4.2"))) inline uint32_t crc_sse42(uint32_t r, const uint8_t* p,
                                                            size_t n) noexcept {
  if (n >= 3 * kTailBlock) {
    const size_t head = (0 - reinterpret_cast<uintptr_t>(p)) & 7;
    r = crc_serial(r, p, head);
    p += head;
    n -= head;
    for (; n >= 3 * kBlock; p += 3 * kBlock, n -= 3 * kBlock) {
      r = crc_three_way<kBlock>(r, p, kBlockShift);
    }
    if (n >= 3 * kTailBlock) {
      r = crc_three_way<kTailBlock>(r, p, kTailBlockShift);
      p += 3 * kTailBlock;
      n -= 3 * kTailBlock;
    }
  }
  return crc_serial(r, p, n);
}

// The AVX-512 path folds the input with carry-less multiplications. An accumulator is a
// 128-bit lane read as a polynomial A = H x^64 + L of the message so far (bit 0 of H is the
// coefficient of x^127), congruent to it modulo P. Moving A forward over D bits of new input
// costs two 64x32-bit products: A x^D = H (x^(D+31) mod P) x^33 + L (x^(D-33) mod P) x^33,
// where the x^33 comes for free from where the reflected product lands in the lane. Each
// 128-bit lane of the four ZMM accumulators folds independently, 256 bytes ahead per step.
struct FoldConstants {
  uint64_t for_h;  // x^(D+31) mod P: multiplies H, held in the lane's low quadword
  uint64_t for_l;  // x^(D-33) mod P: multiplies L, held in the lane's high quadword
};

constexpr FoldConstants fold_by(size_t bytes) {
  return {x_pow(8 * uint64_t{bytes} + 31), x_pow(8 * uint64_t{bytes} - 33)};
}

constexpr FoldConstants kFold256 = fold_by(256);
constexpr FoldConstants kFold64 = fold_by(64);
constexpr FoldConstants kFold48 = fold_by(48);
constexpr FoldConstants kFold32 = fold_by(32);
constexpr FoldConstants kFold16 = fold_by(16);

// Inputs shorter than this take the SSE4.2 path; chosen by measurement.
constexpr size_t kFoldMin = 128;
static_assert(kFoldMin >= 64, "folding starts with one 64-byte load");

#define MAGNETAR_CRC32C_AVX512 __attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))

MAGNETAR_CRC32C_AVX512 inline __m512i broadcast(FoldConstants k) noexcept {
  // The maskz forms here and below, with every lane selected, dodge GCC 12's false
  // -Wmaybe-uninitialized on the plain intrinsics' undefined pass-through operand.
  return _mm512_maskz_broadcast_i32x4(
      0xFFFF, _mm_set_epi64x(static_cast<int64_t>(k.for_l), static_cast<int64_t>(k.for_h)));
}

MAGNETAR_CRC32C_AVX512 inline __m512i fold(__m512i acc, __m512i k, __m512i next) noexcept {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc, k, 0x00),
                                   _mm512_clmulepi64_epi128(acc, k, 0x11), next, 0x96);
}

MAGNETAR_CRC32C_AVX512 inline __m128i fold(__m128i acc, __m128i k, __m128i next) noexcept {
  return _mm_xor_si128(
      _mm_xor_si128(_mm_clmulepi64_si128(acc, k, 0x00), _mm_clmulepi64_si128(acc, k, 0x11)), next);
}

MAGNETAR_CRC32C_AVX512 uint32_t crc_avx512(uint32_t r, const uint8_t* p, size_t n) noexcept {
  if (n < kFoldMin) return crc_sse42(r, p, n);

  // The register is xored into the first four bytes: the CRC of that message from zero
  // equals the CRC of the original message from r.
  __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                _mm512_zextsi128_si512(_mm_cvtsi32_si128(static_cast<int>(r))));
  p += 64;
  n -= 64;
  const __m512i k64 = broadcast(kFold64);
  if (n >= 192) {
    __m512i x1 = _mm512_loadu_si512(p);
    __m512i x2 = _mm512_loadu_si512(p + 64);
    __m512i x3 = _mm512_loadu_si512(p + 128);
    p += 192;
    n -= 192;
    const __m512i k256 = broadcast(kFold256);
    for (; n >= 256; p += 256, n -= 256) {
      x0 = fold(x0, k256, _mm512_loadu_si512(p));
      x1 = fold(x1, k256, _mm512_loadu_si512(p + 64));
      x2 = fold(x2, k256, _mm512_loadu_si512(p + 128));
      x3 = fold(x3, k256, _mm512_loadu_si512(p + 192));
    }
    x0 = fold(x0, k64, x1);
    x0 = fold(x0, k64, x2);
    x0 = fold(x0, k64, x3);
  }
  for (; n >= 64; p += 64, n -= 64) x0 = fold(x0, k64, _mm512_loadu_si512(p));

  // Four lanes into one: lanes 0..2 move forward by 48, 32 and 16 bytes onto lane 3.
  const __m512i k_lanes = _mm512_set_epi64(
      0, 0, static_cast<int64_t>(kFold16.for_l), static_cast<int64_t>(kFold16.for_h),
      static_cast<int64_t>(kFold32.for_l), static_cast<int64_t>(kFold32.for_h),
      static_cast<int64_t>(kFold48.for_l), static_cast<int64_t>(kFold48.for_h));
  const __m512i moved = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x0, k_lanes, 0x00),
                                                  _mm512_clmulepi64_epi128(x0, k_lanes, 0x11),
                                                  _mm512_maskz_mov_epi64(0xC0, x0), 0x96);
  const __m256i half = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xF, moved, 0),
                                        _mm512_maskz_extracti64x4_epi64(0xF, moved, 1));
  __m128i x = _mm_xor_si128(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));

  const __m128i k16 =
      _mm_set_epi64x(static_cast<int64_t>(kFold16.for_l), static_cast<int64_t>(kFold16.for_h));
  for (; n >= 16; p += 16, n -= 16) {
    x = fold(x, k16, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }

  // The 16 folded bytes have the CRC of everything consumed so far.
  uint64_t r64 = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(x)));
  r64 = _mm_crc32_u64(r64, static_cast<uint64_t>(_mm_extract_epi64(x, 1)));
  return crc_serial(static_cast<uint32_t>(r64), p, n);
}

#undef MAGNETAR_CRC32C_AVX512

}  // namespace

namespace detail {

uint32_t extend_sse42(uint32_t crc, const void* data, size_t n) noexcept {
  return ~crc_sse42(~crc, static_cast<const uint8_t*>(data), n);
}

uint32_t extend_avx512(uint32_t crc, const void* data, size_t n) noexcept {
  return ~crc_avx512(~crc, static_cast<const uint8_t*>(data), n);
}

bool cpu_has_sse42() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}

bool cpu_has_avx512_clmul() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
}

}  // namespace detail

#else  // !MAGNETAR_CRC32C_X86

namespace detail {

// Unreachable: the preconditions never hold off x86.
uint32_t extend_sse42(uint32_t crc, const void* data, size_t n) noexcept {
  return extend_portable(crc, data, n);
}
uint32_t extend_avx512(uint32_t crc, const void* data, size_t n) noexcept {
  return extend_portable(crc, data, n);
}
bool cpu_has_sse42() noexcept {
  return false;
}
bool cpu_has_avx512_clmul() noexcept {
  return false;
}

}  // namespace detail

#endif  // MAGNETAR_CRC32C_X86

namespace {

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t) noexcept;

ExtendFn choose() noexcept {
  if (detail::cpu_has_avx512_clmul()) return &detail::extend_avx512;
  if (detail::cpu_has_sse42()) return &detail::extend_sse42;
  return &detail::extend_portable;
}

uint32_t resolve_and_extend(uint32_t crc, const void* data, size_t n) noexcept;

// Starts at the resolver, which replaces itself with the chosen implementation on the
// first call. Threads racing through the resolver all store the same pointer.
constinit std::atomic<ExtendFn> g_extend{&resolve_and_extend};

uint32_t resolve_and_extend(uint32_t crc, const void* data, size_t n) noexcept {
  const ExtendFn chosen = choose();
  g_extend.store(chosen, std::memory_order_relaxed);
  return chosen(crc, data, n);
}

}  // namespace

uint32_t extend(uint32_t crc, const void* data, size_t n) noexcept {
  return g_extend.load(std::memory_order_relaxed)(crc, data, n);
}

uint32_t extend(uint32_t crc, const BufferChain& chain) noexcept {
  for (const Buffer& part : chain.buffers()) crc = extend(crc, part.data(), part.size());
  return crc;
}

bool hardware_accelerated() noexcept {
  return detail::cpu_has_sse42();
}

}  // namespace magnetar::crc32c
