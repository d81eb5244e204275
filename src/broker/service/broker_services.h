#pragma once
// The broker's serving objects, as the rooms above the service (wire, admin) see them.
// Made by the wiring (broker.cc); every reference outlives whatever is given the struct.

#include "broker/config/broker_config.h"
#include "metadata/metadata_store.h"

namespace magnetar::broker {

class NamespaceService;
class SchemaRegistry;
class TopicRegistry;

struct BrokerServices {
  const BrokerConfig& config;
  metadata::MetadataStores stores;
  TopicRegistry& topics;
  NamespaceService& namespaces;
  SchemaRegistry& schemas;
};

}  // namespace magnetar::broker
