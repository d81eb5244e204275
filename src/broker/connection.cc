#include "broker/connection.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <chrono>

#include "broker/broker.h"
#include "broker/namespace_service.h"
#include "broker/schema_registry.h"
#include "broker/topic.h"
#include "common/version.h"
#include "common/write_batch.h"
#include "protocol/topic_name.h"

namespace magnetar::broker {

namespace {

constexpr int kMaxProtocolVersion = 21;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

wire::BaseCommand command(wire::BaseCommand::Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

Position to_position(const wire::MessageIdData& id) {
  return Position{static_cast<int64_t>(id.ledgerid()), static_cast<int64_t>(id.entryid())};
}

}  // namespace

Connection::Connection(Broker& broker, std::unique_ptr<net::Stream> stream)
    : broker_(broker),
      stream_(std::move(stream)),
      executor_(stream_->executor()),
      remote_(stream_->remote()),
      log_(log::Logger("broker.cnx")),
      decoder_(protocol::DecoderOptions{
          static_cast<uint32_t>(broker.config().max_message_size) + 10 * 1024, true}),
      write_wakeup_(executor_),
      read_wakeup_(executor_),
      keep_alive_(executor_) {
  log_ = log_.with("remote", remote_);
  if (stream_->tls()) log_ = log_.with("tls", "true");
}

Connection::~Connection() = default;

void Connection::start() {
  auto self = shared_from_this();
  loop_thread_ = std::this_thread::get_id();
  last_received_ms_ = now_ms();
  asio::co_spawn(
      executor_, [self]() { return self->read_loop(); }, asio::detached);
  asio::co_spawn(
      executor_, [self]() { return self->write_loop(); }, asio::detached);
  asio::co_spawn(
      executor_, [self]() { return self->keep_alive_loop(); }, asio::detached);
}

void Connection::write(BufferChain frame) {
  on_my_loop([self = shared_from_this(), frame = std::move(frame)]() mutable {
    if (self->closed_) return;
    self->out_.push_back(std::move(frame));
    self->write_wakeup_.cancel();
  });
}

void Connection::write_command(const wire::BaseCommand& cmd) {
  write(BufferChain(protocol::encode_command(cmd)));
}

void Connection::close() {
  if (!in_loop()) {
    asio::post(executor_, [self = shared_from_this()] { self->close(); });
    return;
  }
  if (closed_) return;
  closed_ = true;
  stream_->close();
  write_wakeup_.cancel();
  read_wakeup_.cancel();
  keep_alive_.cancel();
  // Producers and consumers of this connection go away with it, on their topics' loops.
  auto self = shared_from_this();
  for (auto* map : {&producers_, &waiting_producers_}) {
    for (auto& [id, p] : *map) {
      asio::post(p.topic->executor(),
                 [self, topic = p.topic, id = id] { topic->remove_producer(id, self.get()); });
    }
    map->clear();
  }
  for (auto& [id, c] : consumers_) {
    asio::post(c.topic->executor(),
               [self, sub = c.subscription, id = id] { sub->remove_consumer(id, self.get()); });
  }
  consumers_.clear();
  broker_.forget_connection(this);
  log_.debug("connection closed");
}

Task<void> Connection::write_loop() {
  auto self = shared_from_this();
  std::vector<asio::const_buffer> buffers;
  std::vector<BufferChain> batch;  // keeps the written frames alive
  while (!closed_) {
    if (out_.empty()) {
      write_wakeup_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await write_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    // Everything queued goes out in one gathered write.
    take_write_batch(out_, batch, buffers, 512, 4 * 1024 * 1024);
    boost::system::error_code ec;
    co_await stream_->write(buffers, ec);
    if (ec) {
      log_.debug("write failed: {}", net::describe_error(ec));
      close();
      co_return;
    }
    batch.clear();  // the frames are written: release them now
  }
}

Task<void> Connection::read_loop() {
  auto self = shared_from_this();
  while (!closed_) {
    // Back-pressure: too many sends waiting for storage; read again once they drain.
    while (pending_sends_ >= broker_.config().max_pending_publish_requests_per_connection &&
           !closed_) {
      read_wakeup_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await read_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (closed_) break;
    Buffer buffer = Buffer::allocate(64 * 1024);
    boost::system::error_code ec;
    const asio::mutable_buffer into(buffer.mutable_data(), buffer.size());
    const size_t n = co_await stream_->read_some(into, ec);
    if (ec) {
      if (ec != asio::error::eof && ec != asio::error::operation_aborted) {
        log_.debug("read failed: {}", net::describe_error(ec));
      }
      break;
    }
    last_received_ms_ = now_ms();
    ping_outstanding_ = false;
    buffer.truncate(n);
    decoder_.feed(std::move(buffer));
    while (!closed_) {
      auto frame = decoder_.next();
      if (!frame.ok()) {
        log_.warn("closing: malformed input: {}", frame.status().to_string());
        close();
        co_return;
      }
      if (!frame->has_value()) break;
      if (!handle(**frame)) {
        close();
        co_return;
      }
    }
  }
  close();
}

void Connection::resume_reading() {
  read_wakeup_.cancel();
}

Task<void> Connection::keep_alive_loop() {
  auto self = shared_from_this();
  const auto interval = std::chrono::seconds(broker_.config().keep_alive_interval_seconds);
  while (!closed_) {
    keep_alive_.expires_after(interval);
    boost::system::error_code ec;
    co_await keep_alive_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (closed_) co_return;
    if (!connected_) {
      log_.warn("closing: no CONNECT within {} s", interval.count());
      close();
      co_return;
    }
    const int64_t idle = now_ms() - last_received_ms_;
    if (idle < std::chrono::duration_cast<std::chrono::milliseconds>(interval).count()) continue;
    if (ping_outstanding_) {
      log_.warn("closing: no answer to a keep-alive ping");
      close();
      co_return;
    }
    ping_outstanding_ = true;
    auto ping = command(wire::BaseCommand::PING);
    ping.mutable_ping();
    write_command(ping);
  }
}

void Connection::send_error(uint64_t request_id, wire::ServerError error,
                            const std::string& message) {
  auto cmd = command(wire::BaseCommand::ERROR);
  cmd.mutable_error()->set_request_id(request_id);
  cmd.mutable_error()->set_error(error);
  cmd.mutable_error()->set_message(message);
  write_command(cmd);
}

void Connection::send_success(uint64_t request_id) {
  auto cmd = command(wire::BaseCommand::SUCCESS);
  cmd.mutable_success()->set_request_id(request_id);
  write_command(cmd);
}

// ---------------------------------------------------------------------------------------

bool Connection::handle(protocol::Frame& frame) {
  const auto& cmd = frame.command;
  if (!connected_ && cmd.type() != wire::BaseCommand::CONNECT) {
    log_.warn("closing: {} before CONNECT", wire::BaseCommand::Type_Name(cmd.type()));
    return false;
  }
  switch (cmd.type()) {
    case wire::BaseCommand::CONNECT:
      if (connected_) {
        log_.warn("closing: a second CONNECT");
        return false;
      }
      handle_connect(cmd.connect());
      return true;
    case wire::BaseCommand::PING: {
      auto pong = command(wire::BaseCommand::PONG);
      pong.mutable_pong();
      write_command(pong);
      return true;
    }
    case wire::BaseCommand::PONG:
      return true;
    case wire::BaseCommand::LOOKUP:
      handle_lookup(cmd.lookuptopic());
      return true;
    case wire::BaseCommand::PARTITIONED_METADATA:
      handle_partitioned_metadata(cmd.partitionmetadata());
      return true;
    case wire::BaseCommand::PRODUCER:
      handle_producer(cmd.producer());
      return true;
    case wire::BaseCommand::SEND:
      return handle_send(frame);
    case wire::BaseCommand::SUBSCRIBE:
      handle_subscribe(cmd.subscribe());
      return true;
    case wire::BaseCommand::FLOW:
      handle_flow(cmd.flow());
      return true;
    case wire::BaseCommand::ACK:
      handle_ack(cmd.ack());
      return true;
    case wire::BaseCommand::REDELIVER_UNACKNOWLEDGED_MESSAGES:
      handle_redeliver(cmd.redeliverunacknowledgedmessages());
      return true;
    case wire::BaseCommand::UNSUBSCRIBE:
      handle_unsubscribe(cmd.unsubscribe());
      return true;
    case wire::BaseCommand::CLOSE_PRODUCER:
      handle_close_producer(cmd.close_producer());
      return true;
    case wire::BaseCommand::CLOSE_CONSUMER:
      handle_close_consumer(cmd.close_consumer());
      return true;
    case wire::BaseCommand::SEEK:
      handle_seek(cmd.seek());
      return true;
    case wire::BaseCommand::CONSUMER_STATS:
      handle_consumer_stats(cmd.consumerstats());
      return true;
    case wire::BaseCommand::GET_LAST_MESSAGE_ID:
      handle_get_last_message_id(cmd.getlastmessageid());
      return true;
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE:
      handle_get_topics_of_namespace(cmd.gettopicsofnamespace());
      return true;
    case wire::BaseCommand::GET_SCHEMA:
      handle_get_schema(cmd.getschema());
      return true;
    case wire::BaseCommand::GET_OR_CREATE_SCHEMA:
      handle_get_or_create_schema(cmd.getorcreateschema());
      return true;
    case wire::BaseCommand::NEW_TXN: {
      auto r = command(wire::BaseCommand::NEW_TXN_RESPONSE);
      r.mutable_newtxnresponse()->set_request_id(cmd.newtxn().request_id());
      r.mutable_newtxnresponse()->set_error(wire::NotAllowedError);
      r.mutable_newtxnresponse()->set_message("transactions are not supported");
      write_command(r);
      return true;
    }
    // The other transaction requests: refused the same way.
#define MAGNETAR_REFUSE_TXN(TYPE, REQ, RESP_TYPE, RESP)                \
  case wire::BaseCommand::TYPE: {                                      \
    auto r = command(wire::BaseCommand::RESP_TYPE);                    \
    r.mutable_##RESP()->set_request_id(cmd.REQ().request_id());        \
    r.mutable_##RESP()->set_error(wire::NotAllowedError);              \
    r.mutable_##RESP()->set_message("transactions are not supported"); \
    write_command(r);                                                  \
    return true;                                                       \
  }
      MAGNETAR_REFUSE_TXN(ADD_PARTITION_TO_TXN, addpartitiontotxn, ADD_PARTITION_TO_TXN_RESPONSE,
                          addpartitiontotxnresponse)
      MAGNETAR_REFUSE_TXN(ADD_SUBSCRIPTION_TO_TXN, addsubscriptiontotxn,
                          ADD_SUBSCRIPTION_TO_TXN_RESPONSE, addsubscriptiontotxnresponse)
      MAGNETAR_REFUSE_TXN(END_TXN, endtxn, END_TXN_RESPONSE, endtxnresponse)
      MAGNETAR_REFUSE_TXN(END_TXN_ON_PARTITION, endtxnonpartition, END_TXN_ON_PARTITION_RESPONSE,
                          endtxnonpartitionresponse)
      MAGNETAR_REFUSE_TXN(END_TXN_ON_SUBSCRIPTION, endtxnonsubscription,
                          END_TXN_ON_SUBSCRIPTION_RESPONSE, endtxnonsubscriptionresponse)
#undef MAGNETAR_REFUSE_TXN
    case wire::BaseCommand::TC_CLIENT_CONNECT_REQUEST: {
      auto r = command(wire::BaseCommand::TC_CLIENT_CONNECT_RESPONSE);
      r.mutable_tcclientconnectresponse()->set_request_id(
          cmd.tcclientconnectrequest().request_id());
      r.mutable_tcclientconnectresponse()->set_error(wire::NotAllowedError);
      r.mutable_tcclientconnectresponse()->set_message("transactions are not supported");
      write_command(r);
      return true;
    }
    default:
      log_.warn("ignoring unsupported command {}", wire::BaseCommand::Type_Name(cmd.type()));
      return true;
  }
}

void Connection::handle_connect(const wire::CommandConnect& connect) {
  protocol_version_ = std::min(kMaxProtocolVersion, connect.protocol_version());
  broker_entry_metadata_ =
      connect.has_feature_flags() && connect.feature_flags().supports_broker_entry_metadata();
  connected_ = true;
  auto cmd = command(wire::BaseCommand::CONNECTED);
  auto* c = cmd.mutable_connected();
  c->set_server_version(fmt::format("Pulsar Server (Magnetar {})", kVersion));
  c->set_protocol_version(protocol_version_);
  c->set_max_message_size(broker_.config().max_message_size);
  write_command(cmd);
  log_ = log_.with("client", connect.client_version());
  log_.debug("connected, protocol version {}", protocol_version_);
}

void Connection::handle_lookup(const wire::CommandLookupTopic& lookup) {
  auto self = shared_from_this();
  spawn([self, lookup]() -> Task<void> {
    auto cmd = command(wire::BaseCommand::LOOKUP_RESPONSE);
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
    auto answer = co_await self->broker_.namespaces().lookup(*name, lookup.authoritative());
    if (!answer.ok()) {
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(answer.status().is(Errc::kUnavailable) ? wire::ServiceNotReady
                                                           : wire::MetadataError);
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
    auto cmd = command(wire::BaseCommand::PARTITIONED_METADATA_RESPONSE);
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
    const bool auto_create =
        !req.has_metadata_auto_creation_enabled() || req.metadata_auto_creation_enabled();
    auto partitions = co_await self->broker_.partitions(*name, auto_create);
    if (!partitions.ok()) {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Failed);
      r->set_error(wire::MetadataError);
      r->set_message(partitions.status().message());
    } else {
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Success);
      r->set_partitions(static_cast<uint32_t>(*partitions));
    }
    self->write_command(cmd);
  });
}

void Connection::handle_producer(const wire::CommandProducer& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    if (self->producers_.count(req.producer_id())) {
      // A retried PRODUCER for an existing producer: answer as before.
      auto& existing = self->producers_[req.producer_id()];
      auto cmd = command(wire::BaseCommand::PRODUCER_SUCCESS);
      cmd.mutable_producer_success()->set_request_id(req.request_id());
      cmd.mutable_producer_success()->set_producer_name(existing.producer->name());
      self->write_command(cmd);
      co_return;
    }
    auto name = protocol::TopicName::parse(req.topic());
    if (!name.ok()) {
      self->send_error(req.request_id(), wire::InvalidTopicName, name.status().message());
      co_return;
    }
    const bool create = co_await self->broker_.may_auto_create(*name);
    auto topic = co_await self->broker_.get_topic(*name, create);
    if (!topic.ok()) {
      const auto failure = to_server_failure(topic.status());
      self->send_error(req.request_id(), failure.error, failure.message);
      co_return;
    }
    std::string schema_version;
    if (req.has_schema() && SchemaRegistry::is_storable(req.schema())) {
      auto version = co_await self->broker_.schemas().get_or_create(*name, req.schema());
      if (!version.ok()) {
        self->send_error(req.request_id(),
                         version.status().is(Errc::kAlreadyExists) ? wire::IncompatibleSchema
                                                                   : wire::MetadataError,
                         version.status().message());
        co_return;
      }
      schema_version = SchemaRegistry::encode_version(*version);
    }
    if (self->closed_) co_return;
    std::string producer_name = req.has_producer_name() && !req.producer_name().empty()
                                    ? req.producer_name()
                                    : self->broker_.next_producer_name();
    auto producer = std::make_shared<Producer>(self, req.producer_id(), producer_name,
                                               req.producer_access_mode());
    std::shared_ptr<PersistentTopic> t = *topic;
    // PRODUCER_SUCCESS; `last_sequence_id` is read on the topic's loop.
    auto success = [self, producer, schema_version, request_id = req.request_id()](
                       bool ready, int64_t last_sequence_id) {
      auto cmd = command(wire::BaseCommand::PRODUCER_SUCCESS);
      auto* r = cmd.mutable_producer_success();
      r->set_request_id(request_id);
      r->set_producer_name(producer->name());
      r->set_last_sequence_id(last_sequence_id);
      r->set_producer_ready(ready);
      if (!schema_version.empty()) r->set_schema_version(schema_version);
      self->write_command(cmd);
    };
    // (On the topic's loop.) A queued WaitForExclusive producer is registered here first,
    // then told it is ready: both hop to this connection's loop, in that order.
    auto promoted = [self, t, producer, success]() {
      self->on_my_loop([self, t, producer] {
        if (self->closed_) return;
        self->waiting_producers_.erase(producer->id());
        self->producers_[producer->id()] = ProducerEntry{t, producer};
      });
      success(true, t->last_sequence_id(producer->name()));
    };
    struct Added {
      PersistentTopic::AddResult result;
      ServerFailure failure;
      int64_t last_sequence_id;
    };
    auto add = [t, producer, promoted]() -> Task<Added> {
      Added out{PersistentTopic::AddResult::kFailed, {}, -1};
      out.result = t->add_producer(producer, promoted, &out.failure);
      out.last_sequence_id = t->last_sequence_id(producer->name());
      co_return out;
    };
    auto on_topic = asio::co_spawn(t->executor(), std::move(add), asio::use_awaitable);
    const Added added = co_await std::move(on_topic);
    if (added.result == PersistentTopic::AddResult::kFailed) {
      self->send_error(req.request_id(), added.failure.error, added.failure.message);
      co_return;
    }
    if (self->closed_) {
      asio::post(t->executor(),
                 [self, t, id = req.producer_id()] { t->remove_producer(id, self.get()); });
      co_return;
    }
    if (added.result == PersistentTopic::AddResult::kQueued) {
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
  struct Send {
    uint64_t producer_id, sequence_id, highest;
    int messages;
    bool chunk_before_last;  // a chunk of a large message, not its last one
  };
  const auto& md = frame.metadata;
  const bool chunk_before_last = md.has_num_chunks_from_msg() && md.num_chunks_from_msg() > 1 &&
                                 md.chunk_id() + 1 < md.num_chunks_from_msg();
  const Send s{send.producer_id(), send.sequence_id(),
               send.has_highest_sequence_id() ? send.highest_sequence_id() : 0,
               std::max(1, send.num_messages()), chunk_before_last};
  ++pending_sends_;
  // Deduplication and the append run on the topic's loop; the receipt (or error) comes back
  // to this loop, in order, where it is written and the send counted as done.
  auto self = shared_from_this();
  auto topic = it->second.topic;
  auto producer = it->second.producer;
  asio::post(topic->executor(), [self, topic, producer, s,
                                 entry = std::move(frame.entry)]() mutable {
    auto finish = [self, s](std::optional<Position> stored, std::optional<ServerFailure> failure) {
      wire::BaseCommand cmd;
      if (!failure) {
        cmd = command(wire::BaseCommand::SEND_RECEIPT);
        auto* r = cmd.mutable_send_receipt();
        r->set_producer_id(s.producer_id);
        r->set_sequence_id(s.sequence_id);
        if (s.highest) r->set_highest_sequence_id(s.highest);
        // A duplicate (stored before) is acknowledged with message id -1:-1.
        r->mutable_message_id()->set_ledgerid(stored ? static_cast<uint64_t>(stored->ledger_id)
                                                     : UINT64_MAX);
        r->mutable_message_id()->set_entryid(stored ? static_cast<uint64_t>(stored->entry_id)
                                                    : UINT64_MAX);
      } else if (failure->error == wire::ServiceNotReady && failure->message.empty()) {
        // The topic closed under the send: its producers were told (CLOSE_PRODUCER) and
        // resend after reconnecting, so no error goes out (as Pulsar does).
      } else {
        cmd = command(wire::BaseCommand::SEND_ERROR);
        auto* r = cmd.mutable_send_error();
        r->set_producer_id(s.producer_id);
        r->set_sequence_id(s.sequence_id);
        r->set_error(failure->error);
        r->set_message(failure->message);
      }
      self->on_my_loop([self, cmd = std::move(cmd)] {
        // Resume reading at half the limit (as Pulsar does), not at every completion.
        if (--self->pending_sends_ <=
            self->broker_.config().max_pending_publish_requests_per_connection / 2) {
          self->resume_reading();
        }
        if (cmd.has_type()) self->write_command(cmd);
      });
    };
    const auto seq = static_cast<int64_t>(s.sequence_id);
    const int64_t top = std::max(seq, static_cast<int64_t>(s.highest));
    // The chunks of one message share its sequence id: only the last one is deduplicated
    // and recorded (as Pulsar does).
    const bool dedup = topic->deduplication_enabled() && !s.chunk_before_last;
    if (dedup) {
      switch (topic->check_duplicate(producer->name(), seq, top)) {
        case PersistentTopic::Duplicate::kYes:
          finish(std::nullopt, std::nullopt);
          return;
        case PersistentTopic::Duplicate::kUnknown:
          // Still being stored: the client resends after reconnecting.
          finish(std::nullopt, ServerFailure{wire::PersistenceError,
                                             "a message with this sequence id is being stored"});
          return;
        case PersistentTopic::Duplicate::kNo:
          break;
      }
    }
    topic->publish(producer, std::move(entry), s.messages,
                   [topic, producer, top, finish, dedup](Result<Position> p) {
                     if (!p.ok()) {
                       const bool topic_closed =
                           p.status().code() == make_error_code(mledger::Error::kClosed);
                       finish(std::nullopt, topic_closed
                                                ? ServerFailure{wire::ServiceNotReady, ""}
                                                : to_server_failure(p.status()));
                       return;
                     }
                     if (dedup) topic->persisted(producer->name(), top, *p);
                     finish(*p, std::nullopt);
                   });
  });
  return true;
}

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
      self->send_error(req.request_id(), wire::InvalidTopicName, "empty subscription name");
      co_return;
    }
    if (req.has_schema() && SchemaRegistry::is_storable(req.schema())) {
      auto version = co_await self->broker_.schemas().get_or_create(*name, req.schema());
      if (!version.ok()) {
        self->send_error(req.request_id(),
                         version.status().is(Errc::kAlreadyExists) ? wire::IncompatibleSchema
                                                                   : wire::MetadataError,
                         version.status().message());
        co_return;
      }
    }
    const bool forced = !req.has_force_topic_creation() || req.force_topic_creation();
    bool create = false;
    if (forced) create = co_await self->broker_.may_auto_create(*name);
    auto topic = co_await self->broker_.get_topic(*name, create);
    if (!topic.ok()) {
      const auto failure = to_server_failure(topic.status());
      self->send_error(req.request_id(), failure.error, failure.message);
      co_return;
    }
    if (self->closed_) co_return;
    auto consumer = std::make_shared<Consumer>(self, req.consumer_id(), req.consumer_name(),
                                               req.priority_level());
    if (req.subtype() == wire::CommandSubscribe::Key_Shared && req.has_keysharedmeta() &&
        req.keysharedmeta().keysharedmode() == wire::STICKY) {
      std::vector<std::pair<int, int>> ranges;
      for (const auto& r : req.keysharedmeta().hashranges()) {
        ranges.emplace_back(r.start(), r.end());
      }
      consumer->set_sticky_ranges(std::move(ranges));
    }
    // Joining the subscription happens on the topic's loop.
    struct Joined {
      std::shared_ptr<Subscription> subscription;
      std::optional<ServerFailure> failure;
      bool at_end = false;
    };
    std::shared_ptr<PersistentTopic> t = *topic;
    auto join = [t, consumer, req]() -> Task<Joined> {
      Joined out;
      std::optional<Position> start;
      if (req.has_start_message_id()) {
        const auto& id = req.start_message_id();
        start = Position{static_cast<int64_t>(id.ledgerid()), static_cast<int64_t>(id.entryid())};
        // As Pulsar does, delivery starts at the start entry itself (the entry before it is
        // the cursor's mark-delete position): the client drops what it should not see (the
        // start message unless inclusive, the indexes before a batch index).
        if (start->ledger_id >= 0 && start->entry_id >= 0 && start->ledger_id != INT64_MAX) {
          start = t->ledger().previous_position(*start);
        }
      }
      const bool durable = !req.has_durable() || req.durable();
      auto sub = co_await t->subscribe(req.subscription(), req.subtype(), durable,
                                       req.initialposition(), start);
      if (!sub.ok()) {
        out.failure = to_server_failure(sub.status());
        co_return out;
      }
      out.failure = (*sub)->add_consumer(consumer, req.subtype());
      if (out.failure) co_return out;
      out.subscription = *sub;
      out.at_end = t->ledger().terminated() && !(*sub)->cursor().has_more_entries();
      co_return out;
    };
    auto on_topic = asio::co_spawn(t->executor(), std::move(join), asio::use_awaitable);
    const Joined joined = co_await std::move(on_topic);
    if (joined.failure) {
      self->send_error(req.request_id(), joined.failure->error, joined.failure->message);
      co_return;
    }
    if (self->closed_) {
      asio::post(t->executor(), [self, sub = joined.subscription, id = req.consumer_id()] {
        sub->remove_consumer(id, self.get());
      });
      co_return;
    }
    self->consumers_[req.consumer_id()] = ConsumerEntry{t, joined.subscription, consumer};
    self->send_success(req.request_id());
    self->log_.info("consumer {} subscribed to {} / {} ({})", req.consumer_id(),
                    t->name().to_string(), req.subscription(),
                    wire::CommandSubscribe::SubType_Name(req.subtype()));
    if (joined.at_end) self->send_reached_end_of_topic(req.consumer_id());
  });
}

