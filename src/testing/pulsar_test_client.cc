#include "testing/pulsar_test_client.h"

#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "testing/child_process.h"

namespace magnetar::testing {
namespace {

using std::chrono::milliseconds;
using Type = wire::BaseCommand::Type;

// Reads 64 KiB at a time; frames decoded from one read share its block.
constexpr size_t kReadSize = 64 * 1024;
// Keeps sendmsg() well under IOV_MAX.
constexpr size_t kMaxIov = 64;
// What the broker accepts at most (uncompressed_size is untrusted input).
constexpr uint32_t kMaxUncompressedSize = 64 * 1024 * 1024;

std::string type_name(Type type) {
  return wire::BaseCommand::Type_IsValid(type) ? wire::BaseCommand::Type_Name(type)
                                               : fmt::format("type {}", static_cast<int>(type));
}

wire::BaseCommand command_of(Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

// The request id of a broker->client response, nullopt for frames that answer no request.
std::optional<uint64_t> response_request_id(const wire::BaseCommand& c) {
  switch (c.type()) {
    case wire::BaseCommand::SUCCESS:
      return c.success().request_id();
    case wire::BaseCommand::ERROR:
      return c.error().request_id();
    case wire::BaseCommand::PRODUCER_SUCCESS:
      return c.producer_success().request_id();
    case wire::BaseCommand::LOOKUP_RESPONSE:
      return c.lookuptopicresponse().request_id();
    case wire::BaseCommand::PARTITIONED_METADATA_RESPONSE:
      return c.partitionmetadataresponse().request_id();
    case wire::BaseCommand::CONSUMER_STATS_RESPONSE:
      return c.consumerstatsresponse().request_id();
    case wire::BaseCommand::GET_LAST_MESSAGE_ID_RESPONSE:
      return c.getlastmessageidresponse().request_id();
    case wire::BaseCommand::GET_TOPICS_OF_NAMESPACE_RESPONSE:
      return c.gettopicsofnamespaceresponse().request_id();
    case wire::BaseCommand::GET_SCHEMA_RESPONSE:
      return c.getschemaresponse().request_id();
    case wire::BaseCommand::GET_OR_CREATE_SCHEMA_RESPONSE:
      return c.getorcreateschemaresponse().request_id();
    case wire::BaseCommand::ACK_RESPONSE:
      if (!c.ackresponse().has_request_id()) return std::nullopt;
      return c.ackresponse().request_id();
    case wire::BaseCommand::NEW_TXN_RESPONSE:
      return c.newtxnresponse().request_id();
    case wire::BaseCommand::ADD_PARTITION_TO_TXN_RESPONSE:
      return c.addpartitiontotxnresponse().request_id();
    case wire::BaseCommand::ADD_SUBSCRIPTION_TO_TXN_RESPONSE:
      return c.addsubscriptiontotxnresponse().request_id();
    case wire::BaseCommand::END_TXN_RESPONSE:
      return c.endtxnresponse().request_id();
    case wire::BaseCommand::END_TXN_ON_PARTITION_RESPONSE:
      return c.endtxnonpartitionresponse().request_id();
    case wire::BaseCommand::END_TXN_ON_SUBSCRIPTION_RESPONSE:
      return c.endtxnonsubscriptionresponse().request_id();
    case wire::BaseCommand::TC_CLIENT_CONNECT_RESPONSE:
      return c.tcclientconnectresponse().request_id();
    case wire::BaseCommand::WATCH_TOPIC_LIST_SUCCESS:
      return c.watchtopiclistsuccess().request_id();
    default:
      return std::nullopt;
  }
}

Status error_frame_status(const wire::CommandError& e) {
  return server_error_status(e.error(), e.message());
}

Status unexpected(const protocol::Frame& frame, std::string_view expected) {
  return Status(Errc::kInternal, fmt::format("expected {}, the broker sent {}", expected,
                                             type_name(frame.command.type())));
}

uint64_t now_ms() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

int poll_ms(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::ceil<milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 60'000));
}

// OK once `fd` is ready for `events` (or has an error or hang-up to report).
Status poll_until(int fd, short events, std::chrono::steady_clock::time_point deadline,
                  std::string_view what) {
  while (true) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, poll_ms(deadline));
    if (n > 0) return Status::OK();
    if (n == 0) {
      if (std::chrono::steady_clock::now() < deadline) continue;  // the 60 s cap
      return Status(Errc::kTimeout, fmt::format("{}: nothing within the timeout", what));
    }
    if (errno != EINTR) return Status(Errc::kIoError, "poll: " + errno_text(errno));
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Errors

Result<std::vector<protocol::SingleMessage>> ReceivedMessage::unpack() const {
  return protocol::unpack_messages(metadata, payload, kMaxUncompressedSize);
}

// ---------------------------------------------------------------------------------------------
// Connection

PulsarTestClient::PulsarTestClient(Options options)
    : options_(std::move(options)),
      decoder_(protocol::DecoderOptions{.max_frame_size = options_.max_frame_size,
                                        .parse_metadata = true}) {}

PulsarTestClient::~PulsarTestClient() {
  close();
}

void PulsarTestClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<std::unique_ptr<PulsarTestClient>> PulsarTestClient::connect(Options options) {
  std::unique_ptr<PulsarTestClient> client(new PulsarTestClient(std::move(options)));
  MAGNETAR_TRY(client->open_socket());
  if (client->options_.handshake) MAGNETAR_TRY(client->handshake());
  return client;
}

PulsarTestClient::Clock::time_point PulsarTestClient::deadline(Timeout timeout) const {
  return Clock::now() + timeout.value_or(options_.timeout);
}

Status PulsarTestClient::open_socket() {
  const std::string where = fmt::format("{}:{}", options_.host, options_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.port);
  if (int rc = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status(Errc::kUnavailable, fmt::format("resolving {}: {}", where, gai_strerror(rc)));
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addrs(found, &::freeaddrinfo);

  const auto until = deadline({});
  Status last(Errc::kUnavailable, "no address for " + where);
  for (const addrinfo* a = addrs.get(); a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) return Status(Errc::kIoError, "socket: " + errno_text(errno));
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        Status ready = poll_until(fd, POLLOUT, until, "connecting to " + where);
        if (!ready.ok()) {
          ::close(fd);
          return ready;
        }
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err != 0) {
      ::close(fd);
      last = Status(Errc::kUnavailable, fmt::format("connect to {}: {}", where, errno_text(err)));
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fd_ = fd;  // owned by the client from here on
    return Status::OK();
  }
  return last;
}

wire::BaseCommand PulsarTestClient::connect_command() const {
  wire::BaseCommand c = command_of(wire::BaseCommand::CONNECT);
  wire::CommandConnect* connect = c.mutable_connect();
  connect->set_client_version(options_.client_version);
  connect->set_protocol_version(options_.protocol_version);
  if (options_.auth_method) {
    connect->set_auth_method_name(*options_.auth_method);
    connect->set_auth_data(options_.auth_data);
  }
  connect->mutable_feature_flags()->set_supports_broker_entry_metadata(
      options_.supports_broker_entry_metadata);
  connect->mutable_feature_flags()->set_supports_auth_refresh(options_.supports_auth_refresh);
  return c;
}

Status PulsarTestClient::handshake() {
  MAGNETAR_TRY(send(connect_command()));
  const auto until = deadline({});
  while (true) {
    auto frame = receive_if(
        [](const protocol::Frame& f) {
          auto t = f.command.type();
          return t == wire::BaseCommand::CONNECTED || t == wire::BaseCommand::ERROR ||
                 t == wire::BaseCommand::AUTH_CHALLENGE;
        },
        std::chrono::ceil<milliseconds>(std::max(until - Clock::now(), Clock::duration::zero())));
    if (!frame.ok()) {
      return Status(frame.status().code(), "waiting for CONNECTED: " + frame.status().message());
    }
    const wire::BaseCommand& c = frame->command;
    if (c.type() == wire::BaseCommand::CONNECTED) {
      connected_ = c.connected();
      return Status::OK();
    }
    if (c.type() == wire::BaseCommand::ERROR) return error_frame_status(c.error());
    // AUTH_CHALLENGE: answer with the configured credentials, as token clients do.
    wire::BaseCommand response = command_of(wire::BaseCommand::AUTH_RESPONSE);
    wire::CommandAuthResponse* r = response.mutable_authresponse();
    r->set_client_version(options_.client_version);
    r->set_protocol_version(options_.protocol_version);
    r->mutable_response()->set_auth_method_name(options_.auth_method.value_or("none"));
    r->mutable_response()->set_auth_data(options_.auth_data);
    MAGNETAR_TRY(send(response));
  }
}

// ---------------------------------------------------------------------------------------------
// Raw I/O

Status PulsarTestClient::write_all(const BufferChain& chain) {
  if (fd_ < 0) return Status(Errc::kUnavailable, "the client's connection is closed");
  const auto until = deadline({});
  const std::vector<Buffer>& parts = chain.buffers();
  size_t part = 0;
  size_t offset = 0;  // into parts[part]
  while (part < parts.size()) {
    iovec iov[kMaxIov];
    size_t n_iov = 0;
    for (size_t i = part; i < parts.size() && n_iov < kMaxIov; ++i) {
      size_t skip = i == part ? offset : 0;
      if (parts[i].size() == skip) continue;
      iov[n_iov].iov_base = const_cast<uint8_t*>(parts[i].data() + skip);
      iov[n_iov].iov_len = parts[i].size() - skip;
      ++n_iov;
    }
    if (n_iov == 0) break;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = n_iov;
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        MAGNETAR_TRY(poll_until(fd_, POLLOUT, until, "sending to the broker"));
        continue;
      }
      return Status(Errc::kUnavailable, "send to the broker: " + errno_text(errno));
    }
    size_t sent = static_cast<size_t>(n);
    while (sent > 0 && part < parts.size()) {
      size_t left = parts[part].size() - offset;
      if (sent < left) {
        offset += sent;
        sent = 0;
      } else {
        sent -= left;
        ++part;
        offset = 0;
      }
    }
    while (part < parts.size() && parts[part].size() == offset) {
      ++part;
      offset = 0;
    }
  }
  return Status::OK();
}

Status PulsarTestClient::send(const wire::BaseCommand& command) {
  return write_all(BufferChain(protocol::encode_command(command)));
}

Status PulsarTestClient::send_payload(const wire::BaseCommand& command,
                                      const wire::MessageMetadata& metadata,
                                      const BufferChain& payload) {
  return write_all(protocol::encode_payload_command(command, metadata, payload));
}

Status PulsarTestClient::send_raw(std::string_view bytes) {
  return write_all(BufferChain(Buffer::copy_of(bytes)));
}

Status PulsarTestClient::read_some(Clock::time_point until, bool discard) {
  if (fd_ < 0) return Status(Errc::kUnavailable, "the client's connection is closed");
  while (true) {
    Buffer block = Buffer::allocate(kReadSize);
    ssize_t n = ::recv(fd_, block.mutable_data(), kReadSize, 0);
    if (n > 0) {
      if (!discard) {
        block.truncate(static_cast<size_t>(n));
        decoder_.feed(std::move(block));
      }
      return Status::OK();
    }
    if (n == 0 || errno == ECONNRESET) {
      peer_closed_ = true;
      return Status::OK();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      MAGNETAR_TRY(poll_until(fd_, POLLIN, until, "waiting for the broker"));
      continue;
    }
    return Status(Errc::kUnavailable, "recv from the broker: " + errno_text(errno));
  }
}

Result<protocol::Frame> PulsarTestClient::read_frame(Clock::time_point until) {
  while (true) {
    auto next = decoder_.next();
    if (!next.ok()) {
      return Status(next.status().code(),
                    "a frame from the broker does not decode: " + next.status().message());
    }
    if (next->has_value()) {
      protocol::Frame frame = std::move(**next);
      if (frame.command.type() == wire::BaseCommand::PING && options_.auto_pong) {
        wire::BaseCommand pong = command_of(wire::BaseCommand::PONG);
        pong.mutable_pong();
        MAGNETAR_TRY(send(pong));
        ++pings_answered_;
        continue;
      }
      return frame;
    }
    if (peer_closed_) {
      return Status(Errc::kUnavailable, "the broker closed the connection");
    }
    MAGNETAR_TRY(read_some(until, /*discard=*/false));
  }
}

Result<protocol::Frame> PulsarTestClient::receive(Timeout timeout) {
  if (!kept_.empty()) {
    protocol::Frame frame = std::move(kept_.front());
    kept_.pop_front();
    return frame;
  }
  return read_frame(deadline(timeout));
}

Result<protocol::Frame> PulsarTestClient::receive(wire::BaseCommand::Type type, Timeout timeout) {
  auto frame =
      receive_if([type](const protocol::Frame& f) { return f.command.type() == type; }, timeout);
  if (!frame.ok()) {
    return Status(frame.status().code(),
                  fmt::format("waiting for {}: {}", type_name(type), frame.status().message()));
  }
  return frame;
}

Result<protocol::Frame> PulsarTestClient::receive_if(
    const std::function<bool(const protocol::Frame&)>& match, Timeout timeout) {
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (match(*it)) {
      protocol::Frame frame = std::move(*it);
      kept_.erase(it);
      return frame;
    }
  }
  const auto until = deadline(timeout);
  while (true) {
    MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, read_frame(until));
    if (match(frame)) return frame;
    kept_.push_back(std::move(frame));
  }
}

