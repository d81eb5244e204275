// /admin/v2/schemas/{tenant}/{namespace}/{topic}: a topic's schemas, as Pulsar's
// SchemasResource answers them (partitions share their topic's).
//
//   GET    .../schema              the latest: {version, type, timestamp, data, properties}
//   GET    .../schema/{version}    that version
//   GET    .../schemas             {"getSchemaResponses": [...]} (Pulsar's field name)
//   POST   .../schema              upload {type, schema, properties}: {"version": {"version": N}}
//   POST   .../compatibility       {"compatibility": bool, "schemaCompatibilityStrategy": ...}
//   POST   .../version             {"version": N} of a schema already stored
//   DELETE .../schema[?force=true] {"version": N}; force forgets the whole history
//
// Compatibility is what the registry checks (a schema of the topic's type is compatible); the
// namespace's schema_compatibility_strategy is reported, not applied (schema_registry.h).

#include <fmt/format.h>

#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "broker/admin/admin_routes.h"
#include "broker/admin/topic_access.h"
#include "broker/config/store_paths.h"
#include "broker/service/errors.h"
#include "broker/service/schema_registry.h"
#include "metadata/metadata_store.h"
#include "protocol/schema_type.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;
using http::Action;

std::string type_upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Inside the REST API a KEY_VALUE schema's data is JSON, {"key": K, "value": V}, each the
// part's own schema (its JSON as is, in its order) or "" for a primitive one, as Pulsar's
// SchemaUtils writes and reads it; the wire's binary layout (schema_type.h) stays in storage.
using OrderedJson = nlohmann::ordered_json;

std::string rest_schema_data(const wire::Schema& schema) {
  if (schema.type() != wire::Schema::KeyValue) return schema.schema_data();
  auto kv = protocol::decode_key_value_schema(schema.schema_data());
  if (!kv) return schema.schema_data();
  auto part = [](const std::string& data) {
    auto j = OrderedJson::parse(data, nullptr, false);
    return j.is_discarded() || data.empty() ? OrderedJson("") : j;
  };
  return OrderedJson{{"key", part(kv->key)}, {"value", part(kv->value)}}.dump();
}

// The binary layout of a KEY_VALUE schema uploaded as {"key": K, "value": V}; nullopt when
// it is not that.
std::optional<std::string> stored_key_value_data(const std::string& rest) {
  const auto j = OrderedJson::parse(rest, nullptr, false);
  if (!j.is_object() || !j.contains("key") || !j.contains("value")) return std::nullopt;
  auto part = [](const OrderedJson& p) {
    return p.is_string() && p.get<std::string>().empty() ? std::string() : p.dump();
  };
  return protocol::encode_key_value_schema(part(j["key"]), part(j["value"]));
}

Json schema_response(const StoredSchema& s) {
  Json properties = Json::object();
  for (const auto& kv : s.schema.properties()) properties[kv.key()] = kv.value();
  return {{"version", s.version},
          {"type", protocol::schema_type_name(s.schema.type())},
          {"timestamp", s.timestamp_ms},
          {"data", rest_schema_data(s.schema)},
          {"properties", std::move(properties)}};
}

// A PostSchemaPayload as a wire schema named after the topic, or the 4xx answer.
OrResponse<wire::Schema> payload_schema(const protocol::TopicName& topic, const std::string& body) {
  const Json j = Json::parse(body, nullptr, false);
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    return error(400, "The schema payload must be a JSON object with a \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  if (type == "BYTES") {
    return error(406, "Do not upload a BYTES schema, because it's the default schema type");
  }
  auto t = type == "AUTO_CONSUME" || type == "NONE" || type != type_upper(type)
               ? std::nullopt
               : protocol::schema_type_of(type);
  if (!t) return error(422, fmt::format("Invalid schema type {}", type));
  wire::Schema schema;
  schema.set_name(topic.partitioned_topic_name().local_name());
  schema.set_type(*t);
  if (j.contains("schema") && !j["schema"].is_null()) {
    if (!j["schema"].is_string()) return error(422, "The schema definition must be a string");
    const std::string data = j["schema"].get<std::string>();
    if (*t == wire::Schema::KeyValue) {
      auto stored = stored_key_value_data(data);
      if (!stored) {
        return error(422, "A KEY_VALUE schema must be {\"key\": ..., \"value\": ...}");
      }
      schema.set_schema_data(std::move(*stored));
    } else {
      schema.set_schema_data(data);
    }
  }
  if (j.contains("properties") && j["properties"].is_object()) {
    for (const auto& [k, v] : j["properties"].items()) {
      if (!v.is_string()) return error(422, fmt::format("Schema property {} is not a string", k));
      auto* kv = schema.add_properties();
      kv->set_key(k);
      kv->set_value(v.get<std::string>());
    }
  }
  return schema;
}

