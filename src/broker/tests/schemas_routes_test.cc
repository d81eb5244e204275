// The admin routes of schemas (/admin/v2/schemas), of the broker's configuration
// (/admin/v2/brokers/configuration/runtime, internal-configuration) and of a namespace's auto
// topic creation override and schema compatibility strategy, checked against Pulsar's
// answers.

#include "broker/config/dynamic_config.h"
#include "protocol/schema_type.h"
#include "broker/tests/broker_routes_fixture.h"

namespace magnetar::broker::routes_test {
namespace {

const std::string kSchemas = "/admin/v2/schemas/public/default";

TEST_F(BrokerRoutesTest, SchemasAreUploadedReadVersionedAndDeleted) {
  EXPECT_EQ(get(kSchemas + "/s1/schema").reason(), "Schema not found");
  EXPECT_ERROR(get(kSchemas + "/s1/schema"), 404);

  const std::string v0 = R"({"type":"STRING","schema":"","properties":{"owner":"a"}})";
  Reply up = post(kSchemas + "/s1/schema", v0);
  ASSERT_EQ(up.status, 200) << up;
  EXPECT_EQ(up.json(), Json::parse(R"({"version":{"version":0}})"));
  // The same schema again is the same version.
  EXPECT_EQ(post(kSchemas + "/s1/schema", v0).json()["version"]["version"], 0);
  const std::string v1 = R"({"type":"STRING","schema":"","properties":{"owner":"b"}})";
  EXPECT_EQ(post(kSchemas + "/s1/schema", v1).json()["version"]["version"], 1);

  Reply latest = get(kSchemas + "/s1/schema");
  ASSERT_EQ(latest.status, 200) << latest;
  EXPECT_EQ(latest.json()["version"], 1);
  EXPECT_EQ(latest.json()["type"], "STRING");
  EXPECT_EQ(latest.json()["properties"]["owner"], "b");
  EXPECT_GT(latest.json()["timestamp"].get<int64_t>(), 0);
  EXPECT_EQ(get(kSchemas + "/s1/schema/0").json()["properties"]["owner"], "a");
  EXPECT_ERROR(get(kSchemas + "/s1/schema/7"), 404);
  EXPECT_ERROR(get(kSchemas + "/s1/schema/x"), 400);
  Reply all = get(kSchemas + "/s1/schemas");
  ASSERT_EQ(all.status, 200) << all;
  EXPECT_EQ(all.json()["getSchemaResponses"].size(), 2u);
  EXPECT_EQ(post(kSchemas + "/s1/version", v0).json()["version"], 0);

  // Another type is incompatible; BYTES is refused; garbage is a 4xx.
  const std::string json_schema = R"({"type":"JSON","schema":"{\"type\":\"record\"}"})";
  Reply compat = post(kSchemas + "/s1/compatibility", json_schema);
  ASSERT_EQ(compat.status, 202) << compat;
  EXPECT_EQ(compat.json()["compatibility"], false);
  EXPECT_EQ(compat.json()["schemaCompatibilityStrategy"], "FULL");
  EXPECT_EQ(post(kSchemas + "/s1/compatibility", v1).json()["compatibility"], true);
  EXPECT_ERROR(post(kSchemas + "/s1/schema", json_schema), 409);
  EXPECT_ERROR(post(kSchemas + "/s1/schema", R"({"type":"BYTES"})"), 406);
  EXPECT_ERROR(post(kSchemas + "/s1/schema", R"({"type":"NOPE"})"), 422);
  EXPECT_ERROR(post(kSchemas + "/s1/schema", "not json"), 400);

