#pragma once
// Who a client is: the broker's authentication providers (authenticationProviders), chosen by
// the method a client names in CONNECT (auth_method_name), as Pulsar chooses them
// (../shared/reference/pulsar-security-proxy.md §1.1):
//
//   - a method with a provider: its credentials must pass (a bad token is refused even when
//     anonymousUserRole is set);
//   - a method without one ("none", or anything not configured): anonymousUserRole when set,
//     else refused.
//
// Providers: Pulsar's AuthenticationProviderToken ("token", src/auth) and
// AuthenticationProviderTls ("tls": the role is the client certificate's CN). Others named in
// authenticationProviders fail the broker's start with a clear message instead of being
// ignored. Refusals carry a reason for the broker's log (never the credentials); clients get
// Pulsar's fixed text.
//
// Metrics: pulsar_authentication_success_total, pulsar_authentication_failures_total (by
// Pulsar's reason) and pulsar_expired_token_total, counted per authenticate().
//
// Threading: immutable after create(); authenticate() may run on any thread.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "broker/config/broker_config.h"
#include "common/status.h"

namespace magnetar::auth {
class TokenAuthenticator;
}

namespace magnetar::broker {

struct AuthenticationMetrics;

// What a client is told when its credentials are refused (Pulsar 3.x).
constexpr const char* kAuthenticationFailed = "Failed to authenticate";

class Authentication {
 public:
  // nullptr when authenticationEnabled is false. Errors (kInvalidArgument): an unknown
  // provider, a provider's settings ("No secret key was provided for token authentication").
  static Result<std::unique_ptr<Authentication>> create(const BrokerConfig& config);
  ~Authentication();

  struct Outcome {
    std::optional<std::string> role;    // nullopt: refused
    std::string method;                 // the provider's name, or "anonymous"
    std::optional<int64_t> expires_at;  // seconds since the epoch, for credentials that expire
    std::string reason;                 // why refused (for the log only)
  };
  // `method`: CONNECT's auth_method_name ("none" when absent); `data`: its auth_data;
  // `tls_common_name`: the connection's verified client certificate's CN ("" without one),
  // the role of the "tls" method.
  Outcome authenticate(std::string_view method, std::string_view data, int64_t now_seconds,
                       std::string_view tls_common_name = {}) const;

 private:
  Authentication() = default;
  std::unique_ptr<auth::TokenAuthenticator> token_;
  std::string anonymous_role_;
  std::unique_ptr<AuthenticationMetrics> token_metrics_;  // with token_
  bool tls_ = false;                                      // AuthenticationProviderTls
  std::unique_ptr<AuthenticationMetrics> tls_metrics_;    // with tls_
};

}  // namespace magnetar::broker