class Schemas {
 public:
  explicit Schemas(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> latest(const PathParams& p);
  Task<Response> version(const PathParams& p);
  Task<Response> all(const PathParams& p);
  Task<Response> upload(const Request& req, const PathParams& p);
  Task<Response> compatibility(const Request& req, const PathParams& p);
  Task<Response> version_of(const Request& req, const PathParams& p);
  Task<Response> remove(const Request& req, const PathParams& p);

 private:
  const BrokerServices& broker() const { return ctx_->services; }
  // The namespace's schema_compatibility_strategy, or the broker's default (FULL).
  Task<std::string> strategy(const protocol::TopicName& topic);

  const std::shared_ptr<const BrokerContext> ctx_;
};

Task<Response> Schemas::latest(const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto found = co_await broker().schemas.latest(name);
  if (!found.ok()) co_return broker_error(found.status());
  if (auto* absent = std::get_if<SchemaRegistry::Absence>(&*found)) {
    co_return error(404, *absent == SchemaRegistry::Absence::kDeleted ? "Schema is deleted"
                                                                      : "Schema not found");
  }
  co_return ok_json(schema_response(std::get<StoredSchema>(*found)));
}

Task<Response> Schemas::version(const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  const std::string& text = p.at("version");
  int64_t v = -1;
  try {
    size_t used = 0;
    v = std::stoll(text, &used);
    if (used != text.size()) v = -1;
  } catch (const std::exception&) {
    v = -1;
  }
  if (v < 0) co_return error(400, fmt::format("Invalid schema version {}", text));
  auto found = co_await broker().schemas.get(name, v);
  if (!found.ok()) co_return broker_error(found.status());
  if (!found->has_value()) co_return error(404, "Schema not found");
  co_return ok_json(schema_response(**found));
}

Task<Response> Schemas::all(const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto found = co_await broker().schemas.all(name);
  if (!found.ok()) co_return broker_error(found.status());
  Json list = Json::array();
  for (const auto& s : *found) list.push_back(schema_response(s));
  co_return ok_json(Json{{"getSchemaResponses", std::move(list)}});
}

Task<Response> Schemas::upload(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto schema = payload_schema(name, req.body);
  if (auto* refused = std::get_if<Response>(&schema)) co_return std::move(*refused);
  auto stored = co_await broker().schemas.get_or_create(name, std::get<wire::Schema>(schema));
  if (!stored.ok()) {
    if (stored.status().code() == make_error_code(Error::kIncompatibleSchema)) {
      co_return error(409, stored.status().message());
    }
    co_return broker_error(stored.status());
  }
  co_return ok_json(Json{{"version", {{"version", *stored}}}});
}

Task<std::string> Schemas::strategy(const protocol::TopicName& topic) {
  auto node = co_await broker().stores.configuration->get(namespace_policies_path(topic.namespace_name()));
  if (node.ok() && node->has_value()) {
    const Json policies = Json::parse((*node)->value, nullptr, false);
    if (policies.is_object()) {
      const std::string s = policies.value("schema_compatibility_strategy", "UNDEFINED");
      if (s != "UNDEFINED" && !s.empty()) co_return s;
    }
  }
  co_return "FULL";
}

Task<Response> Schemas::compatibility(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto schema = payload_schema(name, req.body);
  if (auto* refused = std::get_if<Response>(&schema)) co_return std::move(*refused);
  auto found = co_await broker().schemas.latest(name);
  if (!found.ok()) co_return broker_error(found.status());
  bool compatible = true;
  if (const auto* latest = std::get_if<StoredSchema>(&*found)) {
    compatible = latest->schema.type() == std::get<wire::Schema>(schema).type();
  }
  const std::string applied = co_await strategy(name);
  Json answer = {{"compatibility", compatible}, {"schemaCompatibilityStrategy", applied}};
  Response r = ok_json(answer);
  r.status = 202;  // as Pulsar answers
  co_return r;
}

Task<Response> Schemas::version_of(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto schema = payload_schema(name, req.body);
  if (auto* refused = std::get_if<Response>(&schema)) co_return std::move(*refused);
  const wire::Schema& wanted = std::get<wire::Schema>(schema);
  auto found = co_await broker().schemas.all(name);
  if (!found.ok()) co_return broker_error(found.status());
  for (const auto& s : *found) {
    if (s.schema.type() == wanted.type() && s.schema.schema_data() == wanted.schema_data()) {
      co_return ok_json(Json{{"version", s.version}});
    }
  }
  co_return error(404, "Not found schema");
}

Task<Response> Schemas::remove(const Request& req, const PathParams& p) {
  auto checked = co_await checked_topic(broker(), p);
  if (auto* answer = std::get_if<Response>(&checked)) co_return std::move(*answer);
  const protocol::TopicName name = std::get<protocol::TopicName>(std::move(checked));
  auto removed = co_await broker().schemas.remove(name, query_flag(req, "force"));
  if (!removed.ok()) {
    if (removed.status().is(Errc::kNotFound)) co_return error(404, removed.status().message());
    co_return broker_error(removed.status());
  }
  co_return ok_json(Json{{"version", *removed}});
}

}  // namespace

Prefix schemas_prefix() {
  Prefix prefix;
  prefix.path = "/admin/v2/schemas/";
  prefix.methods = {"GET", "POST", "DELETE"};
  prefix.malformed = error(400, "Malformed URL");
  return prefix;
}

void add_schemas(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Schemas>(std::move(ctx));
  const std::string topic = "/admin/v2/schemas/{tenant}/{namespace}/{topic}";
  const Permission read = Permission::topic_op("persistent", Action::kLookup, "GET_METADATA");
  const Permission write = Permission::topic_op("persistent", Action::kProduce, "PRODUCE");
  const Permission admin = Permission::namespace_op(Action::kNone, "DELETE_SCHEMA");
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", topic + "/schema", read,
             [self](const Request&, const PathParams& p) { return self->latest(p); });
  router.add("GET", topic + "/schema/{version}", read,
             [self](const Request&, const PathParams& p) { return self->version(p); });
  router.add("GET", topic + "/schemas", read,
             [self](const Request&, const PathParams& p) { return self->all(p); });
  router.add("POST", topic + "/schema", write,
             [self](const Request& req, const PathParams& p) { return self->upload(req, p); });
  router.add("POST", topic + "/compatibility", admin, [self](const Request& req, const PathParams& p) {
    return self->compatibility(req, p);
  });
  router.add("POST", topic + "/version", read,
             [self](const Request& req, const PathParams& p) { return self->version_of(req, p); });
  router.add("DELETE", topic + "/schema", admin,
             [self](const Request& req, const PathParams& p) { return self->remove(req, p); });
}

}  // namespace magnetar::broker::admin
