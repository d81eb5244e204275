#pragma once
// One connection to a broker speaking the Pulsar binary protocol, shared by every
// producer, consumer and lookup of one event loop that talks to that broker. Plain TCP for a
// pulsar:// address, TLS for pulsar+ssl:// (net::Stream: the code below is the same).
//
// Lifecycle: connect() resolves, connects, does the TLS handshake when the address is
// pulsar+ssl://, then the CONNECT handshake (protocol v21);
// the connection then reads frames until the socket fails, the broker closes it, a frame
// does not decode, or a keep-alive PING goes unanswered for a whole interval. close() fails
// every outstanding request with kDisconnected and tells every registered producer and
// consumer (ConnectionListener::on_disconnected), which then reconnect on their own.
//
// Requests carry a client-wide request id; their response (SUCCESS, ERROR, LOOKUP_RESPONSE,
// PRODUCER_SUCCESS, ...) completes request(). Frames addressed to a producer or consumer id
// go to its listener.
//
// Threading: a connection and everything it calls lives on one event loop (the io_context it
// was made on); every method must be called there.

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "client/sync.h"
#include "common/asio.h"
#include "common/buffer.h"
#include "common/logging.h"
#include "magnetar/client.h"
#include "net/outbox.h"
#include "net/stream.h"
#include "proto/pulsar_api.pb.h"
#include "protocol/frame.h"

namespace magnetar::net {
class TlsContext;
}

namespace magnetar::client {

class ClientConnection;

// A producer or consumer registered on a connection. Called on the connection's loop.
class ConnectionListener {
 public:
  virtual ~ConnectionListener() = default;
  // SEND_RECEIPT, SEND_ERROR, CLOSE_PRODUCER (producers); MESSAGE, CLOSE_CONSUMER,
  // REACHED_END_OF_TOPIC, ACTIVE_CONSUMER_CHANGE (consumers).
  virtual void on_frame(ClientConnection& cnx, protocol::Frame& frame) = 0;
  virtual void on_disconnected(ClientConnection& cnx) = 0;
};

// Parses "pulsar://host[:port]" and "pulsar+ssl://host[:port]" (default ports 6650, 6651;
// a path is ignored).
struct HostPort {
  std::string host;
  std::string port;
  bool tls = false;  // pulsar+ssl://
};
Result<HostPort> parse_broker_url(const std::string& url);

// The client side TLS context of `options` (tls_* fields), shared by a client's connections.
// Errors (kInvalidConfiguration) name the option and file.
Result<std::shared_ptr<net::TlsContext>> make_tls_context(const ClientOptions& options);

// A broker's ERROR / SEND_ERROR / failed response as a Status.
Status server_error_status(int error, const std::string& text);

class ClientConnection : public std::enable_shared_from_this<ClientConnection> {
 public:
  // `logical`: the broker URL the lookup named; `physical`: where to connect (the same unless
  // going through a proxy). When they differ, CONNECT carries proxy_to_broker_url = the
  // logical URL's host:port, and the proxy at `physical` splices us to that broker.
  // `tls`: needed when `physical` is pulsar+ssl://.
  ClientConnection(asio::io_context& io, std::string logical, std::string physical,
                   const ClientOptions& options, std::shared_ptr<net::TlsContext> tls = nullptr);
  ~ClientConnection();

  // Connects and handshakes. Bounded by `deadline` and the connection timeout. Other
  // coroutines may wait for the outcome with wait_ready().
  Task<Status> connect(Deadline deadline);
  // For a proxy's connections to brokers: changes the CONNECT this connection sends (the
  // client's original principal and credentials, its version). Call before connect().
  void set_connect_decorator(std::function<void(wire::CommandConnect&)> decorate) {
    decorate_connect_ = std::move(decorate);
  }
  Task<Status> wait_ready(Deadline deadline);
  bool ready() const { return state_ == State::kReady; }
  bool closed() const { return state_ == State::kClosed; }
  void close(const Status& reason);

  void send_command(const wire::BaseCommand& command);
  void send_frame(BufferChain frame);
  // Sends `command` (whose request id is `request_id`) and waits for the response. An
  // ERROR response (or a response with an error field) becomes its Status.
  Task<Result<wire::BaseCommand>> request(const wire::BaseCommand& command, uint64_t request_id,
                                          Deadline deadline);
  // Waits for another response to a request already answered once (WaitForExclusive
  // producers get a second PRODUCER_SUCCESS).
  Task<Result<wire::BaseCommand>> wait_response(uint64_t request_id, Deadline deadline);

  void add_producer(uint64_t id, std::weak_ptr<ConnectionListener> listener);
  void remove_producer(uint64_t id);
  void add_consumer(uint64_t id, std::weak_ptr<ConnectionListener> listener);
  void remove_consumer(uint64_t id);

  const std::string& logical_address() const { return logical_; }
  const std::string& physical_address() const { return physical_; }
  bool proxied() const { return logical_ != physical_; }
  int max_message_size() const { return max_message_size_; }
  int protocol_version() const { return protocol_version_; }
  const std::string& server_version() const { return server_version_; }
  Executor executor() { return executor_; }

 private:
  // AUTH_CHALLENGE (a refresh of expired credentials): AUTH_RESPONSE with fresh ones.
  void answer_challenge();
  enum class State { kIdle, kConnecting, kReady, kClosed };
  struct Pending {
    explicit Pending(const Executor& ex) : timer(ex) {}
    asio::steady_timer timer;
    std::optional<Result<wire::BaseCommand>> response;
  };

  Task<Status> do_connect(Deadline deadline);
  Task<void> read_loop();
  Task<void> keep_alive_loop();
  void handle(protocol::Frame& frame);
  void complete(uint64_t request_id, Result<wire::BaseCommand> response);
  std::shared_ptr<Pending> pending_for(uint64_t request_id);
  Task<Result<wire::BaseCommand>> await_pending(std::shared_ptr<Pending> p, uint64_t request_id,
                                                Deadline deadline);

  const std::string logical_;
  const std::string physical_;
  const std::string peer_;  // for messages: physical_, or "<logical> via <physical>"
  const ClientOptions options_;
  log::Logger log_;
  const std::shared_ptr<net::TlsContext> tls_;
  Executor executor_;                    // this connection's loop
  asio::ip::tcp::socket socket_;         // while connecting; then moved into stream_
  std::unique_ptr<net::Stream> stream_;  // once connected (and the TLS handshake done)
  State state_ = State::kIdle;
  Status connect_status_;
  Event ready_event_;
  protocol::FrameDecoder decoder_;
  net::Outbox outbox_;  // frames for the broker; written once stream_ exists
  asio::steady_timer keep_alive_timer_;
  bool received_since_ping_ = true;
  int max_message_size_ = 5 * 1024 * 1024;
  int protocol_version_ = 0;
  std::string server_version_;
  std::shared_ptr<Pending> handshake_;  // while waiting for CONNECTED
  std::function<void(wire::CommandConnect&)> decorate_connect_;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  std::map<uint64_t, std::weak_ptr<ConnectionListener>> producers_;
  std::map<uint64_t, std::weak_ptr<ConnectionListener>> consumers_;
};

}  // namespace magnetar::client
