#include "protocol/schema_type.h"

#include <array>
#include <cctype>
#include <cstdint>

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

namespace {

void put_length(std::string& out, size_t n) {
  const auto v = static_cast<uint32_t>(n);
  out.push_back(static_cast<char>(v >> 24));
  out.push_back(static_cast<char>(v >> 16));
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

// Reads one length-prefixed part at `pos`, advancing it.
std::optional<std::string> take_part(std::string_view data, size_t& pos) {
  if (data.size() - pos < 4) return std::nullopt;
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<uint8_t>(data[pos + i]);
  pos += 4;
  if (n > data.size() - pos) return std::nullopt;  // also a negative int32
  std::string part(data.substr(pos, n));
  pos += n;
  return part;
}

}  // namespace

std::string encode_key_value_schema(std::string_view key, std::string_view value) {
  std::string out;
  out.reserve(8 + key.size() + value.size());
  put_length(out, key.size());
  out.append(key);
  put_length(out, value.size());
  out.append(value);
  return out;
}

std::optional<KeyValueSchemaData> decode_key_value_schema(std::string_view data) {
  size_t pos = 0;
  auto key = take_part(data, pos);
  if (!key) return std::nullopt;
  auto value = take_part(data, pos);
  if (!value || pos != data.size()) return std::nullopt;
  return KeyValueSchemaData{std::move(*key), std::move(*value)};
}

}  // namespace magnetar::protocol