Result<protocol::Frame> PulsarTestClient::response(uint64_t request_id, Timeout timeout) {
  auto frame = receive_if(
      [request_id](const protocol::Frame& f) {
        return response_request_id(f.command) == request_id;
      },
      timeout);
  if (!frame.ok()) {
    return Status(frame.status().code(), fmt::format("waiting for the response to request {}: {}",
                                                     request_id, frame.status().message()));
  }
  return frame;
}

Result<protocol::Frame> PulsarTestClient::request(const wire::BaseCommand& command,
                                                  uint64_t request_id, Timeout timeout) {
  MAGNETAR_TRY(send(command));
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, response(request_id, timeout));
  if (frame.command.type() == wire::BaseCommand::ERROR) {
    return error_frame_status(frame.command.error());
  }
  return frame;
}

bool PulsarTestClient::closed_by_peer(Timeout timeout) {
  const auto until = deadline(timeout);
  while (!peer_closed_) {
    if (fd_ < 0) return false;
    if (decoder_.failed()) {
      // The stream cannot be decoded any more: only wait for the end of it.
      if (!read_some(until, /*discard=*/true).ok()) return peer_closed_;
      continue;
    }
    auto frame = read_frame(until);
    if (frame.ok()) {
      kept_.push_back(std::move(frame).value());
    } else if (frame.status().is(Errc::kTimeout)) {
      return false;
    } else if (!decoder_.failed()) {
      return peer_closed_;  // a send (PONG) or recv failure
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Helpers

Result<wire::CommandLookupTopicResponse> PulsarTestClient::lookup(const std::string& topic,
                                                                  bool authoritative) {
  const uint64_t id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::LOOKUP);
  c.mutable_lookuptopic()->set_topic(topic);
  c.mutable_lookuptopic()->set_request_id(id);
  c.mutable_lookuptopic()->set_authoritative(authoritative);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, id));
  if (frame.command.type() != wire::BaseCommand::LOOKUP_RESPONSE) {
    return unexpected(frame, "LOOKUP_RESPONSE");
  }
  const wire::CommandLookupTopicResponse& r = frame.command.lookuptopicresponse();
  if (r.response() == wire::CommandLookupTopicResponse::Failed) {
    return server_error_status(r.error(), r.message());
  }
  return r;
}

