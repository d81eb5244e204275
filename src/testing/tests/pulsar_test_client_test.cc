#include "testing/pulsar_test_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <limits>
#include <thread>

#include "protocol/batch.h"
#include "protocol/frame.h"

namespace magnetar::testing {
namespace {

using namespace std::chrono_literals;
using Type = wire::BaseCommand::Type;

constexpr auto kFakeTimeout = 5s;

wire::BaseCommand command_of(Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

// The broker side of one accepted connection: blocking reads through a FrameDecoder, each
// bounded by kFakeTimeout. Lives on the fake broker's thread.
class FakeConnection {
 public:
  explicit FakeConnection(int fd) : fd_(fd) {}
  ~FakeConnection() { close(); }

  // The next frame, or the reason there is none (timeout, close, undecodable bytes).
  Result<protocol::Frame> read() {
    while (true) {
      auto next = decoder_.next();
      if (!next.ok()) return next.status();
      if (next->has_value()) return std::move(**next);
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(kFakeTimeout / 1ms)) <= 0) {
        return Status(Errc::kTimeout, "fake broker: no frame from the client");
      }
      Buffer block = Buffer::allocate(4096);
      ssize_t n = ::recv(fd_, block.mutable_data(), 4096, 0);
      if (n <= 0) return Status(Errc::kUnavailable, "fake broker: the client closed");
      block.truncate(static_cast<size_t>(n));
      decoder_.feed(std::move(block));
    }
  }

  // The next frame, which must be of `type` (a test failure otherwise).
  std::optional<protocol::Frame> expect(Type type) {
    auto frame = read();
    if (!frame.ok()) {
      ADD_FAILURE() << "fake broker waiting for " << wire::BaseCommand::Type_Name(type) << ": "
                    << frame.status().to_string();
      return std::nullopt;
    }
    EXPECT_EQ(frame->command.type(), type);
    if (frame->command.type() != type) return std::nullopt;
    return std::move(frame).value();
  }

  void write(const BufferChain& chain) {
    std::string bytes = chain.to_string();
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      ASSERT_GT(n, 0) << "fake broker: send failed";
      sent += static_cast<size_t>(n);
    }
  }
  void write(const wire::BaseCommand& command) {
    write(BufferChain(protocol::encode_command(command)));
  }

  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
  protocol::FrameDecoder decoder_;
};

// A broker stand-in on 127.0.0.1 that accepts one connection and runs `script` on it, on its
// own thread. The destructor joins that thread.
class FakeBroker {
 public:
  using Script = std::function<void(FakeConnection&)>;

