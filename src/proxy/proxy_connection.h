#pragma once
// One client connection to the proxy (reference §6.1-6.3). It reads the client's CONNECT,
// authenticates the client (authenticationEnabled), then becomes one of two things:
//
//  - a lookup connection (CONNECT without proxy_to_broker_url): the proxy answers CONNECTED
//    itself and serves LOOKUP, PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE and GET_SCHEMA by
//    asking brokers over its own connections (the client library's ClientConnection, one per
//    broker and client connection, whose CONNECT carries the client's role as
//    original_principal). LOOKUP redirects are followed by the proxy; the client is always told
//    `Connect` to the owner with proxy_through_service_url, so it comes back through the proxy.
//    At most maxConcurrentLookupRequests of these are in flight in the whole proxy.
//
//  - a data connection (CONNECT with proxy_to_broker_url = "host:port"): the target is
//    checked (TargetGuard, and checkActiveBrokers), the proxy dials the broker (TLS with
//    tlsEnabledWithBroker) and sends its own CONNECT (its credentials, the client's role and
//    version, the client's feature flags), and only once the broker answers CONNECTED is that
//    answer relayed to the client. From then on the bytes are spliced both ways without
//    decoding: each direction reads only after its last write went out (back-pressure), and
//    either side closing closes the other, so a dead broker makes the client look up again.
//
// Refusals are ERROR frames with Pulsar's texts (ServiceNotReady "Target broker cannot be
// validated.", AuthenticationError "Failed to authenticate", ...) followed by a close. Input is
// untrusted: frames are bounded by maxMessageSize, a client must send CONNECT within the
// broker connect timeout, and a lookup client silent for two keep-alive intervals is dropped.
//
// Threading: a connection and its broker connections live on one event loop.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/asio.h"
#include "common/buffer.h"
#include "common/gate.h"
#include "common/logging.h"
#include "magnetar/client.h"
#include "net/outbox.h"
#include "net/stream.h"
#include "proto/pulsar_api.pb.h"
#include "protocol/frame.h"
#include "proxy/proxy_metrics.h"

namespace magnetar::auth {
class Authentication;
}
namespace magnetar::client {
class ClientConnection;
}
namespace magnetar::net {
class TlsContext;
}

namespace magnetar::proxy {

class BrokerDiscovery;
class TargetGuard;
struct ProxyConfig;
struct Target;

// What every connection of a proxy uses; outlives them.
struct ProxyContext {
  const ProxyConfig& config;
  BrokerDiscovery& discovery;
  const TargetGuard& guard;
  // Null: authenticationEnabled=false.
  const auth::Authentication* authentication = nullptr;
  // The proxy's own connections to brokers: its credentials (brokerClientAuthentication*),
  // timeouts, and the TLS context when tlsEnabledWithBroker (else null).
  client::ClientOptions broker_client;
  std::shared_ptr<net::TlsContext> broker_tls;
  ProxyMetrics metrics;
  Gate& gate;
  std::atomic<int64_t> lookups_in_flight{0};
  std::atomic<uint64_t> next_request_id{1};
};

class ProxyConnection : public std::enable_shared_from_this<ProxyConnection> {
 public:
  // `io`: the event loop the stream lives on.
  ProxyConnection(ProxyContext& context, asio::io_context& io, std::unique_ptr<net::Stream> stream,
                  std::function<void()> on_closed);
  ~ProxyConnection();

  // Serves the connection (a coroutine in the proxy's task group).
  Task<void> serve();
  // Closes the client side and every broker connection; from the connection's loop.
  void close();
  const std::string& remote() const { return remote_; }
  Executor executor() { return io_.get_executor(); }

 private:
  enum class Mode { kHandshake, kLookup, kData };

  Task<std::optional<protocol::Frame>> read_frame(std::chrono::steady_clock::time_point deadline);
  // Writes one command now (before the outbox runs): handshake answers and refusals.
  Task<bool> write_now(const wire::BaseCommand& command);
  Task<void> refuse(wire::ServerError error, std::string message);
  // The role of the client, or nullopt when refused (the refusal already sent).
  Task<std::optional<std::string>> authenticate(const wire::CommandConnect& connect);

  // --- lookup connections ---
  Task<void> serve_lookups(const wire::CommandConnect& connect);
  void handle_lookup_frame(protocol::Frame& frame);
  Task<void> answer_lookup(wire::CommandLookupTopic request);
  // PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE, GET_SCHEMA: asked of any broker.
  Task<void> forward_request(wire::BaseCommand request);
  Task<void> keep_alive_loop();
  Task<Result<std::shared_ptr<client::ClientConnection>>> broker_connection(
      const std::string& url, std::chrono::steady_clock::time_point deadline);
  void send(const wire::BaseCommand& command);
  // Takes one of the proxy's lookup slots; false (and counted) when all are taken.
  bool acquire_lookup_slot();
  void release_lookup_slot();

  // --- data connections ---
  Task<void> serve_data(const wire::CommandConnect& connect);
  Task<std::unique_ptr<net::Stream>> connect_broker(const Target& target,
                                                    const wire::CommandConnect& connect,
                                                    BufferChain& broker_leftover);
  Task<void> pump(net::Stream& from, net::Stream& to, BufferChain leftover, bool from_broker);
  Task<void> broker_watchdog();

  void fill_proxied_connect(wire::CommandConnect& out, const wire::CommandConnect& client) const;

  ProxyContext& context_;
  const ProxyConfig& config_;
  asio::io_context& io_;
  std::unique_ptr<net::Stream> stream_;
  std::unique_ptr<net::Stream> broker_stream_;  // data connections, once connected
  std::function<void()> on_closed_;
  std::string remote_;
  log::Logger log_;
  protocol::FrameDecoder decoder_;
  Mode mode_ = Mode::kHandshake;
  bool closed_ = false;
  std::string role_;  // who the client authenticated as ("" with authentication off)
  std::string auth_method_;
  std::string auth_data_;  // kept only with forwardAuthorizationCredentials
  std::string client_version_;
  int protocol_version_ = 0;
  net::Outbox outbox_;  // lookup connections: answers, in order
  asio::steady_timer keep_alive_;
  std::chrono::steady_clock::time_point last_received_;
  std::chrono::steady_clock::time_point last_broker_read_;
  std::map<std::string, std::shared_ptr<client::ClientConnection>> brokers_;
};

}  // namespace magnetar::proxy
