#include "client/connection.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>

#include "client/service_hosts.h"
#include "common/version.h"
#include "net/tls.h"

namespace magnetar::client {

namespace {

constexpr int kProtocolVersion = 21;
// Bounds of one gathered write to the broker.
constexpr net::OutboxOptions kOutboxOptions{.max_pieces = 256, .max_bytes = 4 * 1024 * 1024};

wire::BaseCommand make_command(wire::BaseCommand::Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

}  // namespace

Result<HostPort> parse_broker_url(const std::string& url) {
  constexpr std::string_view kScheme = "pulsar://";
  constexpr std::string_view kTlsScheme = "pulsar+ssl://";
  std::string_view rest = url;
  bool tls = false;
  if (rest.substr(0, kScheme.size()) == kScheme) {
    rest.remove_prefix(kScheme.size());
  } else if (rest.substr(0, kTlsScheme.size()) == kTlsScheme) {
    rest.remove_prefix(kTlsScheme.size());
    tls = true;
  } else {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("'{}' is not a pulsar:// or pulsar+ssl:// URL", url));
  }
  rest = rest.substr(0, rest.find('/'));  // a path means nothing here
  auto a = parse_authority(rest, default_port(tls ? "pulsar+ssl" : "pulsar"));
  if (!a.ok()) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("'{}': {}", url, a.status().message()));
  }
  return HostPort{a->host, std::to_string(a->port), tls};
}

Result<std::shared_ptr<net::TlsContext>> make_tls_context(const ClientOptions& options) {
  net::TlsOptions t;
  t.trust_certs_file = options.tls_trust_certs_file_path;
  t.allow_insecure = options.tls_allow_insecure_connection;
  t.validate_hostname = options.tls_validate_hostname;
  t.certificate_file = options.tls_certificate_file_path;
  t.private_key_file = options.tls_private_key_file_path;
  if (options.authentication) {
    if (auto files = options.authentication->tls_files()) {
      t.certificate_file = files->certificate_file;
      t.private_key_file = files->private_key_file;
    }
  }
  auto made = net::TlsContext::create(net::TlsRole::kClient, t);
  if (!made.ok()) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("TLS options: {}", made.status().message()));
  }
  return *made;
}

Status server_error_status(int error, const std::string& text) {
  const std::string name = wire::ServerError_IsValid(error)
                               ? wire::ServerError_Name(static_cast<wire::ServerError>(error))
                               : fmt::format("ServerError({})", error);
  return Status(std::error_code(error, server_error_category()), fmt::format("{}: {}", name, text));
}

ClientConnection::ClientConnection(asio::io_context& io, std::string logical, std::string physical,
                                   const ClientOptions& options,
                                   std::shared_ptr<net::TlsContext> tls)
    : logical_(std::move(logical)),
      physical_(std::move(physical)),
      peer_(logical_ == physical_ ? physical_ : fmt::format("{} via {}", logical_, physical_)),
      options_(options),
      log_(log::Logger("client.cnx").with("broker", peer_)),
      tls_(std::move(tls)),
      executor_(io.get_executor()),
      socket_(io),
      outbox_(io.get_executor(), kOutboxOptions),
      keep_alive_timer_(io) {}

ClientConnection::~ClientConnection() = default;

Task<Status> ClientConnection::connect(Deadline deadline) {
  switch (state_) {
    case State::kReady:
      co_return Status::OK();
    case State::kClosed:
      co_return connect_status_.ok()
          ? Status(ClientError::kDisconnected, fmt::format("connection to {} closed", peer_))
          : connect_status_;
    case State::kConnecting:
      co_return co_await wait_ready(deadline);
    case State::kIdle:
      break;
  }
  auto self = shared_from_this();
  state_ = State::kConnecting;
  const Deadline limit = std::min(deadline, deadline_after(options_.connection_timeout));
  Status st = co_await do_connect(limit);
  if (st.ok() && state_ == State::kConnecting) {
    state_ = State::kReady;
    log_.debug("connected, protocol version {}, server {}", protocol_version_, server_version_);
  } else if (st.ok()) {
    st = connect_status_.ok() ? Status(ClientError::kDisconnected, "connection closed")
                              : connect_status_;
  } else {
    close(st);
  }
  ready_event_.notify_all();
  co_return st;
}

