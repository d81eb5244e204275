#pragma once
// A SchemaInfo (include/magnetar/message.h) as PRODUCER and SUBSCRIBE carry it.

#include <string>

#include "common/status.h"
#include "magnetar/message.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::client {

// Errors: kInvalidConfiguration for a type Pulsar does not name.
Result<wire::Schema> wire_schema(const SchemaInfo& schema, const std::string& topic);

}  // namespace magnetar::client
