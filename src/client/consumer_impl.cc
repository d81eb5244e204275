#include "client/consumer_impl.h"

#include <fmt/format.h>

#include <random>

#include "client/schema.h"
#include "client/message_access.h"
#include "client/producer_impl.h"
#include "protocol/batch.h"

namespace magnetar::client {

namespace {

constexpr size_t kMaxRemembered = 100'000;  // acknowledged entries kept for filtering
constexpr uint32_t kMaxUncompressed = 64 * 1024 * 1024;

wire::CommandSubscribe::SubType to_wire(SubscriptionType t) {
  switch (t) {
    case SubscriptionType::kExclusive:
      return wire::CommandSubscribe::Exclusive;
    case SubscriptionType::kShared:
      return wire::CommandSubscribe::Shared;
    case SubscriptionType::kFailover:
      return wire::CommandSubscribe::Failover;
    case SubscriptionType::kKeyShared:
      return wire::CommandSubscribe::Key_Shared;
  }
  return wire::CommandSubscribe::Exclusive;
}

bool shared_type(SubscriptionType t) {
  return t == SubscriptionType::kShared || t == SubscriptionType::kKeyShared;
}

void set_id(wire::MessageIdData* out, int64_t ledger, int64_t entry) {
  out->set_ledgerid(static_cast<uint64_t>(ledger));
  out->set_entryid(static_cast<uint64_t>(entry));
}

std::string random_suffix() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{:010x}", rng() & 0xffffffffffULL);
}

}  // namespace

// ---------------------------------------------------------------------------------------
// ConsumerBase: receiving from the queue

Result<Message> ConsumerBase::receive(std::optional<std::chrono::milliseconds> timeout) {
  if (has_listener_) {
    return Status(ClientError::kInvalidConfiguration,
                  "receive() cannot be used with a message listener");
  }
  if (closed()) return Status(ClientError::kAlreadyClosed, "consumer closed");
  auto item = queue_->pop(timeout ? deadline_after(std::max(*timeout, std::chrono::milliseconds(1)))
                                  : Deadline::max());
  if (!item) {
    if (closed() || queue_->closed()) return Status(ClientError::kAlreadyClosed, "consumer closed");
    return Status(ClientError::kTimeout, "no message received in time");
  }
  item->source->on_dequeued(item->message, item->epoch);
  return std::move(item->message);
}

