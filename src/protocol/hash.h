#pragma once
// Hashes Pulsar's clients and brokers agree on.

#include <cstdint>
#include <string_view>

namespace magnetar::protocol {

// Murmur3 x86_32 over the bytes: Key_Shared's key hash (seed 0) and the clients'
// Murmur3_32Hash partition routing.
uint32_t murmur3_32(std::string_view bytes, uint32_t seed = 0);

}  // namespace magnetar::protocol
