#include "protocol/hash.h"

#include <bit>

namespace magnetar::protocol {

uint32_t murmur3_32(std::string_view bytes, uint32_t seed) {
  constexpr uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  uint32_t h = seed;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint32_t k = static_cast<uint32_t>(data[i]) | (static_cast<uint32_t>(data[i + 1]) << 8) |
                 (static_cast<uint32_t>(data[i + 2]) << 16) |
                 (static_cast<uint32_t>(data[i + 3]) << 24);
    k *= c1;
    k = std::rotl(k, 15);
    k *= c2;
    h ^= k;
    h = std::rotl(h, 13);
    h = h * 5 + 0xe6546b64;
  }
  uint32_t k = 0;
  switch (n & 3) {
    case 3:
      k ^= static_cast<uint32_t>(data[i + 2]) << 16;
      [[fallthrough]];
    case 2:
      k ^= static_cast<uint32_t>(data[i + 1]) << 8;
      [[fallthrough]];
    case 1:
      k ^= data[i];
      k *= c1;
      k = std::rotl(k, 15);
      k *= c2;
      h ^= k;
  }
  h ^= static_cast<uint32_t>(n);
  h ^= h >> 16;
  h *= 0x85ebca6b;
  h ^= h >> 13;
  h *= 0xc2b2ae35;
  h ^= h >> 16;
  return h;
}

}  // namespace magnetar::protocol
