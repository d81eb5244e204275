#include "client/producer_impl.h"

#include <fmt/format.h>

#include <chrono>

#include "client/schema.h"
#include "protocol/compression.h"

namespace magnetar::client {

namespace {

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

wire::ProducerAccessMode to_wire(ProducerAccessMode m) {
  switch (m) {
    case ProducerAccessMode::kShared:
      return wire::Shared;
    case ProducerAccessMode::kExclusive:
      return wire::Exclusive;
    case ProducerAccessMode::kWaitForExclusive:
      return wire::WaitForExclusive;
    case ProducerAccessMode::kExclusiveWithFencing:
      return wire::ExclusiveWithFencing;
  }
  return wire::Shared;
}

constexpr size_t kChunkOverhead = 512;  // frame header and command, generously

void fill_single(const Message& m, wire::SingleMessageMetadata* s) {
  if (m.has_key()) s->set_partition_key(m.key());
  if (m.has_ordering_key()) s->set_ordering_key(m.ordering_key());
  for (const auto& [k, v] : m.properties()) {
    auto* kv = s->add_properties();
    kv->set_key(k);
    kv->set_value(v);
  }
  if (m.event_time() > 0) s->set_event_time(m.event_time());
}

}  // namespace

ProducerImpl::ProducerImpl(std::shared_ptr<ClientImpl> client, std::string topic,
                           ProducerOptions options, int partition)
    : Reconnecting(client->options()),
      client_(std::move(client)),
      topic_(std::move(topic)),
      options_(std::move(options)),
      partition_(partition),
      loop_(client_->pick_loop()),
      producer_id_(client_->next_producer_id()),
      log_(log::Logger("client.producer").with("topic", topic_).with("producer_id", producer_id_)),
      name_(options_.producer_name),
      user_named_(!options_.producer_name.empty()),
      batch_timer_(client_->executor(loop_)) {
  if (options_.initial_sequence_id) {
    next_sequence_id_ = *options_.initial_sequence_id + 1;
    last_acked_ = *options_.initial_sequence_id;
    sequence_initialised_ = true;
  }
}

ProducerImpl::~ProducerImpl() = default;

std::string ProducerImpl::name() const {
  std::lock_guard lock(mu_);
  return name_;
}

bool ProducerImpl::gives_up_on(const Status& st, bool created) const {
  if (auto c = client_error_of(st)) {
    return *c == ClientError::kInvalidConfiguration || *c == ClientError::kAlreadyClosed;
  }
  auto se = server_error_of(st);
  if (!se) return false;
  switch (*se) {
    case ServerError::kTopicTerminatedError:
    case ServerError::kProducerFenced:
    case ServerError::kNotAllowedError:
    case ServerError::kAuthorizationError:
    case ServerError::kAuthenticationError:
    case ServerError::kInvalidTopicName:
    case ServerError::kIncompatibleSchema:
    case ServerError::kProducerBlockedQuotaExceededException:
    case ServerError::kUnsupportedVersionError:
    case ServerError::kTopicNotFound:
      return true;
    case ServerError::kProducerBusy:
      return !created;
    default:
      return false;
  }
}

Task<Status> ProducerImpl::create(Deadline deadline) {
  auto self = shared_from_this();
  asio::co_spawn(
      executor(), [self]() { return self->run(); }, asio::detached);
  asio::co_spawn(
      executor(), [self]() { return self->batch_timer_loop(); }, asio::detached);
  asio::co_spawn(
      executor(), [self]() { return self->timeout_loop(); }, asio::detached);
  // WaitForExclusive producers wait for as long as it takes.
  if (options_.access_mode == ProducerAccessMode::kWaitForExclusive) deadline = Deadline::max();
  const std::string what = fmt::format("create a producer on {}", topic_);
  Status created = co_await await_created(deadline, what);
  co_return created;
}

Task<void> ProducerImpl::run() {
  auto self = shared_from_this();
  co_await reconnect_loop(client_->options().operation_timeout, log_, "connecting failed");
}

void ProducerImpl::closed_by(const Status& status) {
  fail_pending(status);
  batch_timer_.cancel();
}

Task<Status> ProducerImpl::connect_once(Deadline deadline) {
  auto self = shared_from_this();
  auto addr = co_await client_->lookup(loop_, topic_, deadline);
  if (!addr.ok()) co_return addr.status();
  auto got = co_await client_->get_connection(loop_, addr->logical, addr->physical, deadline);
  if (!got.ok()) co_return got.status();
  std::shared_ptr<ClientConnection> cnx = *got;
  if (state_ != State::kConnecting) co_return Status(ClientError::kAlreadyClosed, "closed");
  cnx->add_producer(producer_id_, weak_from_this());
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::PRODUCER);
  const uint64_t request_id = client_->next_request_id();
  auto* p = cmd.mutable_producer();
  p->set_topic(topic_);
  p->set_producer_id(producer_id_);
  p->set_request_id(request_id);
  {
    std::lock_guard lock(mu_);
    if (!name_.empty()) {
      p->set_producer_name(name_);
      p->set_user_provided_producer_name(user_named_);
    }
  }
  p->set_epoch(epoch_++);
  p->set_producer_access_mode(to_wire(options_.access_mode));
  if (options_.schema) {
    auto schema = wire_schema(*options_.schema, topic_);
    if (!schema.ok()) {
      cnx->remove_producer(producer_id_);
      co_return schema.status();
    }
    *p->mutable_schema() = std::move(schema).value();
  }
  for (const auto& [k, v] : options_.properties) {
    auto* kv = p->add_metadata();
    kv->set_key(k);
    kv->set_value(v);
  }
  auto r = co_await cnx->request(cmd, request_id, deadline);
  if (!r.ok()) {
    cnx->remove_producer(producer_id_);
    co_return r.status();
  }
  wire::CommandProducerSuccess success = r->producer_success();
  if (!success.producer_ready()) {
    log_.info("waiting for exclusive access");
    auto second = co_await cnx->wait_response(request_id, Deadline::max());
    if (!second.ok()) {
      cnx->remove_producer(producer_id_);
      co_return second.status();
    }
    success = second->producer_success();
  }
  if (state_ != State::kConnecting) {
    // Closed (or given up) meanwhile: undo the registration on the broker too.
    cnx->remove_producer(producer_id_);
    wire::BaseCommand close;
    close.set_type(wire::BaseCommand::CLOSE_PRODUCER);
    close.mutable_close_producer()->set_producer_id(producer_id_);
    close.mutable_close_producer()->set_request_id(client_->next_request_id());
    cnx->send_command(close);
    co_return Status(ClientError::kAlreadyClosed, "closed");
  }
  {
    std::lock_guard lock(mu_);
    name_ = success.producer_name();
  }
  if (!sequence_initialised_) {
    next_sequence_id_ = std::max(next_sequence_id_, success.last_sequence_id() + 1);
    last_acked_ = success.last_sequence_id();
    sequence_initialised_ = true;
  }
  max_message_size_ = cnx->max_message_size();
  cnx_ = cnx;
  state_ = State::kReady;
  connected_ = true;
  // Everything not yet acknowledged goes again, in order, with its original sequence id.
  for (const auto& op : pending_) cnx->send_frame(op.frame);
  log_.info("producer '{}' ready on {} ({} pending messages re-sent)", success.producer_name(),
            cnx->physical_address(), pending_.size());
  state_event_.notify_all();
  co_return Status::OK();
}

