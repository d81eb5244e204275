// GET_SCHEMA and GET_OR_CREATE_SCHEMA, and the schema path PRODUCER and SUBSCRIBE share
// (register_schema): the schema registry's versions as 8-byte big-endian strings.

#include "broker/service/schema_registry.h"
#include "broker/wire/connection.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

namespace {

// Both schema responses carry error_code and error_message.
template <typename Response>
void set_failure(Response* r, const ServerFailure& failure) {
  r->set_error_code(failure.error);
  r->set_error_message(failure.message);
}

// The topic a schema request names; when it is not a valid name, the response (`cmd`, whose
// body is `r`) goes out with InvalidTopicName and nullopt comes back.
template <typename Response>
std::optional<protocol::TopicName> topic_or_answer(Connection& cnx, const wire::BaseCommand& cmd,
                                                   Response* r, const std::string& topic) {
  auto name = protocol::TopicName::parse(topic);
  if (name.ok()) return std::move(*name);
  set_failure(r, {wire::InvalidTopicName, name.status().message()});
  cnx.write_command(cmd);
  return std::nullopt;
}

}  // namespace

Task<Result<std::string>> Connection::register_schema(protocol::TopicName topic,
                                                      wire::Schema schema, bool may_add) {
  auto version = co_await context_.schemas.get_or_create(topic, std::move(schema), may_add);
  if (!version.ok()) co_return version.status();
  co_return SchemaRegistry::encode_version(*version);
}

void Connection::handle_get_schema(const wire::CommandGetSchema& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    auto cmd = make_command(wire::BaseCommand::GET_SCHEMA_RESPONSE);
    auto* r = cmd.mutable_getschemaresponse();
    r->set_request_id(req.request_id());
    auto name = topic_or_answer(*self, cmd, r, req.topic());
    if (!name) co_return;
    // A topic's schema is for those who may produce or consume there (Pulsar does not check).
    auth::ActionSet lookup_actions = {auth::AuthAction::kProduce, auth::AuthAction::kConsume};
    auto denied = co_await self->authorize_topic(*name, std::move(lookup_actions),
                                                 "Client is not authorized to Get Schema");
    if (denied) {
      set_failure(r, *denied);
      self->write_command(cmd);
      co_return;
    }
    std::optional<int64_t> version;
    if (req.has_schema_version()) version = SchemaRegistry::decode_version(req.schema_version());
    auto found = co_await self->context_.schemas.get(*name, version);
    if (!found.ok()) {
      set_failure(r, to_server_failure(found.status(), wire::MetadataError));
    } else if (!found->has_value()) {
      // What clients read as "this topic has no schema".
      set_failure(r, {wire::TopicNotFound, "Topic not found or no-schema"});
    } else {
      *r->mutable_schema() = (*found)->schema;
      r->set_schema_version(SchemaRegistry::encode_version((*found)->version));
    }
    self->write_command(cmd);
  });
}

void Connection::handle_get_or_create_schema(const wire::CommandGetOrCreateSchema& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    auto cmd = make_command(wire::BaseCommand::GET_OR_CREATE_SCHEMA_RESPONSE);
    auto* r = cmd.mutable_getorcreateschemaresponse();
    r->set_request_id(req.request_id());
    auto name = topic_or_answer(*self, cmd, r, req.topic());
    if (!name) co_return;
    // Registering a schema is a producer's business (Pulsar does not check).
    auth::ActionSet produce = {auth::AuthAction::kProduce};
    auto denied = co_await self->authorize_topic(
        *name, std::move(produce), "Client is not authorized to Get Or Create Schema");
    if (denied) {
      set_failure(r, *denied);
      self->write_command(cmd);
      co_return;
    }
    auto version = co_await self->register_schema(*name, req.schema());
    if (!version.ok()) {
      set_failure(r, to_server_failure(version.status(), wire::MetadataError));
    } else {
      r->set_schema_version(*version);
    }
    self->write_command(cmd);
  });
}

}  // namespace magnetar::broker
