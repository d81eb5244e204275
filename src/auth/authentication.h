#pragma once
// Who a client is: the authentication providers of a server (authenticationProviders), chosen
// by the method a client names (CONNECT's auth_method_name, HTTP's X-Pulsar-Auth-Method-Name),
// as Pulsar chooses them (../shared/reference/pulsar-security-proxy.md §1.1):
//
//   - a method with a provider: its credentials must pass (a bad token is refused even when
//     anonymousUserRole is set);
//   - a method without one ("none", or anything not configured): anonymousUserRole when set,
//     else refused.
//
// Providers: Pulsar's AuthenticationProviderToken ("token", token_authenticator.h) and
// AuthenticationProviderTls ("tls": the role is the client certificate's CN). Others named in
// authenticationProviders fail create() with a clear message instead of being ignored.
// Refusals carry a reason for the server's log (never the credentials); clients get Pulsar's
// fixed text (kAuthenticationFailed).
//
// Shared by the broker and the proxy: each builds AuthenticationSettings from its own
// configuration file (the keys have the same names in broker.conf and proxy.conf).
//
// Metrics: pulsar_authentication_success_total, pulsar_authentication_failures_total (by
// Pulsar's reason) and pulsar_expired_token_total, counted per authenticate().
//
// Threading: immutable after create(); authenticate() may run on any thread.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/token_authenticator.h"
#include "common/status.h"

namespace magnetar {
class ConfigSchema;
}
namespace magnetar::metrics {
class Counter;
}

namespace magnetar::auth {

// What a client is told when its credentials are refused (Pulsar 3.x).
constexpr const char* kAuthenticationFailed = "Failed to authenticate";

// The configuration keys, with Pulsar's names.
struct AuthenticationSettings {
  bool enabled = false;                // authenticationEnabled
  std::vector<std::string> providers;  // authenticationProviders (class names)
  std::string anonymous_role;          // anonymousUserRole
  TokenSettings token;                 // token* keys
};

// Declares authenticationEnabled, authenticationProviders, anonymousUserRole and the token*
// keys, bound to `settings` (broker.conf and proxy.conf share them; `settings` must outlive
// `schema`).
void bind_authentication_config(ConfigSchema& schema, AuthenticationSettings* settings);

// pulsar_authentication_success_total{provider_name, auth_method},
// pulsar_authentication_failures_total{..., reason} (Pulsar's token reasons) and
// pulsar_expired_token_total, in the process's default registry. Never a credential in a label.
struct AuthenticationMetrics {
  std::shared_ptr<metrics::Counter> success;
  std::map<std::string, std::shared_ptr<metrics::Counter>, std::less<>> failures;  // by reason
  std::shared_ptr<metrics::Counter> expired;
};
AuthenticationMetrics authentication_metrics(const std::string& provider,
                                             const std::string& method);

// Seconds since the epoch: the clock credentials' expiry is checked against.
int64_t now_seconds();

class Authentication {
 public:
  // nullptr when `settings.enabled` is false. Errors (kInvalidArgument): an unknown provider,
  // a provider's settings ("No secret key was provided for token authentication"), nothing
  // that could ever let a client in.
  static Result<std::unique_ptr<Authentication>> create(const AuthenticationSettings& settings);
  ~Authentication();

  struct Outcome {
    std::optional<std::string> role;    // nullopt: refused
    std::string method;                 // the provider's name, or "anonymous"
    std::optional<int64_t> expires_at;  // seconds since the epoch, for credentials that expire
    std::string reason;                 // why refused (for the log only)
  };
  // `method`: the method the client named ("none" when absent); `data`: its credentials;
  // `tls_common_name`: the connection's verified client certificate's CN ("" without one),
  // the role of the "tls" method.
  Outcome authenticate(std::string_view method, std::string_view data, int64_t now_seconds,
                       std::string_view tls_common_name = {}) const;
  // An HTTP request (§4.1 of pulsar-security-proxy.md): "Authorization: Bearer <token>"
  // (method "token"), else the HTTPS client certificate's CN (method "tls"); an
  // X-Pulsar-Auth-Method-Name header chooses the method. A refused credential still gets
  // anonymousUserRole when there is one, as Pulsar's filter does. Null headers: not sent.
  Outcome authenticate_http(const std::string* authorization_header,
                            const std::string* method_header, std::string_view tls_common_name,
                            int64_t now_seconds) const;

 private:
  Authentication() = default;
  std::unique_ptr<TokenAuthenticator> token_;
  std::string anonymous_role_;
  std::unique_ptr<AuthenticationMetrics> token_metrics_;  // with token_
  bool tls_ = false;                                      // AuthenticationProviderTls
  std::unique_ptr<AuthenticationMetrics> tls_metrics_;    // with tls_
};

}  // namespace magnetar::auth
