#pragma once
// Client credentials, as Pulsar's Authentication plugins present them: the method name and
// data of CONNECT (and of the answers to a broker's refresh challenge), and the HTTP headers of
// lookups and admin calls.
//
//   options.authentication = AuthToken::create("eyJhbGciOi...");
//   options.authentication = AuthToken::from_file("/etc/pulsar/token.txt");   // re-read on use
//   options.authentication = AuthToken::from_supplier([] { return fetch_token(); });
//   auto auth = create_authentication("token", "file:///etc/pulsar/token.txt");  // by name
//
// Threading: credentials() and http_headers() may be called from any thread, several times
// (each new connection and each refresh asks again).

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace magnetar::client {

class Authentication {
 public:
  virtual ~Authentication() = default;
  // CONNECT's auth_method_name: "token", "tls", ...
  virtual std::string method() const = 0;
  // CONNECT's auth_data, now. An error fails the connection attempt (kAuthenticationError).
  virtual Result<std::string> credentials() const = 0;
  // Headers for HTTP requests ({"Authorization": "Bearer ..."} for tokens).
  virtual Result<std::map<std::string, std::string>> http_headers() const;
  // A client certificate and key (PEM files) the TLS connections present (AuthTls); they
  // stand in for ClientOptions' tls_certificate_file_path / tls_private_key_file_path.
  struct TlsFiles {
    std::string certificate_file;
    std::string private_key_file;
  };
  virtual std::optional<TlsFiles> tls_files() const { return std::nullopt; }
};

// Pulsar's AuthenticationTls: the role is the client certificate's CN, checked by the broker
// on a pulsar+ssl:// connection ("tls" in CONNECT, no data).
class AuthTls final : public Authentication {
 public:
  static std::shared_ptr<Authentication> create(std::string certificate_file,
                                                std::string private_key_file);
  // Pulsar's forms: "tlsCertFile:/c.pem,tlsKeyFile:/k.pem" or {"tlsCertFile": ..., "tlsKeyFile":
  // ...}. kInvalidArgument when either is missing.
  static Result<std::shared_ptr<Authentication>> from_params(std::string_view params);

  std::string method() const override { return "tls"; }
  Result<std::string> credentials() const override { return std::string(); }
  std::optional<TlsFiles> tls_files() const override { return files_; }

 private:
  explicit AuthTls(TlsFiles files) : files_(std::move(files)) {}
  TlsFiles files_;
};

// Pulsar's AuthenticationToken: a JWT given as a string, read from a file on every use
// (surrounding blanks and the newline `tokens create > f` leaves are trimmed), or returned
// by a supplier on every use.
class AuthToken final : public Authentication {
 public:
  static std::shared_ptr<Authentication> create(std::string token);
  static std::shared_ptr<Authentication> from_file(std::string path);
  static std::shared_ptr<Authentication> from_supplier(std::function<std::string()> supplier);
  // Pulsar's parameter forms: "token:<jwt>", "file:///path", "env:VAR", {"token": "<jwt>"}
  // (also {"file": ...}, {"env": ...}), or the bare JWT. kInvalidArgument when empty.
  static Result<std::shared_ptr<Authentication>> from_params(std::string_view params);

  std::string method() const override { return "token"; }
  Result<std::string> credentials() const override;

 private:
  explicit AuthToken(std::function<Result<std::string>()> source) : source_(std::move(source)) {}
  std::function<Result<std::string>()> source_;
};

// A plugin by Pulsar's names (AuthFactory::create): "token" or
// "org.apache.pulsar.client.impl.auth.AuthenticationToken", "tls" or
// "org.apache.pulsar.client.impl.auth.AuthenticationTls" (any case); an empty name (no
// authentication) gives nullptr. Other plugins: kNotSupported naming them.
Result<std::shared_ptr<Authentication>> create_authentication(std::string_view plugin,
                                                              std::string_view params);

}  // namespace magnetar::client