void ProducerImpl::on_disconnected(ClientConnection& cnx) {
  if (cnx_.get() != &cnx) return;
  log_.info("connection lost; reconnecting");
  drop_connection();
}

void ProducerImpl::drop_connection() {
  cnx_.reset();
  connected_ = false;
  if (state_ == State::kReady) state_ = State::kConnecting;
  state_event_.notify_all();
}

void ProducerImpl::on_frame(ClientConnection& cnx, protocol::Frame& frame) {
  const auto& cmd = frame.command;
  switch (cmd.type()) {
    case wire::BaseCommand::SEND_RECEIPT:
      handle_receipt(cnx, cmd.send_receipt());
      return;
    case wire::BaseCommand::SEND_ERROR: {
      const auto& e = cmd.send_error();
      Status st = server_error_status(e.error(), e.message());
      log_.warn("send of sequence id {} failed: {}", e.sequence_id(), st.to_string());
      if (e.error() == wire::TopicTerminatedError) {
        fail_pending(st);
        return;
      }
      // As Pulsar's clients do: drop the connection; the pending messages go again after
      // reconnecting (deduplication drops the ones stored meanwhile).
      cnx.close(st);
      return;
    }
    case wire::BaseCommand::CLOSE_PRODUCER:
      if (cnx_.get() == &cnx) {
        log_.info("closed by the broker; reconnecting");
        drop_connection();
      }
      return;
    default:
      return;
  }
}

