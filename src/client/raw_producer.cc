#include "client/raw_producer.h"

#include <fmt/format.h>

#include "client/producer_impl.h"
#include "client/sync.h"
#include "magnetar/errors.h"

namespace magnetar::client {

RawProducer::RawProducer(std::shared_ptr<ProducerImpl> impl) : impl_(std::move(impl)) {}

RawProducer::~RawProducer() {
  if (impl_) impl_->close_async();
}

Result<std::shared_ptr<RawProducer>> RawProducer::start(Client& client, std::string topic,
                                                        Options options) {
  if (!client.impl_ || client.impl_->closed()) {
    return Status(ClientError::kAlreadyClosed, "client is closed");
  }
  ProducerOptions po;
  po.producer_name = std::move(options.name);
  po.batching_enabled = false;
  po.send_timeout = std::chrono::milliseconds(0);  // the replicator decides when to give up
  po.max_pending_messages = options.max_pending;
  po.block_if_queue_full = false;
  // No sequence-id bookkeeping of the broker's: the first SEND is 0 on every new producer.
  po.initial_sequence_id = -1;
  auto impl = std::make_shared<ProducerImpl>(client.impl_, std::move(topic), std::move(po), -1);
  client.impl_->track(impl);
  // No deadline: the producer retries until it is registered or refused for good.
  asio::co_spawn(
      impl->executor(), [impl]() { return impl->create(Deadline::max()); }, asio::detached);
  return std::shared_ptr<RawProducer>(new RawProducer(std::move(impl)));
}

void RawProducer::send(wire::MessageMetadata metadata, Buffer payload, SendCallback done) {
  impl_->send_encoded(std::move(metadata), std::move(payload), std::move(done));
}

bool RawProducer::connected() const {
  return impl_->connected();
}

bool RawProducer::closed() const {
  return impl_->closed();
}

void RawProducer::close_async() {
  impl_->close_async();
}

}  // namespace magnetar::client