void Connection::handle_flow(const wire::CommandFlow& flow) {
  auto it = consumers_.find(flow.consumer_id());
  if (it == consumers_.end()) return;
  asio::post(it->second.topic->executor(),
             [sub = it->second.subscription, consumer = it->second.consumer,
              permits = flow.messagepermits()] { sub->flow(consumer, permits); });
}

void Connection::handle_ack(const wire::CommandAck& ack) {
  auto it = consumers_.find(ack.consumer_id());
  auto self = shared_from_this();
  if (it == consumers_.end()) {
    if (ack.has_request_id()) {
      auto cmd = command(wire::BaseCommand::ACK_RESPONSE);
      cmd.mutable_ackresponse()->set_consumer_id(ack.consumer_id());
      cmd.mutable_ackresponse()->set_request_id(ack.request_id());
      cmd.mutable_ackresponse()->set_error(wire::ConsumerNotFound);
      cmd.mutable_ackresponse()->set_message("consumer not found");
      write_command(cmd);
    }
    return;
  }
  auto entry = it->second;
  asio::co_spawn(
      entry.topic->executor(),
      [self, entry, ack]() -> Task<void> {
        auto failure = co_await entry.subscription->acknowledge(entry.consumer, ack);
        if (ack.has_request_id()) {
          auto cmd = command(wire::BaseCommand::ACK_RESPONSE);
          auto* r = cmd.mutable_ackresponse();
          r->set_consumer_id(ack.consumer_id());
          r->set_request_id(ack.request_id());
          if (failure) {
            r->set_error(failure->error);
            r->set_message(failure->message);
          }
          self->write_command(cmd);
        }
      },
      asio::detached);
}

