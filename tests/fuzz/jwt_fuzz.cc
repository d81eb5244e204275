// Fuzz target: arbitrary bytes as a token in CONNECT's auth_data or an HTTP bearer header,
// through the broker's token provider (HS256 and RS256 keys), and as base64 of either kind.
// Seed: a token's shape (scripts/run-fuzzers.sh writes it).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "auth/token_authenticator.h"

namespace {

const magnetar::auth::TokenAuthenticator& hmac_provider() {
  static const auto a = [] {
    magnetar::auth::TokenSettings s;
    s.secret_key = "data:;base64," + magnetar::auth::base64_encode(std::string(32, 'k'));
    s.audience_claim = "aud";
    s.audience = "broker";
    return *magnetar::auth::TokenAuthenticator::create(s);
  }();
  return a;
}

const magnetar::auth::TokenAuthenticator& rsa_provider() {
  static const auto a = [] {
    auto pair = magnetar::auth::generate_key_pair(magnetar::auth::Algorithm::kRS256);
    magnetar::auth::TokenSettings s;
    s.public_key = "data:;base64," + magnetar::auth::base64_encode(pair->public_der);
    return *magnetar::auth::TokenAuthenticator::create(s);
  }();
  return a;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view token(reinterpret_cast<const char*>(data), size);
  (void)magnetar::auth::base64_decode(token);
  (void)magnetar::auth::base64url_decode(token);
  (void)magnetar::auth::decode_jwt(token);
  (void)hmac_provider().authenticate(token, 1'700'000'000);
  (void)rsa_provider().authenticate(token, 1'700'000'000);
  return 0;
}
