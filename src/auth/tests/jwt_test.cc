#include "auth/jwt.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "auth/base64.h"
#include "auth/token_authenticator.h"

namespace magnetar::auth {
namespace {

using nlohmann::json;

TEST(Base64Test, RoundTripsAndRefusesWhatIsNotCanonical) {
  const std::vector<std::string> samples = {"",      "f",      "fo", "foo", "foob",
                                            "fooba", "foobar", std::string("\0\xff\x10", 3)};
  for (const std::string& s : samples) {
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
    EXPECT_EQ(base64url_decode(base64url_encode(s)), s);
  }
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");  // RFC 4648 §10
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64url_encode("fo"), "Zm8");
  EXPECT_EQ(base64url_encode("\xfb\xff"), "-_8");
  EXPECT_EQ(base64_decode("Zm8"), "fo");          // padding may be left out
  EXPECT_FALSE(base64_decode("Zm9=").has_value());  // non-zero trailing bits
  EXPECT_FALSE(base64_decode("Z").has_value());
  EXPECT_FALSE(base64_decode("Zm8===").has_value());
  EXPECT_FALSE(base64url_decode("Zm+8").has_value());  // the standard alphabet's '+'
  EXPECT_FALSE(base64_decode("Zm 8").has_value());
}

// RFC 7515 Appendix A.1: an HS256 JWS and its key.
constexpr const char* kRfcToken =
    "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9."
    "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ."
    "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
constexpr const char* kRfcKey =
    "AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow";

TEST(JwtTest, VerifiesTheRfcExampleAndNothingChanged) {
  auto jwt = decode_jwt(kRfcToken);
  ASSERT_TRUE(jwt.ok()) << jwt.status().to_string();
  EXPECT_EQ(jwt->header["alg"], "HS256");
  EXPECT_EQ(jwt->claims["iss"], "joe");
  auto key = TokenKey::secret(*base64url_decode(kRfcKey));
  ASSERT_TRUE(key.ok());
  EXPECT_TRUE(key->verify(Algorithm::kHS256, jwt->signing_input, jwt->signature));
  std::string tampered = jwt->signing_input;
  tampered[tampered.size() - 3] ^= 1;
  EXPECT_FALSE(key->verify(Algorithm::kHS256, tampered, jwt->signature));
  EXPECT_FALSE(key->verify(Algorithm::kHS384, jwt->signing_input, jwt->signature));
}

TEST(JwtTest, MalformedTokensAreRefusedWithAReason) {
  for (std::string bad : std::vector<std::string>{"", "abc", "a.b", "a.b.c.d", "!!.e30.c2ln", "e30.!!.c2ln", "e30.e30.",
                          "e30.e30.!!", "W10.e30.c2ln" /* header is a list */}) {
    auto jwt = decode_jwt(bad);
    EXPECT_FALSE(jwt.ok()) << bad;
    EXPECT_TRUE(jwt.status().is(Errc::kInvalidArgument)) << bad;
  }
  const std::string huge(1024 * 1024, 'a');
  auto jwt = decode_jwt(huge + "." + huge + "." + huge);
  ASSERT_FALSE(jwt.ok());
  EXPECT_NE(jwt.status().message().find("larger than"), std::string::npos);
}

TEST(JwtTest, SignsAndVerifiesWithEveryAlgorithm) {
  const json claims = {{"sub", "app1"}};
  for (Algorithm a : {Algorithm::kHS256, Algorithm::kHS384, Algorithm::kHS512}) {
    auto key = TokenKey::secret(generate_secret(a));
    ASSERT_TRUE(key.ok());
    auto token = encode_jwt(claims, *key, a);
    ASSERT_TRUE(token.ok()) << token.status().to_string();
    auto jwt = decode_jwt(*token);
    ASSERT_TRUE(jwt.ok());
    EXPECT_EQ(jwt->header, json({{"alg", std::string(name_of(a))}}));
    EXPECT_TRUE(key->verify(a, jwt->signing_input, jwt->signature)) << name_of(a);
  }
  for (Algorithm a : {Algorithm::kRS256, Algorithm::kPS256, Algorithm::kES256, Algorithm::kES384,
                      Algorithm::kES512}) {
    auto pair = generate_key_pair(a);
    ASSERT_TRUE(pair.ok()) << pair.status().to_string();
    auto signer = TokenKey::private_key(pair->private_der);
    auto verifier = TokenKey::public_key(pair->public_der);
    ASSERT_TRUE(signer.ok() && verifier.ok());
    EXPECT_EQ(verifier->default_algorithm(), a == Algorithm::kPS256 ? Algorithm::kRS256 : a);
    auto token = encode_jwt(claims, *signer, a);
    ASSERT_TRUE(token.ok()) << name_of(a) << ": " << token.status().to_string();
    auto jwt = decode_jwt(*token);
    ASSERT_TRUE(jwt.ok());
    EXPECT_TRUE(verifier->verify(a, jwt->signing_input, jwt->signature)) << name_of(a);
    std::string forged = jwt->signature;
    forged[forged.size() / 2] ^= 0x40;
    EXPECT_FALSE(verifier->verify(a, jwt->signing_input, forged)) << name_of(a);
    EXPECT_FALSE(verifier->sign(a, "x").ok()) << "a public key cannot sign";
  }
  EXPECT_FALSE(TokenKey::secret(std::string(31, 'k')).ok());
  EXPECT_FALSE(TokenKey::public_key("not DER").ok());
}

TEST(JwtTest, KeyValuesInPulsarsForms) {
  const std::string bytes = std::string("secret-\0-bytes", 14);
  const auto dir = std::filesystem::temp_directory_path() / "magnetar-auth-test";
  std::filesystem::create_directories(dir);
  const auto file = (dir / "k.key").string();
  std::ofstream(file, std::ios::binary) << bytes;
  EXPECT_EQ(*read_key_value("data:;base64," + base64_encode(bytes)), bytes);
  EXPECT_EQ(*read_key_value("data:application/octet-stream;base64," + base64_encode(bytes)),
            bytes);
  EXPECT_EQ(*read_key_value("file://" + file), bytes);
  EXPECT_EQ(*read_key_value(file), bytes);
  EXPECT_EQ(*read_key_value(base64_encode(bytes)), bytes);
  EXPECT_FALSE(read_key_value("file://relative/path").ok());
  EXPECT_FALSE(read_key_value("file:///no/such/key").ok());
  EXPECT_FALSE(read_key_value("data:;base64,!!").ok());
  auto bad = read_key_value("not base64 at all!");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().find("not base64 at all"), std::string::npos)
      << "the value is not echoed";
  std::filesystem::remove_all(dir);
}

