#include "auth/jwt.h"

#include <fmt/format.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "auth/base64.h"

namespace magnetar::auth {

namespace {

struct Named {
  Algorithm alg;
  std::string_view name;
};
constexpr std::array<Named, 12> kAlgorithms{{{Algorithm::kHS256, "HS256"},
                                             {Algorithm::kHS384, "HS384"},
                                             {Algorithm::kHS512, "HS512"},
                                             {Algorithm::kRS256, "RS256"},
                                             {Algorithm::kRS384, "RS384"},
                                             {Algorithm::kRS512, "RS512"},
                                             {Algorithm::kPS256, "PS256"},
                                             {Algorithm::kPS384, "PS384"},
                                             {Algorithm::kPS512, "PS512"},
                                             {Algorithm::kES256, "ES256"},
                                             {Algorithm::kES384, "ES384"},
                                             {Algorithm::kES512, "ES512"}}};

// SHA-256/384/512 by the algorithm's number.
const EVP_MD* digest_of(Algorithm a) {
  switch (a) {
    case Algorithm::kHS256:
    case Algorithm::kRS256:
    case Algorithm::kPS256:
    case Algorithm::kES256:
      return EVP_sha256();
    case Algorithm::kHS384:
    case Algorithm::kRS384:
    case Algorithm::kPS384:
    case Algorithm::kES384:
      return EVP_sha384();
    default:
      return EVP_sha512();
  }
}

// HMAC keys at least as long as the hash (RFC 7518 §3.2); ES curves' size in bits.
size_t hmac_min_bytes(Algorithm a) {
  return a == Algorithm::kHS256 ? 32 : a == Algorithm::kHS384 ? 48 : 64;
}
int ec_bits(Algorithm a) {
  return a == Algorithm::kES256 ? 256 : a == Algorithm::kES384 ? 384 : 521;
}
size_t ec_part_bytes(Algorithm a) {
  return (static_cast<size_t>(ec_bits(a)) + 7) / 8;
}

Status invalid(std::string message) {
  return Status(Errc::kInvalidArgument, std::move(message));
}

std::optional<nlohmann::json> json_object(std::string_view part) {
  auto bytes = base64url_decode(part);
  if (!bytes) return std::nullopt;
  auto j = nlohmann::json::parse(*bytes, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  return j;
}

// HMAC of `input` under `secret` (a has to be HS*); nullopt when OpenSSL fails.
std::optional<std::string> hmac(Algorithm a, const std::string& secret, std::string_view input) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(digest_of(a), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac,
           &size) == nullptr) {
    return std::nullopt;
  }
  return std::string(reinterpret_cast<char*>(mac), size);
}

// PS*: PSS padding with a salt as long as the digest (RFC 7518 §3.5); others untouched.
bool set_padding(Algorithm a, EVP_PKEY_CTX* pctx) {
  if (a != Algorithm::kPS256 && a != Algorithm::kPS384 && a != Algorithm::kPS512) return true;
  return EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
}

struct MdCtx {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~MdCtx() { EVP_MD_CTX_free(ctx); }
};

}  // namespace

std::optional<Algorithm> algorithm_named(std::string_view name) {
  for (const auto& n : kAlgorithms) {
    if (n.name == name) return n.alg;
  }
  return std::nullopt;
}

std::string_view name_of(Algorithm a) {
  for (const auto& n : kAlgorithms) {
    if (n.alg == a) return n.name;
  }
  return "?";
}

bool is_hmac(Algorithm a) {
  return a == Algorithm::kHS256 || a == Algorithm::kHS384 || a == Algorithm::kHS512;
}
bool is_ec(Algorithm a) {
  return a == Algorithm::kES256 || a == Algorithm::kES384 || a == Algorithm::kES512;
}
bool is_rsa(Algorithm a) {
  return !is_hmac(a) && !is_ec(a);
}

Result<Jwt> decode_jwt(std::string_view token) {
  if (token.size() > kMaxTokenBytes) {
    return invalid(fmt::format("token of {} bytes is larger than the {} allowed", token.size(),
                               kMaxTokenBytes));
  }
  const auto first = token.find('.');
  const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return invalid("not a signed JWT: it must have three parts separated by '.'");
  }
  Jwt jwt;
  auto header = json_object(token.substr(0, first));
  if (!header) return invalid("the JWT header is not base64url-encoded JSON");
  auto claims = json_object(token.substr(first + 1, second - first - 1));
  if (!claims) return invalid("the JWT claims are not base64url-encoded JSON");
  auto signature = base64url_decode(token.substr(second + 1));
  if (!signature) return invalid("the JWT signature is not base64url");
  if (signature->empty()) return invalid("the JWT is not signed");
  jwt.header = std::move(*header);
  jwt.claims = std::move(*claims);
  jwt.signing_input = std::string(token.substr(0, second));
  jwt.signature = std::move(*signature);
  return jwt;
}

struct TokenKey::Pkey {
  EVP_PKEY* key = nullptr;
  ~Pkey() { EVP_PKEY_free(key); }
};

