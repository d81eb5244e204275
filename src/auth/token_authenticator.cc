#include "auth/token_authenticator.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace magnetar::auth {

namespace {

Status refused(std::string message) {
  return Status(Errc::kInvalidArgument, std::move(message));
}

// A NumericDate claim (RFC 7519 §2): a JSON number of seconds, or absent.
std::optional<int64_t> seconds_claim(const nlohmann::json& claims, const char* name, bool* bad) {
  auto it = claims.find(name);
  if (it == claims.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<int64_t>();
  if (it->is_number_float()) return static_cast<int64_t>(it->get<double>());
  *bad = true;
  return std::nullopt;
}

}  // namespace

std::string_view to_string(TokenFailure f) {
  switch (f) {
    case TokenFailure::kInvalidAuthData: return "INVALID_AUTH_DATA";
    case TokenFailure::kInvalidToken: return "INVALID_TOKEN";
    case TokenFailure::kInvalidAudiences: return "INVALID_AUDIENCES";
    case TokenFailure::kExpired: return "EXPIRED_TOKEN";
  }
  return "INVALID_TOKEN";
}

Result<TokenAuthenticator> TokenAuthenticator::create(const TokenSettings& settings) {
  if (!settings.audience_claim.empty() && settings.audience.empty()) {
    return refused("tokenAudienceClaim is set but tokenAudience is not");
  }
  if (!settings.secret_key.empty()) {
    auto bytes = read_key_value(settings.secret_key);
    if (!bytes.ok()) return refused("tokenSecretKey: " + bytes.status().message());
    auto key = TokenKey::secret(std::move(*bytes));
    if (!key.ok()) return refused("tokenSecretKey: " + key.status().message());
    return TokenAuthenticator(std::move(*key), std::nullopt, settings);
  }
  if (!settings.public_key.empty()) {
    auto alg = algorithm_named(settings.public_alg);
    if (!alg || is_hmac(*alg)) {
      return refused(fmt::format("tokenPublicAlg '{}': must be one of RS256, RS384, RS512, "
                                 "PS256, PS384, PS512, ES256, ES384, ES512",
                                 settings.public_alg));
    }
    auto der = read_key_value(settings.public_key);
    if (!der.ok()) return refused("tokenPublicKey: " + der.status().message());
    auto key = TokenKey::public_key(*der);
    if (!key.ok()) return refused("tokenPublicKey: " + key.status().message());
    if (!key->fits(*alg)) {
      return refused(
          fmt::format("tokenPublicKey does not fit tokenPublicAlg {}", settings.public_alg));
    }
    return TokenAuthenticator(std::move(*key), alg, settings);
  }
  return refused("No secret key was provided for token authentication");
}

std::variant<Authenticated, TokenAuthenticator::Refused> TokenAuthenticator::authenticate(
    std::string_view token, int64_t now_seconds) const {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t')) {
    token.remove_suffix(1);
  }
  if (token.empty()) return Refused{TokenFailure::kInvalidAuthData, "Blank token found"};
  auto jwt = decode_jwt(token);
  if (!jwt.ok()) return Refused{TokenFailure::kInvalidToken, jwt.status().message()};
  auto alg_field = jwt->header.find("alg");
  if (alg_field == jwt->header.end() || !alg_field->is_string()) {
    return Refused{TokenFailure::kInvalidToken, "the JWT header has no alg"};
  }
  const std::string alg_name = alg_field->get<std::string>();
  auto alg = algorithm_named(alg_name);
  if (!alg) {
    return Refused{TokenFailure::kInvalidToken,
                   fmt::format("unsupported JWT algorithm '{}'", alg_name.substr(0, 16))};
  }
  // The key decides the family: a token cannot pick HMAC against a public key.
  const bool family_ok = public_alg_ ? (is_rsa(*public_alg_) ? is_rsa(*alg) : is_ec(*alg))
                                     : is_hmac(*alg);
  if (!family_ok || !key_.fits(*alg)) {
    return Refused{TokenFailure::kInvalidToken,
                   fmt::format("JWT signed with {}, which the configured key does not verify",
                               alg_name)};
  }
  if (!key_.verify(*alg, jwt->signing_input, jwt->signature)) {
    return Refused{TokenFailure::kInvalidToken, "JWT signature does not match"};
  }
  const nlohmann::json& claims = jwt->claims;
  bool bad = false;
  const auto exp = seconds_claim(claims, "exp", &bad);
  const auto nbf = seconds_claim(claims, "nbf", &bad);
  if (bad) return Refused{TokenFailure::kInvalidToken, "exp or nbf is not a number of seconds"};
  if (exp && now_seconds >= *exp) {
    return Refused{TokenFailure::kExpired,
                   fmt::format("JWT expired at {}. Current time: {}", *exp, now_seconds)};
  }
  if (nbf && now_seconds < *nbf) {
    return Refused{TokenFailure::kInvalidToken,
                   fmt::format("JWT not valid before {}. Current time: {}", *nbf, now_seconds)};
  }
  if (!settings_.audience_claim.empty()) {
    auto aud = claims.find(settings_.audience_claim);
    std::vector<std::string> audiences;
    if (aud != claims.end() && aud->is_string()) audiences.push_back(aud->get<std::string>());
    if (aud != claims.end() && aud->is_array()) {
      for (const auto& a : *aud) {
        if (a.is_string()) audiences.push_back(a.get<std::string>());
      }
    }
    if (std::find(audiences.begin(), audiences.end(), settings_.audience) == audiences.end()) {
      return Refused{TokenFailure::kInvalidAudiences,
                     fmt::format("Audiences in token: [{}] not contains this broker: {}",
                                 fmt::join(audiences, ", "), settings_.audience)};
    }
  }
  auto role = claims.find(settings_.auth_claim);
  std::string name;
  if (role != claims.end() && role->is_string()) name = role->get<std::string>();
  if (role != claims.end() && role->is_array()) {
    for (const auto& r : *role) {
      if (r.is_string()) {
        name = r.get<std::string>();
        break;
      }
    }
  }
  if (name.empty()) {
    return Refused{TokenFailure::kInvalidToken,
                   fmt::format("the JWT has no '{}' claim naming a role", settings_.auth_claim)};
  }
  return Authenticated{std::move(name), exp};
}

}  // namespace magnetar::auth