// --- The broker's provider ------------------------------------------------------------------

struct Fixture {
  std::string secret = generate_secret(Algorithm::kHS256);
  TokenKey key = *TokenKey::secret(secret);
  TokenSettings settings() const {
    TokenSettings s;
    s.secret_key = "data:;base64," + base64_encode(secret);
    return s;
  }
  std::string token(const json& claims, Algorithm a = Algorithm::kHS256) const {
    return *encode_jwt(claims, key, a);
  }
};

std::string role_of(const TokenAuthenticator& a, const std::string& token, int64_t now = 1000) {
  auto r = a.authenticate(token, now);
  if (auto* ok = std::get_if<Authenticated>(&r)) return ok->role;
  return "refused: " + std::get<TokenAuthenticator::Refused>(r).reason;
}

TEST(TokenAuthenticatorTest, AcceptsSignedTokensAndTheirRole) {
  Fixture f;
  auto a = TokenAuthenticator::create(f.settings());
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(role_of(*a, f.token({{"sub", "app1"}})), "app1");
  EXPECT_EQ(role_of(*a, f.token({{"sub", "app1"}}) + "\n"), "app1") << "a token file's newline";
  auto r = a->authenticate(f.token({{"sub", "app1"}, {"exp", 2000}}), 1000);
  ASSERT_TRUE(std::holds_alternative<Authenticated>(r));
  EXPECT_EQ(std::get<Authenticated>(r).expires_at, 2000);
  // A role list: its first string.
  EXPECT_EQ(role_of(*a, f.token({{"sub", {"first", "second"}}})), "first");
  // Another claim named by tokenAuthClaim.
  TokenSettings by_claim = f.settings();
  by_claim.auth_claim = "principal";
  auto b = TokenAuthenticator::create(by_claim);
  EXPECT_EQ(role_of(*b, f.token({{"principal", "p"}, {"sub", "s"}})), "p");
}

