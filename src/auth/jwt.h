#pragma once
// JSON Web Tokens as Pulsar uses them (../shared/reference/pulsar-security-proxy.md §2): the
// compact JWS form "<base64url header>.<base64url claims>.<base64url signature>", signed with
// HMAC (HS256/384/512), RSA (RS*, PS*) or ECDSA (ES256/384/512) through OpenSSL. Nothing here
// reads configuration or knows about roles: token_authenticator.h does.
//
// Every input is untrusted: decode_jwt bounds the size (kMaxTokenBytes), requires three parts,
// strict base64url, and JSON objects for header and claims; it never throws.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace magnetar::auth {

// Larger tokens are refused before decoding (Pulsar has no limit of its own; its frames allow
// 5 MiB). A token with a few claims is well under 1 KiB.
constexpr size_t kMaxTokenBytes = 64 * 1024;

enum class Algorithm { kHS256, kHS384, kHS512, kRS256, kRS384, kRS512, kPS256, kPS384, kPS512,
                       kES256, kES384, kES512 };
std::optional<Algorithm> algorithm_named(std::string_view name);  // "HS256", ...
std::string_view name_of(Algorithm a);
bool is_hmac(Algorithm a);
bool is_rsa(Algorithm a);  // RS* and PS*
bool is_ec(Algorithm a);

struct Jwt {
  nlohmann::json header;  // a JSON object
  nlohmann::json claims;  // a JSON object
  std::string signing_input;  // "<header>.<claims>" as received
  std::string signature;      // raw bytes
};
// Splits and decodes a compact JWS; verifies nothing. kInvalidArgument naming what is wrong.
Result<Jwt> decode_jwt(std::string_view token);

// A key for signing or verifying tokens. Immutable; copies share the OpenSSL key.
class TokenKey {
 public:
  // An HMAC secret (raw bytes). Fewer than 32 bytes is refused, as Pulsar refuses it.
  static Result<TokenKey> secret(std::string bytes);
  // An X.509 SubjectPublicKeyInfo (DER), RSA or EC.
  static Result<TokenKey> public_key(std::string_view der);
  // A PKCS#8 private key (DER), RSA or EC.
  static Result<TokenKey> private_key(std::string_view der);

  // Whether this key can be used with `a` (HMAC secret long enough, RSA for RS/PS, an EC key
  // on the algorithm's curve for ES).
  bool fits(Algorithm a) const;
  // The signature of `input` is `signature` (raw JWS form) under `a`.
  bool verify(Algorithm a, std::string_view input, std::string_view signature) const;
  // Needs a secret or a private key. Errors: kInvalidArgument (the key does not fit `a`).
  Result<std::string> sign(Algorithm a, std::string_view input) const;
  // The algorithm Pulsar's tools choose for this key: the strongest HS* the secret allows
  // (HS256 from 32 bytes, HS384 from 48, HS512 from 64), RS256, ES256 (P-256), ES384, ES512.
  Algorithm default_algorithm() const;

  ~TokenKey();
  TokenKey(const TokenKey&);
  TokenKey& operator=(const TokenKey&);

 private:
  struct Pkey;
  TokenKey() = default;
  static Result<TokenKey> from_pkey(evp_pkey_st* key, bool is_private);  // takes `key`
  std::string secret_;
  std::shared_ptr<Pkey> pkey_;  // RSA or EC (public, or private with its public half)
  bool private_ = false;
};

struct KeyPair {
  std::string private_der;  // PKCS#8
  std::string public_der;   // X.509 SubjectPublicKeyInfo
};
// A new key pair for `a`: RSA-2048 for RS*/PS*, P-256/P-384/P-521 for ES256/384/512 (what
// `pulsar tokens create-key-pair` makes). kInvalidArgument for an HMAC algorithm.
Result<KeyPair> generate_key_pair(Algorithm a);
// A new random secret of the size `a` needs (32, 48 or 64 bytes).
std::string generate_secret(Algorithm a);

// A signed compact JWS of `claims` with header {"alg": ...} (no "typ", as Pulsar's tokens)
// plus `headers` (string values; "alg" among them is ignored).
Result<std::string> encode_jwt(
    const nlohmann::ordered_json& claims, const TokenKey& key, Algorithm a,
    const std::vector<std::pair<std::string, std::string>>& headers = {});

// Key material in Pulsar's forms, tried in order: "data:;base64,<b64>" (also
// "data:<type>;base64,<b64>"), "file:///absolute/path" (the raw bytes), a path that exists,
// bare base64. Errors: kInvalidArgument naming the form that failed (never the key itself).
Result<std::string> read_key_value(std::string_view value);

}  // namespace magnetar::auth
