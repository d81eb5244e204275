// Schema type names both ways, and the binary layout of a KEY_VALUE schema's data.

#include "protocol/schema_type.h"

#include <gtest/gtest.h>

#include <string>

namespace magnetar::protocol {
namespace {

TEST(SchemaTypeTest, NamesBothWays) {
  EXPECT_EQ(schema_type_name(wire::Schema::KeyValue), "KEY_VALUE");
  EXPECT_EQ(schema_type_of("key_value"), wire::Schema::KeyValue);
  EXPECT_EQ(schema_type_of("BYTES"), std::nullopt);
  EXPECT_EQ(schema_type_of("nope"), std::nullopt);
}

TEST(SchemaTypeTest, KeyValueSchemaDataRoundTripsAndRefusesOtherBytes) {
  const std::string data = encode_key_value_schema("{\"k\":1}", "");
  EXPECT_EQ(data, std::string("\0\0\0\x07{\"k\":1}\0\0\0\0", 15));
  auto kv = decode_key_value_schema(data);
  ASSERT_TRUE(kv);
  EXPECT_EQ(kv->key, "{\"k\":1}");
  EXPECT_EQ(kv->value, "");
  EXPECT_FALSE(decode_key_value_schema(""));
  EXPECT_FALSE(decode_key_value_schema(data.substr(0, 10)));             // value cut off
  EXPECT_FALSE(decode_key_value_schema(data + "x"));                      // bytes left over
  EXPECT_FALSE(decode_key_value_schema(std::string("\xff\xff\xff\xff", 4)));  // -1: too long
  EXPECT_FALSE(decode_key_value_schema("{\"type\":\"record\"}"));        // JSON, not the layout
}

}  // namespace
}  // namespace magnetar::protocol
