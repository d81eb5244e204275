// SUBSCRIBE, FLOW, UNSUBSCRIBE, CLOSE_CONSUMER. A consumer joins its subscription on the
// topic's loop (the subscription's kind judges it); permits go there in the order received.

#include <fmt/format.h>

#include "broker/service/consumer.h"

#include "broker/service/non_persistent_topic.h"
#include "broker/service/schema_registry.h"
#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "broker/wire/connection.h"

namespace magnetar::broker {

namespace {

// Where a reader (non-durable subscription) starts: as Pulsar does, delivery starts at the
// start entry itself (the entry before it becomes the cursor's mark-delete position): the
// client drops what it should not see (the start message unless inclusive, the indexes
// before a batch index).
std::optional<mledger::Position> start_of(const wire::CommandSubscribe& req,
                                          mledger::ManagedLedger& ml) {
  if (!req.has_start_message_id()) return std::nullopt;
  mledger::Position start = to_position(req.start_message_id());
  if (start.ledger_id.valid() && start.entry_id.valid() && start.ledger_id != kLatestLedger) {
    start = ml.previous_position(start);
  }
  return start;
}

}  // namespace

void Connection::handle_subscribe(const wire::CommandSubscribe& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    if (self->consumers_.count(req.consumer_id())) {
      self->send_success(req.request_id());
      co_return;
    }
    auto name = protocol::TopicName::parse(req.topic());
    if (!name.ok()) {
      self->send_error(req.request_id(), wire::InvalidTopicName, name.status().message());
      co_return;
    }
    if (req.subscription().empty()) {
      // Pulsar's code and text (its NamingException maps to ProducerBusy); the official C++
      // client turns ProducerBusy on a subscribe into InvalidConfiguration, "SubscriptionName
      // cannot be empty", and depends on it.
      self->send_error(req.request_id(), wire::ProducerBusy, "Empty subscription name");
      co_return;
    }
    auto denied = co_await self->authorize_subscription(*name, req.subscription(),
                                                        "Client is not authorized to subscribe");
    if (denied) {
      self->send_error(req.request_id(), *denied);
      co_return;
    }
    if (req.has_schema() && SchemaRegistry::is_storable(req.schema())) {
      auto version = co_await self->register_schema(*name, req.schema());
      if (!version.ok()) {
        self->send_error(req.request_id(),
                         to_server_failure(version.status(), wire::MetadataError));
        co_return;
      }
    }
    const bool forced = !req.has_force_topic_creation() || req.force_topic_creation();
    std::shared_ptr<Topic> topic = co_await self->topic_for(req.request_id(), *name, forced);
    if (!topic) co_return;
    if (auto non_persistent = std::dynamic_pointer_cast<NonPersistentTopic>(topic)) {
      co_await self->subscribe_non_persistent(req, std::move(non_persistent));
      co_return;
    }
    auto t = std::static_pointer_cast<PersistentTopic>(topic);
    if (self->closed_) co_return;
    auto consumer = self->new_consumer(req, name->partition_index());
    if (req.read_compacted()) {
      if (req.subtype() != wire::CommandSubscribe::Exclusive &&
          req.subtype() != wire::CommandSubscribe::Failover) {
        self->send_error(req.request_id(), wire::NotAllowedError,
                         "readCompacted only allowed on failover or exclusive subscriptions");
        co_return;
      }
      consumer->read_compacted = true;
      const bool durable = !req.has_durable() || req.durable();
      if (durable || !req.has_start_message_id()) {
        consumer->starts_at_earliest = req.initialposition() == wire::CommandSubscribe::Earliest;
      } else {
        consumer->starts_at_earliest = !to_position(req.start_message_id()).ledger_id.valid();
      }
    }
    // Joining the subscription happens on the topic's loop.
    struct Joined {
      std::shared_ptr<Subscription> subscription;
      std::optional<ServerFailure> failure;
      bool at_end = false;
    };
    // The subscribe rate counts per consumer as Pulsar identifies it: host, name and id.
    const std::string& remote = self->remote();
    std::string who = fmt::format("{}/{}/{}", remote.substr(0, remote.rfind(':')),
                                  req.consumer_name(), req.consumer_id());
    auto join = [t, consumer, req, who = std::move(who)]() -> Task<Joined> {
      Joined out;
      if (!t->allow_subscribe(who)) {
        out.failure = ServerFailure{wire::NotAllowedError,
                                    "Subscribe limited by subscribe rate limit per consumer."};
        co_return out;
      }
      const bool durable = !req.has_durable() || req.durable();
      auto sub = co_await t->subscribe(req.subscription(), req.subtype(), durable,
                                       req.initialposition(), start_of(req, t->ledger()));
      if (!sub.ok()) {
        out.failure = to_server_failure(sub.status());
        co_return out;
      }
      // A consumer can switch replication of its subscription on, never off (as Pulsar).
      if (req.replicate_subscription_state() && durable && !(*sub)->replicated()) {
        if (t->config().enable_replicated_subscriptions) {
          Status replicated = co_await (*sub)->set_replicated(true);
          if (!replicated.ok()) {
            out.failure = to_server_failure(replicated);
            co_return out;
          }
        }
      }
      Status st = (*sub)->add_consumer(consumer, req.subtype());
      if (!st.ok()) {
        out.failure = to_server_failure(st);
        co_return out;
      }
      out.subscription = *sub;
      out.at_end = t->ledger().terminated() && !(*sub)->cursor().has_more_entries();
      co_return out;
    };
    auto on_topic = asio::co_spawn(t->executor(), std::move(join), asio::use_awaitable);
    const Joined joined = co_await std::move(on_topic);
    if (joined.failure) {
      self->send_error(req.request_id(), *joined.failure);
      co_return;
    }
    if (self->closed_) {
      asio::post(t->executor(), [self, sub = joined.subscription, id = req.consumer_id()] {
        sub->remove_consumer(id, self.get());
      });
      co_return;
    }
    self->consumers_[req.consumer_id()] = ConsumerEntry{t, joined.subscription, nullptr, nullptr, consumer};
    self->send_success(req.request_id());
    self->log_.info("consumer {} subscribed to {} / {} ({})", req.consumer_id(),
                    t->name().to_string(), req.subscription(),
                    wire::CommandSubscribe::SubType_Name(req.subtype()));
    if (joined.at_end) self->send_reached_end_of_topic(req.consumer_id());
  });
}

