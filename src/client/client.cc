// The public API: thin handles over the internal implementations.

#include "magnetar/client.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <future>
#include <random>
#include <regex>

#include "client/client_impl.h"
#include "client/consumer_impl.h"
#include "client/message_access.h"
#include "client/multi_consumer.h"
#include "client/partitioned_producer.h"
#include "client/producer_impl.h"
#include "protocol/topic_name.h"

namespace magnetar::client {

namespace {

// The application's handle: when its last copy goes away the object starts closing (the
// library's own references keep it alive until then).
template <typename Base, typename Impl>
std::shared_ptr<Base> user_handle(std::shared_ptr<Impl> impl) {
  Base* raw = impl.get();
  return std::shared_ptr<Base>(raw, [impl](Base*) mutable {
    impl->close_async();
    impl.reset();
  });
}

Status closed_status(const char* what) {
  return Status(ClientError::kAlreadyClosed, fmt::format("{} is closed", what));
}

std::string random_name() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  return fmt::format("{:010x}", rng() & 0xffffffffffULL);
}

// Runs each child's create() on its own loop, all at once, and waits for all of them.
template <typename Child>
Status create_all(const std::vector<std::shared_ptr<Child>>& children, Deadline deadline,
                  std::chrono::milliseconds timeout) {
  std::vector<std::future<Status>> futures;
  for (const auto& c : children) {
    auto promise = std::make_shared<std::promise<Status>>();
    futures.push_back(promise->get_future());
    asio::co_spawn(
        c->executor(), [c, deadline]() { return c->create(deadline); },
        [promise](std::exception_ptr e, Status st) {
          promise->set_value(e ? Status(ClientError::kProtocolError, "internal error") : st);
        });
  }
  Status first;
  for (auto& f : futures) {
    Status st = timeout.count() > 0 &&
                        f.wait_for(timeout + std::chrono::seconds(5)) != std::future_status::ready
                    ? Status(ClientError::kTimeout, "operation timed out")
                    : f.get();
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Client

Result<Client> Client::create(const std::string& service_url, ClientOptions options) {
  auto impl = ClientImpl::create(service_url, options);
  if (!impl.ok()) return impl.status();
  std::shared_ptr<ClientImpl> real = *impl;
  ClientImpl* raw = real.get();
  return Client(std::shared_ptr<ClientImpl>(raw, [real](ClientImpl*) mutable {
    (void)real->close();
    real.reset();
  }));
}

Status Client::close() {
  if (!impl_) return Status::OK();
  return impl_->close();
}

std::string Client::service_url() const { return impl_ ? impl_->service_url() : std::string(); }

int64_t Client::cluster_switches() const { return impl_ ? impl_->cluster_switches() : 0; }

Result<std::vector<std::string>> Client::get_partitions_for_topic(const std::string& topic) {
  if (!impl_ || impl_->closed()) return closed_status("client");
  auto name = protocol::TopicName::parse(topic);
  if (!name.ok()) return name.status();
  auto impl = impl_->shared_from_this();  // never the application's handle
  const int loop = impl->pick_loop();
  const auto timeout = impl->options().operation_timeout;
  const std::string full = name->to_string();
  auto n = block_on<Result<int>>(
      impl->executor(loop),
      [impl, loop, full, timeout]() {
        return impl->partitions_with_retry(loop, full, deadline_after(timeout));
      },
      timeout);
  if (!n.ok()) return n.status();
  std::vector<std::string> out;
  if (*n == 0) {
    out.push_back(full);
  } else {
    for (int i = 0; i < *n; ++i) out.push_back(name->partition(i).to_string());
  }
  return out;
}

Result<Producer> Client::create_producer(const std::string& topic, ProducerOptions options) {
  if (!impl_ || impl_->closed()) return closed_status("client");
  if (options.batching_enabled && options.chunking_enabled) {
    return Status(ClientError::kInvalidConfiguration, "chunking needs batching disabled");
  }
  auto partitions = get_partitions_for_topic(topic);
  if (!partitions.ok()) return partitions.status();
  const auto timeout = options.access_mode == ProducerAccessMode::kWaitForExclusive
                           ? std::chrono::milliseconds(0)
                           : impl_->options().operation_timeout;
  const Deadline deadline = deadline_after(impl_->options().operation_timeout);
  const bool partitioned = !(partitions->size() == 1 &&
                             protocol::TopicName::parse(topic)->to_string() == partitions->front());
  std::vector<std::shared_ptr<ProducerImpl>> children;
  for (size_t i = 0; i < partitions->size(); ++i) {
    children.push_back(std::make_shared<ProducerImpl>(impl_->shared_from_this(), (*partitions)[i],
                                                      options,
                                                      partitioned ? static_cast<int>(i) : -1));
  }
  Status st = create_all(children, deadline, timeout);
  if (!st.ok()) {
    for (auto& c : children) (void)c->close();
    return st;
  }
  if (!partitioned) {
    impl_->track(children.front());
    return Producer(user_handle<ProducerBase>(children.front()));
  }
  auto p = std::make_shared<PartitionedProducer>(protocol::TopicName::parse(topic)->to_string(),
                                                 options, std::move(children));
  impl_->track(p);
  return Producer(user_handle<ProducerBase>(p));
}

namespace {

ConsumerImpl::Config child_config(const std::string& topic, const std::string& subscription,
                                  const ConsumerOptions& options, int queue_size,
                                  std::shared_ptr<ReceiveQueue> queue) {
  ConsumerImpl::Config config;
  config.topic = topic;
  config.subscription = subscription;
  config.options = options;
  config.options.receiver_queue_size = queue_size;
  config.durable = options.durable;
  auto name = protocol::TopicName::parse(topic);
  config.partition = name.ok() ? name->partition_index() : -1;
  config.queue = std::move(queue);
  return config;
}

// Pattern consumers: every period, subscribes to the namespace's new matching topics. Ends
// when the consumer or the client closes (checked every 100 ms at most).
Task<void> discover_topics(std::shared_ptr<ClientImpl> impl, int loop,
                           std::weak_ptr<MultiConsumer> weak, std::string ns,
                           std::string pattern_text, std::string subscription,
                           ConsumerOptions options, int queue_size,
                           std::shared_ptr<ReceiveQueue> queue) {
  const std::regex pattern(pattern_text);
  const auto period =
      std::max(options.pattern_auto_discovery_period, std::chrono::milliseconds(10));
  const auto tick = std::min(period, std::chrono::milliseconds(100));
  const auto timeout = impl->options().operation_timeout;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  auto next = Clock::now() + period;
  for (;;) {
    timer.expires_after(tick);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    {
      auto multi = weak.lock();
      if (!multi || multi->closed() || impl->closed()) co_return;
    }
    if (Clock::now() < next) continue;
    next = Clock::now() + period;
    auto topics = co_await impl->topics_of_namespace(loop, ns, deadline_after(timeout));
    if (!topics.ok()) continue;
    for (const auto& t : *topics) {
      if (!std::regex_match(t, pattern)) continue;
      auto multi = weak.lock();
      if (!multi || multi->closed()) co_return;
      if (multi->has_topic(t)) continue;
      auto child = std::make_shared<ConsumerImpl>(
          impl, child_config(t, subscription, options, queue_size, queue));
      child->set_owner(multi);
      const Deadline deadline = deadline_after(timeout);
      auto on_loop = asio::co_spawn(
          child->executor(), [child, deadline]() { return child->create(deadline); },
          asio::use_awaitable);
      Status st = co_await std::move(on_loop);
      if (!st.ok()) {
        impl->log().warn("pattern consumer: cannot subscribe to {}: {}", t, st.to_string());
        child->close_async();
        continue;
      }
      if (!multi->add_child(child)) {
        child->close_async();
        co_return;
      }
      impl->log().info("pattern consumer: subscribed to new topic {}", t);
    }
  }
}

Result<Consumer> subscribe_topics(
    const std::shared_ptr<ClientImpl>& impl, const std::vector<std::string>& topics,
    const std::vector<std::string>& expanded, bool partitioned, const std::string& subscription,
    ConsumerOptions options,
    const std::function<void(const std::shared_ptr<MultiConsumer>&, int queue_size,
                             const std::shared_ptr<ReceiveQueue>&)>& started = {}) {
  if (expanded.empty()) {
    return Status(ClientError::kInvalidConfiguration, "no topic to subscribe to");
  }
  const Deadline deadline = deadline_after(impl->options().operation_timeout);
  if (!partitioned && expanded.size() == 1) {
    ConsumerImpl::Config config;
    config.topic = expanded.front();
    config.subscription = subscription;
    config.durable = options.durable;
    config.options = std::move(options);
    auto c = std::make_shared<ConsumerImpl>(impl, std::move(config));
    c->set_owner(c);
    Status st = create_all(std::vector<std::shared_ptr<ConsumerImpl>>{c}, deadline,
                           impl->options().operation_timeout);
    if (!st.ok()) {
      (void)c->close();
      return st;
    }
    impl->track(c);
    return ConsumerAccess::make(user_handle<ConsumerBase>(c));
  }
  auto queue = std::make_shared<ReceiveQueue>();
  // The queue is shared: each child gets a share of the receiver queue.
  const int queue_size =
      std::max(1, options.receiver_queue_size / static_cast<int>(expanded.size()));
  std::vector<std::shared_ptr<ConsumerImpl>> children;
  for (const auto& t : expanded) {
    children.push_back(std::make_shared<ConsumerImpl>(
        impl, child_config(t, subscription, options, queue_size, queue)));
  }
  auto multi = std::make_shared<MultiConsumer>(topics.size() == 1 ? topics.front() : "multi-topic",
                                               subscription, children, queue, options);
  for (auto& c : children) c->set_owner(multi);
  Status st = create_all(children, deadline, impl->options().operation_timeout);
  if (!st.ok()) {
    (void)multi->close();
    return st;
  }
  impl->track(multi);
  if (started) started(multi, queue_size, queue);
  return ConsumerAccess::make(user_handle<ConsumerBase>(multi));
}

}  // namespace

Result<Consumer> Client::subscribe(const std::string& topic, const std::string& subscription,
                                   ConsumerOptions options) {
  return subscribe(std::vector<std::string>{topic}, subscription, std::move(options));
}

Result<Consumer> Client::subscribe(const std::vector<std::string>& topics,
                                   const std::string& subscription, ConsumerOptions options) {
  if (!impl_ || impl_->closed()) return closed_status("client");
  if (subscription.empty()) {
    return Status(ClientError::kInvalidConfiguration, "empty subscription name");
  }
  if (options.receiver_queue_size < 1) options.receiver_queue_size = 1;
  std::vector<std::string> expanded;
  bool partitioned = topics.size() > 1;
  for (const auto& t : topics) {
    auto parts = get_partitions_for_topic(t);
    if (!parts.ok()) return parts.status();
    if (parts->size() > 1 || protocol::TopicName::parse(t)->to_string() != parts->front()) {
      partitioned = true;
    }
    expanded.insert(expanded.end(), parts->begin(), parts->end());
  }
  return subscribe_topics(impl_->shared_from_this(), topics, expanded, partitioned, subscription,
                          std::move(options));
}

Result<Consumer> Client::subscribe_pattern(const std::string& regex,
                                           const std::string& subscription,
                                           ConsumerOptions options) {
  if (!impl_ || impl_->closed()) return closed_status("client");
  auto name = protocol::TopicName::parse(regex);
  if (!name.ok()) return name.status();
  std::regex pattern;
  try {
    pattern = std::regex(name->to_string());
  } catch (const std::regex_error& e) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("bad topic pattern '{}': {}", regex, e.what()));
  }
  auto impl = impl_->shared_from_this();
  const int loop = impl->pick_loop();
  const auto timeout = impl->options().operation_timeout;
  const std::string ns = name->namespace_name();
  auto topics = block_on<Result<std::vector<std::string>>>(
      impl->executor(loop),
      [impl, loop, ns, timeout]() {
        return impl->topics_of_namespace(loop, ns, deadline_after(timeout));
      },
      timeout);
  if (!topics.ok()) return topics.status();
  std::vector<std::string> matching;
  for (const auto& t : *topics) {
    if (std::regex_match(t, pattern)) matching.push_back(t);
  }
  if (matching.empty()) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("no topic of {} matches '{}'", ns, regex));
  }
  const std::string pattern_text = name->to_string();
  auto start_discovery = [&](const std::shared_ptr<MultiConsumer>& multi, int queue_size,
                             const std::shared_ptr<ReceiveQueue>& queue) {
    std::weak_ptr<MultiConsumer> weak = multi;
    asio::co_spawn(
        impl->executor(loop),
        [impl, loop, weak, ns, pattern_text, subscription, options, queue_size, queue]() {
          return discover_topics(impl, loop, weak, ns, pattern_text, subscription, options,
                                 queue_size, queue);
        },
        asio::detached);
  };
  return subscribe_topics(impl, {regex}, matching, true, subscription, options, start_discovery);
}

