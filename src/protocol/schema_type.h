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

// A KEY_VALUE schema's data, as Pulsar's KeyValueSchemaInfo lays it out:
//   [int32 big-endian key length][key schema data][int32 big-endian value length][value data]
// (the key's and value's types, names and properties are in the schema's properties).
struct KeyValueSchemaData {
  std::string key;
  std::string value;
};
std::string encode_key_value_schema(std::string_view key, std::string_view value);
// nullopt when `data` is not that layout (lengths negative or past the end, bytes left over).
std::optional<KeyValueSchemaData> decode_key_value_schema(std::string_view data);

}  // namespace magnetar::protocol
