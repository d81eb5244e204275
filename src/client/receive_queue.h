#pragma once
// The queue between a consumer's event loop (which pushes received messages) and the
// application threads that receive them. Shared by the children of a partitioned or
// multi-topic consumer. Thread-safe (a mutex and a condition variable).

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include "client/sync.h"
#include "magnetar/message.h"

namespace magnetar::client {

class ConsumerImpl;

struct QueuedMessage {
  Message message;
  std::shared_ptr<ConsumerImpl> source;  // the consumer that received it
  uint64_t epoch = 0;                    // the source's subscription generation
};

class ReceiveQueue {
 public:
  void push(QueuedMessage m) {
    {
      std::lock_guard lock(mu_);
      items_.push_back(std::move(m));
    }
    cv_.notify_one();
  }
  // The next message; nullopt at the deadline or once closed.
  std::optional<QueuedMessage> pop(Deadline deadline) {
    std::unique_lock lock(mu_);
    auto ready = [this] { return !items_.empty() || closed_; };
    if (deadline == Deadline::max()) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_until(lock, deadline, ready)) {
      return std::nullopt;
    }
    if (items_.empty()) return std::nullopt;
    QueuedMessage m = std::move(items_.front());
    items_.pop_front();
    return m;
  }
  std::optional<QueuedMessage> try_pop() { return pop(Clock::now()); }
  // Drops the messages `source` queued; returns how many.
  size_t remove_from(const ConsumerImpl* source) {
    std::lock_guard lock(mu_);
    const size_t before = items_.size();
    std::erase_if(items_, [source](const QueuedMessage& m) { return m.source.get() == source; });
    return before - items_.size();
  }
  bool has_from(const ConsumerImpl* source) {
    std::lock_guard lock(mu_);
    for (const auto& m : items_) {
      if (m.source.get() == source) return true;
    }
    return false;
  }
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
      items_.clear();
    }
    cv_.notify_all();
  }
  bool closed() {
    std::lock_guard lock(mu_);
    return closed_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<QueuedMessage> items_;
  bool closed_ = false;
};

}  // namespace magnetar::client
