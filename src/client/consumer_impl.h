#pragma once
// A consumer on one topic (or one partition): subscription, flow control, acknowledgements
// (with batch tracking), negative acks, ack timeout, dead-letter publishing, seek, and
// reconnection.
//
// Threading: the state under "loop state" lives on the consumer's event loop. Application
// threads take messages from the ReceiveQueue and post everything else (acks, dequeue
// notifications) to the loop; blocking calls (seek, close, ...) run a coroutine on the loop
// and wait for it with the operation timeout.
//
// Filtering (all on the loop): a message is dropped before it reaches the queue when it lies
// before the start position (readers, after a seek or a reconnect of a reader), was
// published before a seek-by-time target (readers), or was already acknowledged by this
// consumer (a redelivery after a reconnect) — the last is acknowledged again so the broker
// catches up.

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/client_impl.h"
#include "client/connection.h"
#include "client/receive_queue.h"
#include "client/reconnecting.h"
#include "client/sync.h"
#include "magnetar/consumer.h"

namespace magnetar::client {

class ProducerImpl;

// What the public Consumer (and Reader) call; implemented by ConsumerImpl (one topic) and
// MultiConsumer (partitions, several topics).
class ConsumerBase : public Closeable {
 public:
  ConsumerBase(std::shared_ptr<ReceiveQueue> queue, bool has_listener, BatchReceivePolicy batch)
      : queue_(std::move(queue)), has_listener_(has_listener), batch_policy_(batch) {}

  Result<Message> receive(std::optional<std::chrono::milliseconds> timeout);
  Result<std::vector<Message>> batch_receive();

  virtual Status acknowledge(const MessageId& id, bool cumulative) = 0;
  virtual void negative_acknowledge(const MessageId& id) = 0;
  virtual void redeliver_unacknowledged() = 0;
  virtual Status seek(const MessageId& id) = 0;
  virtual Status seek_time(uint64_t publish_time_ms) = 0;
  virtual Status unsubscribe() = 0;
  virtual Result<MessageId> get_last_message_id() = 0;
  virtual Result<bool> has_message_available() = 0;
  virtual bool reached_end() const = 0;
  virtual bool is_active() const = 0;
  virtual bool connected() const = 0;
  virtual const std::string& topic() const = 0;
  virtual const std::string& subscription() const = 0;
  virtual bool closed() const = 0;

