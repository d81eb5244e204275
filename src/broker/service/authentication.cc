#include "broker/service/authentication.h"

#include <fmt/format.h>

#include "auth/token_authenticator.h"
#include "broker/service/metrics.h"

namespace magnetar::broker {

namespace {
constexpr std::string_view kTokenProvider =
    "org.apache.pulsar.broker.authentication.AuthenticationProviderToken";
constexpr std::string_view kTlsProvider =
    "org.apache.pulsar.broker.authentication.AuthenticationProviderTls";
}  // namespace

Authentication::~Authentication() = default;

Result<std::unique_ptr<Authentication>> Authentication::create(const BrokerConfig& config) {
  if (!config.authentication_enabled) return std::unique_ptr<Authentication>();
  std::unique_ptr<Authentication> a(new Authentication());
  a->anonymous_role_ = config.anonymous_user_role;
  for (const std::string& provider : config.authentication_providers) {
    if (provider == kTlsProvider) {
      a->tls_ = true;
      a->tls_metrics_ = std::make_unique<AuthenticationMetrics>(
          authentication_metrics("AuthenticationProviderTls", "tls"));
      continue;
    }
    if (provider != kTokenProvider) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("authenticationProviders: {} is not supported (supported: {}, {})",
                                provider, kTokenProvider, kTlsProvider));
    }
    auth::TokenSettings s;
    s.secret_key = config.token_secret_key;
    s.public_key = config.token_public_key;
    s.public_alg = config.token_public_alg;
    s.auth_claim = config.token_auth_claim;
    s.audience_claim = config.token_audience_claim;
    s.audience = config.token_audience;
    auto token = auth::TokenAuthenticator::create(s);
    if (!token.ok()) return token.status();
    a->token_ = std::make_unique<auth::TokenAuthenticator>(std::move(*token));
    a->token_metrics_ = std::make_unique<AuthenticationMetrics>(
        authentication_metrics("AuthenticationProviderToken", "token"));
  }
  if (!a->token_ && !a->tls_ && a->anonymous_role_.empty()) {
    return Status(Errc::kInvalidArgument,
                  "authenticationEnabled=true needs authenticationProviders or anonymousUserRole: "
                  "no client could connect");
  }
  return a;
}

Authentication::Outcome Authentication::authenticate(std::string_view method, std::string_view data,
                                                     int64_t now_seconds,
                                                     std::string_view tls_common_name) const {
  Outcome out;
  if (method == "tls" && tls_) {
    out.method = "tls";
    if (tls_common_name.empty()) {
      out.reason = "Client unable to authenticate with TLS certificate";
      tls_metrics_->failures.find("INVALID_AUTH_DATA")->second->inc();
    } else {
      out.role = std::string(tls_common_name);
      tls_metrics_->success->inc();
    }
    return out;
  }
  if (method == "token" && token_) {
    out.method = "token";
    auto r = token_->authenticate(data, now_seconds);
    if (auto* ok = std::get_if<auth::Authenticated>(&r)) {
      out.role = ok->role;
      out.expires_at = ok->expires_at;
      token_metrics_->success->inc();
    } else {
      const auto& no = std::get<auth::TokenAuthenticator::Refused>(r);
      const std::string_view reason = auth::to_string(no.failure);
      out.reason = fmt::format("{}: {}", reason, no.reason);
      if (auto it = token_metrics_->failures.find(reason); it != token_metrics_->failures.end()) {
        it->second->inc();
      }
      if (no.failure == auth::TokenFailure::kExpired) token_metrics_->expired->inc();
    }
    return out;
  }
  out.method = "anonymous";
  if (!anonymous_role_.empty()) {
    out.role = anonymous_role_;
  } else {
    out.reason = fmt::format("no authentication provider for method '{}'",
                             std::string(method.substr(0, 64)));
  }
  return out;
}

}  // namespace magnetar::broker