Result<std::vector<Message>> ConsumerBase::batch_receive() {
  if (has_listener_) {
    return Status(ClientError::kInvalidConfiguration,
                  "batch_receive() cannot be used with a message listener");
  }
  if (closed()) return Status(ClientError::kAlreadyClosed, "consumer closed");
  std::vector<Message> out;
  size_t bytes = 0;
  const Deadline deadline = deadline_after(batch_policy_.timeout);
  while (static_cast<int>(out.size()) < std::max(1, batch_policy_.max_messages) &&
         bytes < batch_policy_.max_bytes) {
    auto item = queue_->pop(deadline);
    if (!item) break;
    item->source->on_dequeued(item->message, item->epoch);
    bytes += item->message.payload().size();
    out.push_back(std::move(item->message));
  }
  if (out.empty() && (closed() || queue_->closed())) {
    return Status(ClientError::kAlreadyClosed, "consumer closed");
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// ConsumerImpl

ConsumerImpl::ConsumerImpl(std::shared_ptr<ClientImpl> client, Config config)
    : ConsumerBase(config.queue ? config.queue : std::make_shared<ReceiveQueue>(),
                   static_cast<bool>(config.options.listener), config.options.batch_receive_policy),
      Reconnecting(client->options()),
      client_(std::move(client)),
      config_(std::move(config)),
      loop_(client_->pick_loop()),
      consumer_id_(client_->next_consumer_id()),
      topic_ptr_(std::make_shared<const std::string>(config_.topic)),
      owns_queue_(config_.queue == nullptr),
      log_(log::Logger("client.consumer")
               .with("topic", config_.topic)
               .with("sub", config_.subscription)
               .with("consumer_id", consumer_id_)),
      start_id_(config_.start_id),
      start_inclusive_(config_.start_inclusive),
      ack_timer_(client_->executor(loop_)) {}

ConsumerImpl::~ConsumerImpl() = default;

bool ConsumerImpl::gives_up_on(const Status& st, bool created) const {
  if (auto c = client_error_of(st)) {
    return *c == ClientError::kInvalidConfiguration || *c == ClientError::kAlreadyClosed;
  }
  auto se = server_error_of(st);
  if (!se) return false;
  switch (*se) {
    case ServerError::kNotAllowedError:
    case ServerError::kAuthorizationError:
    case ServerError::kAuthenticationError:
    case ServerError::kInvalidTopicName:
    case ServerError::kIncompatibleSchema:
    case ServerError::kUnsupportedVersionError:
    case ServerError::kTopicNotFound:
    case ServerError::kSubscriptionNotFound:
    case ServerError::kConsumerAssignError:
      return true;
    case ServerError::kConsumerBusy:
      return !created;
    default:
      return false;
  }
}

Task<Status> ConsumerImpl::create(Deadline deadline) {
  auto self = shared_from_this();
  asio::co_spawn(
      executor(), [self]() { return self->run(); }, asio::detached);
  asio::co_spawn(
      executor(), [self]() { return self->tick_loop(); }, asio::detached);
  const std::string what = fmt::format("subscribe to {}", config_.topic);
  Status created = co_await await_created(deadline, what);
  co_return created;
}

Task<void> ConsumerImpl::run() {
  auto self = shared_from_this();
  co_await reconnect_loop(client_->options().operation_timeout, log_, "subscribing failed");
}

Task<Status> ConsumerImpl::connect_once(Deadline deadline) {
  auto self = shared_from_this();
  auto addr = co_await client_->lookup(loop_, config_.topic, deadline);
  if (!addr.ok()) co_return addr.status();
  auto got = co_await client_->get_connection(loop_, addr->logical, addr->physical, deadline);
  if (!got.ok()) co_return got.status();
  std::shared_ptr<ClientConnection> cnx = *got;
  while (seek_in_flight_ && state_ == State::kConnecting) {
    if (!co_await state_event_.wait_until(deadline)) {
      co_return Status(ClientError::kTimeout, "the seek's answer did not come in time");
    }
  }
  if (state_ != State::kConnecting) co_return Status(ClientError::kAlreadyClosed, "closed");
  // A fresh subscription: what was queued and not handed out comes again from the broker.
  queue_->remove_from(this);
  ++epoch_;
  chunks_.clear();  // chunks are sent again from the first
  if (const int64_t cluster = client_->cluster_switches(); cluster != cluster_epoch_) {
    // The client moved to another cluster: this one's message ids mean nothing there.
    // Acknowledgements not sent yet are dropped (a replicated subscription carried the
    // position; otherwise those messages come again), and a reader starts over from where
    // it was made to start.
    cluster_epoch_ = cluster;
    forget_cluster_state();
  }
  if (!config_.durable && last_dequeued_) {
    start_id_ = last_dequeued_;
    start_inclusive_ = false;
  }
  cnx->add_consumer(consumer_id_, weak_from_this());
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SUBSCRIBE);
  const uint64_t request_id = client_->next_request_id();
  auto* s = cmd.mutable_subscribe();
  const auto& o = config_.options;
  s->set_topic(config_.topic);
  s->set_subscription(config_.subscription);
  s->set_subtype(to_wire(o.type));
  s->set_consumer_id(consumer_id_);
  s->set_request_id(request_id);
  if (!o.consumer_name.empty()) s->set_consumer_name(o.consumer_name);
  s->set_priority_level(o.priority_level);
  s->set_durable(config_.durable);
  s->set_read_compacted(o.read_compacted);
  s->set_replicate_subscription_state(o.replicate_subscription_state);
  if (o.schema) {
    auto schema = wire_schema(*o.schema, config_.topic);
    if (!schema.ok()) {
      cnx->remove_consumer(consumer_id_);
      co_return schema.status();
    }
    *s->mutable_schema() = std::move(schema).value();
  }
  s->set_initialposition(o.initial_position == InitialPosition::kEarliest
                             ? wire::CommandSubscribe::Earliest
                             : wire::CommandSubscribe::Latest);
  for (const auto& [k, v] : o.properties) {
    auto* kv = s->add_metadata();
    kv->set_key(k);
    kv->set_value(v);
  }
  if (!config_.durable && start_id_) {
    auto* id = s->mutable_start_message_id();
    set_id(id, start_id_->ledger_id(), start_id_->entry_id());
    if (start_id_->batch_index() >= 0) id->set_batch_index(start_id_->batch_index());
  }
  if (o.type == SubscriptionType::kKeyShared) {
    s->mutable_keysharedmeta()->set_keysharedmode(wire::AUTO_SPLIT);
  }
  auto r = co_await cnx->request(cmd, request_id, deadline);
  if (!r.ok()) {
    cnx->remove_consumer(consumer_id_);
    co_return r.status();
  }
  if (state_ != State::kConnecting) {
    // Closed (or given up) meanwhile: undo the subscription's consumer on the broker too.
    cnx->remove_consumer(consumer_id_);
    wire::BaseCommand close;
    close.set_type(wire::BaseCommand::CLOSE_CONSUMER);
    close.mutable_close_consumer()->set_consumer_id(consumer_id_);
    close.mutable_close_consumer()->set_request_id(client_->next_request_id());
    cnx->send_command(close);
    co_return Status(ClientError::kAlreadyClosed, "closed");
  }
  cnx_ = cnx;
  state_ = State::kReady;
  connected_ = true;
  seeking_ = false;
  available_permits_ = 0;
  send_flow(static_cast<uint32_t>(std::max(1, o.receiver_queue_size)));
  flush_acks();
  log_.info("subscribed on {}", cnx->physical_address());
  state_event_.notify_all();
  co_return Status::OK();
}

void ConsumerImpl::on_disconnected(ClientConnection& cnx) {
  if (cnx_.get() != &cnx) return;
  log_.info("connection lost; re-subscribing");
  drop_connection();
}

void ConsumerImpl::drop_connection() {
  cnx_.reset();
  connected_ = false;
  if (state_ == State::kReady) state_ = State::kConnecting;
  state_event_.notify_all();
}

void ConsumerImpl::on_frame(ClientConnection& cnx, protocol::Frame& frame) {
  const auto& cmd = frame.command;
  switch (cmd.type()) {
    case wire::BaseCommand::MESSAGE:
      handle_message(cnx, frame);
      return;
    case wire::BaseCommand::CLOSE_CONSUMER:
      if (unsubscribing_) {
        closed_while_unsubscribing_ = true;  // expected: the broker drops the subscription
        return;
      }
      if (cnx_.get() == &cnx) {
        log_.info("closed by the broker; re-subscribing");
        drop_connection();
      }
      return;
    case wire::BaseCommand::REACHED_END_OF_TOPIC:
      reached_end_ = true;
      return;
    case wire::BaseCommand::ACTIVE_CONSUMER_CHANGE:
      active_ = cmd.active_consumer_change().is_active();
      if (active_ && cnx_.get() == &cnx) {
        // An empty FLOW wakes the broker's dispatcher for the newly active consumer (our
        // broker can miss that wake-up when the previous active consumer leaves).
        wire::BaseCommand flow;
        flow.set_type(wire::BaseCommand::FLOW);
        flow.mutable_flow()->set_consumer_id(consumer_id_);
        flow.mutable_flow()->set_messagepermits(0);
        cnx.send_command(flow);
      }
      return;
    default:
      return;
  }
}

bool ConsumerImpl::skip(const MessageId& id, uint64_t publish_time) const {
  // A non-persistent topic's messages all carry id 0:0: there is no position to start from,
  // and a reader that reconnected would otherwise skip everything after its last message.
  const bool positioned = !std::string_view(config_.topic).starts_with("non-persistent://");
  if (positioned && start_id_ && !start_id_->is_earliest() && !start_id_->is_latest()) {
    const Entry e{id.ledger_id(), id.entry_id()};
    const Entry s{start_id_->ledger_id(), start_id_->entry_id()};
    if (start_id_->batch_index() < 0 || id.batch_index() < 0) {
      if (e < s || (e == s && !start_inclusive_)) return true;
    } else {
      if (e < s) return true;
      if (e == s && (id.batch_index() < start_id_->batch_index() ||
                     (id.batch_index() == start_id_->batch_index() && !start_inclusive_))) {
        return true;
      }
    }
  }
  if (min_publish_time_ && publish_time < *min_publish_time_) return true;
  return false;
}

bool ConsumerImpl::already_acked(const MessageId& id) const {
  // A non-persistent topic's messages all carry id 0:0 and are never redelivered: nothing to
  // filter, and after the first acknowledgement every later message would look acknowledged
  // (Pulsar's client keeps no acknowledged set for them either).
  if (std::string_view(config_.topic).starts_with("non-persistent://")) return false;
  const Entry e{id.ledger_id(), id.entry_id()};
  if (cumulative_acked_ && e <= *cumulative_acked_) return true;
  if (acked_entries_.count(e)) return true;
  if (id.batch_index() >= 0) {
    auto it = batch_acks_.find(e);
    if (it != batch_acks_.end() && static_cast<size_t>(id.batch_index()) < it->second.size() &&
        it->second[static_cast<size_t>(id.batch_index())]) {
      return true;
    }
  }
  return false;
}

void ConsumerImpl::handle_message(ClientConnection& cnx, protocol::Frame& frame) {
  if (cnx_.get() != &cnx || state_ != State::kReady || seeking_) return;
  const auto& m = frame.command.message();
  const auto ledger = static_cast<int64_t>(m.message_id().ledgerid());
  const auto entry = static_cast<int64_t>(m.message_id().entryid());
  const auto& md = frame.metadata;
  std::vector<Entry> chunk_entries;
  if (md.has_num_chunks_from_msg() && md.num_chunks_from_msg() > 1) {
    if (!collect_chunk(frame, {ledger, entry}, &chunk_entries)) return;
  }
  const bool batched = md.has_num_messages_in_batch();
  auto unpacked = protocol::unpack_messages(md, frame.payload, kMaxUncompressed);
  if (!unpacked.ok()) {
    log_.error("discarding undecodable entry {}:{}: {}", ledger, entry,
               unpacked.status().to_string());
    send_ack({ledger, entry}, false);
    add_permits(std::max(1, md.num_messages_in_batch()));
    return;
  }
  const int n = static_cast<int>(unpacked->size());
  int dropped = 0;
  bool reack = false;
  for (int i = 0; i < n; ++i) {
    auto& single = (*unpacked)[static_cast<size_t>(i)];
    MessageId id(ledger, entry, config_.partition, batched ? i : -1, batched ? n : 0);
    id.set_topic(topic_ptr_);
    if (already_acked(id)) {
      ++dropped;
      // Re-acknowledge only what is acknowledged whole (not single indexes of a batch).
      const Entry e{ledger, entry};
      reack |= acked_entries_.count(e) > 0 || (cumulative_acked_ && e <= *cumulative_acked_);
      continue;
    }
    if (skip(id, md.publish_time()) || (batched && single.metadata.compacted_out())) {
      ++dropped;
      if (batched) {
        auto& bits = batch_acks_[{ledger, entry}];
        if (bits.empty()) bits.assign(static_cast<size_t>(n), false);
        bits[static_cast<size_t>(i)] = true;
      }
      continue;
    }
    Message msg(single.payload.to_string());
    const auto& s = single.metadata;
    int64_t sequence_id = static_cast<int64_t>(md.sequence_id());
    if (batched) {
      if (s.has_partition_key()) msg.set_key(s.partition_key());
      if (s.has_ordering_key()) msg.set_ordering_key(s.ordering_key());
      for (const auto& kv : s.properties()) msg.set_property(kv.key(), kv.value());
      if (s.has_event_time()) msg.set_event_time(s.event_time());
      sequence_id = s.has_sequence_id() ? static_cast<int64_t>(s.sequence_id()) : sequence_id + i;
    } else {
      if (md.has_partition_key()) msg.set_key(md.partition_key());
      if (md.has_ordering_key()) msg.set_ordering_key(md.ordering_key());
      for (const auto& kv : md.properties()) msg.set_property(kv.key(), kv.value());
      if (md.has_event_time()) msg.set_event_time(md.event_time());
    }
    if (md.replicate_to_size() > 0) {
      msg.set_replicate_to({md.replicate_to().begin(), md.replicate_to().end()});
    }
    MessageAccess::set_received(msg, id, md.publish_time(), m.redelivery_count(), config_.topic,
                                md.producer_name(), sequence_id);
    const auto& dlq = config_.options.dead_letter_policy;
    if (dlq && dlq->max_redeliver_count > 0 &&
        m.redelivery_count() > static_cast<uint32_t>(dlq->max_redeliver_count)) {
      ++dropped;
      dead_letter(std::move(msg));
      continue;
    }
    if (!chunk_entries.empty()) chunk_entries_[{ledger, entry}] = chunk_entries;
    deliver(std::move(msg));
  }
  if (reack) {
    // A redelivery of something this consumer acknowledged already: tell the broker again.
    if (cumulative_acked_ && Entry{ledger, entry} <= *cumulative_acked_) {
      send_ack(*cumulative_acked_, true);
    } else {
      send_ack({ledger, entry}, false);
    }
  }
  if (dropped > 0) add_permits(dropped);
}

bool ConsumerImpl::collect_chunk(protocol::Frame& frame, const Entry& entry,
                                 std::vector<Entry>* entries) {
  constexpr size_t kMaxPendingChunked = 100;
  const auto& md = frame.metadata;
  const std::string& uuid = md.uuid();
  auto it = chunks_.find(uuid);
  if (md.chunk_id() == 0) {
    if (it != chunks_.end()) chunks_.erase(it);  // a redelivery starts it over
    if (chunks_.size() >= kMaxPendingChunked) {
      auto oldest = std::min_element(
          chunks_.begin(), chunks_.end(),
          [](const auto& a, const auto& b) { return a.second.started < b.second.started; });
      log_.warn("dropping incomplete chunked message {}", oldest->first);
      chunks_.erase(oldest);
    }
    it = chunks_.emplace(uuid, ChunkedMessage{{}, {}, Clock::now()}).first;
  }
  if (it == chunks_.end() || static_cast<int>(it->second.parts.size()) != md.chunk_id()) {
    // A chunk without its predecessors (they were acknowledged or lost): skip it.
    log_.debug("dropping out-of-order chunk {} of {}", md.chunk_id(), uuid);
    if (it != chunks_.end()) chunks_.erase(it);
    add_permits(1);
    return false;
  }
  it->second.parts.push_back(frame.payload);
  it->second.entries.push_back(entry);
  if (static_cast<int>(it->second.parts.size()) < md.num_chunks_from_msg()) {
    add_permits(1);  // the message is handed out (and its permit returned) only once whole
    return false;
  }
  BufferChain whole;
  for (auto& p : it->second.parts) whole.append(std::move(p));
  frame.payload = whole.flatten();
  *entries = std::move(it->second.entries);
  chunks_.erase(it);
  return true;
}

void ConsumerImpl::deliver(Message message) {
  queue_->push(QueuedMessage{std::move(message), shared_from_this(), epoch_});
  if (!config_.options.listener) return;
  std::weak_ptr<ConsumerBase> owner = owner_;
  auto queue = queue_;
  auto listener = config_.options.listener;
  asio::post(client_->listener_executor(), [owner, queue, listener] {
    auto item = queue->try_pop();
    if (!item) return;
    item->source->on_dequeued(item->message, item->epoch);
    auto base = owner.lock();
    if (!base) return;
    Consumer consumer = ConsumerAccess::make(base);
    listener(consumer, item->message);
  });
}

void ConsumerImpl::on_dequeued(const Message& m, uint64_t epoch) {
  auto self = shared_from_this();
  asio::post(executor(), [self, id = m.id(), epoch] {
    if (epoch != self->epoch_ || self->state_ == State::kClosed) return;
    self->last_dequeued_ = id;
    if (self->config_.options.ack_timeout.count() > 0) {
      self->unacked_.try_emplace(Entry{id.ledger_id(), id.entry_id()},
                                 Clock::now() + self->config_.options.ack_timeout);
    }
    self->add_permits(1);
  });
}

void ConsumerImpl::add_permits(int n) {
  available_permits_ += n;
  const int threshold = std::max(1, config_.options.receiver_queue_size / 2);
  if (available_permits_ >= threshold && cnx_ && state_ == State::kReady) {
    send_flow(static_cast<uint32_t>(available_permits_));
    available_permits_ = 0;
  }
}

void ConsumerImpl::send_flow(uint32_t permits) {
  if (!cnx_ || permits == 0) return;
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::FLOW);
  cmd.mutable_flow()->set_consumer_id(consumer_id_);
  cmd.mutable_flow()->set_messagepermits(permits);
  cnx_->send_command(cmd);
}