void Connection::handle_redeliver(const wire::CommandRedeliverUnacknowledgedMessages& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) return;
  std::vector<Position> positions;
  for (const auto& id : req.message_ids()) positions.push_back(to_position(id));
  asio::post(it->second.topic->executor(),
             [sub = it->second.subscription, consumer = it->second.consumer,
              positions = std::move(positions)]() mutable {
               sub->redeliver(consumer, std::move(positions));
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
    auto leave = [entry, force = req.force()]() -> Task<std::optional<ServerFailure>> {
      co_return co_await entry.topic->unsubscribe(entry.subscription->name(), force);
    };
    auto on_topic = asio::co_spawn(entry.topic->executor(), std::move(leave), asio::use_awaitable);
    const auto failure = co_await std::move(on_topic);
    if (failure) {
      self->send_error(req.request_id(), failure->error, failure->message);
      co_return;
    }
    self->consumers_.erase(req.consumer_id());
    self->send_success(req.request_id());
  });
}

void Connection::handle_close_producer(const wire::CommandCloseProducer& req) {
  auto self = shared_from_this();
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

void Connection::handle_close_consumer(const wire::CommandCloseConsumer& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it != consumers_.end()) {
    auto entry = it->second;
    consumers_.erase(it);
    auto self = shared_from_this();
    asio::post(entry.topic->executor(), [self, entry, id = req.consumer_id()] {
      entry.subscription->remove_consumer(id, self.get());
    });
  }
  send_success(req.request_id());
}

