#include "client/multi_consumer.h"

#include <fmt/format.h>

namespace magnetar::client {

MultiConsumer::MultiConsumer(std::string topic, std::string subscription,
                             std::vector<std::shared_ptr<ConsumerImpl>> children,
                             std::shared_ptr<ReceiveQueue> queue, const ConsumerOptions& options)
    : ConsumerBase(std::move(queue), static_cast<bool>(options.listener),
                   options.batch_receive_policy),
      topic_(std::move(topic)),
      subscription_(std::move(subscription)),
      children_(std::move(children)) {}

std::vector<std::shared_ptr<ConsumerImpl>> MultiConsumer::children() const {
  std::lock_guard lock(mu_);
  return children_;
}

bool MultiConsumer::add_child(std::shared_ptr<ConsumerImpl> child) {
  std::lock_guard lock(mu_);
  if (closed_) return false;
  children_.push_back(std::move(child));
  return true;
}

bool MultiConsumer::has_topic(const std::string& topic) const {
  std::lock_guard lock(mu_);
  for (const auto& c : children_) {
    if (c->topic() == topic) return true;
  }
  return false;
}

std::shared_ptr<ConsumerImpl> MultiConsumer::child_for(const MessageId& id) const {
  auto all = children();
  if (!id.topic().empty()) {
    for (const auto& c : all) {
      if (c->topic() == id.topic()) return c;
    }
  }
  if (id.partition() >= 0) {
    const std::string suffix = fmt::format("-partition-{}", id.partition());
    for (const auto& c : all) {
      const auto& t = c->topic();
      if (t.size() >= suffix.size() &&
          t.compare(t.size() - suffix.size(), suffix.size(), suffix) == 0) {
        return c;
      }
    }
  }
  return nullptr;
}

Status MultiConsumer::acknowledge(const MessageId& id, bool cumulative) {
  auto c = child_for(id);
  if (!c) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("message id {} names no topic of this consumer", id.to_string()));
  }
  return c->acknowledge(id, cumulative);
}

void MultiConsumer::negative_acknowledge(const MessageId& id) {
  if (auto c = child_for(id)) c->negative_acknowledge(id);
}

void MultiConsumer::redeliver_unacknowledged() {
  for (const auto& c : children()) c->redeliver_unacknowledged();
}

Status MultiConsumer::seek(const MessageId& id) {
  if (auto c = child_for(id)) return c->seek(id);
  if (id.is_earliest() || id.is_latest()) {
    for (const auto& c : children()) MAGNETAR_TRY(c->seek(id));
    return Status::OK();
  }
  return Status(ClientError::kInvalidConfiguration,
                "seek to a message id needs the id of one of the consumer's topics");
}

Status MultiConsumer::seek_time(uint64_t publish_time_ms) {
  for (const auto& c : children()) MAGNETAR_TRY(c->seek_time(publish_time_ms));
  return Status::OK();
}

Status MultiConsumer::unsubscribe() {
  for (const auto& c : children()) MAGNETAR_TRY(c->unsubscribe());
  closed_ = true;
  queue_->close();
  return Status::OK();
}

Status MultiConsumer::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  Status first;
  for (const auto& c : children()) {
    Status st = c->close();
    if (!st.ok() && first.ok()) first = st;
  }
  queue_->close();
  return first;
}

Result<MessageId> MultiConsumer::get_last_message_id() {
  return Status(ClientError::kInvalidConfiguration,
                "get_last_message_id needs a single (non-partitioned) topic");
}

Result<bool> MultiConsumer::has_message_available() {
  for (const auto& c : children()) {
    auto r = c->has_message_available();
    if (!r.ok()) return r.status();
    if (*r) return true;
  }
  return false;
}

bool MultiConsumer::reached_end() const {
  for (const auto& c : children()) {
    if (!c->reached_end()) return false;
  }
  return true;
}

bool MultiConsumer::is_active() const {
  for (const auto& c : children()) {
    if (c->is_active()) return true;
  }
  return false;
}

bool MultiConsumer::connected() const {
  for (const auto& c : children()) {
    if (!c->connected()) return false;
  }
  return true;
}

}  // namespace magnetar::client
