#pragma once
// A producer on one topic (or one partition): sequence ids, batching, compression, the
// pending queue, send timeouts, and reconnection.
//
// Threading: all state below "loop state" lives on the producer's event loop (the loop its
// connections use). User threads hand messages over by posting to that loop; the only
// cross-thread state is the pending-message counter (a mutex and condition variable, for
// max_pending_messages with block_if_queue_full) and a few atomics for getters.
//
// Reconnection: run() loops lookup -> connection -> PRODUCER -> re-send every pending
// message in order with its original sequence id, then waits for the connection to drop or
// for CLOSE_PRODUCER; between attempts it sleeps with jittered exponential backoff.

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/client_impl.h"
#include "client/connection.h"
#include "client/reconnecting.h"
#include "client/sync.h"
#include "magnetar/producer.h"
#include "protocol/batch.h"

namespace magnetar::client {

class ProducerBase : public Closeable {
 public:
  virtual void send_async(Message message, SendCallback callback) = 0;
  virtual Status flush() = 0;
  virtual const std::string& topic() const = 0;
  virtual std::string name() const = 0;
  virtual int64_t last_sequence_id() const = 0;
  virtual bool connected() const = 0;
  virtual std::chrono::milliseconds send_timeout() const = 0;
};

class ProducerImpl final : public ProducerBase,
                           public Reconnecting,
                           public ConnectionListener,
                           public std::enable_shared_from_this<ProducerImpl> {
 public:
  // `partition`: the partition index this producer writes to (-1: not partitioned).
  ProducerImpl(std::shared_ptr<ClientImpl> client, std::string topic, ProducerOptions options,
               int partition);
  ~ProducerImpl() override;

  // On the loop: starts run() and waits for the first successful registration or a failure
  // (fatal, or none succeeded by `deadline`).
  Task<Status> create(Deadline deadline);
  Executor executor() { return client_->executor(loop_); }

  void send_async(Message message, SendCallback callback) override;
  // An already-encoded message (RawProducer): `metadata` and `payload` go out unchanged in
  // one SEND with this producer's next sequence id; num_messages_in_batch says how many
  // messages the entry holds. Same queue, slots, receipts and re-sends as send_async.
  void send_encoded(wire::MessageMetadata metadata, Buffer payload, SendCallback callback);
  Status flush() override;
  Status close() override;
  void close_async() override;
  const std::string& topic() const override { return topic_; }
  std::string name() const override;
  int64_t last_sequence_id() const override { return last_acked_.load(); }
  bool connected() const override { return connected_.load(); }
  bool closed() const { return closed_.load(); }
  std::chrono::milliseconds send_timeout() const override { return options_.send_timeout; }

  // ConnectionListener (on the loop).
  void on_frame(ClientConnection& cnx, protocol::Frame& frame) override;
  void on_disconnected(ClientConnection& cnx) override;

  // On the loop.
  Task<Status> flush_on_loop(Deadline deadline);
  Task<Status> close_on_loop();

 private:
  struct OpSend {
    int64_t sequence_id = 0;
    int64_t highest_sequence_id = 0;
    int32_t num_messages = 1;
    bool batch = false;
    BufferChain frame;
    std::vector<SendCallback> callbacks;  // one per message
    Clock::time_point created;
  };
  struct Batched {
    Message message;
    SendCallback callback;
    int64_t sequence_id;
    Clock::time_point created;
  };

  Task<void> run();
  Task<Status> connect_once(Deadline deadline) override;
  void closed_by(const Status& status) override;
  Task<void> batch_timer_loop();
  Task<void> timeout_loop();
  void enqueue(Message message, SendCallback callback);
  void enqueue_encoded(wire::MessageMetadata metadata, Buffer payload, SendCallback callback);
  // send_async's part before the loop: closed check, a pending slot, the slot's release.
  bool admit(SendCallback& callback);
  void add_to_batch(Message message, SendCallback callback, int64_t sequence_id);
  void flush_batch();
  void send_single(Message message, SendCallback callback, int64_t sequence_id);
  void push_op(OpSend op);
  void send_chunks(const wire::MessageMetadata& md, const Buffer& payload, size_t chunk_size,
                   SendCallback callback, int64_t sequence_id);
  void handle_receipt(ClientConnection& cnx, const wire::CommandSendReceipt& receipt);
  void fail_pending(const Status& status);
  void complete_op(OpSend& op, const Result<std::pair<int64_t, int64_t>>& position);
  void drop_connection();
  Result<Buffer> maybe_compress(const Buffer& payload, wire::MessageMetadata& metadata);
  bool acquire_slot(const SendCallback& callback);
  void release_slots(int n);
  bool gives_up_on(const Status& status, bool created) const override;

  const std::shared_ptr<ClientImpl> client_;
  const std::string topic_;
  const ProducerOptions options_;
  const int partition_;
  const int loop_;
  const uint64_t producer_id_;
  log::Logger log_;

  // Cross-thread.
  std::atomic<bool> connected_{false};
  std::atomic<int64_t> last_acked_{-1};
  mutable std::mutex mu_;  // guards name_ and the slot counter
  std::condition_variable slot_cv_;
  int used_slots_ = 0;
  std::string name_;

  // Loop state.
  Event progress_event_;  // an op completed (flush waits on it)
  int max_message_size_ = 5 * 1024 * 1024;
  bool user_named_ = false;
  uint64_t epoch_ = 0;
  int64_t next_sequence_id_ = 0;
  bool sequence_initialised_ = false;
  std::deque<OpSend> pending_;
  std::vector<Batched> batch_;
  size_t batch_bytes_ = 0;
  asio::steady_timer batch_timer_;
};

}  // namespace magnetar::client