Result<wire::CommandPartitionedTopicMetadataResponse> PulsarTestClient::partitioned_metadata(
    const std::string& topic) {
  const uint64_t id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::PARTITIONED_METADATA);
  c.mutable_partitionmetadata()->set_topic(topic);
  c.mutable_partitionmetadata()->set_request_id(id);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, id));
  if (frame.command.type() != wire::BaseCommand::PARTITIONED_METADATA_RESPONSE) {
    return unexpected(frame, "PARTITIONED_METADATA_RESPONSE");
  }
  const wire::CommandPartitionedTopicMetadataResponse& r =
      frame.command.partitionmetadataresponse();
  if (r.response() == wire::CommandPartitionedTopicMetadataResponse::Failed) {
    return server_error_status(r.error(), r.message());
  }
  return r;
}

Result<wire::CommandProducerSuccess> PulsarTestClient::create_producer(
    const std::string& topic, uint64_t producer_id, std::optional<std::string> name,
    wire::ProducerAccessMode mode) {
  wire::CommandProducer p;
  p.set_topic(topic);
  p.set_producer_id(producer_id);
  if (name) p.set_producer_name(*name);
  p.set_producer_access_mode(mode);
  return create_producer(std::move(p));
}

Result<wire::CommandProducerSuccess> PulsarTestClient::create_producer(
    wire::CommandProducer producer) {
  if (!producer.has_request_id()) producer.set_request_id(next_request_id());
  const uint64_t id = producer.request_id();
  const uint64_t producer_id = producer.producer_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::PRODUCER);
  *c.mutable_producer() = std::move(producer);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, id));
  if (frame.command.type() != wire::BaseCommand::PRODUCER_SUCCESS) {
    return unexpected(frame, "PRODUCER_SUCCESS");
  }
  producer_names_[producer_id] = frame.command.producer_success().producer_name();
  return frame.command.producer_success();
}

