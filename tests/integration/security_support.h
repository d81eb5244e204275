#pragma once
// Tokens and admin calls for process-level tests with authentication on: keys and tokens made
// with `magnetar tokens`, the super user's token in the shape Pulsar's own tool makes it
// (computed here from the documented format), one admin call with a Bearer token, a client
// with credentials.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "auth/base64.h"
#include "http/http_client.h"
#include "magnetar/authentication.h"
#include "magnetar/client.h"
#include "broker_fixture.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY, the magnetar executable"
#endif

namespace magnetar::testing {

using namespace std::chrono_literals;

// What `pulsar tokens create --subject <role> --secret-key file://<key>` prints: header
// {"alg":"HS256"}, claims {"sub":"<role>"}, HMAC-SHA256 with the raw key.
inline std::string pulsar_tool_token(const std::string& secret, const std::string& role) {
  const std::string input = auth::base64url_encode(R"({"alg":"HS256"})") + "." +
                            auth::base64url_encode(fmt::format(R"({{"sub":"{}"}})", role));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &size);
  return input + "." + auth::base64url_encode(std::string(reinterpret_cast<char*>(mac), size));
}

inline std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Keys and tokens made with `magnetar tokens` under `dir`.
struct Keys {
  explicit Keys(const std::filesystem::path& dir) : key_file((dir / "secret.key").string()) {
    auto [code, out] = run_command(
        fmt::format("{} tokens create-secret-key --output {}", MAGNETAR_BINARY, key_file));
    EXPECT_EQ(code, 0) << out;
    secret = read_file(key_file);
  }
  // A token file for `role`, written by `magnetar tokens create ... > file`.
  std::string token_file(const std::filesystem::path& dir, const std::string& role) const {
    const std::string path = (dir / (role + ".token")).string();
    auto [code, out] =
        run_command(fmt::format("{} tokens create --subject {} --secret-key file://{} > {}",
                                MAGNETAR_BINARY, role, key_file, path));
    EXPECT_EQ(code, 0) << out;
    return path;
  }
  std::string token(const std::string& role) const { return pulsar_tool_token(secret, role); }
  std::vector<std::pair<std::string, std::string>> settings() const {
    return {{"authenticationEnabled", "true"},
            {"authenticationProviders",
             "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"},
            {"tokenSecretKey", "file://" + key_file},
            {"authorizationEnabled", "true"},
            {"superUserRoles", "root"}};
  }
  std::string key_file;
  std::string secret;
};

// One admin call with a Bearer token (empty: none).
inline std::pair<int, std::string> call(int web_port, const std::string& token, const std::string& method,
                                 const std::string& target, const std::string& body = "") {
  http::ClientOptions o;
  o.timeout = std::chrono::seconds(10);
  o.max_redirects = 5;
  http::HttpClient client(o);
  http::HttpRequest request;
  request.method = method;
  request.url = fmt::format("http://127.0.0.1:{}{}", web_port, target);
  request.body = body;
  if (!token.empty()) request.headers["Authorization"] = "Bearer " + token;
  auto got = client.send_blocking(std::move(request));
  if (!got.ok()) return {0, got.status().to_string()};
  return {got->status, got->body};
}

inline Result<client::Client> client_as(const std::string& url,
                                 std::shared_ptr<client::Authentication> a) {
  client::ClientOptions o;
  o.operation_timeout = 5s;
  o.authentication = std::move(a);
  return client::Client::create(url, o);
}

}  // namespace magnetar::testing
