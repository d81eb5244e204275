// LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE: what a client asks before it
// creates a producer or consumer. Failures are metadata failures (MetadataError), or
// ServiceNotReady when worth retrying.

#include <fmt/format.h>

#include <string>
#include <variant>

#include "broker/namespace/namespace_service.h"
#include "broker/service/topic_registry.h"
#include "broker/wire/connection.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

namespace {

// The client a proxy names in a LOOKUP or PARTITIONED_METADATA, if any (access.cc decides
// what it counts for).
template <typename Command>
ForwardedClient forwarded_client(const Command& command) {
  ForwardedClient out;
  if (command.has_original_principal()) out.principal = command.original_principal();
  out.auth_data = command.original_auth_data();
  out.auth_method = command.has_original_auth_method() ? command.original_auth_method() : "none";
  return out;
}

}  // namespace

void Connection::handle_lookup(const wire::CommandLookupTopic& lookup) {
  auto self = shared_from_this();
  spawn([self, lookup]() -> Task<void> {
    auto cmd = make_command(wire::BaseCommand::LOOKUP_RESPONSE);
    auto* r = cmd.mutable_lookuptopicresponse();
    r->set_request_id(lookup.request_id());
    auto name = protocol::TopicName::parse(lookup.topic());
    if (!name.ok()) {
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(wire::InvalidTopicName);
      r->set_message(name.status().message());
      self->write_command(cmd);
      co_return;
    }
    auto original = self->command_original_principal(
        forwarded_client(lookup), "Valid Proxy Client role should be provided for lookup ");
    if (auto* refused = std::get_if<ServerFailure>(&original)) {
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(refused->error);
      r->set_message(refused->message);
      self->write_command(cmd);
      co_return;
    }
    auth::ActionSet lookup_actions = {auth::AuthAction::kProduce, auth::AuthAction::kConsume};
    auto denied = co_await self->authorize_topic(*name, std::move(lookup_actions),
                                                 "Client is not authorized to Lookup",
                                                 std::get<std::string>(std::move(original)));
    if (denied) {
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(denied->error);
      r->set_message(denied->message);
      self->write_command(cmd);
      co_return;
    }
    if (!lookup.advertised_listener_name().empty()) {
      // No advertisedListeners here: a client asking for a named listener gets Pulsar's
      // answer for a listener the broker lacks (clients treat it as a connect error, not
      // as something to retry).
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(wire::ServiceNotReady);
      r->set_message(
          fmt::format("the broker do not have {} listener", lookup.advertised_listener_name()));
      self->write_command(cmd);
      co_return;
    }
    auto answer = co_await self->context_.namespaces.lookup(*name, lookup.authoritative());
    if (!answer.ok()) {
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(to_server_failure(answer.status(), wire::MetadataError).error);
      r->set_message(answer.status().message());
    } else {
      r->set_response(answer->redirect ? wire::CommandLookupTopicResponse::Redirect
                                       : wire::CommandLookupTopicResponse::Connect);
      r->set_brokerserviceurl(answer->target.broker_url);
      if (!answer->target.broker_url_tls.empty()) {
        r->set_brokerserviceurltls(answer->target.broker_url_tls);
      }
      r->set_authoritative(answer->authoritative);
    }
    self->write_command(cmd);
  });
}

void Connection::handle_partitioned_metadata(const wire::CommandPartitionedTopicMetadata& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    auto cmd = make_command(wire::BaseCommand::PARTITIONED_METADATA_RESPONSE);
    auto* r = cmd.mutable_partitionmetadataresponse();
    r->set_request_id(req.request_id());
    auto name = protocol::TopicName::parse(req.topic());
    if (!name.ok()) {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Failed);
      r->set_error(wire::InvalidTopicName);
      r->set_message(name.status().message());
      self->write_command(cmd);
      co_return;
    }
    auto original = self->command_original_principal(
        forwarded_client(req),
        "Valid Proxy Client role should be provided for getPartitionMetadataRequest ");
    if (auto* refused = std::get_if<ServerFailure>(&original)) {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Failed);
      r->set_error(refused->error);
      r->set_message(refused->message);
      self->write_command(cmd);
      co_return;
    }
    auth::ActionSet lookup_actions = {auth::AuthAction::kProduce, auth::AuthAction::kConsume};
    auto denied = co_await self->authorize_topic(
        *name, std::move(lookup_actions), "Client is not authorized to Get Partition Metadata",
        std::get<std::string>(std::move(original)));
    if (denied) {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Failed);
      r->set_error(denied->error);
      r->set_message(denied->message);
      self->write_command(cmd);
      co_return;
    }
    const bool auto_create =
        !req.has_metadata_auto_creation_enabled() || req.metadata_auto_creation_enabled();
    auto partitions = co_await self->context_.topics.partitions(*name, auto_create);
    if (!partitions.ok()) {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Failed);
      r->set_error(partitions.status().is(Errc::kNotFound)
                       ? wire::TopicNotFound
                       : to_server_failure(partitions.status(), wire::MetadataError).error);
      r->set_message(partitions.status().message());
    } else {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Success);
      r->set_partitions(static_cast<uint32_t>(*partitions));
    }
    self->write_command(cmd);
  });
}

void Connection::handle_get_topics_of_namespace(const wire::CommandGetTopicsOfNamespace& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    auth::ActionSet consume = {auth::AuthAction::kConsume};
    auto denied = co_await self->authorize_namespace(
        req.namespace_(), std::move(consume), "Client is not authorized to GetTopicsOfNamespace");
    if (denied) {
      self->send_error(req.request_id(), *denied);
      co_return;
    }
    using Listed = TopicRegistry::Listed;
    const Listed listed = req.mode() == wire::CommandGetTopicsOfNamespace::NON_PERSISTENT
                              ? Listed::kNonPersistent
                          : req.mode() == wire::CommandGetTopicsOfNamespace::ALL
                              ? Listed::kAll
                              : Listed::kPersistent;
    auto topics = co_await self->context_.topics.topics_of_namespace(req.namespace_(), listed);
    if (!topics.ok()) {
      self->send_error(req.request_id(), to_server_failure(topics.status(), wire::MetadataError));
      co_return;
    }
    auto cmd = make_command(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE_RESPONSE);
    auto* r = cmd.mutable_gettopicsofnamespaceresponse();
    r->set_request_id(req.request_id());
    for (const auto& t : *topics) r->add_topics(t);
    self->write_command(cmd);
  });
}

}  // namespace magnetar::broker