Status PulsarTestClient::post_message(uint64_t producer_id, uint64_t sequence_id,
                                      std::string_view payload,
                                      const wire::MessageMetadata* metadata_template) {
  wire::MessageMetadata metadata;
  if (metadata_template != nullptr) metadata = *metadata_template;
  if (!metadata.has_producer_name()) {
    auto it = producer_names_.find(producer_id);
    metadata.set_producer_name(it != producer_names_.end() ? it->second : "magnetar-test");
  }
  metadata.set_sequence_id(sequence_id);
  if (!metadata.has_publish_time()) metadata.set_publish_time(now_ms());

  wire::BaseCommand c = command_of(wire::BaseCommand::SEND);
  c.mutable_send()->set_producer_id(producer_id);
  c.mutable_send()->set_sequence_id(sequence_id);
  if (metadata.has_num_messages_in_batch()) {
    c.mutable_send()->set_num_messages(metadata.num_messages_in_batch());
  }
  return send_payload(c, metadata, BufferChain(Buffer::copy_of(payload)));
}

Status PulsarTestClient::post_batch(uint64_t producer_id, uint64_t sequence_id,
                                    const std::vector<std::string>& payloads) {
  MAGNETAR_ASSERT(!payloads.empty(), "a batch needs at least one message");
  protocol::BatchBuilder batch;
  for (size_t i = 0; i < payloads.size(); ++i) {
    wire::SingleMessageMetadata single;
    single.set_sequence_id(sequence_id + i);
    batch.add(std::move(single), payloads[i]);
  }
  const auto count = static_cast<int32_t>(payloads.size());
  const uint64_t highest = sequence_id + payloads.size() - 1;

  wire::MessageMetadata metadata;
  auto it = producer_names_.find(producer_id);
  metadata.set_producer_name(it != producer_names_.end() ? it->second : "magnetar-test");
  metadata.set_sequence_id(sequence_id);
  metadata.set_publish_time(now_ms());
  metadata.set_num_messages_in_batch(count);
  metadata.set_highest_sequence_id(highest);

  wire::BaseCommand c = command_of(wire::BaseCommand::SEND);
  c.mutable_send()->set_producer_id(producer_id);
  c.mutable_send()->set_sequence_id(sequence_id);
  c.mutable_send()->set_num_messages(count);
  c.mutable_send()->set_highest_sequence_id(highest);
  return send_payload(c, metadata, BufferChain(batch.finish()));
}

