// ACK and REDELIVER_UNACKNOWLEDGED_MESSAGES, applied on the topic's loop in the order
// received; an ACK with a request id is answered once the cursor has stored it.

#include <map>
#include <optional>
#include <vector>

#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "broker/wire/connection.h"

namespace magnetar::broker {

void Connection::handle_ack(const wire::CommandAck& ack) {
  auto it = consumers_.find(ack.consumer_id());
  if (it == consumers_.end()) {
    if (ack.has_request_id()) {
      auto cmd = make_command(wire::BaseCommand::ACK_RESPONSE);
      cmd.mutable_ackresponse()->set_consumer_id(ack.consumer_id());
      cmd.mutable_ackresponse()->set_request_id(ack.request_id());
      cmd.mutable_ackresponse()->set_error(wire::ConsumerNotFound);
      cmd.mutable_ackresponse()->set_message("consumer not found");
      write_command(cmd);
    }
    return;
  }
  if (it->second.non_persistent) {
    // Nothing to acknowledge on a non-persistent topic: accepted and ignored, as Pulsar does.
    if (ack.has_request_id()) {
      auto cmd = make_command(wire::BaseCommand::ACK_RESPONSE);
      cmd.mutable_ackresponse()->set_consumer_id(ack.consumer_id());
      cmd.mutable_ackresponse()->set_request_id(ack.request_id());
      write_command(cmd);
    }
    return;
  }
  // Whole entries only: a partial batch acknowledgement (some indexes still unacknowledged)
  // leaves the entry to be acknowledged whole later.
  std::vector<mledger::Position> positions;
  for (const auto& id : ack.message_id()) {
    bool partial = false;
    for (int64_t word : id.ack_set()) partial |= word != 0;
    if (!partial) positions.push_back(to_position(id));
  }
  std::map<std::string, int64_t> properties;
  for (const auto& kv : ack.properties()) properties[kv.key()] = static_cast<int64_t>(kv.value());
  const bool cumulative = ack.ack_type() == wire::CommandAck::Cumulative;
  auto self = shared_from_this();
  auto subscription = it->second.subscription;
  spawn_on(it->second.topic->executor(),
           [self, subscription, cumulative, positions = std::move(positions),
            properties = std::move(properties), consumer_id = ack.consumer_id(),
            request_id = ack.has_request_id() ? std::optional<uint64_t>(ack.request_id())
                                              : std::nullopt]() mutable -> Task<void> {
             Status st = co_await subscription->acknowledge(cumulative, std::move(positions),
                                                            std::move(properties));
             if (!request_id) co_return;
             auto cmd = make_command(wire::BaseCommand::ACK_RESPONSE);
             auto* r = cmd.mutable_ackresponse();
             r->set_consumer_id(consumer_id);
             r->set_request_id(*request_id);
             if (!st.ok()) {
               const ServerFailure failure = to_server_failure(st);
               r->set_error(failure.error);
               r->set_message(failure.message);
             }
             self->write_command(cmd);
           });
}

void Connection::handle_redeliver(const wire::CommandRedeliverUnacknowledgedMessages& req) {
  auto it = consumers_.find(req.consumer_id());
  // (A non-persistent topic keeps nothing to deliver again.)
  if (it == consumers_.end() || it->second.non_persistent) return;
  std::vector<mledger::Position> positions;
  for (const auto& id : req.message_ids()) positions.push_back(to_position(id));
  asio::post(it->second.topic->executor(),
             [sub = it->second.subscription, consumer = it->second.consumer,
              positions = std::move(positions)]() mutable {
               sub->redeliver(consumer, std::move(positions));
             });
}

}  // namespace magnetar::broker