void Connection::handle_seek(const wire::CommandSeek& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    send_error(req.request_id(), wire::ConsumerNotFound, "consumer not found");
    return;
  }
  auto self = shared_from_this();
  auto entry = it->second;
  // On the topic's loop: find the target, reset the cursor, answer, disconnect consumers.
  asio::co_spawn(
      entry.topic->executor(),
      [self, entry, req]() -> Task<void> {
        auto& ml = entry.topic->ledger();
        Position target;
        if (req.has_message_id()) {
          const auto& id = req.message_id();
          const auto ledger = static_cast<int64_t>(id.ledgerid());
          if (ledger < 0) {
            target = ml.first_position();
          } else if (ledger == INT64_MAX) {
            target = ml.next_position(ml.last_confirmed());
          } else {
            target = Position{ledger, static_cast<int64_t>(id.entryid())};
          }
        } else if (req.has_message_publish_time()) {
          const uint64_t t = req.message_publish_time();
          auto matches = [t](const mledger::Entry& e) {
            auto view = protocol::parse_entry(e.data);
            if (!view.ok()) return false;
            wire::MessageMetadata md;
            if (!md.ParseFromArray(view->metadata_bytes.data(),
                                   static_cast<int>(view->metadata_bytes.size()))) {
              return false;
            }
            return md.publish_time() < t;
          };
          auto found = co_await ml.find_newest_matching(ml.first_position(), matches);
          if (!found.ok()) {
            self->send_error(req.request_id(), wire::UnknownError, found.status().message());
            co_return;
          }
          target = *found ? ml.next_position(**found) : ml.first_position();
        } else {
          self->send_error(req.request_id(), wire::MetadataError,
                           "SEEK needs a message id or time");
          co_return;
        }
        auto failure = co_await entry.subscription->reset(target);
        if (failure) {
          self->send_error(req.request_id(), failure->error, failure->message);
          co_return;
        }
        self->send_success(req.request_id());
        // As Pulsar does: the subscription's consumers reconnect and read from there.
        entry.subscription->disconnect_all();
      },
      asio::detached);
}

