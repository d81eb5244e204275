// SUBSCRIBE on a non-persistent topic, and the consumer commands whose answer differs there:
// SEEK (refused: nothing is kept to go back to) and GET_LAST_MESSAGE_ID (nothing kept: -1:-1,
// which clients read as "no message"). FLOW, CLOSE_CONSUMER, UNSUBSCRIBE, ACK (accepted and
// ignored) and REDELIVER (nothing to deliver again) branch in their own handlers.

#include "broker/service/consumer.h"
#include "broker/service/non_persistent_topic.h"
#include "broker/wire/connection.h"

namespace magnetar::broker {

Task<void> Connection::subscribe_non_persistent(wire::CommandSubscribe req,
                                                std::shared_ptr<NonPersistentTopic> t) {
  auto self = shared_from_this();
  if (closed_) co_return;
  if (req.read_compacted()) {
    send_error(req.request_id(), wire::NotAllowedError,
               "readCompacted only valid on persistent topics");
    co_return;
  }
  auto consumer = new_consumer(req, t->name().partition_index());
  struct Joined {
    std::shared_ptr<NonPersistentSubscription> subscription;
    std::optional<ServerFailure> failure;
  };
  // A durable subscription is fine (it lives as long as the topic, in memory); a reader's
  // goes with its consumer.
  auto join = [t, consumer, req]() -> Task<Joined> {
    Joined out;
    const bool durable = !req.has_durable() || req.durable();
    auto sub = t->subscribe(req.subscription(), durable);
    if (!sub.ok()) {
      out.failure = to_server_failure(sub.status());
      co_return out;
    }
    Status st = t->add_consumer(**sub, consumer, req.subtype());
    if (!st.ok()) {
      // A subscription made for this consumer alone goes again.
      if ((*sub)->consumers().empty() && !durable) (void)t->unsubscribe(req.subscription(), true);
      out.failure = to_server_failure(st);
      co_return out;
    }
    out.subscription = *sub;
    co_return out;
  };
  const Joined joined = *co_await run_on<Joined>(t->executor(), std::move(join));
  if (joined.failure) {
    send_error(req.request_id(), *joined.failure);
    co_return;
  }
  if (closed_) {
    asio::post(t->executor(), [self, t, sub = joined.subscription, id = req.consumer_id()] {
      t->remove_consumer(*sub, id, self.get());
    });
    co_return;
  }
  ConsumerEntry entry;
  entry.non_persistent_topic = t;
  entry.non_persistent = joined.subscription;
  entry.consumer = consumer;
  consumers_[req.consumer_id()] = std::move(entry);
  send_success(req.request_id());
  log_.info("consumer {} subscribed to {} / {} ({})", req.consumer_id(), t->name().to_string(),
            req.subscription(), wire::CommandSubscribe::SubType_Name(req.subtype()));
}

void Connection::answer_non_persistent_seek(const wire::CommandSeek& req) {
  // Pulsar's NonPersistentSubscription takes a reset as a no-op, and its answer would leave a
  // client waiting for the reconnection a seek ends with: refused instead.
  send_error(req.request_id(), wire::NotAllowedError,
             "Seek is not supported on a non-persistent topic");
}

void Connection::answer_non_persistent_last_message_id(const ConsumerEntry& entry,
                                                       uint64_t request_id) {
  auto cmd = make_command(wire::BaseCommand::GET_LAST_MESSAGE_ID_RESPONSE);
  auto* r = cmd.mutable_getlastmessageidresponse();
  r->set_request_id(request_id);
  set_message_id(r->mutable_last_message_id(), mledger::Position{});
  const int partition = entry.non_persistent_topic->name().partition_index();
  if (partition >= 0) r->mutable_last_message_id()->set_partition(partition);
  set_message_id(r->mutable_consumer_mark_delete_position(), mledger::Position{});
  write_command(cmd);
}

}  // namespace magnetar::broker
