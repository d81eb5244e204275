// PRODUCER, SEND, CLOSE_PRODUCER. A producer is added on its topic's loop (access modes,
// quotas and names are the topic's to judge); sends go to the topic's loop in the order
// received and their receipts come back to this loop in order.

#include "broker/service/producer.h"

#include <algorithm>

#include "broker/service/authorization.h"
#include "broker/service/schema_registry.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"
#include "broker/wire/connection.h"
#include "mledger/errors.h"
#include "protocol/replication.h"

namespace magnetar::broker {

Task<std::shared_ptr<Topic>> Connection::topic_for(uint64_t request_id, protocol::TopicName name,
                                                   bool may_create) {
  const bool create = may_create && co_await context_.topics.may_auto_create(name);
  auto topic = co_await context_.topics.get_any_topic(name, create);
  if (!topic.ok()) {
    send_error(request_id, to_server_failure(topic.status()));
    co_return nullptr;
  }
  co_return *topic;
}

void Connection::handle_producer(const wire::CommandProducer& req) {
  auto self = shared_from_this();
  if (!producers_.count(req.producer_id())) {
    // One creation per producer id at a time (Pulsar's answer to a second one); a
    // CLOSE_PRODUCER that overtakes the creation is remembered (creating_producers_), so the
    // entry is made here, before any later frame is handled.
    if (creating_producers_.count(req.producer_id())) {
      send_error(req.request_id(), wire::ServiceNotReady,
                 "Producer is already present on the connection");
      return;
    }
    creating_producers_[req.producer_id()] = false;
  }
  spawn([self, req]() -> Task<void> {
    if (auto existing = self->producers_.find(req.producer_id());
        existing != self->producers_.end()) {
      // A retried PRODUCER for an existing producer: answer as before.
      auto cmd = make_command(wire::BaseCommand::PRODUCER_SUCCESS);
      cmd.mutable_producer_success()->set_request_id(req.request_id());
      cmd.mutable_producer_success()->set_producer_name(existing->second.producer->name());
      self->write_command(cmd);
      co_return;
    }
    struct Creating {
      Connection* connection;
      uint64_t id;
      ~Creating() { connection->creating_producers_.erase(id); }
    } creating{self.get(), req.producer_id()};
    auto name = protocol::TopicName::parse(req.topic());
    if (!name.ok()) {
      self->send_error(req.request_id(), wire::InvalidTopicName, name.status().message());
      co_return;
    }
    auth::ActionSet produce = {auth::AuthAction::kProduce};
    auto denied = co_await self->authorize_topic(*name, std::move(produce),
                                                 "Client is not authorized to Produce");
    if (!denied && req.has_initial_subscription_name()) {
      denied = co_await self->authorize_subscription(*name, req.initial_subscription_name(),
                                                     "Client is not authorized to Produce");
    }
    // A replicator's name makes its messages count as replicated (deduplicated by source
    // position, never replicated on): with authorization on, only super users (the clusters'
    // broker roles; through a proxy, both roles) may take it. Pulsar lets any producer of the
    // topic do so.
    if (!denied && self->context_.authorization != nullptr &&
        req.producer_name().rfind(protocol::kReplicatorPrefix, 0) == 0 && !self->is_super_user()) {
      denied = ServerFailure{wire::AuthorizationError,
                             "Only super users may create replicator producers (pulsar.repl.*)"};
    }
    if (denied) {
      self->send_error(req.request_id(), *denied);
      co_return;
    }
    std::shared_ptr<Topic> t = co_await self->topic_for(req.request_id(), *name, true);
    if (!t) co_return;
    // (Null for a non-persistent topic: it keeps nothing for a subscription to start from.)
    auto persistent = std::dynamic_pointer_cast<PersistentTopic>(t);
    if (persistent && !req.initial_subscription_name().empty()) {
      // The subscription the producer asks for (a dead-letter producer's), made before its
      // first message so that the subscription keeps every message from the topic's start.
      auto make = [t = persistent, sub = req.initial_subscription_name()]() -> Task<Status> {
        if (t->find_subscription(sub)) co_return Status::OK();
        auto made = co_await t->subscribe(sub, wire::CommandSubscribe::Exclusive, true,
                                          wire::CommandSubscribe::Earliest, std::nullopt);
        co_return made.status();
      };
      const Status made = *co_await run_on<Status>(t->executor(), std::move(make));
      if (!made.ok()) {
        self->send_error(req.request_id(), to_server_failure(made));
        co_return;
      }
    }
    // The namespace's or topic's schema policies, read on the topic's loop.
    struct SchemaRules {
      bool auto_update = true;
      bool validation_enforced = false;
    };
    auto read_rules = [t]() -> Task<SchemaRules> {
      co_return SchemaRules{t->policies().schema_auto_update,
                            t->policies().schema_validation_enforced};
    };
    const SchemaRules rules = *co_await run_on<SchemaRules>(t->executor(), std::move(read_rules));
    std::string schema_version;
    if (req.has_schema() && SchemaRegistry::is_storable(req.schema())) {
      auto version = co_await self->register_schema(*name, req.schema(), rules.auto_update);
      if (!version.ok()) {
        self->send_error(req.request_id(),
                         to_server_failure(version.status(), wire::MetadataError));
        co_return;
      }
      schema_version = *version;
    } else if (rules.validation_enforced) {
      auto latest = co_await self->context_.schemas.latest(*name);
      if (!latest.ok()) {
        self->send_error(req.request_id(), to_server_failure(latest.status(), wire::MetadataError));
        co_return;
      }
      if (std::holds_alternative<StoredSchema>(*latest)) {
        self->send_error(req.request_id(),
                         ServerFailure{wire::IncompatibleSchema,
                                       "Producers cannot connect or send message without a schema "
                                       "to topics with a schema if SchemaValidationEnforced is "
                                       "enabled"});
        co_return;
      }
    }
    if (self->closed_) co_return;
    std::string producer_name = req.has_producer_name() && !req.producer_name().empty()
                                    ? req.producer_name()
                                    : self->context_.next_producer_name();
    auto producer = std::make_shared<Producer>(self, req.producer_id(), producer_name,
                                               req.producer_access_mode());
    // PRODUCER_SUCCESS; `last_sequence_id` is read on the topic's loop.
    auto success = [self, producer, schema_version, request_id = req.request_id()](
                       bool ready, int64_t last_sequence_id) {
      auto cmd = make_command(wire::BaseCommand::PRODUCER_SUCCESS);
      auto* r = cmd.mutable_producer_success();
      r->set_request_id(request_id);
      r->set_producer_name(producer->name());
      r->set_last_sequence_id(last_sequence_id);
      r->set_producer_ready(ready);
      if (!schema_version.empty()) r->set_schema_version(schema_version);
      self->write_command(cmd);
    };
    // (On the topic's loop.) The end of a queued WaitForExclusive producer's wait: promoted,
    // it is registered here first, then told it is ready (both hop to this connection's loop,
    // in that order); fenced, its PRODUCER request gets the error.
    auto decided = [self, t, producer, success, request_id = req.request_id()](Status outcome) {
      if (!outcome.ok()) {
        self->on_my_loop([self, producer, request_id, failure = to_server_failure(outcome)] {
          if (self->closed_) return;
          self->waiting_producers_.erase(producer->id());
          self->send_error(request_id, failure);
        });
        return;
      }
      self->on_my_loop([self, t, producer] {
        if (self->closed_) return;
        self->waiting_producers_.erase(producer->id());
        self->producers_[producer->id()] = ProducerEntry{t, producer};
      });
      success(true, t->last_sequence_id(producer->name()));
    };
    struct Added {
      std::optional<Topic::Added> added;
      ServerFailure failure;
      int64_t last_sequence_id = -1;
    };
    if (persistent && protocol::replicator_source(producer_name)) {
      // Another cluster's replicator: what it re-sends must be recognised (dedup.h).
      auto enable = [persistent]() { return persistent->enable_replicated_deduplication(); };
      auto enabled = co_await run_on<Status>(t->executor(), std::move(enable));
      if (!enabled->ok()) {
        self->send_error(req.request_id(), to_server_failure(*enabled));
        co_return;
      }
    }
    auto add = [t, producer, decided]() -> Task<Added> {
      Added out;
      auto added = t->add_producer(producer, decided);
      if (added.ok()) {
        out.added = *added;
      } else {
        out.failure = to_server_failure(added.status());
      }
      out.last_sequence_id = t->last_sequence_id(producer->name());
      co_return out;
    };
    auto on_topic = asio::co_spawn(t->executor(), std::move(add), asio::use_awaitable);
    const Added added = co_await std::move(on_topic);
    if (!added.added) {
      self->send_error(req.request_id(), added.failure);
      co_return;
    }
    const bool closed_meanwhile = self->creating_producers_[req.producer_id()];
    if (self->closed_ || closed_meanwhile) {
      // Gone before it was ready: the client was told the close succeeded, so the topic must
      // not keep it (an exclusive one would lock the topic until the connection closed).
      asio::post(t->executor(),
                 [self, t, id = req.producer_id()] { t->remove_producer(id, self.get()); });
      if (closed_meanwhile) {
        self->send_error(req.request_id(), wire::ServiceNotReady,
                         "Producer was closed before its creation completed");
      }
      co_return;
    }
    if (*added.added == Topic::Added::kQueued) {
      self->waiting_producers_[req.producer_id()] = ProducerEntry{t, producer};
      success(false, added.last_sequence_id);  // early answer: not ready yet
      co_return;
    }
    self->producers_[req.producer_id()] = ProducerEntry{t, producer};
    success(true, added.last_sequence_id);
    self->log_.info("producer {} ({}) on {}", req.producer_id(), producer_name,
                    t->name().to_string());
  });
}

bool Connection::handle_send(protocol::Frame& frame) {
  const auto& send = frame.command.send();
  auto it = producers_.find(send.producer_id());
  if (it == producers_.end()) {
    log_.warn("closing: SEND for unknown producer {}", send.producer_id());
    return false;
  }
  const auto& md = frame.metadata;
  SendInfo info;
  info.sequence_id = static_cast<int64_t>(send.sequence_id());
  info.highest_sequence_id =
      send.has_highest_sequence_id() ? static_cast<int64_t>(send.highest_sequence_id()) : 0;
  info.messages = std::max(1, send.num_messages());
  info.received = std::chrono::steady_clock::now();
  info.chunk_before_last = md.has_num_chunks_from_msg() && md.num_chunks_from_msg() > 1 &&
                           md.chunk_id() + 1 < md.num_chunks_from_msg();
  if (md.has_replicated_from() && it->second.producer->replicator()) {
    if (auto source = protocol::source_position(md)) {
      info.replicated_from = md.replicated_from();
      info.source_position = mledger::Position{source->ledger, source->entry};
      if (md.has_marker_type()) info.marker_type = std::max(1, md.marker_type());
    }
  }
  ++pending_sends_;
  auto self = shared_from_this();
  auto topic = it->second.topic;
  auto producer = it->second.producer;
  // The receipt (or error), on this loop, in order, where the send counts as done.
  auto finish = [self, producer_id = send.producer_id(), sequence_id = send.sequence_id(),
                 highest = info.highest_sequence_id](Result<std::optional<mledger::Position>> r) {
    wire::BaseCommand cmd;
    if (r.ok()) {
      cmd = make_command(wire::BaseCommand::SEND_RECEIPT);
      auto* receipt = cmd.mutable_send_receipt();
      receipt->set_producer_id(producer_id);
      receipt->set_sequence_id(sequence_id);
      if (highest) receipt->set_highest_sequence_id(static_cast<uint64_t>(highest));
      // A duplicate (stored before) is acknowledged with message id -1:-1.
      const auto& stored = *r;
      set_message_id(receipt->mutable_message_id(), stored ? *stored : mledger::Position{});
    } else if (r.status().code() != make_error_code(mledger::Error::kClosed)) {
      // (A send the topic's closing cut short gets no error: its producer was told to
      // reconnect and resends, as Pulsar does.)
      const ServerFailure failure = to_server_failure(r.status());
      cmd = make_command(wire::BaseCommand::SEND_ERROR);
      auto* error = cmd.mutable_send_error();
      error->set_producer_id(producer_id);
      error->set_sequence_id(sequence_id);
      error->set_error(failure.error);
      error->set_message(failure.message);
    }
    self->on_my_loop([self, cmd = std::move(cmd)] {
      // Resume reading at half the limit (as Pulsar does), not at every completion.
      if (--self->pending_sends_ <= self->config_.max_pending_publish_requests_per_connection / 2) {
        self->resume_reading();
      }
      if (cmd.has_type()) self->write_command(cmd);
    });
  };
  asio::post(topic->executor(), [topic, producer, info, finish = std::move(finish),
                                 entry = std::move(frame.entry)]() mutable {
    topic->publish(producer, std::move(entry), info, std::move(finish));
  });
  return true;
}

void Connection::handle_close_producer(const wire::CommandCloseProducer& req) {
  auto self = shared_from_this();
  if (auto it = creating_producers_.find(req.producer_id()); it != creating_producers_.end()) {
    it->second = true;  // handle_producer undoes the creation when it completes
  }
  for (auto* map : {&producers_, &waiting_producers_}) {
    auto it = map->find(req.producer_id());
    if (it == map->end()) continue;
    auto topic = it->second.topic;
    map->erase(it);
    asio::post(topic->executor(),
               [self, topic, id = req.producer_id()] { topic->remove_producer(id, self.get()); });
  }
  send_success(req.request_id());
}

void Connection::close_producer(uint64_t producer_id) {
  on_my_loop([self = shared_from_this(), producer_id] {
    self->producers_.erase(producer_id);
    if (self->protocol_version_ < 5 || self->closed_) return;
    auto cmd = make_command(wire::BaseCommand::CLOSE_PRODUCER);
    cmd.mutable_close_producer()->set_producer_id(producer_id);
    cmd.mutable_close_producer()->set_request_id(0);
    self->write_command(cmd);
  });
}

}  // namespace magnetar::broker
