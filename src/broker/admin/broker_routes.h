#pragma once
// The broker's own HTTP endpoints (../shared/reference/pulsar-protocol.md §4):
//
//   GET  /lookup/v2/topic/{domain}/{tenant}/{ns}/{topic}      lookup (307 to redirect)
//   /admin/v2/persistent/{tenant}/{ns}[/partitioned]          topic lists
//   /admin/v2/persistent/{tenant}/{ns}/{topic}/partitions     partitioned-topic metadata
//   /admin/v2/persistent/{tenant}/{ns}/{topic}[/...]          topic operations, on the owner
//   /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload|split  bundle operations, on the owner
//   /admin/v2/namespaces/{tenant}/{ns}/unload                 every bundle of the namespace
//   /admin/v2/brokers/...                                     brokers, health, leader
//
// Topic and bundle operations reaching a broker that does not own the topic's bundle are
// answered 307 with Location on the owner (after placing an unowned bundle, as a lookup
// does), so any broker's URL works for every call. Errors: {"reason": ...} with Pulsar's
// codes (404 unknown topic/namespace, 409 exists, 412 precondition, 400 malformed input,
// 503 no broker available), never a 500 for bad input.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/asio.h"
#include "broker/service/broker_services.h"
#include "http/http_server.h"

namespace magnetar::broker {

class LoadManager;

// `services`' objects and `load` (null: standalone without a load manager) outlive `web`'s
// routes.
void add_broker_routes(http::HttpServer& web, BrokerServices services, LoadManager* load);

// The namespace operations of the list above, for AdminResourcesOptions::broker_operations.
Task<std::optional<http::Response>> namespace_broker_operation(
    BrokerServices broker, const http::Request& req, const std::vector<std::string>& parts);

}  // namespace magnetar::broker