void ProducerImpl::handle_receipt(ClientConnection& cnx, const wire::CommandSendReceipt& r) {
  const auto seq = static_cast<int64_t>(r.sequence_id());
  if (pending_.empty()) {
    log_.debug("receipt for sequence id {} with nothing pending", seq);
    return;
  }
  OpSend& front = pending_.front();
  if (seq < front.sequence_id) {
    log_.debug("late receipt for sequence id {}", seq);
    return;
  }
  if (seq > front.sequence_id) {
    log_.warn("receipt for sequence id {} while {} is the oldest pending; reconnecting", seq,
              front.sequence_id);
    cnx.close(Status(ClientError::kProtocolError, "out-of-order send receipt"));
    return;
  }
  OpSend op = std::move(front);
  pending_.pop_front();
  const auto& id = r.message_id();
  complete_op(
      op, std::make_pair(static_cast<int64_t>(id.ledgerid()), static_cast<int64_t>(id.entryid())));
}

void ProducerImpl::complete_op(OpSend& op, const Result<std::pair<int64_t, int64_t>>& position) {
  const int n = static_cast<int>(op.callbacks.size());
  if (position.ok()) last_acked_ = op.highest_sequence_id;
  for (int i = 0; i < n; ++i) {
    if (!op.callbacks[static_cast<size_t>(i)]) continue;
    if (position.ok()) {
      op.callbacks[static_cast<size_t>(i)](MessageId(position->first, position->second, partition_,
                                                     op.batch ? i : -1, op.batch ? n : 0));
    } else {
      op.callbacks[static_cast<size_t>(i)](position.status());
    }
  }
  progress_event_.notify_all();
}

void ProducerImpl::fail_pending(const Status& status) {
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& op : pending) complete_op(op, status);
  auto batch = std::move(batch_);
  batch_.clear();
  batch_bytes_ = 0;
  for (auto& b : batch) {
    if (b.callback) b.callback(status);
  }
  progress_event_.notify_all();
}

bool ProducerImpl::acquire_slot(const SendCallback& callback) {
  if (options_.max_pending_messages <= 0) return true;
  std::unique_lock lock(mu_);
  if (used_slots_ < options_.max_pending_messages) {
    ++used_slots_;
    return true;
  }
  if (!options_.block_if_queue_full) {
    lock.unlock();
    callback(
        Status(ClientError::kProducerQueueFull,
               fmt::format("{} messages pending on {}", options_.max_pending_messages, topic_)));
    return false;
  }
  auto has_room = [this] { return used_slots_ < options_.max_pending_messages || closed_; };
  if (options_.send_timeout.count() > 0) {
    if (!slot_cv_.wait_for(lock, options_.send_timeout, has_room)) {
      lock.unlock();
      callback(Status(ClientError::kTimeout, "timed out waiting for room in the pending queue"));
      return false;
    }
  } else {
    slot_cv_.wait(lock, has_room);
  }
  if (closed_) {
    lock.unlock();
    callback(Status(ClientError::kAlreadyClosed, "producer closed"));
    return false;
  }
  ++used_slots_;
  return true;
}

