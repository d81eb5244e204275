#pragma once
// The broker's serving objects, as the rooms above the service (wire, admin) see them.
// Made by the wiring (broker.cc); every reference outlives whatever is given the struct.

#include "broker/config/broker_config.h"
#include "common/gate.h"
#include "metadata/metadata_store.h"

namespace magnetar::auth {
class Authentication;
}  // namespace magnetar::auth

namespace magnetar::broker {

using auth::Authentication;
class Authorization;
class NamespaceService;
class SchemaRegistry;
class TopicRegistry;

struct BrokerServices {
  const BrokerConfig& config;
  metadata::MetadataStores stores;
  TopicRegistry& topics;
  NamespaceService& namespaces;
  SchemaRegistry& schemas;
  // The broker's task group: work on the broker's loops joins it (Broker::stop waits for it).
  Gate& gate;
  // Null when authenticationEnabled (authorizationEnabled) is false.
  const Authentication* authentication = nullptr;
  Authorization* authorization = nullptr;
};

}  // namespace magnetar::broker
