#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "common/buffer.h"

namespace magnetar {
namespace {

using crc32c::detail::extend_avx512;
using crc32c::detail::extend_portable;
using crc32c::detail::extend_sse42;

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t) noexcept;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(gen());
  return out;
}

// The implementations that this CPU can run, with a name for failure messages.
struct Impl {
  const char* name;
  ExtendFn fn;
};

std::vector<Impl> runnable_impls() {
  std::vector<Impl> impls = {{"portable", &extend_portable}};
  if (crc32c::detail::cpu_has_sse42()) impls.push_back({"sse42", &extend_sse42});
  if (crc32c::detail::cpu_has_avx512_clmul()) impls.push_back({"avx512", &extend_avx512});
  return impls;
}

// Every accelerated implementation against the portable one, over `data` at every length
// in [min_len, max_len] and every start offset in [0, 16).
void expect_impls_agree(const std::vector<uint8_t>& data, size_t min_len, size_t max_len) {
  const auto impls = runnable_impls();
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t len = min_len; len <= max_len && offset + len <= data.size(); ++len) {
      const uint8_t* p = data.data() + offset;
      const uint32_t want = extend_portable(0, p, len);
      const uint32_t want_extended = extend_portable(0x12345678, p, len);
      for (const Impl& impl : impls) {
        ASSERT_EQ(impl.fn(0, p, len), want) << impl.name << " len=" << len << " offset=" << offset;
        ASSERT_EQ(impl.fn(0x12345678, p, len), want_extended)
            << impl.name << " extended, len=" << len << " offset=" << offset;
      }
    }
  }
}

TEST(Crc32cTest, PublishedVectors) {
  // RFC 3720 appendix B.4, and the customary check value of "123456789".
  std::vector<uint8_t> zeros(32, 0x00);
  std::vector<uint8_t> ones(32, 0xFF);
  std::vector<uint8_t> ascending(32);
  std::vector<uint8_t> descending(32);
  for (size_t i = 0; i < 32; ++i) {
    ascending[i] = static_cast<uint8_t>(i);
    descending[i] = static_cast<uint8_t>(31 - i);
  }
  constexpr std::string_view kDigits = "123456789";
  for (const Impl& impl : runnable_impls()) {
    SCOPED_TRACE(impl.name);
    EXPECT_EQ(impl.fn(0, zeros.data(), zeros.size()), 0x8A9136AAu);
    EXPECT_EQ(impl.fn(0, ones.data(), ones.size()), 0x62A8AB43u);
    EXPECT_EQ(impl.fn(0, ascending.data(), ascending.size()), 0x46DD794Eu);
    EXPECT_EQ(impl.fn(0, descending.data(), descending.size()), 0x113FDB5Cu);
    EXPECT_EQ(impl.fn(0, kDigits.data(), kDigits.size()), 0xE3069283u);
    EXPECT_EQ(impl.fn(0, nullptr, 0), 0u);
  }
  EXPECT_EQ(crc32c::value(kDigits.data(), kDigits.size()), 0xE3069283u);
  EXPECT_EQ(crc32c::value(nullptr, 0), 0u);
}

TEST(Crc32cTest, ExtendingByNothingKeepsTheCrc) {
  EXPECT_EQ(crc32c::extend(0xE3069283u, nullptr, 0), 0xE3069283u);
}

TEST(Crc32cTest, ExtendAtEverySplitPointEqualsWhole) {
  const auto data = random_bytes(3000, 1);
  for (const Impl& impl : runnable_impls()) {
    const uint32_t whole = impl.fn(0, data.data(), data.size());
    for (size_t split = 0; split <= data.size(); ++split) {
      const uint32_t first = impl.fn(0, data.data(), split);
      ASSERT_EQ(impl.fn(first, data.data() + split, data.size() - split), whole)
          << impl.name << " split=" << split;
    }
  }
  EXPECT_EQ(crc32c::value(data.data(), data.size()), extend_portable(0, data.data(), data.size()));
}

TEST(Crc32cTest, DispatchMatchesPortable) {
  const auto data = random_bytes(70000, 2);
  for (size_t len : {0, 1, 7, 64, 255, 256, 767, 768, 4096, 12288, 70000}) {
    EXPECT_EQ(crc32c::value(data.data(), len), extend_portable(0, data.data(), len))
        << "len=" << len;
  }
  EXPECT_EQ(crc32c::hardware_accelerated(), crc32c::detail::cpu_has_sse42());
}

TEST(Crc32cTest, AcceleratedMatchesPortableAtEveryLengthAndAlignment) {
  if (!crc32c::detail::cpu_has_sse42()) GTEST_SKIP() << "CPU lacks SSE4.2";
  expect_impls_agree(random_bytes(2048 + 16, 3), 0, 2048);
}

TEST(Crc32cTest, AcceleratedMatchesPortableOnLargeInputs) {
  if (!crc32c::detail::cpu_has_sse42()) GTEST_SKIP() << "CPU lacks SSE4.2";
  const auto data = random_bytes((1 << 20) + 13 + 16, 4);
  for (size_t len : {size_t{64} << 10, size_t{3} * 4096 * 5 + 7, (size_t{1} << 20) + 13}) {
    expect_impls_agree(data, len, len);
  }
}

TEST(Crc32cTest, AcceleratedMatchesPortableOnUniformBytes) {
  if (!crc32c::detail::cpu_has_sse42()) GTEST_SKIP() << "CPU lacks SSE4.2";
  // Zeros and ones exercise the folding constants with no help from random data.
  expect_impls_agree(std::vector<uint8_t>(5000, 0x00), 4000, 4100);
  expect_impls_agree(std::vector<uint8_t>(5000, 0xFF), 4000, 4100);
}

TEST(Crc32cTest, BufferChainEqualsFlatComputation) {
  const auto data = random_bytes(10000, 5);
  BufferChain chain;
  size_t offset = 0;
  for (size_t part : {0, 1, 3, 100, 0, 1000, 4096, 13}) {
    chain.append(Buffer::copy_of(data.data() + offset, part));
    offset += part;
  }
  const Buffer flat = chain.flatten();
  EXPECT_EQ(crc32c::extend(0, chain), crc32c::value(flat.data(), flat.size()));
  EXPECT_EQ(crc32c::extend(0, chain), extend_portable(0, data.data(), offset));
  EXPECT_EQ(crc32c::extend(0xDEADBEEF, chain), extend_portable(0xDEADBEEF, data.data(), offset));
  EXPECT_EQ(crc32c::extend(7, BufferChain()), 7u);
}

}  // namespace
}  // namespace magnetar
