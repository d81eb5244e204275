#pragma once
// CRC32C (Castagnoli): the checksum of Pulsar's broker entry metadata and of BookKeeper
// entries. Reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF.
//
// Every `crc` argument is a finished CRC, as returned by value() or extend(), so a checksum
// can be computed piecewise: extend(value(a), b) == value(a + b), and extend(0, ...) starts
// fresh. The fastest implementation the CPU supports is chosen on first use; all functions
// are thread-safe and never allocate.

#include <cstddef>
#include <cstdint>

#include "common/buffer.h"

namespace magnetar::crc32c {

// The CRC of `crc`'s bytes followed by the n bytes at `data` (which may be null when n == 0).
uint32_t extend(uint32_t crc, const void* data, size_t n) noexcept;

inline uint32_t value(const void* data, size_t n) noexcept {
  return extend(0, data, n);
}

// Extends `crc` over every part of `chain`, in order.
uint32_t extend(uint32_t crc, const BufferChain& chain) noexcept;

// True when extend() runs on CRC instructions rather than the table-driven fallback.
bool hardware_accelerated() noexcept;

// The individual implementations, exposed so that tests can compare them with each other.
namespace detail {

uint32_t extend_portable(uint32_t crc, const void* data, size_t n) noexcept;

// Precondition: cpu_has_sse42(). Three interleaved CRC32 instruction streams.
uint32_t extend_sse42(uint32_t crc, const void* data, size_t n) noexcept;

// Precondition: cpu_has_avx512_clmul(). Carry-less multiplication folding, 256 bytes a step.
uint32_t extend_avx512(uint32_t crc, const void* data, size_t n) noexcept;

bool cpu_has_sse42() noexcept;
// AVX-512F with VPCLMULQDQ (Ice Lake, Sapphire Rapids, Zen 4 and later), plus SSE4.2.
bool cpu_has_avx512_clmul() noexcept;

}  // namespace detail
}  // namespace magnetar::crc32c