void ProducerImpl::release_slots(int n) {
  if (options_.max_pending_messages <= 0) return;
  {
    std::lock_guard lock(mu_);
    used_slots_ -= n;
  }
  slot_cv_.notify_all();
}

bool ProducerImpl::admit(SendCallback& callback) {
  if (!callback) callback = [](Result<MessageId>) {};
  if (closed_) {
    callback(Status(ClientError::kAlreadyClosed, fmt::format("producer on {} is closed", topic_)));
    return false;
  }
  if (!acquire_slot(callback)) return false;
  callback = [self = shared_from_this(), callback = std::move(callback)](Result<MessageId> r) {
    self->release_slots(1);
    callback(std::move(r));
  };
  return true;
}

void ProducerImpl::send_async(Message message, SendCallback callback) {
  if (!admit(callback)) return;
  auto self = shared_from_this();
  asio::post(executor(),
             [self, message = std::move(message), callback = std::move(callback)]() mutable {
               self->enqueue(std::move(message), std::move(callback));
             });
}

void ProducerImpl::send_encoded(wire::MessageMetadata metadata, Buffer payload,
                                SendCallback callback) {
  if (!admit(callback)) return;
  auto self = shared_from_this();
  asio::post(executor(), [self, metadata = std::move(metadata), payload = std::move(payload),
                          callback = std::move(callback)]() mutable {
    self->enqueue_encoded(std::move(metadata), std::move(payload), std::move(callback));
  });
}

void ProducerImpl::enqueue_encoded(wire::MessageMetadata metadata, Buffer payload,
                                   SendCallback callback) {
  if (state_ == State::kClosing || state_ == State::kClosed) {
    callback(Status(ClientError::kAlreadyClosed, fmt::format("producer on {} is closed", topic_)));
    return;
  }
  flush_batch();  // keeps the order
  const int64_t seq = next_sequence_id_++;
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SEND);
  cmd.mutable_send()->set_producer_id(producer_id_);
  cmd.mutable_send()->set_sequence_id(static_cast<uint64_t>(seq));
  cmd.mutable_send()->set_num_messages(
      metadata.has_num_messages_in_batch() ? metadata.num_messages_in_batch() : 1);
  OpSend op;
  op.sequence_id = seq;
  op.highest_sequence_id = seq;
  op.frame = protocol::encode_payload_command(cmd, metadata, BufferChain(std::move(payload)));
  op.created = Clock::now();
  op.callbacks.push_back(std::move(callback));
  push_op(std::move(op));
}

void ProducerImpl::enqueue(Message message, SendCallback callback) {
  if (state_ == State::kClosing || state_ == State::kClosed) {
    callback(Status(ClientError::kAlreadyClosed, fmt::format("producer on {} is closed", topic_)));
    return;
  }
  int64_t seq;
  if (message.sequence_id() >= 0) {
    seq = message.sequence_id();
    next_sequence_id_ = std::max(next_sequence_id_, seq + 1);
  } else {
    seq = next_sequence_id_++;
  }
  if (message.payload().size() > static_cast<size_t>(max_message_size_) &&
      !options_.chunking_enabled) {
    callback(Status(ClientError::kMessageTooBig,
                    fmt::format("message of {} bytes is larger than the broker's limit of {}",
                                message.payload().size(), max_message_size_)));
    return;
  }
  // (A delayed message goes alone, as Pulsar's clients send it: a batch has one time.)
  if (!options_.batching_enabled || !message.replicate_to().empty() || message.deliver_at() > 0) {
    flush_batch();  // keeps the order
    send_single(std::move(message), std::move(callback), seq);
    return;
  }
  if (!batch_.empty() && batch_bytes_ + message.payload().size() > options_.batching_max_bytes) {
    flush_batch();
  }
  add_to_batch(std::move(message), std::move(callback), seq);
}

