// Protocol corner cases against a scripted fake broker (plain sockets, one connection at a
// time): lookup redirects with the authoritative flag, ServiceNotReady on producer creation,
// CLOSE_PRODUCER with a send outstanding (re-sent with its original sequence id), and
// keep-alive pings.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "client/tests/client_test_support.h"
#include "protocol/frame.h"

namespace magnetar::client::test {
namespace {

wire::BaseCommand make(wire::BaseCommand::Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

class FakeBroker {
 public:
  // Called for every frame except CONNECT and PING (answered here). `connection` counts
  // accepted connections from 1.
  using Handler = std::function<void(FakeBroker&, int connection, const protocol::Frame&)>;

  explicit FakeBroker(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = listen_on_loopback(8, &port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeBroker() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }

  std::string url() const { return "pulsar://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  void send(const wire::BaseCommand& cmd) {
    Buffer b = protocol::encode_command(cmd);
    (void)!::write(fd_, b.data(), b.size());
  }
  void send(const BufferChain& frame) {
    Buffer b = frame.flatten();
    (void)!::write(fd_, b.data(), b.size());
  }
  // Closes the current connection (the client sees the broker go away).
  void drop() { drop_ = true; }
  int pings_received() const { return pings_.load(); }
  // Connections the client closed (EOF seen).
  int closed_by_client() const { return closed_by_client_.load(); }
  void set_answer_pings(bool answer) { answer_pings_ = answer; }

 private:
  void serve() {
    int connection = 0;
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      fd_ = ::accept(listen_fd_, nullptr, nullptr);
      if (fd_ < 0) continue;
      ++connection;
      drop_ = false;
      protocol::FrameDecoder decoder;
      while (!stop_ && !drop_) {
        pollfd q{fd_, POLLIN, 0};
        if (::poll(&q, 1, 50) <= 0) continue;
        Buffer buf = Buffer::allocate(65536);
        const ssize_t n = ::read(fd_, buf.mutable_data(), buf.size());
        if (n <= 0) {
          ++closed_by_client_;
          break;
        }
        buf.truncate(static_cast<size_t>(n));
        decoder.feed(std::move(buf));
        for (;;) {
          auto f = decoder.next();
          if (!f.ok() || !f->has_value()) break;
          const auto& frame = **f;
          if (frame.command.type() == wire::BaseCommand::CONNECT) {
            auto c = make(wire::BaseCommand::CONNECTED);
            c.mutable_connected()->set_server_version("fake");
            c.mutable_connected()->set_protocol_version(21);
            send(c);
          } else if (frame.command.type() == wire::BaseCommand::PING) {
            ++pings_;
            if (answer_pings_) {
              auto pong = make(wire::BaseCommand::PONG);
              pong.mutable_pong();
              send(pong);
            }
          } else if (frame.command.type() != wire::BaseCommand::PONG) {
            handler_(*this, connection, frame);
          }
        }
      }
      ::close(fd_);
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> drop_{false};
  std::atomic<int> pings_{0};
  std::atomic<int> closed_by_client_{0};
  std::atomic<bool> answer_pings_{true};
  std::thread thread_;
};

ClientOptions quick() {
  ClientOptions o;
  o.operation_timeout = 5s;
  o.initial_backoff = 20ms;
  o.max_backoff = 200ms;
  return o;
}

void answer_partitions(FakeBroker& b, const protocol::Frame& f) {
  auto r = make(wire::BaseCommand::PARTITIONED_METADATA_RESPONSE);
  r.mutable_partitionmetadataresponse()->set_request_id(f.command.partitionmetadata().request_id());
  r.mutable_partitionmetadataresponse()->set_partitions(0);
  b.send(r);
}

TEST_F(ClientTest, LookupFollowsRedirectsWithTheAuthoritativeFlag) {
  std::mutex mu;
  std::vector<bool> authoritative;
  const std::string real = url();
  FakeBroker fake([&](FakeBroker& b, int, const protocol::Frame& f) {
    if (f.command.type() == wire::BaseCommand::PARTITIONED_METADATA) return answer_partitions(b, f);
    if (f.command.type() != wire::BaseCommand::LOOKUP) return;
    const auto& l = f.command.lookuptopic();
    auto r = make(wire::BaseCommand::LOOKUP_RESPONSE);
    auto* resp = r.mutable_lookuptopicresponse();
    resp->set_request_id(l.request_id());
    {
      std::lock_guard lock(mu);
      authoritative.push_back(l.authoritative());
      if (authoritative.size() % 2 == 1) {
        resp->set_response(wire::CommandLookupTopicResponse::Redirect);  // ask me again
        resp->set_brokerserviceurl(b.url());
        resp->set_authoritative(true);
      } else {
        resp->set_response(wire::CommandLookupTopicResponse::Connect);  // the real owner
        resp->set_brokerserviceurl(real);
      }
    }
    b.send(r);
  });
  auto c = Client::create(fake.url(), quick());
  ASSERT_TRUE(c.ok());
  auto p = c->create_producer(topic());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_TRUE(p->send(Message("via redirect")).ok());
  std::lock_guard lock(mu);
  ASSERT_GE(authoritative.size(), 2u);
  EXPECT_FALSE(authoritative[0]);
  EXPECT_TRUE(authoritative[1]);
}

TEST_F(ClientTest, EndlessRedirectsFail) {
  FakeBroker fake([&](FakeBroker& b, int, const protocol::Frame& f) {
    if (f.command.type() == wire::BaseCommand::PARTITIONED_METADATA) return answer_partitions(b, f);
    if (f.command.type() != wire::BaseCommand::LOOKUP) return;
    auto r = make(wire::BaseCommand::LOOKUP_RESPONSE);
    r.mutable_lookuptopicresponse()->set_request_id(f.command.lookuptopic().request_id());
    r.mutable_lookuptopicresponse()->set_response(wire::CommandLookupTopicResponse::Redirect);
    r.mutable_lookuptopicresponse()->set_brokerserviceurl(b.url());
    b.send(r);
  });
  ClientOptions o = quick();
  o.operation_timeout = 1s;
  o.max_lookup_redirects = 3;
  auto c = Client::create(fake.url(), o);
  ASSERT_TRUE(c.ok());
  auto p = c->create_producer(topic());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("redirected"), std::string::npos) << p.status().to_string();
}

// A one-producer broker: the first PRODUCER gets ServiceNotReady; the first SEND on the
// second connection gets no receipt but a CLOSE_PRODUCER; every later SEND is acknowledged.
TEST_F(ClientTest, ServiceNotReadyAndCloseProducerLeadToARetryWithTheSameSequenceId) {
  std::mutex mu;
  std::vector<uint64_t> sends;  // sequence ids as received
  int producers = 0;
  bool closed_once = false;
  FakeBroker fake([&](FakeBroker& b, int, const protocol::Frame& f) {
    std::lock_guard lock(mu);
    switch (f.command.type()) {
      case wire::BaseCommand::PARTITIONED_METADATA:
        return answer_partitions(b, f);
      case wire::BaseCommand::LOOKUP: {
        auto r = make(wire::BaseCommand::LOOKUP_RESPONSE);
        r.mutable_lookuptopicresponse()->set_request_id(f.command.lookuptopic().request_id());
        r.mutable_lookuptopicresponse()->set_response(wire::CommandLookupTopicResponse::Connect);
        r.mutable_lookuptopicresponse()->set_brokerserviceurl(b.url());
        b.send(r);
        return;
      }
      case wire::BaseCommand::PRODUCER: {
        const auto& p = f.command.producer();
        if (++producers == 1) {
          auto e = make(wire::BaseCommand::ERROR);
          e.mutable_error()->set_request_id(p.request_id());
          e.mutable_error()->set_error(wire::ServiceNotReady);
          e.mutable_error()->set_message("bundle unloading");
          b.send(e);
          return;
        }
        auto r = make(wire::BaseCommand::PRODUCER_SUCCESS);
        r.mutable_producer_success()->set_request_id(p.request_id());
        r.mutable_producer_success()->set_producer_name("fake-producer");
        r.mutable_producer_success()->set_last_sequence_id(-1);
        b.send(r);
        return;
      }
      case wire::BaseCommand::SEND: {
        const auto& s = f.command.send();
        sends.push_back(s.sequence_id());
        if (!closed_once) {
          closed_once = true;
          auto c = make(wire::BaseCommand::CLOSE_PRODUCER);
          c.mutable_close_producer()->set_producer_id(s.producer_id());
          c.mutable_close_producer()->set_request_id(0);
          b.send(c);
          return;
        }
        auto r = make(wire::BaseCommand::SEND_RECEIPT);
        r.mutable_send_receipt()->set_producer_id(s.producer_id());
        r.mutable_send_receipt()->set_sequence_id(s.sequence_id());
        r.mutable_send_receipt()->mutable_message_id()->set_ledgerid(1);
        r.mutable_send_receipt()->mutable_message_id()->set_entryid(s.sequence_id());
        b.send(r);
        return;
      }
      case wire::BaseCommand::CLOSE_PRODUCER: {
        auto r = make(wire::BaseCommand::SUCCESS);
        r.mutable_success()->set_request_id(f.command.close_producer().request_id());
        b.send(r);
        return;
      }
      default:
        return;
    }
  });
  auto c = Client::create(fake.url(), quick());
  ASSERT_TRUE(c.ok());
  ProducerOptions po;
  po.batching_enabled = false;
  auto p = c->create_producer(topic(), po);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->name(), "fake-producer");
  auto first = p->send(Message("one"));
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->entry_id(), 0);
  auto second = p->send(Message("two"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->entry_id(), 1);
  std::lock_guard lock(mu);
  EXPECT_EQ(producers, 3) << "refused, created, re-created after CLOSE_PRODUCER";
  EXPECT_EQ(sends, (std::vector<uint64_t>{0, 0, 1})) << "sequence id 0 re-sent as is";
}

TEST_F(ClientTest, KeepAlivePingsAndPongs) {
  // Our client pings an idle broker, and answers the broker's pings.
  FakeBroker fake([&](FakeBroker& b, int, const protocol::Frame& f) {
    if (f.command.type() == wire::BaseCommand::PARTITIONED_METADATA) answer_partitions(b, f);
  });
  ClientOptions o = quick();
  o.keep_alive_interval = std::chrono::seconds(1);
  auto c = Client::create(fake.url(), o);
  ASSERT_TRUE(c.ok());
  auto parts = c->get_partitions_for_topic(topic());
  ASSERT_TRUE(parts.ok()) << parts.status().to_string();
  std::this_thread::sleep_for(2500ms);
  EXPECT_GE(fake.pings_received(), 2);
  EXPECT_EQ(fake.closed_by_client(), 0) << "answered pings keep the connection";
  // A broker that stops answering is detected and the connection closed.
  fake.set_answer_pings(false);
  std::this_thread::sleep_for(3000ms);
  EXPECT_EQ(fake.closed_by_client(), 1);
  // Against the real broker with a 1 s keep-alive: an idle producer stays connected.
  broker_->stop();
  broker_.reset();
  start_broker([](broker::BrokerConfig& b) { b.keep_alive_interval_seconds = 1; });
  ProducerOptions po;
  po.batching_enabled = false;
  auto p = producer(topic(), po);
  std::this_thread::sleep_for(3500ms);
  EXPECT_TRUE(p.connected());
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(p.send(Message("still here")).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1s);
}

// A subscribing broker that sends `messages` messages on the first FLOW and records the
// ACK commands it receives (ids per command).
struct AckRecorder {
  std::mutex mu;
  std::vector<std::pair<wire::CommandAck::AckType, size_t>> acks;  // (type, ids)
  std::vector<int64_t> acked_entries;

  FakeBroker::Handler handler(int messages) {
    return [this, messages](FakeBroker& b, int, const protocol::Frame& f) {
      switch (f.command.type()) {
        case wire::BaseCommand::PARTITIONED_METADATA:
          return answer_partitions(b, f);
        case wire::BaseCommand::LOOKUP: {
          auto r = make(wire::BaseCommand::LOOKUP_RESPONSE);
          r.mutable_lookuptopicresponse()->set_request_id(f.command.lookuptopic().request_id());
          r.mutable_lookuptopicresponse()->set_response(
              wire::CommandLookupTopicResponse::Connect);
          r.mutable_lookuptopicresponse()->set_brokerserviceurl(b.url());
          b.send(r);
          return;
        }
        case wire::BaseCommand::SUBSCRIBE:
        case wire::BaseCommand::CLOSE_CONSUMER: {
          auto r = make(wire::BaseCommand::SUCCESS);
          r.mutable_success()->set_request_id(f.command.type() == wire::BaseCommand::SUBSCRIBE
                                                  ? f.command.subscribe().request_id()
                                                  : f.command.close_consumer().request_id());
          b.send(r);
          return;
        }
        case wire::BaseCommand::FLOW: {
          if (sent_) return;
          sent_ = true;
          for (int i = 0; i < messages; ++i) {
            auto m = make(wire::BaseCommand::MESSAGE);
            m.mutable_message()->set_consumer_id(f.command.flow().consumer_id());
            m.mutable_message()->mutable_message_id()->set_ledgerid(7);
            m.mutable_message()->mutable_message_id()->set_entryid(static_cast<uint64_t>(i));
            wire::MessageMetadata md;
            md.set_producer_name("fake");
            md.set_sequence_id(static_cast<uint64_t>(i));
            md.set_publish_time(1);
            BufferChain payload(Buffer::copy_of("m" + std::to_string(i)));
            b.send(protocol::encode_payload_command(m, md, payload));
          }
          return;
        }
        case wire::BaseCommand::ACK: {
          std::lock_guard lock(mu);
          const auto& a = f.command.ack();
          acks.emplace_back(a.ack_type(), static_cast<size_t>(a.message_id_size()));
          for (const auto& id : a.message_id()) {
            acked_entries.push_back(static_cast<int64_t>(id.entryid()));
          }
          return;
        }
        default:
          return;
      }
    };
  }
  size_t ids() {
    std::lock_guard lock(mu);
    return acked_entries.size();
  }

 private:
  bool sent_ = false;  // touched by the fake broker's thread only
};

// Grouped acknowledgements: 50 individual acks travel in a few ACK commands carrying every
// id; a group is sent as soon as it is full; what is still grouped is sent before close.
TEST_F(ClientTest, AcknowledgementsAreGroupedByTimeAndSize) {
  for (const auto& [time, max_size] : std::vector<std::pair<std::chrono::milliseconds, int>>{
           {200ms, 1000}, {60'000ms, 20}, {0ms, 1000}}) {
    SCOPED_TRACE(::testing::Message() << "group time " << time.count() << " ms, size " << max_size);
    AckRecorder recorder;
    FakeBroker fake(recorder.handler(50));
    auto c = Client::create(fake.url(), quick());
    ASSERT_TRUE(c.ok());
    ConsumerOptions co;
    co.ack_grouping_time = time;
    co.ack_grouping_max_size = max_size;
    auto consumer = c->subscribe(topic(), "grouped", co);
    ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
    for (int i = 0; i < 50; ++i) {
      auto m = consumer->receive(5s);
      ASSERT_TRUE(m.ok()) << i << ": " << m.status().to_string();
      ASSERT_TRUE(consumer->acknowledge(*m).ok());
    }
    if (time.count() == 0) {
      for (int i = 0; i < 200 && recorder.ids() < 50; ++i) std::this_thread::sleep_for(10ms);
      std::lock_guard lock(recorder.mu);
      EXPECT_EQ(recorder.acks.size(), 50u) << "no grouping: one ACK per message";
    } else if (max_size == 20) {
      // Two full groups go at once; the last 10 wait (a minute) until close.
      for (int i = 0; i < 200 && recorder.ids() < 40; ++i) std::this_thread::sleep_for(10ms);
      std::this_thread::sleep_for(100ms);
      EXPECT_EQ(recorder.ids(), 40u);
      ASSERT_TRUE(consumer->close().ok());
      EXPECT_EQ(recorder.ids(), 50u) << "the rest is sent before CLOSE_CONSUMER";
      std::lock_guard lock(recorder.mu);
      EXPECT_EQ(recorder.acks.size(), 3u);
    } else {
      for (int i = 0; i < 300 && recorder.ids() < 50; ++i) std::this_thread::sleep_for(10ms);
      std::lock_guard lock(recorder.mu);
      EXPECT_LE(recorder.acks.size(), 3u) << "grouped within 200 ms";
    }
    std::lock_guard lock(recorder.mu);
    std::vector<int64_t> sorted = recorder.acked_entries;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), 50u);
    for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
    for (const auto& [type, n] : recorder.acks) EXPECT_EQ(type, wire::CommandAck::Individual);
  }
}

}  // namespace
}  // namespace magnetar::client::test
