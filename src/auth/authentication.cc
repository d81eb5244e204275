#include "auth/authentication.h"

#include <fmt/format.h>

#include <chrono>

#include "common/config.h"
#include "common/metrics.h"

namespace magnetar::auth {

namespace {

constexpr std::string_view kTokenProvider =
    "org.apache.pulsar.broker.authentication.AuthenticationProviderToken";
constexpr std::string_view kTlsProvider =
    "org.apache.pulsar.broker.authentication.AuthenticationProviderTls";

struct AuthFamilies {
  metrics::Family<metrics::Counter>* success;
  metrics::Family<metrics::Counter>* failures;
  metrics::Family<metrics::Counter>* expired;
};

AuthFamilies& auth_families() {
  static AuthFamilies f = [] {
    auto& r = metrics::default_registry();
    AuthFamilies out;
    out.success = r.counter("pulsar_authentication_success_total", "Credentials accepted",
                            {"provider_name", "auth_method"})
                      .value();
    out.failures = r.counter("pulsar_authentication_failures_total", "Credentials refused",
                             {"provider_name", "auth_method", "reason"})
                       .value();
    out.expired =
        r.counter("pulsar_expired_token_total", "Tokens refused because they expired").value();
    return out;
  }();
  return f;
}

}  // namespace

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void bind_authentication_config(ConfigSchema& s, AuthenticationSettings* a) {
  s.bind("authenticationEnabled", &a->enabled,
         "Clients must authenticate (CONNECT's auth_method_name and auth_data, HTTP's "
         "Authorization header or client certificate)");
  s.bind("authenticationProviders", &a->providers,
         "Authentication provider classes, e.g. "
         "org.apache.pulsar.broker.authentication.AuthenticationProviderToken");
  s.bind("anonymousUserRole", &a->anonymous_role,
         "Role of a client that sends no credentials of a configured method (empty: refused)");
  s.bind("tokenSecretKey", &a->token.secret_key,
         "HMAC key of tokens: data:;base64,..., file:///path, a path or base64");
  s.bind("tokenPublicKey", &a->token.public_key,
         "Public key (X.509 DER) of tokens signed with RS*/PS*/ES*, in the same forms");
  s.bind("tokenPublicAlg", &a->token.public_alg,
         "Algorithm of tokenPublicKey: RS256 (default), ..., ES256 for EC keys");
  s.bind("tokenAuthClaim", &a->token.auth_claim, "Claim holding the role");
  s.bind("tokenAudienceClaim", &a->token.audience_claim,
         "Claim a token's audience is in (empty: audiences are not checked)");
  s.bind("tokenAudience", &a->token.audience,
         "This server's audience: tokenAudienceClaim must contain it");
}

AuthenticationMetrics authentication_metrics(const std::string& provider,
                                             const std::string& method) {
  auto& f = auth_families();
  AuthenticationMetrics out;
  out.success = f.success->get(provider, method);
  for (const char* reason :
       {"INVALID_AUTH_DATA", "INVALID_TOKEN", "INVALID_AUDIENCES", "EXPIRED_TOKEN"}) {
    out.failures.emplace(reason, f.failures->get(provider, method, reason));
  }
  out.expired = f.expired->get();
  return out;
}

Authentication::~Authentication() = default;

Result<std::unique_ptr<Authentication>> Authentication::create(
    const AuthenticationSettings& settings) {
  if (!settings.enabled) return std::unique_ptr<Authentication>();
  std::unique_ptr<Authentication> a(new Authentication());
  a->anonymous_role_ = settings.anonymous_role;
  for (const std::string& provider : settings.providers) {
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
    auto token = TokenAuthenticator::create(settings.token);
    if (!token.ok()) return token.status();
    a->token_ = std::make_unique<TokenAuthenticator>(std::move(*token));
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
    if (auto* ok = std::get_if<Authenticated>(&r)) {
      out.role = ok->role;
      out.expires_at = ok->expires_at;
      token_metrics_->success->inc();
    } else {
      const auto& no = std::get<TokenAuthenticator::Refused>(r);
      const std::string_view reason = to_string(no.failure);
      out.reason = fmt::format("{}: {}", reason, no.reason);
      if (auto it = token_metrics_->failures.find(reason); it != token_metrics_->failures.end()) {
        it->second->inc();
      }
      if (no.failure == TokenFailure::kExpired) token_metrics_->expired->inc();
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

Authentication::Outcome Authentication::authenticate_http(const std::string* authorization_header,
                                                          const std::string* method_header,
                                                          std::string_view tls_common_name,
                                                          int64_t now_seconds) const {
  constexpr std::string_view kBearer = "Bearer ";
  std::string_view method = "none";
  std::string_view credentials;
  if (authorization_header != nullptr && authorization_header->starts_with(kBearer)) {
    method = "token";
    credentials = std::string_view(*authorization_header).substr(kBearer.size());
  }
  if (method == "none" && !tls_common_name.empty()) method = "tls";
  if (method_header != nullptr) method = *method_header;
  Outcome outcome = authenticate(method, credentials, now_seconds, tls_common_name);
  if (!outcome.role && method != "none") {
    Outcome anonymous = authenticate("none", "", now_seconds);
    if (anonymous.role) {
      anonymous.reason = outcome.reason;  // why the credential itself was refused
      return anonymous;
    }
  }
  return outcome;
}

}  // namespace magnetar::auth
