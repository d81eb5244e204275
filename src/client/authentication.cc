#include "magnetar/authentication.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace magnetar::client {

namespace {

constexpr size_t kMaxTokenBytes = 1 << 20;

std::string trimmed(std::string s) {
  auto blank = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && blank(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && blank(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Result<std::string> non_empty(std::string token, std::string_view from) {
  if (token.empty()) return Status(Errc::kInvalidArgument, fmt::format("empty token {}", from));
  return token;
}

Result<std::string> read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Errc::kNotFound, fmt::format("cannot read the token file {}", path));
  std::string text;
  text.resize(kMaxTokenBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxTokenBytes) {
    return Status(Errc::kInvalidArgument, fmt::format("the token file {} is over 1 MiB", path));
  }
  return non_empty(trimmed(std::move(text)), "in " + path);
}

Result<std::string> read_token_env(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) {
    return Status(Errc::kNotFound, fmt::format("the environment has no {}", name));
  }
  return non_empty(trimmed(value), "in $" + name);
}

}  // namespace

Result<std::map<std::string, std::string>> Authentication::http_headers() const {
  auto data = credentials();
  if (!data.ok()) return data.status();
  if (method() != "token") return std::map<std::string, std::string>{};
  return std::map<std::string, std::string>{{"Authorization", "Bearer " + *data}};
}

std::shared_ptr<Authentication> AuthToken::create(std::string token) {
  token = trimmed(std::move(token));
  return std::shared_ptr<Authentication>(new AuthToken(
      [token = std::move(token)]() -> Result<std::string> { return non_empty(token, "given"); }));
}

std::shared_ptr<Authentication> AuthToken::from_file(std::string path) {
  return std::shared_ptr<Authentication>(new AuthToken(
      [path = std::move(path)]() -> Result<std::string> { return read_token_file(path); }));
}

std::shared_ptr<Authentication> AuthToken::from_supplier(std::function<std::string()> supplier) {
  return std::shared_ptr<Authentication>(
      new AuthToken([supplier = std::move(supplier)]() -> Result<std::string> {
        return non_empty(trimmed(supplier()), "from the supplier");
      }));
}

Result<std::shared_ptr<Authentication>> AuthToken::from_params(std::string_view params) {
  const std::string p = trimmed(std::string(params));
  if (p.empty()) return Status(Errc::kInvalidArgument, "token authentication needs parameters");
  if (p.front() == '{') {
    auto j = nlohmann::json::parse(p, nullptr, false);
    if (!j.is_object()) {
      return Status(Errc::kInvalidArgument, "token authentication parameters: invalid JSON");
    }
    for (const char* key : {"token", "file", "env"}) {
      auto it = j.find(key);
      if (it == j.end() || !it->is_string()) continue;
      const std::string value = it->get<std::string>();
      if (key[0] == 't') return create(value);
      if (key[0] == 'f') return from_params("file:" + value);
      return from_params("env:" + value);
    }
    return Status(Errc::kInvalidArgument,
                  "token authentication parameters need \"token\", \"file\" or \"env\"");
  }
  if (p.rfind("token:", 0) == 0) return create(p.substr(6));
  if (p.rfind("file://", 0) == 0) return from_file(p.substr(7));
  if (p.rfind("file:", 0) == 0) return from_file(p.substr(5));
  if (p.rfind("env:", 0) == 0) {
    const std::string name = p.substr(4);
    return std::shared_ptr<Authentication>(
        new AuthToken([name]() -> Result<std::string> { return read_token_env(name); }));
  }
  return create(p);
}

Result<std::string> AuthToken::credentials() const {
  return source_();
}

std::shared_ptr<Authentication> AuthTls::create(std::string certificate_file,
                                                std::string private_key_file) {
  return std::shared_ptr<Authentication>(
      new AuthTls(TlsFiles{std::move(certificate_file), std::move(private_key_file)}));
}

Result<std::shared_ptr<Authentication>> AuthTls::from_params(std::string_view params) {
  const std::string p = trimmed(std::string(params));
  std::map<std::string, std::string> kv;
  if (!p.empty() && p.front() == '{') {
    auto j = nlohmann::json::parse(p, nullptr, false);
    if (!j.is_object()) {
      return Status(Errc::kInvalidArgument, "TLS authentication parameters: invalid JSON");
    }
    for (const auto& [k, v] : j.items()) {
      if (v.is_string()) kv[k] = v.get<std::string>();
    }
  } else {
    std::stringstream in(p);
    std::string item;
    while (std::getline(in, item, ',')) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) continue;
      kv[trimmed(item.substr(0, colon))] = trimmed(item.substr(colon + 1));
    }
  }
  const std::string cert = kv["tlsCertFile"];
  const std::string key = kv["tlsKeyFile"];
  if (cert.empty() || key.empty()) {
    return Status(Errc::kInvalidArgument,
                  "TLS authentication needs tlsCertFile:<cert.pem>,tlsKeyFile:<key.pem>");
  }
  return create(cert, key);
}

Result<std::shared_ptr<Authentication>> create_authentication(std::string_view plugin,
                                                              std::string_view params) {
  const std::string name = lower(trimmed(std::string(plugin)));
  if (name.empty()) return std::shared_ptr<Authentication>();
  if (name == "token" || name == "org.apache.pulsar.client.impl.auth.authenticationtoken") {
    return AuthToken::from_params(params);
  }
  if (name == "tls" || name == "org.apache.pulsar.client.impl.auth.authenticationtls") {
    return AuthTls::from_params(params);
  }
  return Status(
      Errc::kNotSupported,
      fmt::format("authentication plugin {} is not supported (token and tls are)", plugin));
}

}  // namespace magnetar::client