void ConsumerImpl::send_ack(const Entry& entry, bool cumulative) {
  if (cumulative) {
    if (!pending_cumulative_ || *pending_cumulative_ < entry) pending_cumulative_ = entry;
  } else {
    pending_acks_.push_back(entry);
    if (pending_acks_.size() > kMaxRemembered) {
      // Disconnected for long: the oldest are redelivered later, then filtered and re-acked.
      pending_acks_.erase(pending_acks_.begin(),
                          pending_acks_.begin() + static_cast<std::ptrdiff_t>(kMaxRemembered / 2));
    }
  }
  const auto& o = config_.options;
  if (o.ack_grouping_time.count() <= 0 ||
      pending_acks_.size() >= static_cast<size_t>(std::max(1, o.ack_grouping_max_size))) {
    flush_acks();
    return;
  }
  if (ack_flush_scheduled_) return;
  ack_flush_scheduled_ = true;
  auto self = shared_from_this();
  ack_timer_.expires_after(o.ack_grouping_time);
  ack_timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    auto self = weak.lock();
    if (!self || ec) return;  // cancelled: closed (after a last flush)
    self->ack_flush_scheduled_ = false;
    self->flush_acks();
  });
}

void ConsumerImpl::flush_acks() {
  // Not connected: kept, and sent once subscribed again (what the broker redelivers
  // meanwhile is filtered as already acknowledged).
  if (!cnx_ || state_ != State::kReady) return;
  if (pending_cumulative_) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::ACK);
    auto* a = cmd.mutable_ack();
    a->set_consumer_id(consumer_id_);
    a->set_ack_type(wire::CommandAck::Cumulative);
    set_id(a->add_message_id(), pending_cumulative_->first, pending_cumulative_->second);
    cnx_->send_command(cmd);
    pending_cumulative_.reset();
  }
  if (!pending_acks_.empty()) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::ACK);
    auto* a = cmd.mutable_ack();
    a->set_consumer_id(consumer_id_);
    a->set_ack_type(wire::CommandAck::Individual);
    for (const auto& e : pending_acks_) set_id(a->add_message_id(), e.first, e.second);
    cnx_->send_command(cmd);
    pending_acks_.clear();
  }
}

