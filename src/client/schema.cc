#include "client/schema.h"

#include <fmt/format.h>

#include "magnetar/errors.h"
#include "protocol/schema_type.h"
#include "protocol/topic_name.h"

namespace magnetar::client {

Result<wire::Schema> wire_schema(const SchemaInfo& schema, const std::string& topic) {
  auto type = protocol::schema_type_of(schema.type);
  if (!type) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("unknown schema type '{}'", schema.type));
  }
  wire::Schema out;
  auto name = protocol::TopicName::parse(topic);
  out.set_name(name.ok() ? name->partitioned_topic_name().local_name() : topic);
  out.set_type(*type);
  out.set_schema_data(schema.definition);
  for (const auto& [k, v] : schema.properties) {
    auto* kv = out.add_properties();
    kv->set_key(k);
    kv->set_value(v);
  }
  return out;
}

}  // namespace magnetar::client
