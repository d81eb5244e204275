#pragma once
// One client connection speaking the Pulsar binary protocol: the handshake, keep-alive,
// and every command a client sends. The connection lives on one event loop; commands for a
// topic are posted to the topic's loop, and what topics send back (write, close_producer,
// close_consumer, ...) hops to the connection's loop, so both may be called from either.
//
// Reads are bounded (maxMessageSize plus frame overhead; a lying length closes the
// connection) and stop while more than maxPendingPublishRequestsPerConnection sends wait for
// storage (back-pressure instead of unbounded buffering). Writes are queued and sent with
// gathered writes; MESSAGE frames reference stored entries without copying them.
//
// The bytes go over a net::Stream: plain TCP from brokerServicePort, or TLS from
// brokerServicePortTls once the broker has completed the handshake; nothing here differs.

#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/asio.h"
#include "common/buffer.h"
#include "common/logging.h"
#include "net/stream.h"
#include "protocol/frame.h"

namespace magnetar::broker {

class Broker;
class PersistentTopic;
class Producer;
class Subscription;
class Consumer;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Broker& broker, std::unique_ptr<net::Stream> stream);
  ~Connection();

  void start();
  // Queues a frame; frames go out in the order queued.
  void write(BufferChain frame);
  void write_command(const wire::BaseCommand& command);
  // Closes the socket; producers and consumers of this connection are removed.
  void close();
  bool closed() const { return closed_; }
  int protocol_version() const { return protocol_version_; }
  bool wants_broker_entry_metadata() const { return broker_entry_metadata_; }
  const std::string& remote() const { return remote_; }
  bool tls() const { return stream_->tls(); }

  // Sends CLOSE_PRODUCER / CLOSE_CONSUMER (the client reconnects) and forgets the object.
  void close_producer(uint64_t producer_id);
  void close_consumer(uint64_t consumer_id);
  void send_reached_end_of_topic(uint64_t consumer_id);
  void send_active_consumer_change(uint64_t consumer_id, bool active);

 private:
  struct ProducerEntry {
    std::shared_ptr<PersistentTopic> topic;
    std::shared_ptr<Producer> producer;
  };
  struct ConsumerEntry {
    std::shared_ptr<PersistentTopic> topic;
    std::shared_ptr<Subscription> subscription;
    std::shared_ptr<Consumer> consumer;
  };

  Task<void> read_loop();
  Task<void> write_loop();
  Task<void> keep_alive_loop();
  // False when the connection must close.
  bool handle(protocol::Frame& frame);
  void handle_connect(const wire::CommandConnect& connect);
  void handle_lookup(const wire::CommandLookupTopic& lookup);
  void handle_partitioned_metadata(const wire::CommandPartitionedTopicMetadata& request);
  void handle_producer(const wire::CommandProducer& request);
  bool handle_send(protocol::Frame& frame);
  void handle_subscribe(const wire::CommandSubscribe& request);
  void handle_flow(const wire::CommandFlow& flow);
  void handle_ack(const wire::CommandAck& ack);
  void handle_redeliver(const wire::CommandRedeliverUnacknowledgedMessages& request);
  void handle_unsubscribe(const wire::CommandUnsubscribe& request);
  void handle_close_producer(const wire::CommandCloseProducer& request);
  void handle_close_consumer(const wire::CommandCloseConsumer& request);
  void handle_seek(const wire::CommandSeek& request);
  void handle_get_last_message_id(const wire::CommandGetLastMessageId& request);
  void handle_consumer_stats(const wire::CommandConsumerStats& request);
  void handle_get_topics_of_namespace(const wire::CommandGetTopicsOfNamespace& request);
  void handle_get_schema(const wire::CommandGetSchema& request);
  void handle_get_or_create_schema(const wire::CommandGetOrCreateSchema& request);

  void send_error(uint64_t request_id, wire::ServerError error, const std::string& message);
  void send_success(uint64_t request_id);
  void resume_reading();
  bool in_loop() const { return std::this_thread::get_id() == loop_thread_; }
  // Runs f on this connection's loop: now when already there, else posted (in call order).
  template <typename F>
  void on_my_loop(F&& f) {
    if (in_loop()) {
      f();
    } else {
      asio::post(executor_, std::forward<F>(f));
    }
  }
  // Runs a coroutine lambda on this connection's executor. The lambda object itself is
  // handed over (never an already-invoked temporary), so its captures outlive the coroutine.
  template <typename F>
  void spawn(F&& coroutine) {
    asio::co_spawn(executor_, std::forward<F>(coroutine), asio::detached);
  }

  Broker& broker_;
  std::unique_ptr<net::Stream> stream_;
  Executor executor_;            // the stream's: this connection's loop
  std::thread::id loop_thread_;  // set by start(), on the connection's loop
  std::string remote_;
  log::Logger log_;
  protocol::FrameDecoder decoder_;
  bool connected_ = false;
  bool closed_ = false;
  int protocol_version_ = 0;
  bool broker_entry_metadata_ = false;

  std::deque<BufferChain> out_;
  asio::steady_timer write_wakeup_;
  asio::steady_timer read_wakeup_;  // back-pressure: reads wait here
  asio::steady_timer keep_alive_;
  int64_t last_received_ms_ = 0;
  bool ping_outstanding_ = false;

  int pending_sends_ = 0;
  std::map<uint64_t, ProducerEntry> producers_;
  std::map<uint64_t, ProducerEntry> waiting_producers_;  // WaitForExclusive, not yet promoted
  std::map<uint64_t, ConsumerEntry> consumers_;
};

}  // namespace magnetar::broker