void ConsumerImpl::forget_cluster_state() {
  last_dequeued_.reset();
  start_id_ = config_.start_id;
  start_inclusive_ = config_.start_inclusive;
  cumulative_acked_.reset();
  acked_entries_.clear();
  batch_acks_.clear();
  pending_acks_.clear();
  pending_cumulative_.reset();
  unacked_.clear();
  nacked_.clear();
  chunk_entries_.clear();
}

void ConsumerImpl::remember_acked(const Entry& entry) {
  acked_entries_.insert(entry);
  while (acked_entries_.size() > kMaxRemembered) acked_entries_.erase(acked_entries_.begin());
}

void ConsumerImpl::do_ack(const MessageId& id, bool cumulative) {
  const Entry e{id.ledger_id(), id.entry_id()};
  if (!cumulative) {
    if (id.batch_index() >= 0 && id.batch_size() > 1) {
      auto& bits = batch_acks_[e];
      if (bits.empty()) bits.assign(static_cast<size_t>(id.batch_size()), false);
      if (static_cast<size_t>(id.batch_index()) < bits.size()) {
        bits[static_cast<size_t>(id.batch_index())] = true;
      }
      for (bool b : bits) {
        if (!b) return;  // the entry is acknowledged once all its messages are
      }
      batch_acks_.erase(e);
    }
    remember_acked(e);
    unacked_.erase(e);
    nacked_.erase(e);
    if (auto chunked = chunk_entries_.find(e); chunked != chunk_entries_.end()) {
      for (const auto& part : chunked->second) {
        if (part != e) send_ack(part, false);
      }
      chunk_entries_.erase(chunked);
    }
    send_ack(e, false);
    return;
  }
  Entry upto = e;
  if (id.batch_index() >= 0 && id.batch_index() < id.batch_size() - 1) {
    // Part of a batch: the entries before it are done; this one once its last message is.
    auto& bits = batch_acks_[e];
    if (bits.empty()) bits.assign(static_cast<size_t>(id.batch_size()), false);
    for (int i = 0; i <= id.batch_index(); ++i) bits[static_cast<size_t>(i)] = true;
    if (e.second == 0) return;
    upto = Entry{e.first, e.second - 1};
  }
  if (cumulative_acked_ && upto <= *cumulative_acked_) return;
  cumulative_acked_ = upto;
  unacked_.erase(unacked_.begin(), unacked_.upper_bound(upto));
  nacked_.erase(nacked_.begin(), nacked_.upper_bound(upto));
  batch_acks_.erase(batch_acks_.begin(), batch_acks_.upper_bound(upto));
  chunk_entries_.erase(chunk_entries_.begin(), chunk_entries_.upper_bound(upto));
  send_ack(upto, true);
}

