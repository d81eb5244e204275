#pragma once
// Pulsar's token authentication provider (AuthenticationProviderToken; reference §2.1): the
// broker's view of a JWT presented in CONNECT's auth_data or an HTTP "Authorization: Bearer"
// header. The token must be signed by the configured key (tokenSecretKey → HS256/384/512,
// else tokenPublicKey with tokenPublicAlg → RS*/PS* or ES*); "exp" and "nbf" are enforced with
// no clock skew; the role is the `tokenAuthClaim` claim ("sub"; for a list, its first
// string); with tokenAudienceClaim, that claim must contain tokenAudience.
//
// The reasons returned are for the broker's log and never contain the token or the key;
// clients get Pulsar's fixed "Failed to authenticate" (wire) or 401 (HTTP).
//
// Threading: immutable after create(); authenticate() may run on any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "auth/jwt.h"
#include "common/status.h"

namespace magnetar::auth {

// The broker.conf keys, with Pulsar's names.
struct TokenSettings {
  std::string secret_key;            // tokenSecretKey (read_key_value forms)
  std::string public_key;            // tokenPublicKey
  std::string public_alg = "RS256";  // tokenPublicAlg
  std::string auth_claim = "sub";    // tokenAuthClaim
  std::string audience_claim;        // tokenAudienceClaim
  std::string audience;              // tokenAudience
};

struct Authenticated {
  std::string role;
  std::optional<int64_t> expires_at;  // "exp", seconds since the epoch; none: never
};

// Why a token was refused, as Pulsar's authentication metrics name it.
enum class TokenFailure { kInvalidAuthData, kInvalidToken, kInvalidAudiences, kExpired };
std::string_view to_string(TokenFailure f);

class TokenAuthenticator {
 public:
  // Errors (kInvalidArgument): "No secret key was provided for token authentication", a key
  // that does not read or parse, an unknown tokenPublicAlg, tokenAudienceClaim without
  // tokenAudience.
  static Result<TokenAuthenticator> create(const TokenSettings& settings);

  struct Refused {
    TokenFailure failure;
    std::string reason;  // for the log: never the token
  };
  // The role of a valid token at `now_seconds`. Trailing whitespace (a token file's newline)
  // is ignored.
  std::variant<Authenticated, Refused> authenticate(std::string_view token,
                                                    int64_t now_seconds) const;

 private:
  TokenAuthenticator(TokenKey key, std::optional<Algorithm> public_alg, TokenSettings settings)
      : key_(std::move(key)), public_alg_(public_alg), settings_(std::move(settings)) {}
  TokenKey key_;
  std::optional<Algorithm> public_alg_;  // set for a public key: which family it verifies
  TokenSettings settings_;
};

}  // namespace magnetar::auth