void Connection::handle_consumer_stats(const wire::CommandConsumerStats& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    auto cmd = command(wire::BaseCommand::CONSUMER_STATS_RESPONSE);
    auto* r = cmd.mutable_consumerstatsresponse();
    r->set_request_id(req.request_id());
    r->set_error_code(wire::ConsumerNotFound);
    r->set_error_message("consumer not found");
    write_command(cmd);
    return;
  }
  asio::post(it->second.topic->executor(), [self = shared_from_this(), entry = it->second,
                                            request_id = req.request_id()] {
    auto cmd = command(wire::BaseCommand::CONSUMER_STATS_RESPONSE);
    auto* r = cmd.mutable_consumerstatsresponse();
    r->set_request_id(request_id);
    const auto& c = *entry.consumer;
    r->set_consumername(c.name());
    r->set_availablepermits(static_cast<uint64_t>(std::max<int64_t>(0, c.permits())));
    r->set_unackedmessages(static_cast<uint64_t>(std::max<int64_t>(0, c.unacked_messages())));
    r->set_blockedconsumeronunackedmsgs(c.blocked());
    r->set_address(self->remote_);
    r->set_type(wire::CommandSubscribe::SubType_Name(entry.subscription->type()));
    r->set_msgbacklog(static_cast<uint64_t>(entry.subscription->cursor().backlog_entries()));
    self->write_command(cmd);
  });
}