Result<wire::CommandSendReceipt> PulsarTestClient::send_receipt(uint64_t producer_id,
                                                                uint64_t sequence_id,
                                                                Timeout timeout) {
  auto frame = receive_if(
      [&](const protocol::Frame& f) {
        if (f.command.type() == wire::BaseCommand::SEND_RECEIPT) {
          return f.command.send_receipt().producer_id() == producer_id &&
                 f.command.send_receipt().sequence_id() == sequence_id;
        }
        if (f.command.type() == wire::BaseCommand::SEND_ERROR) {
          return f.command.send_error().producer_id() == producer_id &&
                 f.command.send_error().sequence_id() == sequence_id;
        }
        return false;
      },
      timeout);
  if (!frame.ok()) {
    return Status(frame.status().code(),
                  fmt::format("waiting for the receipt of producer {} sequence {}: {}", producer_id,
                              sequence_id, frame.status().message()));
  }
  if (frame->command.type() == wire::BaseCommand::SEND_ERROR) {
    return server_error_status(frame->command.send_error().error(),
                               frame->command.send_error().message());
  }
  return frame->command.send_receipt();
}

Result<wire::CommandSendReceipt> PulsarTestClient::send_message(
    uint64_t producer_id, uint64_t sequence_id, std::string_view payload,
    const wire::MessageMetadata* metadata_template) {
  MAGNETAR_TRY(post_message(producer_id, sequence_id, payload, metadata_template));
  return send_receipt(producer_id, sequence_id);
}