Status ConsumerImpl::acknowledge(const MessageId& id, bool cumulative) {
  if (closed_) return Status(ClientError::kAlreadyClosed, "consumer closed");
  if (cumulative && shared_type(config_.options.type)) {
    return Status(ClientError::kCumulativeAckNotAllowed,
                  "cumulative acknowledgement is not allowed on Shared and Key_Shared "
                  "subscriptions");
  }
  auto self = shared_from_this();
  asio::post(executor(), [self, id, cumulative] { self->do_ack(id, cumulative); });
  return Status::OK();
}

void ConsumerImpl::negative_acknowledge(const MessageId& id) {
  if (closed_) return;
  auto self = shared_from_this();
  asio::post(executor(), [self, id] {
    const Entry e{id.ledger_id(), id.entry_id()};
    self->unacked_.erase(e);
    self->nacked_[e] = Clock::now() + self->config_.options.negative_ack_redelivery_delay;
    self->wake_event_.notify_all();  // the tick loop re-plans
  });
}

void ConsumerImpl::redeliver_unacknowledged() {
  if (closed_) return;
  auto self = shared_from_this();
  asio::post(executor(), [self] { self->redeliver_all(); });
}

void ConsumerImpl::redeliver(const std::vector<Entry>& entries) {
  if (entries.empty() || !cnx_ || state_ != State::kReady) return;
  flush_acks();
  if (!shared_type(config_.options.type)) {
    redeliver_all();
    return;
  }
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::REDELIVER_UNACKNOWLEDGED_MESSAGES);
  auto* r = cmd.mutable_redeliverunacknowledgedmessages();
  r->set_consumer_id(consumer_id_);
  for (const auto& e : entries) {
    auto chunked = chunk_entries_.find(e);
    if (chunked == chunk_entries_.end()) {
      set_id(r->add_message_ids(), e.first, e.second);
      continue;
    }
    for (const auto& part : chunked->second) set_id(r->add_message_ids(), part.first, part.second);
  }
  cnx_->send_command(cmd);
}

