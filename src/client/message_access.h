#pragma once
// Internal access to the fields of public value types that only the library fills in.

#include <memory>

#include "magnetar/consumer.h"
#include "magnetar/message.h"

namespace magnetar::client {

struct MessageAccess {
  static void set_received(Message& m, MessageId id, uint64_t publish_time,
                           uint32_t redelivery_count, std::string topic, std::string producer_name,
                           int64_t sequence_id) {
    m.id_ = std::move(id);
    m.publish_time_ = publish_time;
    m.redelivery_count_ = redelivery_count;
    m.topic_ = std::move(topic);
    m.producer_name_ = std::move(producer_name);
    m.sequence_id_ = sequence_id;
  }
};

struct ConsumerAccess {
  static Consumer make(std::shared_ptr<ConsumerBase> impl) { return Consumer(std::move(impl)); }
  static const std::shared_ptr<ConsumerBase>& impl(const Consumer& c) { return c.impl_; }
};

}  // namespace magnetar::client