Result<wire::CommandSendReceipt> PulsarTestClient::send_batch(
    uint64_t producer_id, uint64_t sequence_id, const std::vector<std::string>& payloads) {
  MAGNETAR_TRY(post_batch(producer_id, sequence_id, payloads));
  return send_receipt(producer_id, sequence_id);
}

Status PulsarTestClient::subscribe(const std::string& topic, const std::string& subscription,
                                   wire::CommandSubscribe::SubType type, uint64_t consumer_id,
                                   wire::CommandSubscribe::InitialPosition initial, bool durable,
                                   const wire::MessageIdData* start) {
  wire::CommandSubscribe s;
  s.set_topic(topic);
  s.set_subscription(subscription);
  s.set_subtype(type);
  s.set_consumer_id(consumer_id);
  s.set_initialposition(initial);
  s.set_durable(durable);
  if (start != nullptr) *s.mutable_start_message_id() = *start;
  return subscribe(std::move(s));
}

Status PulsarTestClient::subscribe(wire::CommandSubscribe subscribe) {
  if (!subscribe.has_request_id()) subscribe.set_request_id(next_request_id());
  const uint64_t id = subscribe.request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::SUBSCRIBE);
  *c.mutable_subscribe() = std::move(subscribe);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, id));
  if (frame.command.type() != wire::BaseCommand::SUCCESS) return unexpected(frame, "SUCCESS");
  return Status::OK();
}

Status PulsarTestClient::flow(uint64_t consumer_id, uint32_t permits) {
  wire::BaseCommand c = command_of(wire::BaseCommand::FLOW);
  c.mutable_flow()->set_consumer_id(consumer_id);
  c.mutable_flow()->set_messagepermits(permits);
  return send(c);
}

Result<ReceivedMessage> PulsarTestClient::receive_message(Timeout timeout) {
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, receive(wire::BaseCommand::MESSAGE, timeout));
  const wire::CommandMessage& m = frame.command.message();
  ReceivedMessage out;
  out.consumer_id = m.consumer_id();
  out.id = m.message_id();
  out.redelivery_count = m.redelivery_count();
  out.ack_set.assign(m.ack_set().begin(), m.ack_set().end());
  out.metadata = std::move(frame.metadata);
  out.payload = std::move(frame.payload);
  out.had_checksum = frame.had_checksum;
  out.broker_entry_metadata = std::move(frame.broker_entry_metadata);
  out.entry = std::move(frame.entry);
  return out;
}