  explicit FakeBroker(Script script) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 1) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "fake broker cannot listen";
      return;
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, script = std::move(script)] {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(kFakeTimeout / 1ms)) <= 0) {
        ADD_FAILURE() << "fake broker: no connection";
        return;
      }
      FakeConnection conn(::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC));
      script(conn);
    });
  }

  ~FakeBroker() {
    if (thread_.joinable()) thread_.join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  int port() const { return port_; }

 private:
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

// Reads CONNECT and answers CONNECTED.
void accept_handshake(FakeConnection& conn) {
  auto connect = conn.expect(wire::BaseCommand::CONNECT);
  if (!connect) return;
  wire::BaseCommand c = command_of(wire::BaseCommand::CONNECTED);
  c.mutable_connected()->set_server_version("fake-broker");
  c.mutable_connected()->set_protocol_version(
      std::min(21, connect->command.connect().protocol_version()));
  c.mutable_connected()->set_max_message_size(5 * 1024 * 1024);
  conn.write(c);
}

PulsarTestClient::Options options_for(const FakeBroker& broker) {
  PulsarTestClient::Options options;
  options.port = broker.port();
  options.timeout = 3s;
  return options;
}

std::unique_ptr<PulsarTestClient> connect_to(const FakeBroker& broker) {
  auto client = PulsarTestClient::connect(options_for(broker));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(client).value() : nullptr;
}

wire::MessageIdData message_id(uint64_t ledger, uint64_t entry) {
  wire::MessageIdData id;
  id.set_ledgerid(ledger);
  id.set_entryid(entry);
  return id;
}

void send_receipt(FakeConnection& conn, const protocol::Frame& send, uint64_t entry) {
  wire::BaseCommand r = command_of(wire::BaseCommand::SEND_RECEIPT);
  r.mutable_send_receipt()->set_producer_id(send.command.send().producer_id());
  r.mutable_send_receipt()->set_sequence_id(send.command.send().sequence_id());
  r.mutable_send_receipt()->set_highest_sequence_id(send.command.send().highest_sequence_id());
  *r.mutable_send_receipt()->mutable_message_id() = message_id(7, entry);
  conn.write(r);
}

TEST(PulsarTestClientTest, ProducesAnswersPingAndReceivesMessage) {
  FakeBroker broker([](FakeConnection& conn) {
    accept_handshake(conn);

    auto producer = conn.expect(wire::BaseCommand::PRODUCER);
    if (!producer) return;
    EXPECT_EQ(producer->command.producer().topic(), "persistent://public/default/t");
    EXPECT_EQ(producer->command.producer().producer_id(), 1u);
    EXPECT_EQ(producer->command.producer().producer_access_mode(), wire::Shared);
    // A PING the client must answer while it waits for PRODUCER_SUCCESS.
    wire::BaseCommand ping = command_of(wire::BaseCommand::PING);
    ping.mutable_ping();
    conn.write(ping);
    wire::BaseCommand ok = command_of(wire::BaseCommand::PRODUCER_SUCCESS);
    ok.mutable_producer_success()->set_request_id(producer->command.producer().request_id());
    ok.mutable_producer_success()->set_producer_name("fake-producer-1");
    conn.write(ok);
    if (!conn.expect(wire::BaseCommand::PONG)) return;

    auto send = conn.expect(wire::BaseCommand::SEND);
    if (!send) return;
    EXPECT_EQ(send->command.send().sequence_id(), 0u);
    EXPECT_TRUE(send->had_checksum);
    EXPECT_EQ(send->payload.to_string(), "hello");
    EXPECT_EQ(send->metadata.producer_name(), "fake-producer-1");
    EXPECT_EQ(send->metadata.sequence_id(), 0u);
    EXPECT_GT(send->metadata.publish_time(), 0u);
    send_receipt(conn, *send, 3);

    auto batch = conn.expect(wire::BaseCommand::SEND);
    if (!batch) return;
    EXPECT_EQ(batch->command.send().sequence_id(), 1u);
    EXPECT_EQ(batch->command.send().num_messages(), 3);
    EXPECT_EQ(batch->command.send().highest_sequence_id(), 3u);
    EXPECT_EQ(batch->metadata.num_messages_in_batch(), 3);
    auto messages = protocol::unpack_messages(batch->metadata, batch->payload, 1 << 20);
    EXPECT_TRUE(messages.ok()) << messages.status().to_string();
    if (messages.ok()) {
      ASSERT_EQ(messages->size(), 3u);
      EXPECT_EQ((*messages)[0].payload.to_string(), "a");
      EXPECT_EQ((*messages)[2].payload.to_string(), "c");
      EXPECT_EQ((*messages)[2].metadata.sequence_id(), 3u);
    }
    send_receipt(conn, *batch, 4);

    wire::BaseCommand message = command_of(wire::BaseCommand::MESSAGE);
    message.mutable_message()->set_consumer_id(5);
    *message.mutable_message()->mutable_message_id() = message_id(7, 3);
    message.mutable_message()->set_redelivery_count(2);
    conn.write(protocol::encode_payload_command(message, send->metadata,
                                                BufferChain(Buffer::copy_of("hello"))));
    // Stay connected until the client is done.
    EXPECT_FALSE(conn.read().ok());
  });

  auto client = connect_to(broker);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->connected().server_version(), "fake-broker");
  EXPECT_EQ(client->connected().protocol_version(), 21);

  auto producer = client->create_producer("persistent://public/default/t", 1);
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  EXPECT_EQ(producer->producer_name(), "fake-producer-1");
  EXPECT_EQ(client->pings_answered(), 1u);

  auto receipt = client->send_message(1, 0, "hello");
  ASSERT_TRUE(receipt.ok()) << receipt.status().to_string();
  EXPECT_EQ(receipt->message_id().ledgerid(), 7u);
  EXPECT_EQ(receipt->message_id().entryid(), 3u);

  auto batch_receipt = client->send_batch(1, 1, {"a", "b", "c"});
  ASSERT_TRUE(batch_receipt.ok()) << batch_receipt.status().to_string();
  EXPECT_EQ(batch_receipt->message_id().entryid(), 4u);
  EXPECT_EQ(batch_receipt->highest_sequence_id(), 3u);

  auto message = client->receive_message();
  ASSERT_TRUE(message.ok()) << message.status().to_string();
  EXPECT_EQ(message->consumer_id, 5u);
  EXPECT_EQ(message->id.ledgerid(), 7u);
  EXPECT_EQ(message->id.entryid(), 3u);
  EXPECT_EQ(message->redelivery_count, 2u);
  EXPECT_TRUE(message->had_checksum);
  EXPECT_FALSE(message->broker_entry_metadata.has_value());
  EXPECT_EQ(message->metadata.producer_name(), "fake-producer-1");
  EXPECT_EQ(message->payload.to_string(), "hello");
  auto singles = message->unpack();
  ASSERT_TRUE(singles.ok()) << singles.status().to_string();
  ASSERT_EQ(singles->size(), 1u);
  EXPECT_EQ((*singles)[0].payload.to_string(), "hello");
  EXPECT_EQ(client->kept_frames(), 0u);
  client->close();
}