void ConsumerImpl::redeliver_all() {
  if (!cnx_ || state_ != State::kReady) return;
  flush_acks();  // so that the broker does not rewind over them
  unacked_.clear();
  nacked_.clear();
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::REDELIVER_UNACKNOWLEDGED_MESSAGES);
  cmd.mutable_redeliverunacknowledgedmessages()->set_consumer_id(consumer_id_);
  cnx_->send_command(cmd);
  if (!shared_type(config_.options.type)) {
    // The broker rewinds to the first unacknowledged message: what is queued here comes
    // again, so drop it and give its permits back.
    const size_t removed = queue_->remove_from(this);
    ++epoch_;
    if (removed > 0) send_flow(static_cast<uint32_t>(removed));
  }
}

Task<void> ConsumerImpl::tick_loop() {
  auto self = shared_from_this();
  const auto& o = config_.options;
  auto tick = o.negative_ack_redelivery_delay / 4;
  if (o.ack_timeout.count() > 0) tick = std::min(tick, o.ack_timeout / 4);
  tick = std::clamp(tick, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  while (state_ != State::kClosed) {
    co_await sleep_until(wake_event_, Clock::now() + tick);
    if (state_ == State::kClosed) break;
    const auto now = Clock::now();
    std::vector<Entry> due;
    for (auto* map : {&unacked_, &nacked_}) {
      for (auto it = map->begin(); it != map->end();) {
        if (it->second <= now) {
          due.push_back(it->first);
          it = map->erase(it);
        } else {
          ++it;
        }
      }
    }
    if (!due.empty()) {
      std::sort(due.begin(), due.end());
      due.erase(std::unique(due.begin(), due.end()), due.end());
      log_.debug("redelivering {} unacknowledged entries", due.size());
      redeliver(due);
    }
  }
}

void ConsumerImpl::dead_letter(Message message) {
  const auto& policy = *config_.options.dead_letter_policy;
  if (!dlq_producer_) {
    const std::string dlq_topic =
        policy.dead_letter_topic.empty()
            ? fmt::format("{}-{}-DLQ", config_.topic, config_.subscription)
            : policy.dead_letter_topic;
    ProducerOptions po;
    po.producer_name =
        fmt::format("{}-{}-DLQ-{}", config_.subscription, consumer_id_, random_suffix());
    po.batching_enabled = false;
    po.max_pending_messages = 0;
    dlq_producer_ = std::make_shared<ProducerImpl>(client_, dlq_topic, po, -1);
    auto producer = dlq_producer_;
    const auto timeout = client_->options().operation_timeout;
    asio::co_spawn(
        producer->executor(),
        [producer, timeout]() -> Task<void> {
          Status st = co_await producer->create(deadline_after(timeout));
          if (!st.ok()) log::Logger("client.consumer").warn("DLQ producer: {}", st.to_string());
        },
        asio::detached);
  }
  const MessageId id = message.id();
  Message out(message.payload());
  out.set_properties(message.properties());
  out.set_property("REAL_TOPIC", config_.topic);
  out.set_property("ORIGIN_MESSAGE_ID", id.to_string());
  if (message.has_key()) out.set_key(message.key());
  if (message.event_time() > 0) out.set_event_time(message.event_time());
  auto self = shared_from_this();
  log_.info("message {} redelivered {} times: to the dead-letter topic", id.to_string(),
            message.redelivery_count());
  dlq_producer_->send_async(std::move(out), [self, id](Result<MessageId> r) {
    if (!r.ok()) {
      self->log_.warn("dead-letter publish of {} failed: {}", id.to_string(),
                      r.status().to_string());
      return;
    }
    asio::post(self->executor(), [self, id] { self->do_ack(id, false); });
  });
}

Task<Status> ConsumerImpl::close_on_loop(bool unsubscribe) {
  auto self = shared_from_this();
  if (state_ == State::kClosing || state_ == State::kClosed) {
    co_return unsubscribe ? Status(ClientError::kAlreadyClosed, "consumer closed") : Status::OK();
  }
  const Deadline deadline = deadline_after(client_->options().operation_timeout);
  if (unsubscribe) {
    if (!cnx_ || state_ != State::kReady) {
      co_return Status(ClientError::kDisconnected, "not connected: cannot unsubscribe");
    }
    auto cnx = cnx_;
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::UNSUBSCRIBE);
    pending_acks_.clear();  // the subscription goes with them
    pending_cumulative_.reset();
    const uint64_t id = client_->next_request_id();
    cmd.mutable_unsubscribe()->set_consumer_id(consumer_id_);
    cmd.mutable_unsubscribe()->set_request_id(id);
    unsubscribing_ = true;
    closed_while_unsubscribing_ = false;
    auto r = co_await cnx->request(cmd, id, deadline);
    unsubscribing_ = false;
    if (!r.ok()) {
      if (closed_while_unsubscribing_ && cnx_ == cnx) drop_connection();
      co_return r.status();
    }
    cnx->remove_consumer(consumer_id_);
  } else if (cnx_ && state_ == State::kReady && cnx_->ready()) {
    flush_acks();
    auto cnx = cnx_;
    state_ = State::kClosing;
    closed_ = true;
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::CLOSE_CONSUMER);
    const uint64_t id = client_->next_request_id();
    cmd.mutable_close_consumer()->set_consumer_id(consumer_id_);
    cmd.mutable_close_consumer()->set_request_id(id);
    auto r = co_await cnx->request(cmd, id, deadline);
    if (!r.ok()) log_.debug("CLOSE_CONSUMER: {}", r.status().to_string());
    cnx->remove_consumer(consumer_id_);
  }
  state_ = State::kClosed;
  closed_ = true;
  connected_ = false;
  cnx_.reset();
  ack_timer_.cancel();
  if (!create_status_) create_status_ = Status(ClientError::kAlreadyClosed, "consumer closed");
  queue_->remove_from(this);
  if (owns_queue_) queue_->close();
  wake_event_.notify_all();
  state_event_.notify_all();
  if (dlq_producer_) {
    auto producer = dlq_producer_;
    auto on_loop = asio::co_spawn(
        producer->executor(), [producer]() { return producer->close_on_loop(); },
        asio::use_awaitable);
    (void)co_await std::move(on_loop);
  }
  log_.debug("closed");
  co_return Status::OK();
}