TokenKey::~TokenKey() = default;
TokenKey::TokenKey(const TokenKey&) = default;
TokenKey& TokenKey::operator=(const TokenKey&) = default;

Result<TokenKey> TokenKey::secret(std::string bytes) {
  if (bytes.size() < 32) {
    return invalid(fmt::format("a secret key of {} bytes is too short: HS256 needs at least 32",
                               bytes.size()));
  }
  TokenKey k;
  k.secret_ = std::move(bytes);
  return k;
}

Result<TokenKey> TokenKey::from_pkey(EVP_PKEY* key, bool is_private) {
  TokenKey k;
  k.pkey_ = std::make_shared<Pkey>();
  k.pkey_->key = key;
  k.private_ = is_private;
  const int type = EVP_PKEY_base_id(key);
  if (type != EVP_PKEY_RSA && type != EVP_PKEY_EC) {
    return invalid(is_private ? "the private key is not RSA or EC" : "the public key is not RSA or EC");
  }
  return k;
}

Result<TokenKey> TokenKey::public_key(std::string_view der) {
  auto p = reinterpret_cast<const unsigned char*>(der.data());
  EVP_PKEY* key = d2i_PUBKEY(nullptr, &p, static_cast<long>(der.size()));
  if (key == nullptr) return invalid("not an X.509 SubjectPublicKeyInfo (DER) public key");
  return from_pkey(key, false);
}

Result<TokenKey> TokenKey::private_key(std::string_view der) {
  auto p = reinterpret_cast<const unsigned char*>(der.data());
  EVP_PKEY* key = d2i_AutoPrivateKey(nullptr, &p, static_cast<long>(der.size()));
  if (key == nullptr) return invalid("not a PKCS#8 (DER) private key");
  return from_pkey(key, true);
}

bool TokenKey::fits(Algorithm a) const {
  if (is_hmac(a)) return !secret_.empty() && secret_.size() >= hmac_min_bytes(a);
  if (!pkey_) return false;
  const int type = EVP_PKEY_base_id(pkey_->key);
  if (is_rsa(a)) return type == EVP_PKEY_RSA && EVP_PKEY_get_bits(pkey_->key) >= 2048;
  return type == EVP_PKEY_EC && EVP_PKEY_get_bits(pkey_->key) == ec_bits(a);
}

Algorithm TokenKey::default_algorithm() const {
  if (!pkey_) {
    return secret_.size() >= 64   ? Algorithm::kHS512
           : secret_.size() >= 48 ? Algorithm::kHS384
                                  : Algorithm::kHS256;
  }
  if (EVP_PKEY_base_id(pkey_->key) == EVP_PKEY_RSA) return Algorithm::kRS256;
  const int bits = EVP_PKEY_get_bits(pkey_->key);
  return bits == 384 ? Algorithm::kES384 : bits == 521 ? Algorithm::kES512 : Algorithm::kES256;
}

bool TokenKey::verify(Algorithm a, std::string_view input, std::string_view signature) const {
  if (!fits(a)) return false;
  if (is_hmac(a)) {
    auto mac = hmac(a, secret_, input);
    return mac && signature.size() == mac->size() &&
           CRYPTO_memcmp(mac->data(), signature.data(), mac->size()) == 0;
  }
  std::string der;  // ECDSA: the JWS form r||s becomes DER
  if (is_ec(a)) {
    const size_t n = ec_part_bytes(a);
    if (signature.size() != 2 * n) return false;
    ECDSA_SIG* sig = ECDSA_SIG_new();
    BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(signature.data()),
                          static_cast<int>(n), nullptr);
    BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(signature.data()) + n,
                          static_cast<int>(n), nullptr);
    if (sig == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
      BN_free(r);
      BN_free(s);
      ECDSA_SIG_free(sig);
      return false;
    }
    unsigned char* out = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &out);
    ECDSA_SIG_free(sig);
    if (len <= 0) return false;
    der.assign(reinterpret_cast<char*>(out), static_cast<size_t>(len));
    OPENSSL_free(out);
    signature = der;
  }
  MdCtx md;
  EVP_PKEY_CTX* pctx = nullptr;
  if (md.ctx == nullptr ||
      EVP_DigestVerifyInit(md.ctx, &pctx, digest_of(a), nullptr, pkey_->key) != 1) {
    return false;
  }
  if (!set_padding(a, pctx)) return false;
  return EVP_DigestVerify(md.ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(), reinterpret_cast<const unsigned char*>(input.data()),
                          input.size()) == 1;
}

