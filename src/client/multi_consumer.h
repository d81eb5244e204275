#pragma once
// A consumer over several single-topic consumers: the partitions of a partitioned topic,
// several topics, or the topics of a pattern (which discovery may add to later).
//
// Threading: called from application threads; the children list is guarded by a mutex
// because pattern discovery (on an event loop) adds to it.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/consumer_impl.h"

namespace magnetar::client {

// A consumer over several single-topic consumers (the partitions of a topic, or several
// topics) sharing one receive queue; acknowledgements go to the child named by the id's topic.
class MultiConsumer final : public ConsumerBase {
 public:
  MultiConsumer(std::string topic, std::string subscription,
                std::vector<std::shared_ptr<ConsumerImpl>> children,
                std::shared_ptr<ReceiveQueue> queue, const ConsumerOptions& options);

  // Adds a consumer for a topic found later (pattern consumers); false when closed.
  bool add_child(std::shared_ptr<ConsumerImpl> child);
  bool has_topic(const std::string& topic) const;

  Status acknowledge(const MessageId& id, bool cumulative) override;
  void negative_acknowledge(const MessageId& id) override;
  void redeliver_unacknowledged() override;
  Status seek(const MessageId& id) override;
  Status seek_time(uint64_t publish_time_ms) override;
  Status unsubscribe() override;
  Status close() override;
  void close_async() override {
    closed_ = true;
    for (const auto& c : children()) c->close_async();
    queue_->close();
  }
  Result<MessageId> get_last_message_id() override;
  Result<bool> has_message_available() override;
  bool reached_end() const override;
  bool is_active() const override;
  bool connected() const override;
  const std::string& topic() const override { return topic_; }
  const std::string& subscription() const override { return subscription_; }
  bool closed() const override { return closed_.load(); }

 private:
  std::shared_ptr<ConsumerImpl> child_for(const MessageId& id) const;
  std::vector<std::shared_ptr<ConsumerImpl>> children() const;

  const std::string topic_;
  const std::string subscription_;
  mutable std::mutex mu_;  // guards children_ (pattern discovery adds to it)
  std::vector<std::shared_ptr<ConsumerImpl>> children_;
  std::atomic<bool> closed_{false};
};

}  // namespace magnetar::client