void ProducerImpl::add_to_batch(Message message, SendCallback callback, int64_t sequence_id) {
  batch_bytes_ += message.payload().size();
  batch_.push_back(Batched{std::move(message), std::move(callback), sequence_id, Clock::now()});
  if (batch_.size() == 1) batch_timer_.expires_after(options_.batching_max_delay);
  if (static_cast<int>(batch_.size()) >= options_.batching_max_messages ||
      batch_bytes_ >= options_.batching_max_bytes) {
    flush_batch();
  }
}

Result<Buffer> ProducerImpl::maybe_compress(const Buffer& payload, wire::MessageMetadata& md) {
  if (options_.compression == CompressionType::kNone) return payload;
  auto type = static_cast<protocol::CompressionType>(options_.compression);
  auto out = protocol::compress(type, payload.span());
  if (!out.ok()) return out.status();
  md.set_compression(static_cast<wire::CompressionType>(options_.compression));
  md.set_uncompressed_size(static_cast<uint32_t>(payload.size()));
  return out;
}

void ProducerImpl::flush_batch() {
  if (batch_.empty()) return;
  batch_timer_.expires_at(asio::steady_timer::time_point::max());
  std::vector<Batched> batch = std::move(batch_);
  batch_.clear();
  batch_bytes_ = 0;
  protocol::BatchBuilder builder;
  for (const auto& b : batch) {
    wire::SingleMessageMetadata s;
    fill_single(b.message, &s);
    s.set_sequence_id(static_cast<uint64_t>(b.sequence_id));
    builder.add(std::move(s), b.message.payload());
  }
  const int n = builder.count();
  wire::MessageMetadata md;
  md.set_producer_name(name());
  md.set_sequence_id(static_cast<uint64_t>(batch.front().sequence_id));
  md.set_publish_time(now_ms());
  md.set_num_messages_in_batch(n);
  md.set_highest_sequence_id(static_cast<uint64_t>(batch.back().sequence_id));
  auto payload = maybe_compress(builder.finish(), md);
  if (!payload.ok()) {
    for (auto& b : batch) b.callback(payload.status());
    return;
  }
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SEND);
  auto* send = cmd.mutable_send();
  send->set_producer_id(producer_id_);
  send->set_sequence_id(static_cast<uint64_t>(batch.front().sequence_id));
  send->set_num_messages(n);
  send->set_highest_sequence_id(static_cast<uint64_t>(batch.back().sequence_id));
  OpSend op;
  op.sequence_id = batch.front().sequence_id;
  op.highest_sequence_id = batch.back().sequence_id;
  op.num_messages = n;
  op.batch = true;
  op.frame = protocol::encode_payload_command(cmd, md, BufferChain(std::move(*payload)));
  op.created = batch.front().created;
  for (auto& b : batch) op.callbacks.push_back(std::move(b.callback));
  push_op(std::move(op));
}