Status PulsarTestClient::ack(uint64_t consumer_id, const std::vector<wire::MessageIdData>& ids,
                             bool cumulative, std::optional<uint64_t> request_id) {
  wire::BaseCommand c = command_of(wire::BaseCommand::ACK);
  wire::CommandAck* a = c.mutable_ack();
  a->set_consumer_id(consumer_id);
  a->set_ack_type(cumulative ? wire::CommandAck::Cumulative : wire::CommandAck::Individual);
  for (const auto& id : ids) *a->add_message_id() = id;
  if (!request_id) return send(c);
  a->set_request_id(*request_id);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, *request_id));
  if (frame.command.type() != wire::BaseCommand::ACK_RESPONSE) {
    return unexpected(frame, "ACK_RESPONSE");
  }
  const wire::CommandAckResponse& r = frame.command.ackresponse();
  if (r.has_error()) return server_error_status(r.error(), r.message());
  return Status::OK();
}

Status PulsarTestClient::redeliver_unacknowledged(uint64_t consumer_id,
                                                  const std::vector<wire::MessageIdData>& ids) {
  wire::BaseCommand c = command_of(wire::BaseCommand::REDELIVER_UNACKNOWLEDGED_MESSAGES);
  c.mutable_redeliverunacknowledgedmessages()->set_consumer_id(consumer_id);
  for (const auto& id : ids) *c.mutable_redeliverunacknowledgedmessages()->add_message_ids() = id;
  return send(c);
}

Status PulsarTestClient::seek(uint64_t consumer_id, const wire::MessageIdData& id) {
  const uint64_t request_id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::SEEK);
  c.mutable_seek()->set_consumer_id(consumer_id);
  c.mutable_seek()->set_request_id(request_id);
  *c.mutable_seek()->mutable_message_id() = id;
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, request_id));
  if (frame.command.type() != wire::BaseCommand::SUCCESS) return unexpected(frame, "SUCCESS");
  return Status::OK();
}

Result<wire::CommandGetLastMessageIdResponse> PulsarTestClient::get_last_message_id(
    uint64_t consumer_id) {
  const uint64_t request_id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::GET_LAST_MESSAGE_ID);
  c.mutable_getlastmessageid()->set_consumer_id(consumer_id);
  c.mutable_getlastmessageid()->set_request_id(request_id);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, request_id));
  if (frame.command.type() != wire::BaseCommand::GET_LAST_MESSAGE_ID_RESPONSE) {
    return unexpected(frame, "GET_LAST_MESSAGE_ID_RESPONSE");
  }
  return frame.command.getlastmessageidresponse();
}

Status PulsarTestClient::unsubscribe(uint64_t consumer_id, bool force) {
  const uint64_t request_id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::UNSUBSCRIBE);
  c.mutable_unsubscribe()->set_consumer_id(consumer_id);
  c.mutable_unsubscribe()->set_request_id(request_id);
  if (force) c.mutable_unsubscribe()->set_force(true);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, request_id));
  if (frame.command.type() != wire::BaseCommand::SUCCESS) return unexpected(frame, "SUCCESS");
  return Status::OK();
}

Status PulsarTestClient::close_producer(uint64_t producer_id) {
  const uint64_t request_id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::CLOSE_PRODUCER);
  c.mutable_close_producer()->set_producer_id(producer_id);
  c.mutable_close_producer()->set_request_id(request_id);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, request_id));
  if (frame.command.type() != wire::BaseCommand::SUCCESS) return unexpected(frame, "SUCCESS");
  producer_names_.erase(producer_id);
  return Status::OK();
}

Status PulsarTestClient::close_consumer(uint64_t consumer_id) {
  const uint64_t request_id = next_request_id();
  wire::BaseCommand c = command_of(wire::BaseCommand::CLOSE_CONSUMER);
  c.mutable_close_consumer()->set_consumer_id(consumer_id);
  c.mutable_close_consumer()->set_request_id(request_id);
  MAGNETAR_ASSIGN_OR_RETURN(protocol::Frame frame, request(c, request_id));
  if (frame.command.type() != wire::BaseCommand::SUCCESS) return unexpected(frame, "SUCCESS");
  return Status::OK();
}

Status PulsarTestClient::ping() {
  wire::BaseCommand c = command_of(wire::BaseCommand::PING);
  c.mutable_ping();
  MAGNETAR_TRY(send(c));
  return receive(wire::BaseCommand::PONG).status();
}

}  // namespace magnetar::testing
