#pragma once
// One client connection speaking the Pulsar binary protocol: the handshake, keep-alive,
// and every command a client sends (one handler file per command family, handlers/*.cc).
// The connection lives on one event loop; commands for a topic are posted to the topic's
// loop, and what topics send back (the sinks of service/consumer_sink.h) hops to the
// connection's loop, so those may be called from either.
//
// Reads are bounded (maxMessageSize plus frame overhead; a lying length closes the
// connection) and stop while more than maxPendingPublishRequestsPerConnection sends wait for
// storage (back-pressure instead of unbounded buffering). Writes are queued and sent with
// gathered writes; MESSAGE frames reference stored entries without copying them.
//
// The bytes go over a net::Stream: plain TCP from brokerServicePort, or TLS from
// brokerServicePortTls once the broker has completed the handshake; nothing here differs.

#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "auth/authorization.h"
#include "broker/config/broker_config.h"
#include "broker/service/consumer_sink.h"
#include "broker/wire/server_error.h"
#include "common/asio.h"
#include "common/buffer.h"
#include "common/gate.h"
#include "common/logging.h"
#include "net/outbox.h"
#include "net/stream.h"
#include "protocol/frame.h"
#include "protocol/topic_name.h"

namespace magnetar::auth {
class Authentication;
}  // namespace magnetar::auth