Task<Status> ConsumerImpl::seek_on_loop(std::optional<MessageId> id, uint64_t publish_time) {
  auto self = shared_from_this();
  if (!cnx_ || state_ != State::kReady) {
    co_return Status(ClientError::kDisconnected, "not connected: cannot seek now");
  }
  flush_acks();  // acknowledgements made before the seek belong to the old position
  auto cnx = cnx_;
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::SEEK);
  const uint64_t request_id = client_->next_request_id();
  auto* s = cmd.mutable_seek();
  s->set_consumer_id(consumer_id_);
  s->set_request_id(request_id);
  if (id) {
    set_id(s->mutable_message_id(), id->ledger_id(), id->entry_id());
  } else {
    s->set_message_publish_time(publish_time);
  }
  // The broker closes the subscription's consumers before it answers (as Pulsar does): a
  // re-subscription waits for this answer, which says where to start (connect_once).
  seek_in_flight_ = true;
  auto r =
      co_await cnx->request(cmd, request_id, deadline_after(client_->options().operation_timeout));
  seek_in_flight_ = false;
  state_event_.notify_all();
  if (!r.ok()) co_return r.status();
  // The broker disconnects the subscription's consumers; the re-subscription reads from the
  // new position. Until then, whatever still arrives is from the old one.
  queue_->remove_from(this);
  ++epoch_;
  seeking_ = true;
  pending_acks_.clear();
  pending_cumulative_.reset();
  cumulative_acked_.reset();
  acked_entries_.clear();
  batch_acks_.clear();
  unacked_.clear();
  nacked_.clear();
  last_dequeued_.reset();
  reached_end_ = false;
  if (id) {
    start_id_ = *id;
    start_inclusive_ = true;
    min_publish_time_.reset();
  } else {
    // The broker keeps a reader's subscription where the seek put it; should it be gone when
    // the reader comes back (the topic moved, or it was dropped as abandoned), it is made
    // again from the earliest message and the publish time filter keeps the seek's meaning.
    start_id_ = config_.durable ? std::nullopt : std::optional<MessageId>(MessageId::earliest());
    min_publish_time_ = publish_time;
  }
  log_.info("seek done");
  co_return Status::OK();
}

