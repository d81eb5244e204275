#pragma once
// Base64 (RFC 4648 §4, with padding) and base64url (§5, JWTs: no padding), strict decoders:
// any character outside the alphabet, a bad length or non-zero trailing bits is refused.

#include <optional>
#include <string>
#include <string_view>

namespace magnetar::auth {

std::string base64_encode(std::string_view bytes);
std::string base64url_encode(std::string_view bytes);
// Padding ('=') as required by the length; none is accepted too (keys pasted without it).
std::optional<std::string> base64_decode(std::string_view text);
// No padding, as JWTs use it ('=' at the end is tolerated).
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace magnetar::auth