std::shared_ptr<Consumer> Connection::new_consumer(const wire::CommandSubscribe& req,
                                                   int partition) {
  auto consumer = std::make_shared<Consumer>(shared_from_this(), req.consumer_id(),
                                             req.consumer_name(), req.priority_level(), partition);
  if (req.subtype() == wire::CommandSubscribe::Key_Shared && req.has_keysharedmeta() &&
      req.keysharedmeta().keysharedmode() == wire::STICKY) {
    for (const auto& r : req.keysharedmeta().hashranges()) {
      consumer->sticky_ranges.emplace_back(r.start(), r.end());
    }
  }
  return consumer;
}

void Connection::handle_flow(const wire::CommandFlow& flow) {
  auto it = consumers_.find(flow.consumer_id());
  if (it == consumers_.end()) return;
  asio::post(it->second.executor(),
             [entry = it->second, permits = flow.messagepermits()] {
               if (entry.non_persistent) {
                 entry.non_persistent->flow(entry.consumer, permits);
               } else {
                 entry.subscription->flow(entry.consumer, permits);
               }
             });
}

void Connection::handle_unsubscribe(const wire::CommandUnsubscribe& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    send_error(req.request_id(), wire::ConsumerNotFound, "consumer not found");
    return;
  }
  auto self = shared_from_this();
  auto entry = it->second;
  spawn([self, entry, req]() -> Task<void> {
    auto leave = [entry, force = req.force()]() -> Task<Status> {
      if (entry.non_persistent) {
        co_return entry.non_persistent_topic->unsubscribe(entry.non_persistent->name(), force);
      }
      co_return co_await entry.topic->unsubscribe(entry.subscription->name(), force);
    };
    auto on_topic = asio::co_spawn(entry.executor(), std::move(leave), asio::use_awaitable);
    const Status st = co_await std::move(on_topic);
    if (!st.ok()) {
      self->send_error(req.request_id(), to_server_failure(st));
      co_return;
    }
    self->consumers_.erase(req.consumer_id());
    self->send_success(req.request_id());
  });
}

void Connection::handle_close_consumer(const wire::CommandCloseConsumer& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it != consumers_.end()) {
    auto entry = it->second;
    consumers_.erase(it);
    auto self = shared_from_this();
    asio::post(entry.executor(), [self, entry, id = req.consumer_id()] {
      if (entry.non_persistent) {
        entry.non_persistent_topic->remove_consumer(*entry.non_persistent, id, self.get());
      } else {
        entry.subscription->remove_consumer(id, self.get());
      }
    });
  }
  send_success(req.request_id());
}

void Connection::close_consumer(uint64_t consumer_id) {
  on_my_loop([self = shared_from_this(), consumer_id] {
    self->consumers_.erase(consumer_id);
    if (self->protocol_version_ < 5 || self->closed_) return;
    auto cmd = make_command(wire::BaseCommand::CLOSE_CONSUMER);
    cmd.mutable_close_consumer()->set_consumer_id(consumer_id);
    cmd.mutable_close_consumer()->set_request_id(0);
    self->write_command(cmd);
  });
}

}  // namespace magnetar::broker
