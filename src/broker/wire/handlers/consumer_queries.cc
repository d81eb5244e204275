// SEEK, GET_LAST_MESSAGE_ID, CONSUMER_STATS: a consumer's questions and its rewind, each
// answered from the topic's loop.

#include <algorithm>

#include "broker/service/consumer.h"
#include "broker/service/non_persistent_subscription.h"
#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "broker/wire/connection.h"

namespace magnetar::broker {

void Connection::handle_seek(const wire::CommandSeek& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    send_error(req.request_id(), wire::ConsumerNotFound, "consumer not found");
    return;
  }
  if (!req.has_message_id() && !req.has_message_publish_time()) {
    send_error(req.request_id(), wire::MetadataError, "SEEK needs a message id or time");
    return;
  }
  if (it->second.non_persistent) {
    answer_non_persistent_seek(req);
    return;
  }
  auto self = shared_from_this();
  auto entry = it->second;
  // On the topic's loop: find the target, reset the cursor, disconnect consumers, answer.
  spawn_on(entry.topic->executor(), [self, entry, req]() -> Task<void> {
    auto& ml = entry.topic->ledger();
    mledger::Position target;
    if (req.has_message_id()) {
      const mledger::Position requested = to_position(req.message_id());
      if (!requested.ledger_id.valid()) {
        target = ml.first_position();
      } else if (requested.ledger_id == kLatestLedger) {
        target = ml.next_position(ml.last_confirmed());
      } else {
        target = requested;
      }
    } else {
      auto found = co_await entry.topic->position_for_time(req.message_publish_time());
      if (!found.ok()) {
        self->send_error(req.request_id(), to_server_failure(found.status(), wire::UnknownError));
        co_return;
      }
      target = *found;
    }
    Status st = co_await entry.subscription->reset(target);
    if (!st.ok()) {
      self->send_error(req.request_id(), to_server_failure(st));
      co_return;
    }
    // As Pulsar does: the subscription's consumers are closed first (they reconnect and read
    // from there), then the SEEK is answered; the official client completes a seek whose
    // consumer is already reconnecting only once it has subscribed again, so that what it
    // asks next (hasMessageAvailable) finds its consumer.
    entry.subscription->disconnect_all();
    self->send_success(req.request_id());
  });
}

void Connection::handle_get_last_message_id(const wire::CommandGetLastMessageId& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    send_error(req.request_id(), wire::ConsumerNotFound, "consumer not found");
    return;
  }
  if (it->second.non_persistent) {
    answer_non_persistent_last_message_id(it->second, req.request_id());
    return;
  }
  asio::post(it->second.topic->executor(),
             [self = shared_from_this(), entry = it->second, request_id = req.request_id()] {
               auto& ml = entry.topic->ledger();
               const mledger::Position last = ml.last_confirmed();
               auto cmd = make_command(wire::BaseCommand::GET_LAST_MESSAGE_ID_RESPONSE);
               auto* r = cmd.mutable_getlastmessageidresponse();
               r->set_request_id(request_id);
               if (last.entry_id.value() < 0 && ml.number_of_entries() == 0) {
                 // Nothing was ever written (or nothing is left): Pulsar answers -1:-1, not
                 // the empty current ledger, and clients compare with that.
                 r->mutable_last_message_id()->set_ledgerid(static_cast<uint64_t>(-1));
                 r->mutable_last_message_id()->set_entryid(static_cast<uint64_t>(-1));
               } else {
                 set_message_id(r->mutable_last_message_id(), last);
               }
               const int partition = entry.topic->name().partition_index();
               if (partition >= 0) r->mutable_last_message_id()->set_partition(partition);
               const mledger::Position md = entry.subscription->cursor().mark_delete_position();
               set_message_id(r->mutable_consumer_mark_delete_position(), md);
               self->write_command(cmd);
             });
}

void Connection::handle_consumer_stats(const wire::CommandConsumerStats& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    auto cmd = make_command(wire::BaseCommand::CONSUMER_STATS_RESPONSE);
    auto* r = cmd.mutable_consumerstatsresponse();
    r->set_request_id(req.request_id());
    r->set_error_code(wire::ConsumerNotFound);
    r->set_error_message("consumer not found");
    write_command(cmd);
    return;
  }
  asio::post(it->second.executor(), [self = shared_from_this(), entry = it->second,
                                      request_id = req.request_id()] {
    auto cmd = make_command(wire::BaseCommand::CONSUMER_STATS_RESPONSE);
    auto* r = cmd.mutable_consumerstatsresponse();
    r->set_request_id(request_id);
    const auto& c = *entry.consumer;
    r->set_consumername(c.name());
    r->set_availablepermits(static_cast<uint64_t>(std::max<int64_t>(0, c.permits)));
    r->set_unackedmessages(static_cast<uint64_t>(std::max<int64_t>(0, c.unacked_messages)));
    r->set_blockedconsumeronunackedmsgs(c.blocked);
    r->set_address(self->remote_);
    if (entry.non_persistent) {
      // Nothing is kept: no backlog.
      const auto type = entry.non_persistent->type();
      r->set_type(type ? wire::CommandSubscribe::SubType_Name(*type) : "None");
      r->set_msgbacklog(0);
    } else {
      r->set_type(wire::CommandSubscribe::SubType_Name(entry.subscription->type()));
      r->set_msgbacklog(static_cast<uint64_t>(entry.subscription->cursor().backlog_entries()));
    }
    self->write_command(cmd);
  });
}

}  // namespace magnetar::broker
