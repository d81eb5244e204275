#include "proxy/proxy_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <limits>

#include "auth/authentication.h"
#include "client/connection.h"
#include "common/version.h"
#include "magnetar/errors.h"
#include "net/dial.h"
#include "net/splice.h"
#include "proxy/broker_discovery.h"
#include "proxy/proxy_config.h"
#include "proxy/target_guard.h"

namespace magnetar::proxy {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kNoRequest = std::numeric_limits<uint64_t>::max();
// The newest protocol version the proxy speaks; a client below 10 is dropped (as Pulsar's).
constexpr int kProtocolVersion = 21;
constexpr int kMinProtocolVersion = 10;
constexpr int kMaxLookupRedirects = 10;
constexpr size_t kSpliceBufferBytes = 64 * 1024;

wire::BaseCommand make_command(wire::BaseCommand::Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

// A broker's failure as carried by the client library's Status: its ServerError and text,
// or ServiceNotReady with the reason (connection failures, timeouts: the client retries).
std::pair<wire::ServerError, std::string> failure_of(const Status& status) {
  if (auto e = client::server_error_of(status)) {
    const int code = static_cast<int>(*e);
    std::string text = status.message();
    if (wire::ServerError_IsValid(code)) {
      const std::string prefix = wire::ServerError_Name(static_cast<wire::ServerError>(code)) + ": ";
      if (text.starts_with(prefix)) text.erase(0, prefix.size());
      return {static_cast<wire::ServerError>(code), text};
    }
  }
  return {wire::ServiceNotReady, status.message()};
}

// The answer a request of `type` gets when it fails.
wire::BaseCommand failure_response(wire::BaseCommand::Type type, uint64_t request_id,
                                   wire::ServerError error, const std::string& message) {
  switch (type) {
    case wire::BaseCommand::LOOKUP: {
      auto c = make_command(wire::BaseCommand::LOOKUP_RESPONSE);
      auto* r = c.mutable_lookuptopicresponse();
      r->set_request_id(request_id);
      r->set_response(wire::CommandLookupTopicResponse::Failed);
      r->set_error(error);
      r->set_message(message);
      return c;
    }
    case wire::BaseCommand::PARTITIONED_METADATA: {
      auto c = make_command(wire::BaseCommand::PARTITIONED_METADATA_RESPONSE);
      auto* r = c.mutable_partitionmetadataresponse();
      r->set_request_id(request_id);
      r->set_response(wire::CommandPartitionedTopicMetadataResponse::Failed);
      r->set_error(error);
      r->set_message(message);
      return c;
    }
    case wire::BaseCommand::GET_SCHEMA: {
      auto c = make_command(wire::BaseCommand::GET_SCHEMA_RESPONSE);
      auto* r = c.mutable_getschemaresponse();
      r->set_request_id(request_id);
      r->set_error_code(error);
      r->set_error_message(message);
      return c;
    }
    default: {
      auto c = make_command(wire::BaseCommand::ERROR);
      c.mutable_error()->set_request_id(request_id);
      c.mutable_error()->set_error(error);
      c.mutable_error()->set_message(message);
      return c;
    }
  }
}

// The request id of the commands a lookup connection forwards, and a setter for it.
uint64_t request_id_of(const wire::BaseCommand& c) {
  switch (c.type()) {
    case wire::BaseCommand::PARTITIONED_METADATA:
      return c.partitionmetadata().request_id();
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE:
      return c.gettopicsofnamespace().request_id();
    case wire::BaseCommand::GET_SCHEMA:
      return c.getschema().request_id();
    case wire::BaseCommand::LOOKUP:
      return c.lookuptopic().request_id();
    default:
      return kNoRequest;
  }
}

void set_request_id(wire::BaseCommand& c, uint64_t id) {
  switch (c.type()) {
    case wire::BaseCommand::PARTITIONED_METADATA:
      c.mutable_partitionmetadata()->set_request_id(id);
      break;
    case wire::BaseCommand::PARTITIONED_METADATA_RESPONSE:
      c.mutable_partitionmetadataresponse()->set_request_id(id);
      break;
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE:
      c.mutable_gettopicsofnamespace()->set_request_id(id);
      break;
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE_RESPONSE:
      c.mutable_gettopicsofnamespaceresponse()->set_request_id(id);
      break;
    case wire::BaseCommand::GET_SCHEMA:
      c.mutable_getschema()->set_request_id(id);
      break;
    case wire::BaseCommand::GET_SCHEMA_RESPONSE:
      c.mutable_getschemaresponse()->set_request_id(id);
      break;
    default:
      break;
  }
}

}  // namespace

ProxyConnection::ProxyConnection(ProxyContext& context, asio::io_context& io,
                                 std::unique_ptr<net::Stream> stream,
                                 std::function<void()> on_closed)
    : context_(context),
      config_(context.config),
      io_(io),
      stream_(std::move(stream)),
      on_closed_(std::move(on_closed)),
      remote_(stream_->remote()),
      log_(log::Logger("proxy.cnx").with("client", remote_)),
      decoder_(protocol::DecoderOptions{
          static_cast<uint32_t>(context.config.max_message_size) + 10 * 1024, false}),
      outbox_(io.get_executor()),
      keep_alive_(io) {}

ProxyConnection::~ProxyConnection() = default;

void ProxyConnection::close() {
  if (closed_) return;
  closed_ = true;
  stream_->close();
  if (broker_stream_) broker_stream_->close();
  outbox_.close();
  keep_alive_.cancel();
  for (auto& [url, cnx] : brokers_) {
    cnx->close(Status(Errc::kCancelled, "the client's connection to the proxy closed"));
  }
  brokers_.clear();
  if (on_closed_) std::exchange(on_closed_, nullptr)();
}

Task<std::optional<protocol::Frame>> ProxyConnection::read_frame(Clock::time_point deadline) {
  // A read that outlives the deadline closes the connection (a client that never speaks).
  asio::steady_timer guard(io_);
  bool timed_out = false;
  guard.expires_at(deadline);
  guard.async_wait([this, &timed_out](boost::system::error_code ec) {
    if (ec) return;
    timed_out = true;
    stream_->close();
  });
  std::optional<protocol::Frame> out;
  while (!closed_) {
    auto frame = decoder_.next();
    if (!frame.ok()) {
      log_.warn("closing: malformed input: {}", frame.status().message());
      break;
    }
    if (frame->has_value()) {
      out = std::move(**frame);
      break;
    }
    Buffer buffer = Buffer::allocate(16 * 1024);
    boost::system::error_code ec;
    const size_t n = co_await stream_->read_some(
        asio::mutable_buffer(buffer.mutable_data(), buffer.size()), ec);
    if (ec) {
      if (timed_out) log_.info("closing: no CONNECT in time");
      break;
    }
    buffer.truncate(n);
    decoder_.feed(std::move(buffer));
  }
  guard.cancel();
  co_return out;
}

Task<bool> ProxyConnection::write_now(const wire::BaseCommand& command) {
  Buffer frame = protocol::encode_command(command);
  boost::system::error_code ec;
  std::vector<asio::const_buffer> pieces{asio::const_buffer(frame.data(), frame.size())};
  co_await stream_->write(pieces, ec);
  co_return !ec;
}

Task<void> ProxyConnection::refuse(wire::ServerError error, std::string message) {
  auto c = make_command(wire::BaseCommand::ERROR);
  c.mutable_error()->set_request_id(kNoRequest);
  c.mutable_error()->set_error(error);
  c.mutable_error()->set_message(message);
  log_.info("refused: {}: {}", wire::ServerError_Name(error), message);
  co_await write_now(c);
  close();
}

Task<void> ProxyConnection::serve() {
  auto self = shared_from_this();
  const auto handshake_deadline =
      Clock::now() + std::chrono::milliseconds(config_.broker_proxy_connect_timeout_ms);
  Status shaken = co_await stream_->handshake("", handshake_deadline);
  if (!shaken.ok()) {
    log_.info("TLS handshake failed: {}", shaken.message());
    close();
    co_return;
  }
  auto first = co_await read_frame(handshake_deadline);
  if (!first) {
    close();
    co_return;
  }
  context_.metrics.binary_ops->inc();
  if (first->command.type() != wire::BaseCommand::CONNECT) {
    log_.info("closing: the first command was {}, not CONNECT",
              wire::BaseCommand::Type_Name(first->command.type()));
    close();
    co_return;
  }
  const wire::CommandConnect connect = first->command.connect();
  protocol_version_ = connect.protocol_version();
  client_version_ = connect.client_version().substr(0, 128);
  if (protocol_version_ < kMinProtocolVersion) {
    log_.info("closing: protocol version {} is older than {}", protocol_version_,
              kMinProtocolVersion);
    close();
    co_return;
  }
  auto role = co_await authenticate(connect);
  if (!role) co_return;
  role_ = *role;
  if (!role_.empty()) log_ = log_.with("role", role_);
  if (connect.has_proxy_to_broker_url()) {
    mode_ = Mode::kData;
    co_await serve_data(connect);
  } else {
    mode_ = Mode::kLookup;
    co_await serve_lookups(connect);
  }
  close();
}

Task<std::optional<std::string>> ProxyConnection::authenticate(const wire::CommandConnect& connect) {
  if (context_.authentication == nullptr) co_return std::string();
  const std::string method = connect.has_auth_method_name() ? connect.auth_method_name() : "none";
  auto outcome = context_.authentication->authenticate(method, connect.auth_data(), auth::now_seconds(),
                                                       stream_->verified_peer_common_name());
  if (!outcome.role) {
    log_.info("authentication failed: {}", outcome.reason);
    co_await refuse(wire::AuthenticationError, auth::kAuthenticationFailed);
    co_return std::nullopt;
  }
  auth_method_ = method;
  if (config_.forward_authorization_credentials) auth_data_ = connect.auth_data();
  co_return outcome.role;
}

void ProxyConnection::fill_proxied_connect(wire::CommandConnect& out,
                                           const wire::CommandConnect& client) const {
  out.set_client_version(client.client_version().empty()
                             ? fmt::format("magnetar-proxy-{}", kVersion)
                             : client.client_version().substr(0, 128));
  out.set_protocol_version(std::min(client.protocol_version(), kProtocolVersion));
  if (!role_.empty()) out.set_original_principal(role_);
  if (config_.forward_authorization_credentials && !auth_method_.empty()) {
    out.set_original_auth_method(auth_method_);
    out.set_original_auth_data(auth_data_);
  }
}

// ---------------------------------------------------------------------------------------
// Lookup connections

Task<void> ProxyConnection::serve_lookups(const wire::CommandConnect& connect) {
  auto self = shared_from_this();
  auto connected = make_command(wire::BaseCommand::CONNECTED);
  connected.mutable_connected()->set_server_version(fmt::format("magnetar-proxy-{}", kVersion));
  connected.mutable_connected()->set_protocol_version(
      std::min(connect.protocol_version(), kProtocolVersion));
  if (!co_await write_now(connected)) co_return;
  net::Outbox::ErrorHandler write_failed = [self](const boost::system::error_code& ec) {
    self->log_.debug("write failed: {}", net::describe_error(ec));
    self->close();
  };
  spawn_in(context_.gate, io_.get_executor(),
           [self, write_failed]() { return self->outbox_.run(*self->stream_, write_failed); });
  last_received_ = Clock::now();
  spawn_in(context_.gate, io_.get_executor(), [self]() { return self->keep_alive_loop(); });
  while (!closed_) {
    auto frame = co_await read_frame(Clock::time_point::max());
    if (!frame) break;
    last_received_ = Clock::now();
    context_.metrics.binary_ops->inc();
    handle_lookup_frame(*frame);
  }
}

void ProxyConnection::handle_lookup_frame(protocol::Frame& frame) {
  auto self = shared_from_this();
  const auto type = frame.command.type();
  if (config_.proxy_log_level > 0) {
    log_.info("lookup connection: {}", wire::BaseCommand::Type_Name(type));
  }
  switch (type) {
    case wire::BaseCommand::PING: {
      auto pong = make_command(wire::BaseCommand::PONG);
      pong.mutable_pong();
      send(pong);
      return;
    }
    case wire::BaseCommand::PONG:
    case wire::BaseCommand::AUTH_RESPONSE:
      return;
    case wire::BaseCommand::LOOKUP: {
      context_.metrics.lookups->inc();
      if (!acquire_lookup_slot()) {
        context_.metrics.rejected_lookups->inc();
        send(failure_response(type, frame.command.lookuptopic().request_id(),
                              wire::ServiceNotReady,
                              "Too many concurrent lookup and partitionsMetadata requests"));
        return;
      }
      wire::CommandLookupTopic request = frame.command.lookuptopic();
      spawn_in(context_.gate, io_.get_executor(),
               [self, request = std::move(request)]() mutable -> Task<void> {
                 co_await self->answer_lookup(std::move(request));
                 self->release_lookup_slot();
               });
      return;
    }
    case wire::BaseCommand::PARTITIONED_METADATA:
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE:
    case wire::BaseCommand::GET_SCHEMA: {
      auto& counted = type == wire::BaseCommand::PARTITIONED_METADATA ? context_.metrics.partition_metadata
                      : type == wire::BaseCommand::GET_SCHEMA         ? context_.metrics.schemas
                                                                      : context_.metrics.topics_of_namespace;
      auto& rejected = type == wire::BaseCommand::PARTITIONED_METADATA
                           ? context_.metrics.rejected_partition_metadata
                       : type == wire::BaseCommand::GET_SCHEMA ? context_.metrics.rejected_schemas
                                                               : context_.metrics.rejected_topics_of_namespace;
      counted->inc();
      if (!acquire_lookup_slot()) {
        rejected->inc();
        send(failure_response(type, request_id_of(frame.command), wire::ServiceNotReady,
                              "Too many concurrent lookup and partitionsMetadata requests"));
        return;
      }
      wire::BaseCommand request = std::move(frame.command);
      spawn_in(context_.gate, io_.get_executor(),
               [self, request = std::move(request)]() mutable -> Task<void> {
                 co_await self->forward_request(std::move(request));
                 self->release_lookup_slot();
               });
      return;
    }
    default:
      // Producers, consumers and the rest belong on a data connection.
      log_.info("closing: {} is not served on a lookup connection (no proxy_to_broker_url)",
                wire::BaseCommand::Type_Name(type));
      close();
  }
}

bool ProxyConnection::acquire_lookup_slot() {
  if (context_.lookups_in_flight.fetch_add(1) >= config_.max_concurrent_lookup_requests) {
    context_.lookups_in_flight.fetch_sub(1);
    return false;
  }
  return true;
}

void ProxyConnection::release_lookup_slot() { context_.lookups_in_flight.fetch_sub(1); }

void ProxyConnection::send(const wire::BaseCommand& command) {
  outbox_.push(BufferChain(protocol::encode_command(command)));
}

Task<Result<std::shared_ptr<client::ClientConnection>>> ProxyConnection::broker_connection(
    const std::string& url, Clock::time_point deadline) {
  auto it = brokers_.find(url);
  if (it != brokers_.end() && !it->second->closed()) {
    std::shared_ptr<client::ClientConnection> cnx = it->second;
    Status ready = co_await cnx->wait_ready(deadline);
    if (!ready.ok()) co_return ready;
    co_return cnx;
  }
  if (closed_) co_return Status(Errc::kCancelled, "the client's connection closed");
  auto cnx = std::make_shared<client::ClientConnection>(io_, url, url, context_.broker_client,
                                                        context_.broker_tls);
  // The client's CONNECT is not kept: what the broker needs of it is copied now.
  wire::CommandConnect client;
  client.set_client_version(client_version_);
  client.set_protocol_version(protocol_version_);
  cnx->set_connect_decorator(
      [this, client](wire::CommandConnect& out) { fill_proxied_connect(out, client); });
  brokers_[url] = cnx;
  Status st = co_await cnx->connect(deadline);
  if (!st.ok()) {
    if (auto again = brokers_.find(url); again != brokers_.end() && again->second == cnx) {
      brokers_.erase(again);
    }
    co_return st;
  }
  co_return cnx;
}

Task<void> ProxyConnection::answer_lookup(wire::CommandLookupTopic request) {
  auto self = shared_from_this();
  const uint64_t client_id = request.request_id();
  const auto deadline = Clock::now() + context_.broker_client.operation_timeout;
  auto fail = [&](wire::ServerError error, const std::string& message) {
    send(failure_response(wire::BaseCommand::LOOKUP, client_id, error, message));
  };
  auto url = context_.discovery.next_service_url();
  if (!url.ok()) {
    fail(wire::ServiceNotReady, url.status().message());
    co_return;
  }
  std::string broker = *url;
  bool authoritative = request.authoritative();
  for (int hop = 0; hop < kMaxLookupRedirects; ++hop) {
    auto cnx = co_await broker_connection(broker, deadline);
    if (!cnx.ok()) {
      auto [error, text] = failure_of(cnx.status());
      fail(error, text);
      co_return;
    }
    auto ask = make_command(wire::BaseCommand::LOOKUP);
    *ask.mutable_lookuptopic() = request;
    const uint64_t id = context_.next_request_id.fetch_add(1);
    ask.mutable_lookuptopic()->set_request_id(id);
    ask.mutable_lookuptopic()->set_authoritative(authoritative);
    auto answer = co_await (*cnx)->request(ask, id, deadline);
    if (closed_) co_return;
    if (!answer.ok()) {
      auto [error, text] = failure_of(answer.status());
      fail(error, text);
      co_return;
    }
    const auto& r = answer->lookuptopicresponse();
    const std::string& owner =
        context_.broker_tls ? r.brokerserviceurltls() : r.brokerserviceurl();
    if (owner.empty()) {
      fail(wire::ServiceNotReady,
           fmt::format("the broker named no {}URL for {}", context_.broker_tls ? "TLS " : "",
                       request.topic()));
      co_return;
    }
    if (r.response() == wire::CommandLookupTopicResponse::Connect) {
      // Always through the proxy: the client dials us again, naming this owner.
      auto reply = make_command(wire::BaseCommand::LOOKUP_RESPONSE);
      auto* out = reply.mutable_lookuptopicresponse();
      out->set_request_id(client_id);
      out->set_response(wire::CommandLookupTopicResponse::Connect);
      out->set_brokerserviceurl(owner);
      out->set_brokerserviceurltls(owner);
      out->set_authoritative(true);
      out->set_proxy_through_service_url(true);
      send(reply);
      co_return;
    }
    broker = owner;
    authoritative = r.authoritative();
  }
  fail(wire::ServiceNotReady, "Reached max number of redirections");
}

Task<void> ProxyConnection::forward_request(wire::BaseCommand request) {
  auto self = shared_from_this();
  const uint64_t client_id = request_id_of(request);
  const auto type = request.type();
  const auto deadline = Clock::now() + context_.broker_client.operation_timeout;
  auto url = context_.discovery.next_service_url();
  if (!url.ok()) {
    send(failure_response(type, client_id, wire::ServiceNotReady, url.status().message()));
    co_return;
  }
  auto cnx = co_await broker_connection(*url, deadline);
  if (!cnx.ok()) {
    auto [error, text] = failure_of(cnx.status());
    send(failure_response(type, client_id, error, text));
    co_return;
  }
  const uint64_t id = context_.next_request_id.fetch_add(1);
  set_request_id(request, id);
  auto answer = co_await (*cnx)->request(request, id, deadline);
  if (closed_) co_return;
  if (!answer.ok()) {
    auto [error, text] = failure_of(answer.status());
    send(failure_response(type, client_id, error, text));
    co_return;
  }
  set_request_id(*answer, client_id);
  send(*answer);
}

Task<void> ProxyConnection::keep_alive_loop() {
  auto self = shared_from_this();
  const auto interval = std::chrono::seconds(config_.keep_alive_interval_seconds);
  while (!closed_) {
    keep_alive_.expires_after(interval);
    boost::system::error_code ec;
    co_await keep_alive_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (closed_) co_return;
    if (Clock::now() - last_received_ > 2 * interval) {
      log_.info("closing: nothing received for {} s", 2 * config_.keep_alive_interval_seconds);
      close();
      co_return;
    }
    auto ping = make_command(wire::BaseCommand::PING);
    ping.mutable_ping();
    send(ping);
  }
}

// ---------------------------------------------------------------------------------------
// Data connections

Task<void> ProxyConnection::serve_data(const wire::CommandConnect& connect) {
  auto self = shared_from_this();
  auto target = parse_target(connect.proxy_to_broker_url());
  if (!target.ok() || !context_.guard.name_allowed(*target)) {
    log_.info("proxy_to_broker_url '{}' refused: {}", connect.proxy_to_broker_url().substr(0, 300),
              target.ok() ? "not in brokerProxyAllowed*" : target.status().message());
    co_await refuse(wire::ServiceNotReady, "Target broker cannot be validated.");
    co_return;
  }
  if (config_.check_active_brokers && !context_.discovery.is_active_broker(*target)) {
    co_await refuse(wire::ServiceNotReady, "Target broker isn't available.");
    co_return;
  }
  log_ = log_.with("broker", target->to_string());
  BufferChain broker_leftover;
  auto broker = co_await connect_broker(*target, connect, broker_leftover);
  if (!broker) co_return;  // refused or answered already
  broker_stream_ = std::move(broker);
  if (closed_) {
    broker_stream_->close();
    co_return;
  }
  // The client's bytes that came behind its CONNECT, and the broker's behind CONNECTED.
  BufferChain client_leftover = decoder_.take_buffered();
  last_broker_read_ = Clock::now();
  if (config_.broker_proxy_read_timeout_ms > 0) {
    spawn_in(context_.gate, io_.get_executor(), [self]() { return self->broker_watchdog(); });
  }
  net::Stream* client = stream_.get();
  net::Stream* broker_side = broker_stream_.get();
  spawn_in(context_.gate, io_.get_executor(),
           [self, client, broker_side, leftover = std::move(broker_leftover)]() mutable {
             return self->pump(*broker_side, *client, std::move(leftover), true);
           });
  co_await pump(*client, *broker_side, std::move(client_leftover), false);
}

Task<std::unique_ptr<net::Stream>> ProxyConnection::connect_broker(
    const Target& target, const wire::CommandConnect& connect, BufferChain& broker_leftover) {
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(config_.broker_proxy_connect_timeout_ms);
  net::DialOptions dial;
  dial.tls = context_.broker_tls;
  const TargetGuard* guard = &context_.guard;
  dial.address_allowed = [guard](const boost::asio::ip::address& a) {
    return guard->address_allowed(a);
  };
  auto dialed = co_await net::dial(io_.get_executor(), target.host, target.port, dial, deadline);
  if (!dialed.ok()) {
    if (dialed.status().is(Errc::kPermissionDenied)) {
      log_.info("target refused: {}", dialed.status().message());
      co_await refuse(wire::ServiceNotReady, "Target broker cannot be validated.");
    } else {
      // Pulsar's proxy closes without a word; an ERROR tells the client why, and
      // ServiceNotReady makes it look up again.
      co_await refuse(wire::ServiceNotReady,
                      fmt::format("Cannot connect to broker {}: {}", target.to_string(),
                                  dialed.status().message()));
    }
    co_return nullptr;
  }
  std::unique_ptr<net::Stream> broker = std::move(*dialed);
  // The proxy's own CONNECT, carrying the client's identity.
  auto hello = make_command(wire::BaseCommand::CONNECT);
  auto* c = hello.mutable_connect();
  auto credentials = [this]() -> Result<std::pair<std::string, std::string>> {
    const auto& a = context_.broker_client.authentication;
    if (!a) return std::make_pair(std::string("none"), std::string());
    auto data = a->credentials();
    if (!data.ok()) return data.status();
    return std::make_pair(a->method(), std::move(*data));
  };
  auto creds = credentials();
  if (!creds.ok()) {
    broker->close();
    co_await refuse(wire::ServiceNotReady,
                    fmt::format("the proxy's credentials: {}", creds.status().message()));
    co_return nullptr;
  }
  c->set_auth_method_name(creds->first);
  c->set_auth_data(creds->second);
  fill_proxied_connect(*c, connect);
  if (connect.has_feature_flags()) *c->mutable_feature_flags() = connect.feature_flags();
  // A refresh challenge would reach the client through the splice and be answered with the
  // client's credentials for the proxy's session: the broker closes instead, and the client
  // reconnects.
  c->mutable_feature_flags()->set_supports_auth_refresh(false);
  // Read the broker's answer with a decoder of our own, bounded like the client's.
  protocol::FrameDecoder decoder(protocol::DecoderOptions{
      static_cast<uint32_t>(config_.max_message_size) + 10 * 1024, false});
  asio::steady_timer guard_timer(io_);
  guard_timer.expires_at(deadline);
  net::Stream* raw = broker.get();
  guard_timer.async_wait([raw](boost::system::error_code ec) {
    if (!ec) raw->close();
  });
  auto write = [&](const wire::BaseCommand& cmd) -> Task<bool> {
    Buffer frame = protocol::encode_command(cmd);
    boost::system::error_code ec;
    std::vector<asio::const_buffer> pieces{asio::const_buffer(frame.data(), frame.size())};
    co_await raw->write(pieces, ec);
    co_return !ec;
  };
  bool ok = co_await write(hello);
  std::optional<wire::BaseCommand> answer;
  while (ok && !answer) {
    auto frame = decoder.next();
    if (!frame.ok()) break;
    if (!frame->has_value()) {
      Buffer buffer = Buffer::allocate(16 * 1024);
      boost::system::error_code ec;
      const size_t n =
          co_await raw->read_some(asio::mutable_buffer(buffer.mutable_data(), buffer.size()), ec);
      if (ec) break;
      buffer.truncate(n);
      decoder.feed(std::move(buffer));
      continue;
    }
    auto& cmd = (*frame)->command;
    if (cmd.type() == wire::BaseCommand::AUTH_CHALLENGE) {
      // The broker asks for the proxy's credentials again.
      auto response = make_command(wire::BaseCommand::AUTH_RESPONSE);
      auto* r = response.mutable_authresponse();
      r->set_client_version(fmt::format("magnetar-proxy-{}", kVersion));
      r->set_protocol_version(kProtocolVersion);
      auto again = credentials();
      if (!again.ok()) break;
      r->mutable_response()->set_auth_method_name(again->first);
      r->mutable_response()->set_auth_data(again->second);
      ok = co_await write(response);
      continue;
    }
    if (cmd.type() == wire::BaseCommand::CONNECTED || cmd.type() == wire::BaseCommand::ERROR) {
      answer = std::move(cmd);
    }
  }
  guard_timer.cancel();
  if (!answer) {
    broker->close();
    co_await refuse(wire::ServiceNotReady,
                    fmt::format("Broker {} did not complete the handshake in time",
                                target.to_string()));
    co_return nullptr;
  }
  if (answer->type() == wire::BaseCommand::ERROR) {
    // The broker refused the client (or the proxy): the client learns why.
    broker->close();
    log_.info("broker refused the connection: {}", answer->error().message());
    answer->mutable_error()->set_request_id(kNoRequest);
    co_await write_now(*answer);
    close();
    co_return nullptr;
  }
  // The broker's CONNECTED goes to the client as it is: its version, max_message_size and
  // feature flags are the broker's, which the client then talks to.
  if (!co_await write_now(*answer)) {
    broker->close();
    close();
    co_return nullptr;
  }
  broker_leftover = decoder.take_buffered();
  co_return broker;
}

Task<void> ProxyConnection::pump(net::Stream& from, net::Stream& to, BufferChain leftover,
                                 bool from_broker) {
  auto self = shared_from_this();
  boost::system::error_code ec;
  if (!leftover.empty()) {
    std::vector<asio::const_buffer> pieces;
    for (const Buffer& b : leftover.buffers()) pieces.emplace_back(b.data(), b.size());
    co_await to.write(pieces, ec);
  }
  auto& bytes = *context_.metrics.binary_bytes;
  auto& direction = from_broker ? *context_.metrics.bytes_out : *context_.metrics.bytes_in;
  auto& ops = *context_.metrics.binary_ops;
  const bool in_kernel =
      !ec && !closed_ && config_.proxy_zero_copy_mode_enabled && net::can_splice(from, to);
  if (in_kernel) {
    // Inside the kernel: the bytes never reach this process. (Named, not a temporary in the
    // co_await expression: GCC 12.)
    std::function<void(size_t)> on_moved = [&, from_broker](size_t n) {
      if (from_broker) last_broker_read_ = Clock::now();
      bytes.inc(static_cast<int64_t>(n));
      direction.inc(static_cast<int64_t>(n));
      ops.inc();
    };
    ec = co_await net::splice_relay(from, to, on_moved);
  }
  // Otherwise (TLS on either side) through one buffer per direction, allocated once.
  Buffer buffer = in_kernel ? Buffer() : Buffer::allocate(kSpliceBufferBytes);
  std::vector<asio::const_buffer> piece(1);
  while (!in_kernel && !ec && !closed_) {
    const size_t n = co_await from.read_some(
        asio::mutable_buffer(buffer.mutable_data(), buffer.size()), ec);
    if (ec) break;
    if (from_broker) last_broker_read_ = Clock::now();
    bytes.inc(static_cast<int64_t>(n));
    direction.inc(static_cast<int64_t>(n));
    ops.inc();
    piece[0] = asio::const_buffer(buffer.data(), n);
    co_await to.write(piece, ec);
  }
  if (!closed_ && ec && ec != asio::error::eof && ec != asio::error::operation_aborted) {
    log_.info("{} side: {}", from_broker ? "broker" : "client", net::describe_error(ec));
  } else if (!closed_) {
    log_.debug("{} closed the connection", from_broker ? "broker" : "client");
  }
  close();
}

Task<void> ProxyConnection::broker_watchdog() {
  auto self = shared_from_this();
  const auto timeout = std::chrono::milliseconds(config_.broker_proxy_read_timeout_ms);
  // keep_alive_ is free on a data connection, and close() cancels it.
  while (!closed_) {
    keep_alive_.expires_after(std::max<std::chrono::milliseconds>(timeout / 4,
                                                                   std::chrono::milliseconds(10)));
    boost::system::error_code ec;
    co_await keep_alive_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (closed_) co_return;
    if (Clock::now() - last_broker_read_ > timeout) {
      log_.warn("closing: the broker sent nothing for {} ms", config_.broker_proxy_read_timeout_ms);
      close();
      co_return;
    }
  }
}

}  // namespace magnetar::proxy