TEST(TokenAuthenticatorTest, RefusesWhatPulsarRefuses) {
  Fixture f;
  auto a = TokenAuthenticator::create(f.settings());
  ASSERT_TRUE(a.ok());
  auto refused = [&](const std::string& token, TokenFailure failure, int64_t now = 1000) {
    auto r = a->authenticate(token, now);
    auto* no = std::get_if<TokenAuthenticator::Refused>(&r);
    EXPECT_NE(no, nullptr) << token;
    if (no == nullptr) return std::string();
    EXPECT_EQ(no->failure, failure) << no->reason;
    EXPECT_EQ(no->reason.find(token.substr(0, 20)), std::string::npos) << "the token is not echoed";
    return no->reason;
  };
  EXPECT_NE(refused(f.token({{"sub", "a"}, {"exp", 1000}}), TokenFailure::kExpired).find("expired"),
            std::string::npos);
  refused(f.token({{"sub", "a"}, {"nbf", 1001}}), TokenFailure::kInvalidToken);
  refused(f.token({{"sub", "a"}, {"exp", "tomorrow"}}), TokenFailure::kInvalidToken);
  refused(f.token({{"iss", "no role"}}), TokenFailure::kInvalidToken);
  refused(f.token({{"sub", ""}}), TokenFailure::kInvalidToken);
  refused("   ", TokenFailure::kInvalidAuthData);
  refused("garbage", TokenFailure::kInvalidToken);
  // Signed by another key.
  Fixture other;
  refused(other.token({{"sub", "a"}}), TokenFailure::kInvalidToken);
  // "alg": "none", and an algorithm the key cannot be (HS512 with a 32-byte secret).
  const std::string none = base64url_encode(R"({"alg":"none"})") + "." +
                           base64url_encode(R"({"sub":"a"})") + ".";
  refused(none, TokenFailure::kInvalidToken);
  refused(none + "c2ln", TokenFailure::kInvalidToken);
  // A 1 MiB token.
  refused(f.token({{"sub", std::string(1024 * 1024, 'x')}}), TokenFailure::kInvalidToken);
}

TEST(TokenAuthenticatorTest, PublicKeysAndTheAlgorithmConfusionAttack) {
  auto pair = generate_key_pair(Algorithm::kRS256);
  ASSERT_TRUE(pair.ok());
  TokenSettings s;
  s.public_key = "data:;base64," + base64_encode(pair->public_der);
  auto a = TokenAuthenticator::create(s);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto signer = *TokenKey::private_key(pair->private_der);
  EXPECT_EQ(role_of(*a, *encode_jwt({{"sub", "rsa-role"}}, signer, Algorithm::kRS256)), "rsa-role");
  EXPECT_EQ(role_of(*a, *encode_jwt({{"sub", "pss-role"}}, signer, Algorithm::kPS256)), "pss-role");
  // An HS256 token whose "secret" is the public key itself must not pass.
  auto as_secret = TokenKey::secret(pair->public_der);
  ASSERT_TRUE(as_secret.ok());
  EXPECT_NE(role_of(*a, *encode_jwt({{"sub", "x"}}, *as_secret, Algorithm::kHS256)).find("refused"),
            std::string::npos);
  // ES256 needs tokenPublicAlg=ES256.
  auto ec = generate_key_pair(Algorithm::kES256);
  TokenSettings es;
  es.public_key = "data:;base64," + base64_encode(ec->public_der);
  EXPECT_FALSE(TokenAuthenticator::create(es).ok()) << "an EC key with RS256";
  es.public_alg = "ES256";
  auto e = TokenAuthenticator::create(es);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  EXPECT_EQ(role_of(*e, *encode_jwt({{"sub", "ec"}}, *TokenKey::private_key(ec->private_der),
                                    Algorithm::kES256)),
            "ec");
}

TEST(TokenAuthenticatorTest, AudienceAndSettingsErrors) {
  Fixture f;
  TokenSettings s = f.settings();
  s.audience_claim = "aud";
  EXPECT_FALSE(TokenAuthenticator::create(s).ok()) << "an audience claim without an audience";
  s.audience = "broker-a";
  auto a = TokenAuthenticator::create(s);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(role_of(*a, f.token({{"sub", "r"}, {"aud", "broker-a"}})), "r");
  EXPECT_EQ(role_of(*a, f.token({{"sub", "r"}, {"aud", {"x", "broker-a"}}})), "r");
  EXPECT_EQ(role_of(*a, f.token({{"sub", "r"}, {"aud", {"x", "y"}}})),
            "refused: Audiences in token: [x, y] not contains this broker: broker-a");
  auto none = TokenAuthenticator::create(TokenSettings{});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "No secret key was provided for token authentication");
  TokenSettings short_key;
  short_key.secret_key = "data:;base64," + base64_encode("short");
  EXPECT_FALSE(TokenAuthenticator::create(short_key).ok());
}

}  // namespace
}  // namespace magnetar::auth
