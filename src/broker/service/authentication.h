#pragma once
// The broker's authentication: auth::Authentication (src/auth/authentication.h, shared with
// the proxy) configured from broker.conf's authentication* and token* keys.

#include <memory>

#include "auth/authentication.h"
#include "broker/config/broker_config.h"
#include "common/status.h"

namespace magnetar::broker {

using auth::Authentication;
using auth::kAuthenticationFailed;

// nullptr when authenticationEnabled is false; errors as auth::Authentication::create.
Result<std::unique_ptr<Authentication>> make_authentication(const BrokerConfig& config);

}  // namespace magnetar::broker