Result<Reader> Client::create_reader(const std::string& topic, const MessageId& start,
                                     ReaderOptions options) {
  if (!impl_ || impl_->closed()) return closed_status("client");
  auto name = protocol::TopicName::parse(topic);
  if (!name.ok()) return name.status();
  ConsumerImpl::Config config;
  config.topic = name->to_string();
  config.subscription = options.subscription_name.empty() ? fmt::format("reader-{}", random_name())
                                                          : options.subscription_name;
  config.options.type = SubscriptionType::kExclusive;
  config.options.consumer_name = options.reader_name;
  config.options.receiver_queue_size = std::max(1, options.receiver_queue_size);
  config.options.read_compacted = options.read_compacted;
  config.options.initial_position =
      start.is_latest() ? InitialPosition::kLatest : InitialPosition::kEarliest;
  config.durable = false;
  config.start_id = start;
  config.start_inclusive = options.start_message_id_inclusive;
  auto c = std::make_shared<ConsumerImpl>(impl_->shared_from_this(), std::move(config));
  c->set_owner(c);
  Status st = create_all(std::vector<std::shared_ptr<ConsumerImpl>>{c},
                         deadline_after(impl_->options().operation_timeout),
                         impl_->options().operation_timeout);
  if (!st.ok()) {
    (void)c->close();
    return st;
  }
  impl_->track(c);
  if (start.is_latest() && options.start_message_id_inclusive) {
    // "The latest message, inclusive": start at the topic's last message, if it has one.
    auto last = c->get_last_message_id();
    if (!last.ok()) {
      (void)c->close();
      return last.status();
    }
    if (last->entry_id() >= 0) {
      Status sought = c->seek(*last);
      if (!sought.ok()) {
        (void)c->close();
        return sought;
      }
    }
  }
  return Reader(ConsumerAccess::make(user_handle<ConsumerBase>(c)));
}

