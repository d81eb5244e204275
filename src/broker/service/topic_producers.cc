#include "broker/service/topic_producers.h"

#include <fmt/format.h>

#include <algorithm>

#include "broker/service/errors.h"

namespace magnetar::broker {

Result<TopicProducers::Added> TopicProducers::add(const std::shared_ptr<Producer>& p,
                                                  Decided decided,
                                                  int32_t max_producers,
                                                  const std::string& topic) {
  if (max_producers > 0 && !p->replicator()) {
    size_t local = 0;
    for (const auto& [key, existing] : producers_) local += existing->replicator() ? 0 : 1;
    if (local >= static_cast<size_t>(max_producers)) {
      return Status(Error::kProducerBusy,
                    fmt::format("Topic '{}' reached max producers limit", topic));
    }
  }
  for (const auto& [key, existing] : producers_) {
    if (existing->name() == p->name()) {
      return Status(Error::kProducerBusy,
                    fmt::format("producer with name '{}' is already connected", p->name()));
    }
  }
  bool exclusive_exists = !waiting_exclusive_.empty();
  for (const auto& [key, existing] : producers_) {
    exclusive_exists |= existing->access_mode() != wire::Shared;
  }
  switch (p->access_mode()) {
    case wire::Shared:
      if (exclusive_exists) {
        return Status(Error::kProducerBusy, "the topic has an exclusive producer");
      }
      break;
    case wire::Exclusive:
      if (!producers_.empty()) {
        return Status(Error::kProducerFenced, "the topic already has a producer");
      }
      break;
    case wire::ExclusiveWithFencing:
      disconnect_all(true);
      break;
    case wire::WaitForExclusive:
      if (!producers_.empty() || !waiting_exclusive_.empty()) {
        waiting_exclusive_.push_back(WaitingProducer{p, std::move(decided)});
        return Added::kQueued;
      }
      break;
  }
  producers_[{p->owner(), p->id()}] = p;
  return Added::kAdded;
}

void TopicProducers::remove(uint64_t producer_id, const ProducerSink* owner) {
  producers_.erase({owner, producer_id});
  std::erase_if(waiting_exclusive_, [&](const WaitingProducer& w) {
    return w.producer->id() == producer_id && w.producer->owner() == owner;
  });
  // The next queued WaitForExclusive producer takes over once the topic has none.
  while (producers_.empty() && !waiting_exclusive_.empty()) {
    auto next = std::move(waiting_exclusive_.front());
    waiting_exclusive_.pop_front();
    if (!next.producer->sink()) continue;
    producers_[{next.producer->owner(), next.producer->id()}] = next.producer;
    if (next.decided) next.decided(Status::OK());
  }
}

void TopicProducers::disconnect_all(bool fence_queue) {
  auto producers = std::move(producers_);
  producers_.clear();
  if (fence_queue) {
    auto queue = std::move(waiting_exclusive_);
    waiting_exclusive_.clear();
    for (auto& w : queue) {
      if (w.decided) {
        w.decided(Status(Error::kProducerFenced,
                         "fenced while waiting: an ExclusiveWithFencing producer took the topic"));
      }
    }
  }
  for (const auto& [key, p] : producers) {
    if (auto sink = p->sink()) sink->close_producer(p->id());
  }
}

void charge_publish(RateLimiter& limiter, const Producer& producer, int messages, int64_t bytes) {
  if (!limiter.enabled()) return;
  const auto now = RateLimiter::Clock::now();
  limiter.charge(messages, bytes, now);
  if (const auto wait = limiter.wait(now); wait > RateLimiter::Clock::duration::zero()) {
    if (auto sink = producer.sink()) sink->throttle_reading(wait);
  }
}

}  // namespace magnetar::broker