Task<Status> ClientConnection::wait_ready(Deadline deadline) {
  auto self = shared_from_this();
  while (state_ == State::kConnecting || state_ == State::kIdle) {
    if (!co_await ready_event_.wait_until(deadline)) {
      co_return Status(ClientError::kTimeout, fmt::format("timed out connecting to {}", physical_));
    }
  }
  if (state_ == State::kReady) co_return Status::OK();
  co_return connect_status_.ok() ? Status(ClientError::kDisconnected, "connection closed")
                                 : connect_status_;
}

Task<Status> ClientConnection::do_connect(Deadline deadline) {
  auto hp = parse_broker_url(physical_);
  if (!hp.ok()) co_return hp.status();
  // Through a proxy: the broker the proxy is to splice us to, as "host:port" with no scheme
  // (what Pulsar's proxies expect in proxy_to_broker_url).
  std::string proxy_to;
  if (proxied()) {
    auto target = parse_broker_url(logical_);
    if (!target.ok()) co_return target.status();
    const bool v6 = target->host.find(':') != std::string::npos;
    proxy_to = v6 ? fmt::format("[{}]:{}", target->host, target->port)
                  : fmt::format("{}:{}", target->host, target->port);
  }
  if (hp->tls && !tls_) {
    co_return Status(ClientError::kInvalidConfiguration,
                     fmt::format("{} needs TLS: use a pulsar+ssl:// service URL", physical_));
  }
  auto ex = executor_;
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(ex);
  auto timed_out = std::make_shared<bool>(false);
  auto guard = std::make_shared<asio::steady_timer>(ex);
  guard->expires_at(deadline);
  std::weak_ptr<ClientConnection> weak = weak_from_this();
  guard->async_wait([weak, resolver, timed_out](boost::system::error_code ec) {
    if (ec) return;
    *timed_out = true;
    resolver->cancel();
    if (auto self = weak.lock()) {
      boost::system::error_code ignored;
      self->socket_.close(ignored);
      if (self->stream_) self->stream_->close();
      if (self->handshake_) self->handshake_->timer.cancel();
    }
  });
  boost::system::error_code ec;
  auto endpoints = co_await resolver->async_resolve(hp->host, hp->port,
                                                    asio::redirect_error(asio::use_awaitable, ec));
  if (!ec && !*timed_out) {
    co_await asio::async_connect(socket_, endpoints, asio::redirect_error(asio::use_awaitable, ec));
  }
  if (*timed_out) {
    co_return Status(ClientError::kTimeout, fmt::format("timed out connecting to {}", physical_));
  }
  if (ec) {
    guard->cancel();
    co_return Status(ClientError::kConnectError,
                     fmt::format("cannot connect to {}: {}", physical_, ec.message()));
  }
  if (hp->tls) {
    stream_ = net::tls_stream(std::move(socket_), tls_);
  } else {
    stream_ = net::tcp_stream(std::move(socket_));
  }
  // TLS: bounded by the same deadline (and close() ends it too); plain TCP: nothing to do.
  Status handshaken = co_await stream_->handshake(hp->host, deadline);
  if (!handshaken.ok()) {
    guard->cancel();
    if (*timed_out || handshaken.is(Errc::kTimeout)) {
      co_return Status(ClientError::kTimeout,
                       fmt::format("timed out in the TLS handshake with {}", physical_));
    }
    co_return Status(ClientError::kConnectError,
                     fmt::format("cannot connect to {}: {}", physical_, handshaken.message()));
  }
  if (state_ == State::kClosed) {  // closed while connecting
    guard->cancel();
    stream_->close();
    co_return connect_status_;
  }
  Result<std::string> credentials = std::string();
  if (options_.authentication) credentials = options_.authentication->credentials();
  if (!credentials.ok()) {
    guard->cancel();
    stream_->close();
    co_return Status(
        ClientError::kAuthenticationError,
        fmt::format("credentials for {}: {}", physical_, credentials.status().message()));
  }
  auto self = shared_from_this();
  asio::co_spawn(
      ex, [self]() { return self->read_loop(); }, asio::detached);
  // A failed write closes the connection.
  auto write_failed = [this](const boost::system::error_code& ec) {
    close(Status(ClientError::kDisconnected,
                 fmt::format("write failed: {}", net::describe_error(ec))));
  };
  asio::co_spawn(
      ex, [self, write_failed]() { return self->outbox_.run(*self->stream_, write_failed); },
      asio::detached);

  auto connect = make_command(wire::BaseCommand::CONNECT);
  auto* c = connect.mutable_connect();
  c->set_client_version(fmt::format("magnetar-cpp-{}", kVersion));
  c->set_protocol_version(kProtocolVersion);
  if (!proxy_to.empty()) c->set_proxy_to_broker_url(proxy_to);
  if (options_.authentication) {
    c->set_auth_method_name(options_.authentication->method());
    c->set_auth_data(*credentials);
  } else {
    c->set_auth_method_name("none");
  }
  // A broker may challenge expired credentials later: answered with fresh ones.
  c->mutable_feature_flags()->set_supports_auth_refresh(options_.authentication != nullptr);
  if (decorate_connect_) decorate_connect_(*c);
  handshake_ = std::make_shared<Pending>(ex);
  auto handshake = handshake_;
  send_command(connect);
  if (!handshake->response) {
    handshake->timer.expires_at(deadline);
    co_await handshake->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  guard->cancel();
  handshake_.reset();
  if (!handshake->response) {
    if (state_ == State::kClosed && !connect_status_.ok()) co_return connect_status_;
    co_return Status(ClientError::kTimeout, fmt::format("no CONNECTED from {} in time", peer_));
  }
  if (!handshake->response->ok()) co_return handshake->response->status();
  keep_alive_timer_.expires_after(options_.keep_alive_interval);
  asio::co_spawn(
      ex, [self]() { return self->keep_alive_loop(); }, asio::detached);
  co_return Status::OK();
}

void ClientConnection::answer_challenge() {
  auto response = make_command(wire::BaseCommand::AUTH_RESPONSE);
  auto* r = response.mutable_authresponse();
  r->set_client_version(fmt::format("magnetar-cpp-{}", kVersion));
  r->set_protocol_version(kProtocolVersion);
  if (!options_.authentication) {
    close(Status(ClientError::kProtocolError, "an AUTH_CHALLENGE without credentials to give"));
    return;
  }
  auto data = options_.authentication->credentials();
  if (!data.ok()) {
    log_.warn("cannot answer the broker's authentication challenge: {}", data.status().message());
    close(Status(ClientError::kAuthenticationError, data.status().message()));
    return;
  }
  r->mutable_response()->set_auth_method_name(options_.authentication->method());
  r->mutable_response()->set_auth_data(*data);
  send_command(response);
}

void ClientConnection::close(const Status& reason) {
  if (state_ == State::kClosed) return;
  const bool was_ready = state_ == State::kReady;
  state_ = State::kClosed;
  connect_status_ = reason.ok() ? Status(ClientError::kDisconnected, "connection closed") : reason;
  boost::system::error_code ec;
  socket_.close(ec);
  if (stream_) stream_->close();
  outbox_.close();
  keep_alive_timer_.cancel();
  if (was_ready) log_.info("connection closed: {}", connect_status_.message());
  if (handshake_) {
    handshake_->response = connect_status_;
    handshake_->timer.cancel();
  }
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    p->response = Status(ClientError::kDisconnected, fmt::format("connection to {} lost: {}", peer_,
                                                                 connect_status_.message()));
    p->timer.cancel();
  }
  auto producers = std::move(producers_);
  auto consumers = std::move(consumers_);
  producers_.clear();
  consumers_.clear();
  for (auto* map : {&producers, &consumers}) {
    for (auto& [id, weak] : *map) {
      if (auto l = weak.lock()) l->on_disconnected(*this);
    }
  }
  ready_event_.notify_all();
}