TEST(PulsarTestClientTest, ErrorResponsesBecomeStatusesAndOtherFramesAreKept) {
  FakeBroker broker([](FakeConnection& conn) {
    accept_handshake(conn);
    auto producer = conn.expect(wire::BaseCommand::PRODUCER);
    if (!producer) return;
    // An unrelated response first: the client must keep it.
    wire::BaseCommand other = command_of(wire::BaseCommand::SUCCESS);
    other.mutable_success()->set_request_id(999);
    conn.write(other);
    wire::BaseCommand error = command_of(wire::BaseCommand::ERROR);
    error.mutable_error()->set_request_id(producer->command.producer().request_id());
    error.mutable_error()->set_error(wire::ProducerBusy);
    error.mutable_error()->set_message("Producer with name 'p' is already connected");
    conn.write(error);

    auto lookup = conn.expect(wire::BaseCommand::LOOKUP);
    if (!lookup) return;
    wire::BaseCommand failed = command_of(wire::BaseCommand::LOOKUP_RESPONSE);
    failed.mutable_lookuptopicresponse()->set_request_id(
        lookup->command.lookuptopic().request_id());
    failed.mutable_lookuptopicresponse()->set_response(wire::CommandLookupTopicResponse::Failed);
    failed.mutable_lookuptopicresponse()->set_error(wire::TopicNotFound);
    failed.mutable_lookuptopicresponse()->set_message("Topic not found");
    conn.write(failed);
    EXPECT_FALSE(conn.read().ok());
  });

  auto client = connect_to(broker);
  ASSERT_NE(client, nullptr);

  auto producer = client->create_producer("persistent://public/default/t", 1, "p");
  ASSERT_FALSE(producer.ok());
  EXPECT_EQ(server_error_of(producer.status()), wire::ProducerBusy);
  EXPECT_TRUE(producer.status().is(Errc::kAlreadyExists));
  EXPECT_NE(producer.status().message().find("ProducerBusy"), std::string::npos);
  EXPECT_NE(producer.status().message().find("already connected"), std::string::npos);

  EXPECT_EQ(client->kept_frames(), 1u);
  auto kept = client->response(999, 100ms);
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_EQ(kept->command.type(), wire::BaseCommand::SUCCESS);

  auto lookup = client->lookup("persistent://public/default/missing");
  ASSERT_FALSE(lookup.ok());
  EXPECT_EQ(server_error_of(lookup.status()), wire::TopicNotFound);
  EXPECT_TRUE(lookup.status().is(Errc::kNotFound));
  EXPECT_EQ(server_error_of(Status(Errc::kNotFound, "x")), std::nullopt);

  auto nothing = client->receive(100ms);
  EXPECT_TRUE(nothing.status().is(Errc::kTimeout)) << nothing.status().to_string();
  client->close();
}