// ---------------------------------------------------------------------------------------
// Producer

Result<MessageId> Producer::send(Message message) {
  if (!impl_) return closed_status("producer");
  auto promise = std::make_shared<std::promise<Result<MessageId>>>();
  auto future = promise->get_future();
  impl_->send_async(std::move(message),
                    [promise](Result<MessageId> r) { promise->set_value(std::move(r)); });
  const auto timeout = impl_->send_timeout();
  if (timeout.count() > 0 &&
      future.wait_for(timeout + std::chrono::seconds(5)) != std::future_status::ready) {
    return Status(ClientError::kTimeout, "send timed out");
  }
  return future.get();
}

void Producer::send_async(Message message, SendCallback callback) {
  if (!impl_) {
    if (callback) callback(closed_status("producer"));
    return;
  }
  impl_->send_async(std::move(message), std::move(callback));
}

Status Producer::flush() {
  return impl_ ? impl_->flush() : closed_status("producer");
}
Status Producer::close() {
  return impl_ ? impl_->close() : Status::OK();
}

const std::string& Producer::topic() const {
  static const std::string kNone;
  return impl_ ? impl_->topic() : kNone;
}
std::string Producer::name() const {
  return impl_ ? impl_->name() : std::string();
}
int64_t Producer::last_sequence_id() const {
  return impl_ ? impl_->last_sequence_id() : -1;
}
bool Producer::connected() const {
  return impl_ && impl_->connected();
}