  // Deleted: "Schema is deleted"; then any type may come, at the next version.
  Reply removed = del(kSchemas + "/s1/schema");
  ASSERT_EQ(removed.status, 200) << removed;
  EXPECT_EQ(removed.json()["version"], 2);
  EXPECT_EQ(get(kSchemas + "/s1/schema").reason(), "Schema is deleted");
  EXPECT_EQ(post(kSchemas + "/s1/schema", json_schema).json()["version"]["version"], 3);
  // force forgets the history.
  ASSERT_EQ(del(kSchemas + "/s1/schema?force=true").status, 200);
  EXPECT_EQ(get(kSchemas + "/s1/schema").reason(), "Schema not found");
  EXPECT_ERROR(del(kSchemas + "/s1/schema"), 404);
  // Partitions share their topic's schema.
  ASSERT_EQ(post(kSchemas + "/p/schema", v0).status, 200);
  EXPECT_EQ(get(kSchemas + "/p-partition-3/schema").json()["version"], 0);
  EXPECT_ERROR(get("/admin/v2/schemas/public/nope/t/schema"), 404);
}

// A KEY_VALUE schema a producer registers (the wire's binary layout) reads back over REST as
// {"key": ..., "value": ...} with each part's JSON in its own order, as Pulsar's REST API and
// the official client's HTTP lookup expect; uploaded that way, it is stored in the binary
// layout again.
TEST_F(BrokerRoutesTest, KeyValueSchemasAreJsonInTheRestApi) {
  const std::string key = R"({"type":"record","name":"k","fields":[{"name":"id","type":"long"}]})";
  const std::string value = R"({"type":"record","name":"v","fields":[{"name":"x","type":"double"}]})";
  auto c = client();
  ASSERT_TRUE(c);
  wire::CommandProducer p;
  p.set_topic("persistent://public/default/kv");
  p.set_producer_id(1);
  auto* schema = p.mutable_schema();
  schema->set_name("kv");
  schema->set_type(wire::Schema::KeyValue);
  schema->set_schema_data(protocol::encode_key_value_schema(key, ""));
  for (const auto& [k, v] : {std::pair{"key.schema.type", "JSON"}, {"value.schema.type", "STRING"},
                             {"kv.encoding.type", "INLINE"}}) {
    auto* prop = schema->add_properties();
    prop->set_key(k);
    prop->set_value(v);
  }
  ASSERT_TRUE(c->create_producer(p).ok());
  Reply got = get(kSchemas + "/kv/schema");
  ASSERT_EQ(got.status, 200) << got;
  EXPECT_EQ(got.json()["type"], "KEY_VALUE");
  EXPECT_EQ(got.json()["data"].get<std::string>(), "{\"key\":" + key + ",\"value\":\"\"}");

  // Uploaded in the REST form: the same schema (the producer's version), then a new one.
  Json same = {{"type", "KEY_VALUE"},
               {"schema", got.json()["data"]},
               {"properties", got.json()["properties"]}};
  EXPECT_EQ(post(kSchemas + "/kv/version", same.dump()).json()["version"], 0);
  Json other = same;
  other["schema"] = "{\"key\":" + key + ",\"value\":" + value + "}";
  Reply up = post(kSchemas + "/kv/schema", other.dump());
  ASSERT_EQ(up.status, 200) << up;
  EXPECT_EQ(get(kSchemas + "/kv/schema/1").json()["data"], other["schema"]);
  other["schema"] = R"({"key":{}})";
  EXPECT_ERROR(post(kSchemas + "/kv/schema", other.dump()), 422);
}

TEST_F(BrokerRoutesTest, RuntimeAndInternalConfigurationOfTheBroker) {
  Reply runtime = get("/admin/v2/brokers/configuration/runtime");
  ASSERT_EQ(runtime.status, 200) << runtime;
  const Json r = runtime.json();
  EXPECT_EQ(r["clusterName"], "test");
  EXPECT_EQ(r["brokerServicePort"], std::to_string(server_->port()));  // the bound port
  EXPECT_TRUE(r.contains("managedLedgerDefaultEnsembleSize"));
  Json dynamic = Json::array();
  for (std::string_view key : DynamicConfig::keys()) dynamic.push_back(key);
  EXPECT_EQ(get("/admin/v2/brokers/configuration").json(), dynamic);
  EXPECT_EQ(get("/admin/v2/brokers/configuration/values").json(), Json::object());
  Reply internal = get("/admin/v2/brokers/internal-configuration");
  ASSERT_EQ(internal.status, 200) << internal;
  EXPECT_TRUE(internal.json().contains("metadataStoreUrl"));
  EXPECT_EQ(get("/admin/v2/brokers/ready").body, "ok");
  EXPECT_FALSE(get("/admin/v2/brokers/version").body.empty());
}

TEST_F(BrokerRoutesTest, SecretsAreMaskedInTheRuntimeConfiguration) {
  start_server([](BrokerConfig& c) {
    c.cluster_name = "test";
    c.authentication.token.secret_key = "data:;base64,c2VjcmV0";
  });
  const Json r = get("/admin/v2/brokers/configuration/runtime").json();
  EXPECT_EQ(r["tokenSecretKey"], "***");
}

TEST_F(BrokerRoutesTest, TheNamespacesAutoTopicCreationOverrideDecides) {
  start_server([](BrokerConfig& c) { c.allow_auto_topic_creation = false; });
  EXPECT_EQ(get(kNamespace + "/autoTopicCreation").status, 204);
  EXPECT_ERROR(get(kLookup + "/auto-a"), 404);
  // Bad overrides: 412 with Pulsar's reason.
  EXPECT_ERROR(post(kNamespace + "/autoTopicCreation", R"({"allowAutoTopicCreation":true})"), 412);
  EXPECT_ERROR(post(kNamespace + "/autoTopicCreation",
                    R"({"allowAutoTopicCreation":true,"topicType":"partitioned"})"),
               412);
  EXPECT_ERROR(post(kNamespace + "/autoTopicCreation", "{}"), 412);
  ASSERT_EQ(post(kNamespace + "/autoTopicCreation",
                 R"({"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":3})")
                .status,
            204);
  EXPECT_EQ(get(kNamespace + "/autoTopicCreation").json()["defaultNumPartitions"], 3);
  // A client's use now creates a partitioned topic of 3 partitions.
  auto c = client();
  ASSERT_TRUE(c);
  auto meta = c->partitioned_metadata("persistent://public/default/auto-p");
  ASSERT_TRUE(meta.ok()) << meta.status().to_string();
  EXPECT_EQ(meta->partitions(), 3u);
  EXPECT_EQ(get(kTopics + "/auto-p/partitions").json()["partitions"], 3);
  EXPECT_EQ(get(kLookup + "/auto-b").status, 200);
  // Removed: the broker's setting (off) again.
  ASSERT_EQ(del(kNamespace + "/autoTopicCreation").status, 204);
  EXPECT_ERROR(get(kLookup + "/auto-c"), 404);
}

TEST_F(BrokerRoutesTest, SchemaCompatibilityStrategyOfANamespace) {
  EXPECT_EQ(get(kNamespace + "/schemaCompatibilityStrategy").json(), "UNDEFINED");
  ASSERT_EQ(put(kNamespace + "/schemaCompatibilityStrategy", R"("BACKWARD")").status, 204);
  EXPECT_EQ(get(kNamespace + "/schemaCompatibilityStrategy").json(), "BACKWARD");
  EXPECT_ERROR(put(kNamespace + "/schemaCompatibilityStrategy", R"("SIDEWAYS")"), 400);
  EXPECT_ERROR(put(kNamespace + "/schemaCompatibilityStrategy", "7"), 400);
  const std::string s = R"({"type":"STRING","schema":""})";
  EXPECT_EQ(post(kSchemas + "/strategy/compatibility", s).json()["schemaCompatibilityStrategy"],
            "BACKWARD");
}

}  // namespace
}  // namespace magnetar::broker::routes_test
