#include "client/partitioned_producer.h"

#include <chrono>
#include <random>

#include "protocol/hash.h"

namespace magnetar::client {

namespace {

int random_below(int n) {
  static thread_local std::mt19937 rng(std::random_device{}());
  return std::uniform_int_distribution<int>(0, n - 1)(rng);
}

// Appends the UTF-16 code units of `utf8` (invalid bytes count as U+FFFD, as Java decodes).
template <typename F>
void for_each_utf16_unit(std::string_view s, F f) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0xFFFD;
    size_t len = 1;
    if (c < 0x80) {
      cp = c;
    } else if ((c >> 5) == 0x6 && i + 1 < s.size()) {
      cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
      len = 2;
    } else if ((c >> 4) == 0xE && i + 2 < s.size()) {
      cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
      len = 3;
    } else if ((c >> 3) == 0x1E && i + 3 < s.size()) {
      cp = ((c & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
           ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
      len = 4;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      f(static_cast<uint16_t>(0xD800 + (cp >> 10)));
      f(static_cast<uint16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      f(static_cast<uint16_t>(cp));
    }
    i += len;
  }
}

}  // namespace

int32_t java_string_hash(std::string_view utf8) {
  uint32_t h = 0;
  for_each_utf16_unit(utf8, [&h](uint16_t unit) { h = 31 * h + unit; });
  return static_cast<int32_t>(h);
}

uint32_t murmur3_32(std::string_view bytes, uint32_t seed) {
  return protocol::murmur3_32(bytes, seed);
}

int partition_for_key(std::string_view key, int partitions, HashingScheme scheme) {
  if (partitions <= 0) return -1;
  const uint32_t raw = scheme == HashingScheme::kJavaStringHash
                           ? static_cast<uint32_t>(java_string_hash(key))
                           : murmur3_32(key, 0);
  const uint32_t positive = raw & 0x7fffffffu;
  return static_cast<int>(positive % static_cast<uint32_t>(partitions));
}

PartitionedProducer::PartitionedProducer(std::string topic, ProducerOptions options,
                                         std::vector<std::shared_ptr<ProducerImpl>> children)
    : topic_(std::move(topic)),
      options_(std::move(options)),
      children_(std::move(children)),
      single_partition_(random_below(static_cast<int>(children_.size()))),
      round_robin_(static_cast<uint64_t>(random_below(static_cast<int>(children_.size())))) {}

int PartitionedProducer::route(const Message& message) {
  const int n = static_cast<int>(children_.size());
  if (message.has_key()) return partition_for_key(message.key(), n, options_.hashing_scheme);
  if (options_.routing_mode == RoutingMode::kSinglePartition) return single_partition_;
  if (options_.batching_enabled) {
    // Stay on one partition for a batching delay, so batches fill up.
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
    const int64_t step = std::max<int64_t>(1, options_.batching_max_delay.count());
    return static_cast<int>((static_cast<uint64_t>(ms / step) + round_robin_.load()) %
                            static_cast<uint64_t>(n));
  }
  return static_cast<int>(round_robin_.fetch_add(1) % static_cast<uint64_t>(n));
}

void PartitionedProducer::send_async(Message message, SendCallback callback) {
  const int p = route(message);
  children_[static_cast<size_t>(p)]->send_async(std::move(message), std::move(callback));
}

Status PartitionedProducer::flush() {
  Status first;
  for (const auto& c : children_) {
    Status st = c->flush();
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

Status PartitionedProducer::close() {
  Status first;
  for (const auto& c : children_) {
    Status st = c->close();
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

std::string PartitionedProducer::name() const {
  return children_.front()->name();
}

int64_t PartitionedProducer::last_sequence_id() const {
  int64_t last = -1;
  for (const auto& c : children_) last = std::max(last, c->last_sequence_id());
  return last;
}

bool PartitionedProducer::connected() const {
  for (const auto& c : children_) {
    if (!c->connected()) return false;
  }
  return true;
}

}  // namespace magnetar::client
