#pragma once
// Reader: reads a topic from a chosen position without a durable subscription (a
// non-durable subscription underneath, removed when the reader closes).
//
// Thread-safety: every method may be called from any thread.

#include <chrono>
#include <memory>
#include <string>

#include "common/status.h"
#include "magnetar/consumer.h"
#include "magnetar/message.h"

namespace magnetar::client {

struct ReaderOptions {
  std::string reader_name;
  std::string subscription_name;  // empty: "reader-<random>"
  int receiver_queue_size = 1000;
  // Deliver the start message itself too (default: start after it).
  bool start_message_id_inclusive = false;
  bool read_compacted = false;
};

class Reader {
 public:
  Reader() = default;

  Result<Message> read_next();
  Result<Message> read_next(std::chrono::milliseconds timeout);
  // Whether a message after the last one read exists (asks the broker when nothing is queued).
  Result<bool> has_message_available();
  Status seek(const MessageId& id);
  Status seek(uint64_t publish_time_ms);
  Status close();
  bool has_reached_end_of_topic() const;
  const std::string& topic() const;
  bool valid() const { return consumer_.valid(); }

 private:
  friend class Client;
  explicit Reader(Consumer consumer) : consumer_(std::move(consumer)) {}
  Consumer consumer_;
};

}  // namespace magnetar::client