void ProducerImpl::send_single(Message message, SendCallback callback, int64_t sequence_id) {
  wire::MessageMetadata md;
  md.set_producer_name(name());
  md.set_sequence_id(static_cast<uint64_t>(sequence_id));
  md.set_publish_time(now_ms());
  if (message.has_key()) md.set_partition_key(message.key());
  if (message.has_ordering_key()) md.set_ordering_key(message.ordering_key());
  for (const auto& [k, v] : message.properties()) {
    auto* kv = md.add_properties();
    kv->set_key(k);
    kv->set_value(v);
  }
  if (message.event_time() > 0) md.set_event_time(message.event_time());
  if (message.deliver_at() > 0) md.set_deliver_at_time(static_cast<int64_t>(message.deliver_at()));
  for (const auto& c : message.replicate_to()) md.add_replicate_to(c);
  auto payload = maybe_compress(Buffer::copy_of(message.payload()), md);
  if (!payload.ok()) {
    callback(payload.status());
    return;
  }
  // Leave room for the metadata and the frame header within the broker's limit.
  const size_t room =
      static_cast<size_t>(max_message_size_) -
      std::min(static_cast<size_t>(max_message_size_) / 2, md.ByteSizeLong() + kChunkOverhead);
  if (payload->size() > room) {
    if (!options_.chunking_enabled) {
      callback(Status(ClientError::kMessageTooBig,
                      fmt::format("message of {} bytes is larger than the broker's limit of {}",
                                  payload->size(), max_message_size_)));
      return;
    }
    send_chunks(md, *payload, room, std::move(callback), sequence_id);
    return;
  }
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SEND);
  cmd.mutable_send()->set_producer_id(producer_id_);
  cmd.mutable_send()->set_sequence_id(static_cast<uint64_t>(sequence_id));
  cmd.mutable_send()->set_num_messages(1);
  OpSend op;
  op.sequence_id = sequence_id;
  op.highest_sequence_id = sequence_id;
  op.frame = protocol::encode_payload_command(cmd, md, BufferChain(std::move(*payload)));
  op.created = Clock::now();
  op.callbacks.push_back(std::move(callback));
  push_op(std::move(op));
}

// A message too large for one frame goes as chunks: every chunk is its own SEND with the
// message's sequence id, a shared uuid, its index and the count; the payload is split after
// compression. The message completes with the last chunk's receipt.
void ProducerImpl::send_chunks(const wire::MessageMetadata& md, const Buffer& payload,
                               size_t chunk_size, SendCallback callback, int64_t sequence_id) {
  const size_t total = payload.size();
  const int chunks = static_cast<int>((total + chunk_size - 1) / chunk_size);
  const std::string uuid = fmt::format("{}-{}", md.producer_name(), sequence_id);
  const auto created = Clock::now();
  for (int i = 0; i < chunks; ++i) {
    wire::MessageMetadata chunk = md;
    chunk.set_uuid(uuid);
    chunk.set_chunk_id(i);
    chunk.set_num_chunks_from_msg(chunks);
    chunk.set_total_chunk_msg_size(static_cast<int32_t>(total));
    const size_t offset = static_cast<size_t>(i) * chunk_size;
    Buffer part = payload.slice(offset, std::min(chunk_size, total - offset));
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::SEND);
    cmd.mutable_send()->set_producer_id(producer_id_);
    cmd.mutable_send()->set_sequence_id(static_cast<uint64_t>(sequence_id));
    cmd.mutable_send()->set_num_messages(1);
    cmd.mutable_send()->set_is_chunk(true);
    OpSend op;
    op.sequence_id = sequence_id;
    op.highest_sequence_id = sequence_id;
    op.frame = protocol::encode_payload_command(cmd, chunk, BufferChain(std::move(part)));
    op.created = created;
    // Only the last chunk's receipt completes the message.
    op.callbacks.push_back(i + 1 == chunks ? std::move(callback) : SendCallback());
    push_op(std::move(op));
  }
}

void ProducerImpl::push_op(OpSend op) {
  pending_.push_back(std::move(op));
  if (cnx_ && state_ == State::kReady) cnx_->send_frame(pending_.back().frame);
}

Task<void> ProducerImpl::batch_timer_loop() {
  auto self = shared_from_this();
  while (state_ != State::kClosed) {
    boost::system::error_code ec;
    co_await batch_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (state_ == State::kClosed) break;
    if (!ec) {
      flush_batch();
      batch_timer_.expires_at(asio::steady_timer::time_point::max());
    }
  }
}

