#include "broker/service/authentication.h"

namespace magnetar::broker {

Result<std::unique_ptr<Authentication>> make_authentication(const BrokerConfig& config) {
  return Authentication::create(config.authentication);
}

}  // namespace magnetar::broker