 protected:
  std::shared_ptr<ReceiveQueue> queue_;
  const bool has_listener_;
  const BatchReceivePolicy batch_policy_;
};

class ConsumerImpl final : public ConsumerBase,
                           public Reconnecting,
                           public ConnectionListener,
                           public std::enable_shared_from_this<ConsumerImpl> {
 public:
  struct Config {
    std::string topic;
    std::string subscription;
    ConsumerOptions options;
    int partition = -1;
    bool durable = true;                // false for readers
    std::optional<MessageId> start_id;  // readers: where to start
    bool start_inclusive = false;
    std::shared_ptr<ReceiveQueue> queue;  // null: a queue of its own
  };

  ConsumerImpl(std::shared_ptr<ClientImpl> client, Config config);
  ~ConsumerImpl() override;

  // The consumer handed to the message listener (this one, or the partitioned parent).
  void set_owner(std::weak_ptr<ConsumerBase> owner) { owner_ = std::move(owner); }
  Executor executor() { return client_->executor(loop_); }
  // On the loop: starts run() and waits for the first subscription (or a failure).
  Task<Status> create(Deadline deadline);

  // From any thread: `m` (queued in `epoch`) was handed to the application.
  void on_dequeued(const Message& m, uint64_t epoch);

  Status acknowledge(const MessageId& id, bool cumulative) override;
  void negative_acknowledge(const MessageId& id) override;
  void redeliver_unacknowledged() override;
  Status seek(const MessageId& id) override;
  Status seek_time(uint64_t publish_time_ms) override;
  Status unsubscribe() override;
  Status close() override;
  void close_async() override;
  Result<MessageId> get_last_message_id() override;
  Result<bool> has_message_available() override;
  bool reached_end() const override { return reached_end_.load(); }
  bool is_active() const override { return active_.load(); }
  bool connected() const override { return connected_.load(); }
  const std::string& topic() const override { return config_.topic; }
  const std::string& subscription() const override { return config_.subscription; }
  bool closed() const override { return closed_.load(); }
  SubscriptionType type() const { return config_.options.type; }

  void on_frame(ClientConnection& cnx, protocol::Frame& frame) override;
  void on_disconnected(ClientConnection& cnx) override;

  // On the loop.
  Task<Status> close_on_loop(bool unsubscribe);
  Task<Status> seek_on_loop(std::optional<MessageId> id, uint64_t publish_time);
  Task<Result<wire::CommandGetLastMessageIdResponse>> last_message_id_on_loop();
  Task<Result<bool>> has_message_available_on_loop();

 private:
  using Entry = std::pair<int64_t, int64_t>;  // (ledger, entry)

  Task<void> run();
  Task<Status> connect_once(Deadline deadline) override;
  Task<void> tick_loop();
  void handle_message(ClientConnection& cnx, protocol::Frame& frame);
  // A chunk of a large message; true when `frame` now holds the whole message (payload
  // replaced by the concatenation, `entries` the chunks' entries).
  bool collect_chunk(protocol::Frame& frame, const Entry& entry, std::vector<Entry>* entries);
  bool skip(const MessageId& id, uint64_t publish_time) const;
  bool already_acked(const MessageId& id) const;
  void do_ack(const MessageId& id, bool cumulative);
  // Queues an acknowledgement; sent by flush_acks() (at once, when the group is full, or
  // ack_grouping_time later).
  void send_ack(const Entry& entry, bool cumulative);
  void flush_acks();
  void remember_acked(const Entry& entry);
  void send_flow(uint32_t permits);
  void add_permits(int n);
  void redeliver(const std::vector<Entry>& entries);
  void redeliver_all();
  void dead_letter(Message message);
  void drop_connection();
  void deliver(Message message);
  bool gives_up_on(const Status& status, bool created) const override;

  const std::shared_ptr<ClientImpl> client_;
  const Config config_;
  const int loop_;
  const uint64_t consumer_id_;
  const std::shared_ptr<const std::string> topic_ptr_;
  const bool owns_queue_;
  log::Logger log_;
  std::weak_ptr<ConsumerBase> owner_;

  // Cross-thread.
  std::atomic<bool> connected_{false};
  std::atomic<bool> reached_end_{false};
  std::atomic<bool> active_{false};

  // Loop state.
  uint64_t epoch_ = 0;
  int64_t cluster_epoch_ = 0;  // the client's cluster switches when last subscribed
  // What refers to one cluster's message ids (acknowledgements, start), forgotten when the
  // client moves to another (cluster_failover.h).
  void forget_cluster_state();
  bool seeking_ = false;
  // A SEEK sent and not answered yet: a re-subscription (the broker closes the consumer before
  // it answers) waits for the answer, which resets where the subscription starts.
  bool seek_in_flight_ = false;
  bool unsubscribing_ = false;               // an UNSUBSCRIBE is outstanding
  bool closed_while_unsubscribing_ = false;  // between a successful SEEK and the re-subscription
  int available_permits_ = 0;
  std::optional<MessageId> start_id_;
  bool start_inclusive_ = false;
  std::optional<uint64_t> min_publish_time_;
  std::optional<MessageId> last_dequeued_;
  std::optional<Entry> cumulative_acked_;
  std::set<Entry> acked_entries_;                  // bounded: the newest kMaxRemembered
  std::map<Entry, std::vector<bool>> batch_acks_;  // entry -> index acknowledged
  // Acknowledgements waiting to be sent (kept across a reconnection).
  std::vector<Entry> pending_acks_;
  std::optional<Entry> pending_cumulative_;
  bool ack_flush_scheduled_ = false;
  asio::steady_timer ack_timer_;  // armed while a group waits; cancelled on close
  std::map<Entry, Clock::time_point> unacked_;     // ack timeout deadlines
  std::map<Entry, Clock::time_point> nacked_;      // negative-ack redelivery times
  std::shared_ptr<ProducerImpl> dlq_producer_;
  // Chunked messages being assembled, by uuid, and the chunk entries of assembled ones
  // (keyed by the last chunk's entry) so that acknowledging the message acks every chunk.
  struct ChunkedMessage {
    std::vector<Buffer> parts;
    std::vector<Entry> entries;
    Clock::time_point started;
  };
  std::map<std::string, ChunkedMessage> chunks_;
  std::map<Entry, std::vector<Entry>> chunk_entries_;
};

}  // namespace magnetar::client
