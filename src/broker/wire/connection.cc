#include "broker/wire/connection.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <chrono>

#include "broker/namespace/namespace_service.h"
#include "broker/service/consumer.h"
#include "broker/service/non_persistent_topic.h"
#include "broker/service/producer.h"
#include "broker/service/subscription.h"
#include "broker/service/topic.h"
#include "broker/service/topic_registry.h"

namespace magnetar::broker {

const Executor& Connection::ConsumerEntry::executor() const {
  return non_persistent_topic ? non_persistent_topic->executor() : topic->executor();
}

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

wire::BaseCommand make_command(wire::BaseCommand::Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

mledger::Position to_position(const wire::MessageIdData& id) {
  return mledger::Position{LedgerId{static_cast<int64_t>(id.ledgerid())},
                           EntryId{static_cast<int64_t>(id.entryid())}};
}

void set_message_id(wire::MessageIdData* out, const mledger::Position& position) {
  out->set_ledgerid(static_cast<uint64_t>(position.ledger_id.value()));
  out->set_entryid(static_cast<uint64_t>(position.entry_id.value()));
}

Connection::Connection(ConnectionContext& context, std::unique_ptr<net::Stream> stream)
    : context_(context),
      config_(context.config),
      stream_(std::move(stream)),
      executor_(stream_->executor()),
      remote_(stream_->remote()),
      log_(log::Logger("broker.cnx")),
      decoder_(protocol::DecoderOptions{
          static_cast<uint32_t>(context.config.max_message_size) + 10 * 1024, true}),
      outbox_(executor_, net::OutboxOptions{512, 4 << 20}),
      read_wakeup_(executor_),
      auth_refresh_(executor_),
      keep_alive_(executor_) {
  log_ = log_.with("remote", remote_);
  if (stream_->tls()) log_ = log_.with("tls", "true");
}

Connection::~Connection() = default;

void Connection::start() {
  auto self = shared_from_this();
  loop_thread_ = std::this_thread::get_id();
  last_received_ms_ = now_ms();
  spawn([self]() { return self->read_loop(); });
  // The handler is made here, not inside a co_await expression: GCC 12 destroys a temporary
  // made there twice, which released this connection twice, and a client leaving with sends
  // in flight then crashed the broker on a freed connection.
  net::Outbox::ErrorHandler write_failed = [self](const boost::system::error_code& ec) {
    self->log_.debug("write failed: {}", net::describe_error(ec));
    self->close();
  };
  spawn([self, write_failed]() { return self->outbox_.run(*self->stream_, write_failed); });
  spawn([self]() { return self->keep_alive_loop(); });
}

void Connection::write(BufferChain frame) {
  on_my_loop([self = shared_from_this(), frame = std::move(frame)]() mutable {
    self->outbox_.push(std::move(frame));  // dropped once closed
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
  outbox_.close();
  read_wakeup_.cancel();
  keep_alive_.cancel();
  auth_refresh_.cancel();
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
    asio::post(c.executor(), [self, c = c, id = id] {
      if (c.non_persistent) {
        c.non_persistent_topic->remove_consumer(*c.non_persistent, id, self.get());
      } else {
        c.subscription->remove_consumer(id, self.get());
      }
    });
  }
  consumers_.clear();
  context_.closed(this);
  log_.debug("connection closed");
}

void Connection::close_after_flush() {
  if (draining_ || closed_) return;
  draining_ = true;
  auto self = shared_from_this();
  auto drain = [self]() -> Task<void> {
    asio::steady_timer pause(self->executor_);
    for (int i = 0; i < 100 && !self->closed_ && self->outbox_.queued() > 0; ++i) {
      pause.expires_after(std::chrono::milliseconds(10));
      boost::system::error_code ec;
      co_await pause.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    self->close();
  };
  if (!spawn_in(context_.gate, executor_, drain)) close();  // the broker is stopping
}

Task<void> Connection::read_loop() {
  auto self = shared_from_this();
  while (!closed_) {
    // Back-pressure: too many sends waiting for storage; read again once they drain.
    while (pending_sends_ >= config_.max_pending_publish_requests_per_connection && !closed_) {
      read_wakeup_.expires_at(asio::steady_timer::time_point::max());
      boost::system::error_code ec;
      co_await read_wakeup_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    // Over a topic's publish rate: read again once it allows.
    while (!closed_ && std::chrono::steady_clock::now() < throttled_until_) {
      read_wakeup_.expires_at(throttled_until_);
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
      // Decoded into the decoder's own Frame, reused frame after frame (valid until the next).
      auto frame = decoder_.next_frame();
      if (!frame.ok()) {
        log_.warn("closing: malformed input: {}", frame.status().to_string());
        close();
        co_return;
      }
      if (*frame == nullptr) break;
      if (!handle(**frame)) {
        close();
        co_return;
      }
    }
  }
  close();
}

void Connection::throttle_reading(std::chrono::steady_clock::duration pause) {
  auto self = shared_from_this();
  on_my_loop([self, until = std::chrono::steady_clock::now() + pause] {
    self->throttled_until_ = std::max(self->throttled_until_, until);
  });
}

void Connection::resume_reading() {
  read_wakeup_.cancel();
}

Task<void> Connection::keep_alive_loop() {
  auto self = shared_from_this();
  const auto interval = std::chrono::seconds(config_.keep_alive_interval_seconds);
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
    auto ping = make_command(wire::BaseCommand::PING);
    ping.mutable_ping();
    write_command(ping);
  }
}

void Connection::send_error(uint64_t request_id, wire::ServerError error,
                            const std::string& message) {
  auto cmd = make_command(wire::BaseCommand::ERROR);
  cmd.mutable_error()->set_request_id(request_id);
  cmd.mutable_error()->set_error(error);
  cmd.mutable_error()->set_message(message);
  write_command(cmd);
}

void Connection::send_error(uint64_t request_id, const ServerFailure& failure) {
  send_error(request_id, failure.error, failure.message);
}

void Connection::send_success(uint64_t request_id) {
  auto cmd = make_command(wire::BaseCommand::SUCCESS);
  cmd.mutable_success()->set_request_id(request_id);
  write_command(cmd);
}

bool Connection::handle(protocol::Frame& frame) {
  if (draining_) return true;  // closing after an answer: nothing more is read
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
      auto pong = make_command(wire::BaseCommand::PONG);
      pong.mutable_pong();
      write_command(pong);
      return true;
    }
    case wire::BaseCommand::PONG:
      return true;
    case wire::BaseCommand::AUTH_RESPONSE:
      return handle_auth_response(cmd.authresponse());
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
    default:
      if (handle_transaction(cmd)) return true;
      log_.warn("ignoring unsupported command {}", wire::BaseCommand::Type_Name(cmd.type()));
      return true;
  }
}

void Connection::send_message(uint64_t consumer_id, mledger::Position position, int32_t partition,
                              const Buffer& entry, uint32_t redelivery_count) {
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::MESSAGE);
  auto* msg = cmd.mutable_message();
  msg->set_consumer_id(consumer_id);
  set_message_id(msg->mutable_message_id(), position);
  // Pulsar sends the partition index, -1 included: clients build the message id from it.
  msg->mutable_message_id()->set_partition(partition);
  if (redelivery_count > 0) msg->set_redelivery_count(redelivery_count);
  write(protocol::encode_with_entry(cmd, entry));
}

void Connection::send_reached_end_of_topic(uint64_t consumer_id) {
  if (protocol_version_ < 9) return;
  auto cmd = make_command(wire::BaseCommand::REACHED_END_OF_TOPIC);
  cmd.mutable_reachedendoftopic()->set_consumer_id(consumer_id);
  write_command(cmd);
}

void Connection::send_active_consumer_change(uint64_t consumer_id, bool active) {
  if (protocol_version_ < 12) return;
  auto cmd = make_command(wire::BaseCommand::ACTIVE_CONSUMER_CHANGE);
  cmd.mutable_active_consumer_change()->set_consumer_id(consumer_id);
  cmd.mutable_active_consumer_change()->set_is_active(active);
  write_command(cmd);
}

}  // namespace magnetar::broker