void ClientConnection::send_command(const wire::BaseCommand& command) {
  send_frame(BufferChain(protocol::encode_command(command)));
}

void ClientConnection::send_frame(BufferChain frame) {
  if (state_ == State::kClosed) return;
  outbox_.push(std::move(frame));
}

Task<void> ClientConnection::read_loop() {
  auto self = shared_from_this();
  while (state_ != State::kClosed) {
    Buffer buffer = Buffer::allocate(64 * 1024);
    boost::system::error_code ec;
    const asio::mutable_buffer into(buffer.mutable_data(), buffer.size());
    const size_t n = co_await stream_->read_some(into, ec);
    if (ec) {
      // A broker that refuses our certificate says so after the TLS 1.3 handshake: an alert
      // read here ("tlsv13 alert certificate required").
      std::string why = net::describe_error(ec);
      if (ec == asio::error::eof) {
        why = proxied() ? fmt::format("closed by the proxy {} (to {})", physical_, logical_)
                        : std::string("closed by the broker");
      }
      if (net::is_tls_error(ec)) why = fmt::format("TLS error from {}: {}", physical_, why);
      close(Status(ClientError::kDisconnected, why));
      co_return;
    }
    received_since_ping_ = true;
    buffer.truncate(n);
    decoder_.feed(std::move(buffer));
    while (state_ != State::kClosed) {
      auto frame = decoder_.next_frame();  // the decoder's own Frame, reused
      if (!frame.ok()) {
        log_.warn("closing: undecodable frame: {}", frame.status().to_string());
        close(Status(ClientError::kProtocolError, frame.status().to_string()));
        co_return;
      }
      if (*frame == nullptr) break;
      handle(**frame);
    }
  }
}

