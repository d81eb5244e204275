#pragma once
// The Magnetar release, reported by `magnetar --version` and in the broker's CONNECTED.

namespace magnetar {
inline constexpr const char* kVersion = "0.1.0";
}  // namespace magnetar