TEST(PulsarTestClientTest, HandshakeErrorIsReturnedFromConnect) {
  FakeBroker broker([](FakeConnection& conn) {
    auto connect = conn.expect(wire::BaseCommand::CONNECT);
    if (!connect) return;
    EXPECT_EQ(connect->command.connect().client_version(), "magnetar-test");
    EXPECT_EQ(connect->command.connect().protocol_version(), 21);
    EXPECT_EQ(connect->command.connect().auth_method_name(), "token");
    EXPECT_EQ(connect->command.connect().auth_data(), "not-a-jwt");
    EXPECT_TRUE(connect->command.connect().feature_flags().supports_broker_entry_metadata());
    wire::BaseCommand error = command_of(wire::BaseCommand::ERROR);
    error.mutable_error()->set_request_id(std::numeric_limits<uint64_t>::max());
    error.mutable_error()->set_error(wire::AuthenticationError);
    error.mutable_error()->set_message("Unable to authenticate");
    conn.write(error);
    conn.close();
  });

  PulsarTestClient::Options options = options_for(broker);
  options.auth_method = "token";
  options.auth_data = "not-a-jwt";
  options.supports_broker_entry_metadata = true;
  auto client = PulsarTestClient::connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(server_error_of(client.status()), wire::AuthenticationError);
  EXPECT_TRUE(client.status().is(Errc::kUnauthenticated));
  EXPECT_NE(client.status().message().find("Unable to authenticate"), std::string::npos);
}

TEST(PulsarTestClientTest, ReportsPeerCloseAfterGarbage) {
  FakeBroker broker([](FakeConnection& conn) {
    accept_handshake(conn);
    // A length field of 2 cannot hold a frame: the decoder fails and the broker hangs up.
    auto garbage = conn.read();
    EXPECT_FALSE(garbage.ok());
    conn.close();
  });

  auto client = connect_to(broker);
  ASSERT_NE(client, nullptr);
  EXPECT_FALSE(client->closed_by_peer(100ms));
  ASSERT_TRUE(client->send_raw(std::string("\0\0\0\2\xff\xff", 6)).ok());
  EXPECT_TRUE(client->closed_by_peer(3s));
  auto after = client->receive(100ms);
  EXPECT_TRUE(after.status().is(Errc::kUnavailable)) << after.status().to_string();
  EXPECT_TRUE(client->ping().is(Errc::kUnavailable));
}

TEST(PulsarTestClientTest, ConnectionRefusedIsUnavailable) {
  int port;
  {
    FakeBroker broker([](FakeConnection&) {});
    port = broker.port();
    // Let the fake accept and drop a connection so that its thread ends.
    PulsarTestClient::Options options;
    options.port = port;
    options.handshake = false;
    auto client = PulsarTestClient::connect(options);
    ASSERT_TRUE(client.ok()) << client.status().to_string();
  }
  PulsarTestClient::Options options;
  options.port = port;
  auto client = PulsarTestClient::connect(options);
  ASSERT_FALSE(client.ok());
  EXPECT_TRUE(client.status().is(Errc::kUnavailable)) << client.status().to_string();
}

}  // namespace
}  // namespace magnetar::testing