void Connection::handle_get_last_message_id(const wire::CommandGetLastMessageId& req) {
  auto it = consumers_.find(req.consumer_id());
  if (it == consumers_.end()) {
    send_error(req.request_id(), wire::ConsumerNotFound, "consumer not found");
    return;
  }
  asio::post(it->second.topic->executor(), [self = shared_from_this(), entry = it->second,
                                            request_id = req.request_id()] {
    auto& ml = entry.topic->ledger();
    const Position last = ml.last_confirmed();
    auto cmd = command(wire::BaseCommand::GET_LAST_MESSAGE_ID_RESPONSE);
    auto* r = cmd.mutable_getlastmessageidresponse();
    r->set_request_id(request_id);
    r->mutable_last_message_id()->set_ledgerid(static_cast<uint64_t>(last.ledger_id));
    r->mutable_last_message_id()->set_entryid(static_cast<uint64_t>(last.entry_id));
    const int partition = entry.topic->name().partition_index();
    if (partition >= 0) r->mutable_last_message_id()->set_partition(partition);
    const Position md = entry.subscription->cursor().mark_delete_position();
    r->mutable_consumer_mark_delete_position()->set_ledgerid(static_cast<uint64_t>(md.ledger_id));
    r->mutable_consumer_mark_delete_position()->set_entryid(static_cast<uint64_t>(md.entry_id));
    self->write_command(cmd);
  });
}