Task<void> ClientConnection::keep_alive_loop() {
  auto self = shared_from_this();
  while (state_ != State::kClosed) {
    boost::system::error_code ec;
    co_await keep_alive_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (state_ == State::kClosed) co_return;
    if (!received_since_ping_) {
      close(Status(ClientError::kDisconnected, "no answer to a keep-alive ping"));
      co_return;
    }
    received_since_ping_ = false;
    auto ping = make_command(wire::BaseCommand::PING);
    ping.mutable_ping();
    send_command(ping);
    keep_alive_timer_.expires_after(options_.keep_alive_interval);
  }
}

std::shared_ptr<ClientConnection::Pending> ClientConnection::pending_for(uint64_t request_id) {
  auto& p = pending_[request_id];
  if (!p) p = std::make_shared<Pending>(executor_);
  return p;
}

void ClientConnection::complete(uint64_t request_id, Result<wire::BaseCommand> response) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) {
    log_.debug("response to unknown request {}", request_id);
    return;
  }
  auto p = it->second;
  pending_.erase(it);
  p->response = std::move(response);
  p->timer.cancel();
}

Task<Result<wire::BaseCommand>> ClientConnection::await_pending(std::shared_ptr<Pending> p,
                                                                uint64_t request_id,
                                                                Deadline deadline) {
  auto self = shared_from_this();
  if (!p->response) {
    p->timer.expires_at(deadline);
    boost::system::error_code ec;
    co_await p->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
  if (!p->response) {
    auto it = pending_.find(request_id);
    if (it != pending_.end() && it->second == p) pending_.erase(it);
    co_return Status(ClientError::kTimeout, fmt::format("no response from {} in time", peer_));
  }
  co_return std::move(*p->response);
}

Task<Result<wire::BaseCommand>> ClientConnection::request(const wire::BaseCommand& command,
                                                          uint64_t request_id, Deadline deadline) {
  if (state_ != State::kReady) {
    co_return Status(ClientError::kDisconnected,
                     fmt::format("connection to {} is not ready", peer_));
  }
  auto p = pending_for(request_id);
  send_command(command);
  co_return co_await await_pending(p, request_id, deadline);
}

Task<Result<wire::BaseCommand>> ClientConnection::wait_response(uint64_t request_id,
                                                                Deadline deadline) {
  if (state_ != State::kReady) {
    co_return Status(ClientError::kDisconnected,
                     fmt::format("connection to {} is not ready", peer_));
  }
  auto p = pending_for(request_id);
  co_return co_await await_pending(p, request_id, deadline);
}

void ClientConnection::add_producer(uint64_t id, std::weak_ptr<ConnectionListener> listener) {
  producers_[id] = std::move(listener);
}
void ClientConnection::remove_producer(uint64_t id) {
  producers_.erase(id);
}
void ClientConnection::add_consumer(uint64_t id, std::weak_ptr<ConnectionListener> listener) {
  consumers_[id] = std::move(listener);
}
void ClientConnection::remove_consumer(uint64_t id) {
  consumers_.erase(id);
}

void ClientConnection::handle(protocol::Frame& frame) {
  auto& cmd = frame.command;
  auto to = [&](std::map<uint64_t, std::weak_ptr<ConnectionListener>>& map, uint64_t id) {
    auto it = map.find(id);
    if (it == map.end()) return;
    if (auto l = it->second.lock()) {
      l->on_frame(*this, frame);
    } else {
      map.erase(it);
    }
  };
  switch (cmd.type()) {
    case wire::BaseCommand::CONNECTED:
      protocol_version_ = cmd.connected().protocol_version();
      server_version_ = cmd.connected().server_version();
      if (cmd.connected().has_max_message_size() && cmd.connected().max_message_size() > 0) {
        max_message_size_ = cmd.connected().max_message_size();
      }
      if (handshake_) {
        handshake_->response = cmd;
        handshake_->timer.cancel();
      }
      return;
    case wire::BaseCommand::PING: {
      auto pong = make_command(wire::BaseCommand::PONG);
      pong.mutable_pong();
      send_command(pong);
      return;
    }
    case wire::BaseCommand::PONG:
      return;
    case wire::BaseCommand::AUTH_CHALLENGE:
      answer_challenge();
      return;
    case wire::BaseCommand::ERROR: {
      Status st = server_error_status(cmd.error().error(), cmd.error().message());
      if (handshake_ && state_ == State::kConnecting) {
        handshake_->response = st;
        handshake_->timer.cancel();
        return;
      }
      complete(cmd.error().request_id(), st);
      return;
    }
    case wire::BaseCommand::SUCCESS:
      complete(cmd.success().request_id(), cmd);
      return;
    case wire::BaseCommand::PRODUCER_SUCCESS: {
      const uint64_t id = cmd.producer_success().request_id();
      const bool ready = cmd.producer_success().producer_ready();
      complete(id, cmd);
      // WaitForExclusive: a second PRODUCER_SUCCESS follows; catch it even before anyone waits.
      if (!ready) pending_for(id);
      return;
    }
    case wire::BaseCommand::LOOKUP_RESPONSE: {
      const auto& r = cmd.lookuptopicresponse();
      if (r.response() == wire::CommandLookupTopicResponse::Failed) {
        complete(r.request_id(), server_error_status(r.has_error() ? r.error() : 0, r.message()));
      } else {
        complete(r.request_id(), cmd);
      }
      return;
    }
    case wire::BaseCommand::PARTITIONED_METADATA_RESPONSE: {
      const auto& r = cmd.partitionmetadataresponse();
      if (r.has_response() &&
          r.response() == wire::CommandPartitionedTopicMetadataResponse::Failed) {
        complete(r.request_id(), server_error_status(r.has_error() ? r.error() : 0, r.message()));
      } else {
        complete(r.request_id(), cmd);
      }
      return;
    }
    case wire::BaseCommand::GET_LAST_MESSAGE_ID_RESPONSE:
      complete(cmd.getlastmessageidresponse().request_id(), cmd);
      return;
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE_RESPONSE:
      complete(cmd.gettopicsofnamespaceresponse().request_id(), cmd);
      return;
    case wire::BaseCommand::ACK_RESPONSE: {
      const auto& r = cmd.ackresponse();
      if (r.has_error()) {
        complete(r.request_id(), server_error_status(r.error(), r.message()));
      } else {
        complete(r.request_id(), cmd);
      }
      return;
    }
    case wire::BaseCommand::GET_SCHEMA_RESPONSE:
      complete(cmd.getschemaresponse().request_id(), cmd);
      return;
    case wire::BaseCommand::CONSUMER_STATS_RESPONSE:
      complete(cmd.consumerstatsresponse().request_id(), cmd);
      return;
    case wire::BaseCommand::SEND_RECEIPT:
      to(producers_, cmd.send_receipt().producer_id());
      return;
    case wire::BaseCommand::SEND_ERROR:
      to(producers_, cmd.send_error().producer_id());
      return;
    case wire::BaseCommand::CLOSE_PRODUCER: {
      const uint64_t id = cmd.close_producer().producer_id();
      to(producers_, id);
      producers_.erase(id);
      return;
    }
    case wire::BaseCommand::MESSAGE:
      to(consumers_, cmd.message().consumer_id());
      return;
    case wire::BaseCommand::CLOSE_CONSUMER: {
      const uint64_t id = cmd.close_consumer().consumer_id();
      to(consumers_, id);
      consumers_.erase(id);
      return;
    }
    case wire::BaseCommand::REACHED_END_OF_TOPIC:
      to(consumers_, cmd.reachedendoftopic().consumer_id());
      return;
    case wire::BaseCommand::ACTIVE_CONSUMER_CHANGE:
      to(consumers_, cmd.active_consumer_change().consumer_id());
      return;
    default:
      log_.debug("ignoring {}", wire::BaseCommand::Type_Name(cmd.type()));
      return;
  }
}

}  // namespace magnetar::client
