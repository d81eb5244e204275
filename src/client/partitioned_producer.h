#pragma once
// A producer over the partitions of a partitioned topic: one ProducerImpl per partition and
// a router choosing the partition of each message (by key hash, else round robin switching at
// batch boundaries, or one fixed partition). Thread-safe: routing uses an atomic counter.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "client/producer_impl.h"

namespace magnetar::client {

class PartitionedProducer final : public ProducerBase {
 public:
  PartitionedProducer(std::string topic, ProducerOptions options,
                      std::vector<std::shared_ptr<ProducerImpl>> children);

  void send_async(Message message, SendCallback callback) override;
  Status flush() override;
  Status close() override;
  void close_async() override {
    for (const auto& c : children_) c->close_async();
  }
  const std::string& topic() const override { return topic_; }
  std::string name() const override;
  int64_t last_sequence_id() const override;
  bool connected() const override;
  std::chrono::milliseconds send_timeout() const override { return options_.send_timeout; }
  const std::vector<std::shared_ptr<ProducerImpl>>& children() const { return children_; }

 private:
  int route(const Message& message);

  const std::string topic_;
  const ProducerOptions options_;
  const std::vector<std::shared_ptr<ProducerImpl>> children_;
  const int single_partition_;
  std::atomic<uint64_t> round_robin_;
};

}  // namespace magnetar::client