// ---------------------------------------------------------------------------------------
// Consumer

Result<Message> Consumer::receive() {
  return impl_ ? impl_->receive(std::nullopt) : Result<Message>(closed_status("consumer"));
}
Result<Message> Consumer::receive(std::chrono::milliseconds timeout) {
  return impl_ ? impl_->receive(timeout) : Result<Message>(closed_status("consumer"));
}
Result<std::vector<Message>> Consumer::batch_receive() {
  return impl_ ? impl_->batch_receive() : Result<std::vector<Message>>(closed_status("consumer"));
}
Status Consumer::acknowledge(const Message& message) {
  return acknowledge(message.id());
}
Status Consumer::acknowledge(const MessageId& id) {
  return impl_ ? impl_->acknowledge(id, false) : closed_status("consumer");
}
Status Consumer::acknowledge_cumulative(const Message& message) {
  return acknowledge_cumulative(message.id());
}
Status Consumer::acknowledge_cumulative(const MessageId& id) {
  return impl_ ? impl_->acknowledge(id, true) : closed_status("consumer");
}
void Consumer::negative_acknowledge(const Message& message) {
  negative_acknowledge(message.id());
}
void Consumer::negative_acknowledge(const MessageId& id) {
  if (impl_) impl_->negative_acknowledge(id);
}
void Consumer::redeliver_unacknowledged_messages() {
  if (impl_) impl_->redeliver_unacknowledged();
}
Status Consumer::seek(const MessageId& id) {
  return impl_ ? impl_->seek(id) : closed_status("consumer");
}
Status Consumer::seek(uint64_t publish_time_ms) {
  return impl_ ? impl_->seek_time(publish_time_ms) : closed_status("consumer");
}
Status Consumer::unsubscribe() {
  return impl_ ? impl_->unsubscribe() : closed_status("consumer");
}
Status Consumer::close() {
  return impl_ ? impl_->close() : Status::OK();
}
Result<MessageId> Consumer::get_last_message_id() {
  return impl_ ? impl_->get_last_message_id() : Result<MessageId>(closed_status("consumer"));
}
bool Consumer::has_reached_end_of_topic() const {
  return impl_ && impl_->reached_end();
}
bool Consumer::is_active() const {
  return impl_ && impl_->is_active();
}
bool Consumer::connected() const {
  return impl_ && impl_->connected();
}
const std::string& Consumer::topic() const {
  static const std::string kNone;
  return impl_ ? impl_->topic() : kNone;
}
const std::string& Consumer::subscription() const {
  static const std::string kNone;
  return impl_ ? impl_->subscription() : kNone;
}

// ---------------------------------------------------------------------------------------
// Reader

Result<Message> Reader::read_next() {
  return consumer_.receive();
}
Result<Message> Reader::read_next(std::chrono::milliseconds timeout) {
  return consumer_.receive(timeout);
}
Result<bool> Reader::has_message_available() {
  auto& impl = ConsumerAccess::impl(consumer_);
  return impl ? impl->has_message_available() : Result<bool>(closed_status("reader"));
}
Status Reader::seek(const MessageId& id) {
  return consumer_.seek(id);
}
Status Reader::seek(uint64_t publish_time_ms) {
  return consumer_.seek(publish_time_ms);
}
Status Reader::close() {
  return consumer_.close();
}
bool Reader::has_reached_end_of_topic() const {
  return consumer_.has_reached_end_of_topic();
}
const std::string& Reader::topic() const {
  return consumer_.topic();
}

}  // namespace magnetar::client
