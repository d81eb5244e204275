#pragma once
// Pulsar's schema type names (SchemaType: STRING, JSON, AVRO, KEY_VALUE, ...) and the wire's
// Schema.Type, both ways: the admin REST API and the tools speak the names, the protocol the
// numbers.

#include <optional>
#include <string>
#include <string_view>

#include "proto/pulsar_api.pb.h"

namespace magnetar::protocol {

// "STRING", "PROTOBUF_NATIVE", ...; "NONE" for None; "AUTO_CONSUME" for AutoConsume.
std::string schema_type_name(wire::Schema::Type type);
// The wire type of a Pulsar name, in any letter case ("string", "STRING"); nullopt for
// names without a stored schema (BYTES) or unknown ones.
std::optional<wire::Schema::Type> schema_type_of(std::string_view name);

}  // namespace magnetar::protocol