void Connection::handle_get_topics_of_namespace(const wire::CommandGetTopicsOfNamespace& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    auto topics = co_await self->broker_.topics_of_namespace(req.namespace_());
    if (!topics.ok()) {
      self->send_error(req.request_id(), wire::MetadataError, topics.status().message());
      co_return;
    }
    auto cmd = command(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE_RESPONSE);
    auto* r = cmd.mutable_gettopicsofnamespaceresponse();
    r->set_request_id(req.request_id());
    for (const auto& t : *topics) r->add_topics(t);
    self->write_command(cmd);
  });
}

void Connection::handle_get_schema(const wire::CommandGetSchema& req) {
  auto self = shared_from_this();
  spawn([self, req]() -> Task<void> {
    auto cmd = command(wire::BaseCommand::GET_SCHEMA_RESPONSE);
    auto* r = cmd.mutable_getschemaresponse();
    r->set_request_id(req.request_id());
    auto name = protocol::TopicName::parse(req.topic());
    if (!name.ok()) {
      r->set_error_code(wire::InvalidTopicName);
      r->set_error_message(name.status().message());
      self->write_command(cmd);
      co_return;
    }
    std::optional<int64_t> version;
    if (req.has_schema_version()) version = SchemaRegistry::decode_version(req.schema_version());
    auto found = co_await self->broker_.schemas().get(*name, version);
    if (!found.ok()) {
      r->set_error_code(wire::MetadataError);
      r->set_error_message(found.status().message());
    } else if (!found->has_value()) {
      // What clients read as "this topic has no schema".
      r->set_error_code(wire::TopicNotFound);
      r->set_error_message("Topic not found or no-schema");
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
    auto cmd = command(wire::BaseCommand::GET_OR_CREATE_SCHEMA_RESPONSE);
    auto* r = cmd.mutable_getorcreateschemaresponse();
    r->set_request_id(req.request_id());
    auto name = protocol::TopicName::parse(req.topic());
    if (!name.ok()) {
      r->set_error_code(wire::InvalidTopicName);
      r->set_error_message(name.status().message());
      self->write_command(cmd);
      co_return;
    }
    auto version = co_await self->broker_.schemas().get_or_create(*name, req.schema());
    if (!version.ok()) {
      r->set_error_code(version.status().is(Errc::kAlreadyExists) ? wire::IncompatibleSchema
                                                                  : wire::MetadataError);
      r->set_error_message(version.status().message());
    } else {
      r->set_schema_version(SchemaRegistry::encode_version(*version));
    }
    self->write_command(cmd);
  });
}

void Connection::close_producer(uint64_t producer_id) {
  on_my_loop([self = shared_from_this(), producer_id] {
    self->producers_.erase(producer_id);
    if (self->protocol_version_ < 5 || self->closed_) return;
    auto cmd = command(wire::BaseCommand::CLOSE_PRODUCER);
    cmd.mutable_close_producer()->set_producer_id(producer_id);
    cmd.mutable_close_producer()->set_request_id(0);
    self->write_command(cmd);
  });
}

void Connection::close_consumer(uint64_t consumer_id) {
  on_my_loop([self = shared_from_this(), consumer_id] {
    self->consumers_.erase(consumer_id);
    if (self->protocol_version_ < 5 || self->closed_) return;
    auto cmd = command(wire::BaseCommand::CLOSE_CONSUMER);
    cmd.mutable_close_consumer()->set_consumer_id(consumer_id);
    cmd.mutable_close_consumer()->set_request_id(0);
    self->write_command(cmd);
  });
}

void Connection::send_reached_end_of_topic(uint64_t consumer_id) {
  if (protocol_version_ < 9) return;
  auto cmd = command(wire::BaseCommand::REACHED_END_OF_TOPIC);
  cmd.mutable_reachedendoftopic()->set_consumer_id(consumer_id);
  write_command(cmd);
}

void Connection::send_active_consumer_change(uint64_t consumer_id, bool active) {
  if (protocol_version_ < 12) return;
  auto cmd = command(wire::BaseCommand::ACTIVE_CONSUMER_CHANGE);
  cmd.mutable_active_consumer_change()->set_consumer_id(consumer_id);
  cmd.mutable_active_consumer_change()->set_is_active(active);
  write_command(cmd);
}

}  // namespace magnetar::broker