Task<Result<wire::CommandGetLastMessageIdResponse>> ConsumerImpl::last_message_id_on_loop() {
  auto self = shared_from_this();
  const Deadline deadline = deadline_after(client_->options().operation_timeout);
  while (!cnx_ || state_ != State::kReady) {
    if (state_ == State::kClosed || state_ == State::kClosing) {
      co_return Status(ClientError::kAlreadyClosed, "consumer closed");
    }
    if (!co_await state_event_.wait_until(deadline)) {
      co_return Status(ClientError::kTimeout, "not connected in time");
    }
  }
  auto cnx = cnx_;
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::GET_LAST_MESSAGE_ID);
  const uint64_t request_id = client_->next_request_id();
  cmd.mutable_getlastmessageid()->set_consumer_id(consumer_id_);
  cmd.mutable_getlastmessageid()->set_request_id(request_id);
  auto r = co_await cnx->request(cmd, request_id, deadline);
  if (!r.ok()) co_return r.status();
  co_return r->getlastmessageidresponse();
}

Task<Result<bool>> ConsumerImpl::has_message_available_on_loop() {
  auto self = shared_from_this();
  if (queue_->has_from(this)) co_return true;
  auto r = co_await last_message_id_on_loop();
  if (!r.ok()) co_return r.status();
  if (queue_->has_from(this)) co_return true;
  const auto& last = r->last_message_id();
  const Entry l{static_cast<int64_t>(last.ledgerid()), static_cast<int64_t>(last.entryid())};
  if (l.second < 0) co_return false;
  if (last_dequeued_) co_return l > Entry{last_dequeued_->ledger_id(), last_dequeued_->entry_id()};
  if (!start_id_ || start_id_->is_earliest()) {
    if (!config_.durable) co_return true;
    const auto& md = r->consumer_mark_delete_position();
    co_return l > Entry{static_cast<int64_t>(md.ledgerid()), static_cast<int64_t>(md.entryid())};
  }
  if (start_id_->is_latest()) {
    const auto& md = r->consumer_mark_delete_position();
    co_return l > Entry{static_cast<int64_t>(md.ledgerid()), static_cast<int64_t>(md.entryid())};
  }
  const Entry s{start_id_->ledger_id(), start_id_->entry_id()};
  co_return start_inclusive_ ? l >= s : l > s;
}

Status ConsumerImpl::seek(const MessageId& id) {
  if (closed_) return Status(ClientError::kAlreadyClosed, "consumer closed");
  auto self = shared_from_this();
  return block_on<Status>(
      executor(), [self, id]() { return self->seek_on_loop(id, 0); },
      client_->options().operation_timeout);
}

Status ConsumerImpl::seek_time(uint64_t publish_time_ms) {
  if (closed_) return Status(ClientError::kAlreadyClosed, "consumer closed");
  auto self = shared_from_this();
  return block_on<Status>(
      executor(),
      [self, publish_time_ms]() { return self->seek_on_loop(std::nullopt, publish_time_ms); },
      client_->options().operation_timeout);
}

Status ConsumerImpl::unsubscribe() {
  if (closed_) return Status(ClientError::kAlreadyClosed, "consumer closed");
  auto self = shared_from_this();
  return block_on<Status>(
      executor(), [self]() { return self->close_on_loop(true); },
      client_->options().operation_timeout);
}

void ConsumerImpl::close_async() {
  if (closed_) return;
  auto self = shared_from_this();
  asio::co_spawn(
      executor(), [self]() { return self->close_on_loop(false); }, asio::detached);
}

Status ConsumerImpl::close() {
  if (closed_ && client_->closed()) return Status::OK();
  auto self = shared_from_this();
  return block_on<Status>(
      executor(), [self]() { return self->close_on_loop(false); },
      client_->options().operation_timeout * 2);
}

Result<MessageId> ConsumerImpl::get_last_message_id() {
  if (closed_) return Status(ClientError::kAlreadyClosed, "consumer closed");
  auto self = shared_from_this();
  auto r = block_on<Result<wire::CommandGetLastMessageIdResponse>>(
      executor(), [self]() { return self->last_message_id_on_loop(); },
      client_->options().operation_timeout);
  if (!r.ok()) return r.status();
  const auto& id = r->last_message_id();
  return MessageId(static_cast<int64_t>(id.ledgerid()), static_cast<int64_t>(id.entryid()),
                   config_.partition, id.has_batch_index() ? id.batch_index() : -1);
}

Result<bool> ConsumerImpl::has_message_available() {
  if (closed_) return Status(ClientError::kAlreadyClosed, "consumer closed");
  auto self = shared_from_this();
  return block_on<Result<bool>>(
      executor(), [self]() { return self->has_message_available_on_loop(); },
      client_->options().operation_timeout);
}

}  // namespace magnetar::client