namespace magnetar::broker {

using auth::Authentication;
class Authorization;
class Consumer;
class NamespaceService;
class NonPersistentSubscription;
class NonPersistentTopic;
class PersistentTopic;
class Producer;
class SchemaRegistry;
class Subscription;
class Topic;
class TopicRegistry;

// What connections use of the broker; outlives every connection.
struct ConnectionContext {
  const BrokerConfig& config;
  TopicRegistry& topics;
  NamespaceService& namespaces;
  SchemaRegistry& schemas;
  // The broker's task group: every coroutine a connection spawns joins it.
  Gate& gate;
  // A name for a producer that did not choose one.
  std::function<std::string()> next_producer_name;
  // The connection closed (from its loop).
  std::function<void(class Connection*)> closed;
  // Null: authenticationEnabled=false, every client is let in without a role.
  const Authentication* authentication = nullptr;
  // Null: authorizationEnabled=false, every connection may do everything.
  Authorization* authorization = nullptr;
};

// The client a Pulsar proxy names in a command of its own (LOOKUP, PARTITIONED_METADATA).
struct ForwardedClient {
  std::optional<std::string> principal;  // original_principal; nullopt: the command names none
  std::string auth_data;                 // original_auth_data
  std::string auth_method;               // original_auth_method ("none" when absent)
};

class Connection final : public ConsumerSink,
                         public ProducerSink,
                         public std::enable_shared_from_this<Connection> {
 public:
  Connection(ConnectionContext& context, std::unique_ptr<net::Stream> stream);
  ~Connection() override;

  void start();
  // Queues a frame; frames go out in the order queued.
  void write(BufferChain frame);
  void write_command(const wire::BaseCommand& command);
  // Closes the socket; producers and consumers of this connection are removed.
  void close();
  // Stops reading, writes what is queued (up to a second), then closes: an ERROR that ends
  // the connection reaches the client first.
  void close_after_flush();
  bool closed() const { return closed_; }
  int protocol_version() const { return protocol_version_; }
  bool wants_broker_entry_metadata() const { return broker_entry_metadata_; }
  const std::string& remote() const override { return remote_; }
  const std::string& client_version() const override { return client_version_; }
  bool tls() const { return stream_->tls(); }
  // Who authenticated (empty: authentication is off), and on a connection from a Pulsar proxy
  // (role() is one of proxyRoles) the client it speaks for (empty otherwise). principal() is
  // the one for logs and stats: the original principal when there is one.
  const std::string& role() const { return role_; }
  const std::string& original_principal() const { return original_principal_; }
  const std::string& principal() const {
    return original_principal_.empty() ? role_ : original_principal_;
  }

  // ConsumerSink / ProducerSink: CLOSE_PRODUCER / CLOSE_CONSUMER (the client reconnects)
  // forget the object; MESSAGE, REACHED_END_OF_TOPIC, ACTIVE_CONSUMER_CHANGE.
  void close_producer(uint64_t producer_id) override;
  void throttle_reading(std::chrono::steady_clock::duration pause) override;
  void close_consumer(uint64_t consumer_id) override;
  void send_message(uint64_t consumer_id, mledger::Position position, int32_t partition,
                    const Buffer& entry, uint32_t redelivery_count) override;
  void send_reached_end_of_topic(uint64_t consumer_id) override;
  void send_active_consumer_change(uint64_t consumer_id, bool active) override;

 private:
  struct ProducerEntry {
    std::shared_ptr<Topic> topic;  // of either kind
    std::shared_ptr<Producer> producer;
  };
  // A consumer of a persistent topic (topic and subscription set) or of a non-persistent
  // one (non_persistent_topic and non_persistent set): handlers/*.cc ask which.
  struct ConsumerEntry {
    std::shared_ptr<PersistentTopic> topic;
    std::shared_ptr<Subscription> subscription;
    std::shared_ptr<NonPersistentTopic> non_persistent_topic;
    std::shared_ptr<NonPersistentSubscription> non_persistent;
    std::shared_ptr<Consumer> consumer;
    const Executor& executor() const;
  };

  Task<void> read_loop();
  Task<void> keep_alive_loop();
  // False when the connection must close.
  bool handle(protocol::Frame& frame);
  // handlers/connect.cc
  void handle_connect(const wire::CommandConnect& connect);
  // CONNECT's original_principal (and with authenticateOriginalAuthData its original_auth_*),
  // after role_ is known (§1.5 of pulsar-security-proxy.md). False when the connection was
  // refused: the ERROR is queued and the connection closes.
  bool accept_original_principal(const wire::CommandConnect& connect);
  // AUTH_RESPONSE: the answer to a refresh challenge (§1.4 of pulsar-security-proxy.md).
  bool handle_auth_response(const wire::CommandAuthResponse& response);
  // Every authenticationRefreshCheckSeconds while the credentials expire: once expired, an
  // AUTH_CHALLENGE to clients that support refresh; the connection closes when the client
  // cannot refresh or left the previous challenge unanswered.
  Task<void> auth_refresh_loop();
  // handlers/access.cc: nullopt when the role may (or authorization is off), else the
  // failure to answer (`denied` is the text of a refusal). On a proxied connection the
  // original principal must pass too; `original` replaces the connection's for one command
  // (command_original_principal()).
  Task<std::optional<ServerFailure>> authorize_topic(protocol::TopicName topic,
                                                     auth::ActionSet actions, std::string denied,
                                                     std::optional<std::string> original = {});
  Task<std::optional<ServerFailure>> authorize_subscription(protocol::TopicName topic,
                                                            std::string subscription,
                                                            std::string denied);
  Task<std::optional<ServerFailure>> authorize_namespace(std::string ns, auth::ActionSet actions,
                                                         std::string denied);
  // The original principal a LOOKUP or PARTITIONED_METADATA is authorized for: the command's
  // own original_principal when it has one and role_ is a proxy role (authenticated from the
  // command's original_auth_* with authenticateOriginalAuthData), else the connection's; or
  // the failure to answer (`invalid` is the text when the command names no usable client).
  std::variant<std::string, ServerFailure> command_original_principal(
      const ForwardedClient& forwarded, const std::string& invalid);
  // Super user: role_, and on a proxied connection the original principal too.
  bool is_super_user() const;
  // handlers/lookup.cc
  void handle_lookup(const wire::CommandLookupTopic& lookup);
  void handle_partitioned_metadata(const wire::CommandPartitionedTopicMetadata& request);
  void handle_get_topics_of_namespace(const wire::CommandGetTopicsOfNamespace& request);
  // handlers/producer.cc
  void handle_producer(const wire::CommandProducer& request);
  bool handle_send(protocol::Frame& frame);
  void handle_close_producer(const wire::CommandCloseProducer& request);
  // handlers/consumer.cc
  void handle_subscribe(const wire::CommandSubscribe& request);
  // The consumer a SUBSCRIBE makes, on a topic's partition `partition` (-1: not a partition),
  // with its Key_Shared sticky ranges.
  std::shared_ptr<Consumer> new_consumer(const wire::CommandSubscribe& request, int partition);
  void handle_flow(const wire::CommandFlow& flow);
  void handle_unsubscribe(const wire::CommandUnsubscribe& request);
  void handle_close_consumer(const wire::CommandCloseConsumer& request);
  // handlers/ack.cc
  void handle_ack(const wire::CommandAck& ack);
  void handle_redeliver(const wire::CommandRedeliverUnacknowledgedMessages& request);
  // handlers/consumer_queries.cc
  void handle_seek(const wire::CommandSeek& request);
  void handle_get_last_message_id(const wire::CommandGetLastMessageId& request);
  void handle_consumer_stats(const wire::CommandConsumerStats& request);
  // handlers/schema.cc
  void handle_get_schema(const wire::CommandGetSchema& request);
  void handle_get_or_create_schema(const wire::CommandGetOrCreateSchema& request);
  // handlers/transactions.cc: refused, as Pulsar does with transactions disabled.
  bool handle_transaction(const wire::BaseCommand& command);

  // The version (on the wire) of a schema, stored first when new: for PRODUCER, SUBSCRIBE
  // and GET_OR_CREATE_SCHEMA alike. Errors: to_server_failure(status, MetadataError).
  Task<Result<std::string>> register_schema(protocol::TopicName topic, wire::Schema schema,
                                            bool may_add = true);
  // The topic of a PRODUCER or SUBSCRIBE, of either kind, loaded (created when `may_create`
  // and auto-creation allow it); null when the failure has been answered to `request_id`.
  Task<std::shared_ptr<Topic>> topic_for(uint64_t request_id, protocol::TopicName name,
                                         bool may_create);
  // handlers/non_persistent_consumer.cc: SUBSCRIBE on a non-persistent topic, and what its
  // consumers' commands do there (acknowledgements and redeliveries: nothing).
  Task<void> subscribe_non_persistent(wire::CommandSubscribe req,
                                      std::shared_ptr<NonPersistentTopic> topic);
  void answer_non_persistent_seek(const wire::CommandSeek& request);
  void answer_non_persistent_last_message_id(const ConsumerEntry& entry, uint64_t request_id);
  void send_error(uint64_t request_id, wire::ServerError error, const std::string& message);
  void send_error(uint64_t request_id, const ServerFailure& failure);
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
  // Runs a coroutine lambda on `executor` (this connection's by default) in the broker's task
  // group; nothing runs once the broker is stopping. The lambda object itself is handed over
  // (never an already-invoked temporary), so its captures outlive the coroutine.
  template <typename F>
  void spawn(F&& coroutine) {
    spawn_in(context_.gate, executor_, std::forward<F>(coroutine));
  }
  template <typename F>
  void spawn_on(const Executor& executor, F&& coroutine) {
    spawn_in(context_.gate, executor, std::forward<F>(coroutine));
  }

  ConnectionContext& context_;
  const BrokerConfig& config_;
  std::unique_ptr<net::Stream> stream_;
  Executor executor_;            // the stream's: this connection's loop
  std::thread::id loop_thread_;  // set by start(), on the connection's loop
  std::string remote_;
  std::string client_version_;  // from CONNECT, at most kMaxClientVersionLength bytes
  log::Logger log_;
  protocol::FrameDecoder decoder_;
  bool connected_ = false;
  bool draining_ = false;                   // an answer is going out before the connection closes
  // Not read before then (a topic's publish rate, throttle_reading()).
  std::chrono::steady_clock::time_point throttled_until_{};
  std::string role_;                        // who authenticated (empty: authentication is off)
  std::string auth_method_;                 // the provider that authenticated role_
  std::optional<int64_t> auth_expires_at_;  // seconds since the epoch; nullopt: never
  bool supports_auth_refresh_ = false;      // CONNECT's feature flag
  bool auth_challenge_pending_ = false;     // a refresh AUTH_CHALLENGE waits for its answer
  // Proxied connections: the client the proxy speaks for (empty: not proxied). With
  // authenticateOriginalAuthData its credentials were authenticated, and the refresh checks
  // them instead of the proxy's (§1.4).
  std::string original_principal_;
  bool original_authenticated_ = false;
  std::string original_auth_method_;            // the provider that authenticated them
  std::optional<int64_t> original_expires_at_;  // seconds since the epoch; nullopt: never
  bool closed_ = false;
  int protocol_version_ = 0;
  bool broker_entry_metadata_ = false;

  net::Outbox outbox_;              // frames queued for the client, written in gathered writes
  asio::steady_timer read_wakeup_;  // back-pressure: reads wait here
  asio::steady_timer auth_refresh_;
  asio::steady_timer keep_alive_;
  int64_t last_received_ms_ = 0;
  bool ping_outstanding_ = false;

  int pending_sends_ = 0;
  std::map<uint64_t, ProducerEntry> producers_;
  std::map<uint64_t, ProducerEntry> waiting_producers_;  // WaitForExclusive, not yet promoted
  // PRODUCER commands being handled, by producer id: true once a CLOSE_PRODUCER came for it.
  std::map<uint64_t, bool> creating_producers_;
  std::map<uint64_t, ConsumerEntry> consumers_;
};

// A command of `type` with nothing set yet (for the handlers' answers).
wire::BaseCommand make_command(wire::BaseCommand::Type type);
// A message id on the wire, and back (ledger and entry ids are unsigned there: -1 travels as
// 2^64 - 1).
mledger::Position to_position(const wire::MessageIdData& id);
void set_message_id(wire::MessageIdData* out, const mledger::Position& position);

}  // namespace magnetar::broker
