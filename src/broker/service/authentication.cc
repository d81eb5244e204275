#include "broker/service/authentication.h"

namespace magnetar::broker {

auth::AuthenticationSettings authentication_settings(const BrokerConfig& config) {
  auth::AuthenticationSettings s;
  s.enabled = config.authentication_enabled;
  s.providers = config.authentication_providers;
  s.anonymous_role = config.anonymous_user_role;
  s.token.secret_key = config.token_secret_key;
  s.token.public_key = config.token_public_key;
  s.token.public_alg = config.token_public_alg;
  s.token.auth_claim = config.token_auth_claim;
  s.token.audience_claim = config.token_audience_claim;
  s.token.audience = config.token_audience;
  return s;
}

Result<std::unique_ptr<Authentication>> make_authentication(const BrokerConfig& config) {
  return Authentication::create(authentication_settings(config));
}

}  // namespace magnetar::broker
