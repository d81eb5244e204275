#include "auth/base64.h"

#include <array>
#include <cstdint>

namespace magnetar::auth {

namespace {

constexpr std::string_view kStandard =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view kUrl =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

std::string encode(std::string_view bytes, std::string_view alphabet, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) | static_cast<uint8_t>(bytes[i + 2]);
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += alphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    if (rest == 2) out += alphabet[(v >> 6) & 63];
    if (pad) out.append(rest == 1 ? "==" : "=");
  }
  return out;
}

std::optional<std::string> decode(std::string_view text, std::string_view alphabet) {
  std::array<int8_t, 256> value;
  value.fill(-1);
  for (size_t i = 0; i < alphabet.size(); ++i) value[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  // Trailing padding, at most two.
  size_t end = text.size();
  int padding = 0;
  while (end > 0 && text[end - 1] == '=' && padding < 2) {
    --end;
    ++padding;
  }
  if (padding > 0 && text.size() % 4 != 0) return std::nullopt;
  const std::string_view body = text.substr(0, end);
  if (body.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(body.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : body) {
    const int8_t v = value[static_cast<uint8_t>(c)];
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;  // non-canonical tail
  return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) {
  return encode(bytes, kStandard, true);
}

std::string base64url_encode(std::string_view bytes) {
  return encode(bytes, kUrl, false);
}

std::optional<std::string> base64_decode(std::string_view text) {
  return decode(text, kStandard);
}

std::optional<std::string> base64url_decode(std::string_view text) {
  return decode(text, kUrl);
}

}  // namespace magnetar::auth
