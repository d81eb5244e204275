#include "protocol/schema_type.h"

#include <array>
#include <cctype>

namespace magnetar::protocol {

namespace {

struct TypeName {
  wire::Schema::Type type;
  std::string_view pulsar;
};

constexpr std::array<TypeName, 23> kTypes = {{
    {wire::Schema::None, "NONE"},
    {wire::Schema::String, "STRING"},
    {wire::Schema::Json, "JSON"},
    {wire::Schema::Protobuf, "PROTOBUF"},
    {wire::Schema::Avro, "AVRO"},
    {wire::Schema::Bool, "BOOLEAN"},
    {wire::Schema::Int8, "INT8"},
    {wire::Schema::Int16, "INT16"},
    {wire::Schema::Int32, "INT32"},
    {wire::Schema::Int64, "INT64"},
    {wire::Schema::Float, "FLOAT"},
    {wire::Schema::Double, "DOUBLE"},
    {wire::Schema::Date, "DATE"},
    {wire::Schema::Time, "TIME"},
    {wire::Schema::Timestamp, "TIMESTAMP"},
    {wire::Schema::KeyValue, "KEY_VALUE"},
    {wire::Schema::Instant, "INSTANT"},
    {wire::Schema::LocalDate, "LOCAL_DATE"},
    {wire::Schema::LocalTime, "LOCAL_TIME"},
    {wire::Schema::LocalDateTime, "LOCAL_DATE_TIME"},
    {wire::Schema::ProtobufNative, "PROTOBUF_NATIVE"},
    {wire::Schema::AutoConsume, "AUTO_CONSUME"},
    {wire::Schema::External, "EXTERNAL"},
}};

}  // namespace

std::string schema_type_name(wire::Schema::Type type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return std::string(t.pulsar);
  }
  return "NONE";
}

std::optional<wire::Schema::Type> schema_type_of(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "NONE" || upper == "BYTES") return std::nullopt;
  for (const auto& t : kTypes) {
    if (upper == t.pulsar) return t.type;
  }
  return std::nullopt;
}

}  // namespace magnetar::protocol