Result<std::string> TokenKey::sign(Algorithm a, std::string_view input) const {
  if (!fits(a)) {
    return invalid(fmt::format("the key cannot sign {}", name_of(a)));
  }
  if (is_hmac(a)) {
    auto mac = hmac(a, secret_, input);
    if (!mac) return Status(Errc::kInternal, "HMAC failed");
    return *mac;
  }
  if (!private_) return invalid("a public key cannot sign");
  MdCtx md;
  EVP_PKEY_CTX* pctx = nullptr;
  if (md.ctx == nullptr ||
      EVP_DigestSignInit(md.ctx, &pctx, digest_of(a), nullptr, pkey_->key) != 1) {
    return Status(Errc::kInternal, "cannot start signing");
  }
  if (!set_padding(a, pctx)) return Status(Errc::kInternal, "cannot set PSS padding");
  size_t size = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(input.data());
  if (EVP_DigestSign(md.ctx, nullptr, &size, data, input.size()) != 1) {
    return Status(Errc::kInternal, "cannot size the signature");
  }
  std::string out(size, '\0');
  if (EVP_DigestSign(md.ctx, reinterpret_cast<unsigned char*>(out.data()), &size, data,
                     input.size()) != 1) {
    return Status(Errc::kInternal, "signing failed");
  }
  out.resize(size);
  if (!is_ec(a)) return out;
  // DER ECDSA-Sig-Value to the JWS form r||s, each left-padded to the curve's size.
  auto p = reinterpret_cast<const unsigned char*>(out.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(out.size()));
  if (sig == nullptr) return Status(Errc::kInternal, "bad ECDSA signature");
  const size_t n = ec_part_bytes(a);
  std::string jws(2 * n, '\0');
  auto* raw = reinterpret_cast<unsigned char*>(jws.data());
  const bool ok = BN_bn2binpad(ECDSA_SIG_get0_r(sig), raw, static_cast<int>(n)) > 0 &&
                  BN_bn2binpad(ECDSA_SIG_get0_s(sig), raw + n, static_cast<int>(n)) > 0;
  ECDSA_SIG_free(sig);
  if (!ok) return Status(Errc::kInternal, "bad ECDSA signature");
  return jws;
}

Result<KeyPair> generate_key_pair(Algorithm a) {
  if (is_hmac(a)) return invalid("HMAC algorithms use a secret key, not a key pair");
  EVP_PKEY* key = nullptr;
  if (is_rsa(a)) {
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048));
  } else {
    const char* curve = a == Algorithm::kES256 ? "P-256" : a == Algorithm::kES384 ? "P-384" : "P-521";
    key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", curve);
  }
  if (key == nullptr) return Status(Errc::kInternal, "key generation failed");
  KeyPair pair;
  unsigned char* out = nullptr;
  PKCS8_PRIV_KEY_INFO* p8 = EVP_PKEY2PKCS8(key);
  int len = p8 != nullptr ? i2d_PKCS8_PRIV_KEY_INFO(p8, &out) : -1;
  PKCS8_PRIV_KEY_INFO_free(p8);
  if (len > 0) pair.private_der.assign(reinterpret_cast<char*>(out), static_cast<size_t>(len));
  OPENSSL_free(out);
  out = nullptr;
  len = i2d_PUBKEY(key, &out);
  if (len > 0) pair.public_der.assign(reinterpret_cast<char*>(out), static_cast<size_t>(len));
  OPENSSL_free(out);
  EVP_PKEY_free(key);
  if (pair.private_der.empty() || pair.public_der.empty()) {
    return Status(Errc::kInternal, "key encoding failed");
  }
  return pair;
}

std::string generate_secret(Algorithm a) {
  std::string bytes(is_hmac(a) ? hmac_min_bytes(a) : 32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(bytes.size())) !=
      1) {
    return {};
  }
  return bytes;
}

Result<std::string> encode_jwt(const nlohmann::ordered_json& claims, const TokenKey& key, Algorithm a,
                               const std::vector<std::pair<std::string, std::string>>& headers) {
  nlohmann::ordered_json header = {{"alg", std::string(name_of(a))}};
  for (const auto& [name, value] : headers) {
    if (name != "alg") header[name] = value;
  }
  const std::string input =
      base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
  auto signature = key.sign(a, input);
  if (!signature.ok()) return signature.status();
  return input + "." + base64url_encode(*signature);
}

Result<std::string> read_key_value(std::string_view value) {
  auto read_file = [](const std::string& path) -> Result<std::string> {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid(fmt::format("cannot read the key file {}", path));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  if (value.starts_with("data:")) {
    const auto marker = value.find(";base64,");
    if (marker == std::string_view::npos) {
      return invalid("a data: key must be data:[<type>];base64,<base64>");
    }
    auto bytes = base64_decode(value.substr(marker + 8));
    if (!bytes) return invalid("the data: key is not valid base64");
    return *bytes;
  }
  if (value.starts_with("file://")) {
    const std::string path(value.substr(7));
    if (!path.starts_with("/")) return invalid("a file: key must be file:///absolute/path");
    return read_file(path);
  }
  std::error_code ec;
  if (!value.empty() && std::filesystem::is_regular_file(std::string(value), ec)) {
    return read_file(std::string(value));
  }
  auto bytes = base64_decode(value);
  if (!bytes || bytes->empty()) {
    return invalid("the key is none of data:;base64,..., file:///..., an existing file or base64");
  }
  return *bytes;
}

}  // namespace magnetar::auth