Task<void> ProducerImpl::timeout_loop() {
  auto self = shared_from_this();
  if (options_.send_timeout.count() <= 0) co_return;
  const auto tick = std::clamp(options_.send_timeout / 4, std::chrono::milliseconds(10),
                               std::chrono::milliseconds(1000));
  while (state_ != State::kClosed) {
    co_await sleep_until(wake_event_, Clock::now() + tick);
    if (state_ == State::kClosed) break;
    const auto now = Clock::now();
    const Status timeout(ClientError::kTimeout,
                         fmt::format("not acknowledged within the send timeout of {} ms",
                                     options_.send_timeout.count()));
    while (!pending_.empty() && now - pending_.front().created >= options_.send_timeout) {
      OpSend op = std::move(pending_.front());
      pending_.pop_front();
      complete_op(op, timeout);
    }
    if (!batch_.empty() && now - batch_.front().created >= options_.send_timeout) {
      auto batch = std::move(batch_);
      batch_.clear();
      batch_bytes_ = 0;
      for (auto& b : batch) b.callback(timeout);
      progress_event_.notify_all();
    }
  }
}

Task<Status> ProducerImpl::flush_on_loop(Deadline deadline) {
  auto self = shared_from_this();
  flush_batch();
  if (pending_.empty()) co_return Status::OK();
  const int64_t target = pending_.back().sequence_id;
  while (!pending_.empty() && pending_.front().sequence_id <= target) {
    if (state_ == State::kClosed) {
      co_return Status(ClientError::kAlreadyClosed, "producer closed");
    }
    if (!co_await progress_event_.wait_until(deadline)) {
      co_return Status(ClientError::kTimeout, "flush timed out");
    }
  }
  co_return Status::OK();
}

Task<Status> ProducerImpl::close_on_loop() {
  auto self = shared_from_this();
  if (state_ == State::kClosing || state_ == State::kClosed) co_return Status::OK();
  const Deadline deadline = deadline_after(client_->options().operation_timeout);
  if (cnx_ && state_ == State::kReady) (void)co_await flush_on_loop(deadline);
  if (state_ == State::kClosing || state_ == State::kClosed) co_return Status::OK();
  const bool was_ready = state_ == State::kReady && cnx_ && cnx_->ready();
  state_ = State::kClosing;
  closed_ = true;
  if (was_ready) {
    auto cnx = cnx_;
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::CLOSE_PRODUCER);
    const uint64_t id = client_->next_request_id();
    cmd.mutable_close_producer()->set_producer_id(producer_id_);
    cmd.mutable_close_producer()->set_request_id(id);
    auto r = co_await cnx->request(cmd, id, deadline);
    if (!r.ok()) log_.debug("CLOSE_PRODUCER: {}", r.status().to_string());
    cnx->remove_producer(producer_id_);
  }
  state_ = State::kClosed;
  connected_ = false;
  cnx_.reset();
  fail_pending(Status(ClientError::kAlreadyClosed, "producer closed"));
  if (!create_status_) create_status_ = Status(ClientError::kAlreadyClosed, "producer closed");
  batch_timer_.cancel();
  wake_event_.notify_all();
  state_event_.notify_all();
  progress_event_.notify_all();
  slot_cv_.notify_all();
  log_.debug("closed");
  co_return Status::OK();
}

Status ProducerImpl::flush() {
  if (closed_) return Status(ClientError::kAlreadyClosed, "producer closed");
  auto self = shared_from_this();
  const auto budget = options_.send_timeout.count() > 0 ? options_.send_timeout
                                                        : client_->options().operation_timeout;
  return block_on<Status>(
      executor(), [self, budget]() { return self->flush_on_loop(deadline_after(budget)); }, budget);
}

void ProducerImpl::close_async() {
  if (closed_) return;
  auto self = shared_from_this();
  asio::co_spawn(
      executor(), [self]() { return self->close_on_loop(); }, asio::detached);
}

Status ProducerImpl::close() {
  if (closed_ && client_->closed()) return Status::OK();
  auto self = shared_from_this();
  return block_on<Status>(
      executor(), [self]() { return self->close_on_loop(); },
      client_->options().operation_timeout * 2);
}

}  // namespace magnetar::client
