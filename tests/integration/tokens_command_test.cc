// `magnetar tokens` as a user runs it: keys and tokens in Pulsar's formats, the token shape
// Pulsar's own tool makes for the same key (header {"alg":"HS256"}, claims {"sub": ...},
// HMAC-SHA256 over them), and the broker's token provider accepting what the tool made.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "auth/token_authenticator.h"
#include "testing/child_process.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY"
#endif

namespace magnetar::testing {
namespace {

class TokensCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / fmt::format("magnetar-tokens-{}", ::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::pair<int, std::string> tokens(const std::string& args) {
    return run_command(fmt::format("{} tokens {}", MAGNETAR_BINARY, args));
  }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(TokensCommandTest, SecretKeyTokensHavePulsarsShapeAndTheBrokerAcceptsThem) {
  auto [code, out] = tokens("create-secret-key --output " + path("secret.key"));
  ASSERT_EQ(code, 0) << out;
  const std::string secret = read(path("secret.key"));
  ASSERT_EQ(secret.size(), 32u);
  std::tie(code, out) =
      tokens("create --subject token-principal --secret-key file://" + path("secret.key"));
  ASSERT_EQ(code, 0) << out;
  // What Pulsar's tool writes for this key: the documented header and claims, HMAC-SHA256.
  const std::string input = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ0b2tlbi1wcmluY2lwYWwifQ";
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &size);
  const std::string golden =
      input + "." + auth::base64url_encode(std::string(reinterpret_cast<char*>(mac), size));
  EXPECT_EQ(out, golden + "\n");
  // The broker's provider, configured as broker.conf would be, takes it.
  auth::TokenSettings settings;
  settings.secret_key = "file://" + path("secret.key");
  auto provider = auth::TokenAuthenticator::create(settings);
  ASSERT_TRUE(provider.ok()) << provider.status().to_string();
  auto r = provider->authenticate(out, 1'700'000'000);
  ASSERT_TRUE(std::holds_alternative<auth::Authenticated>(r));
  EXPECT_EQ(std::get<auth::Authenticated>(r).role, "token-principal");

  std::tie(code, out) = tokens("show " + golden);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "{\"alg\":\"HS256\"}\n---\n{\"sub\":\"token-principal\"}\n");
  std::tie(code, out) = tokens("validate -sk file://" + path("secret.key") + " " + golden);
  EXPECT_EQ(code, 0) << out;
  EXPECT_EQ(out, "{sub=token-principal}\n");
  // Base64 text, and the key in its data: form.
  std::tie(code, out) = tokens("create-secret-key -b");
  ASSERT_EQ(code, 0);
  auto decoded = auth::base64_decode(out);
  ASSERT_TRUE(decoded.has_value()) << out;
  EXPECT_EQ(decoded->size(), 32u);
  std::tie(code, out) = tokens("create -s app -sk 'data:;base64," + auth::base64_encode(secret) + "'");
  EXPECT_EQ(code, 0) << out;
}

TEST_F(TokensCommandTest, KeyPairsExpiryValidationAndMistakes) {
  for (const char* alg : {"RS256", "ES256"}) {
    auto [code, out] = tokens(fmt::format(
        "create-key-pair -a {} --output-private-key {} --output-public-key {}", alg,
        path("priv.der"), path("pub.der")));
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(out, "");
    ASSERT_TRUE(auth::TokenKey::public_key(read(path("pub.der"))).ok()) << alg;
    std::tie(code, out) = tokens("create -s app1 -e 1h -pk " + path("priv.der"));
    ASSERT_EQ(code, 0) << out;
    const std::string token = out.substr(0, out.size() - 1);
    auto jwt = auth::decode_jwt(token);
    ASSERT_TRUE(jwt.ok());
    EXPECT_EQ(jwt->header["alg"], alg);
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    EXPECT_NEAR(jwt->claims["exp"].get<double>(), static_cast<double>(now + 3600), 10.0);
    std::tie(code, out) = tokens("validate -pk file://" + path("pub.der") + " " + token);
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out.rfind("{sub=app1, exp=", 0), 0u) << out;
    // Another key's public half does not validate it.
    auto other = auth::generate_key_pair(*auth::algorithm_named(alg));
    std::ofstream(path("other.der"), std::ios::binary) << other->public_der;
    std::tie(code, out) = tokens("validate -pk " + path("other.der") + " " + token);
    EXPECT_NE(code, 0) << out;
  }
  auto [code, out] = tokens("create -s app1");
  EXPECT_EQ(code, 1);
  EXPECT_NE(out.find("either --secret-key or --private-key"), std::string::npos) << out;
  std::tie(code, out) = tokens("create -s app1 -sk file:///no/such/key");
  EXPECT_EQ(code, 1);
  std::tie(code, out) = tokens("show not-a-token");
  EXPECT_EQ(code, 1);
}

}  // namespace
}  // namespace magnetar::testing
