// Service discovery: service URL parsing (default ports, bad URLs), the health of the hosts
// of a multi-host service URL (ServiceHosts: round robin, quarantine, last resort), clients
// over a URL whose first host is dead (binary and HTTP lookups), and lookups through a
// proxy (proxy_through_service_url, CONNECT's proxy_to_broker_url) against a small fake
// proxy on plain sockets that splices data connections to the in-process broker.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "client/connection.h"
#include "client/service_hosts.h"
#include "client/tests/client_test_support.h"
#include "protocol/frame.h"

namespace magnetar::client::test {
namespace {

using TimePoint = ServiceHosts::TimePoint;

// --- Service URLs ---------------------------------------------------------------------------

TEST(ServiceUrlTest, MissingPortsTakeTheSchemesDefault) {
  auto p = parse_service_url("pulsar://h1,h2:7000,[::1]/");
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->scheme, "pulsar");
  EXPECT_EQ(p->hosts, (std::vector<std::string>{"pulsar://h1:6650", "pulsar://h2:7000",
                                                "pulsar://[::1]:6650"}));
  EXPECT_EQ(p->path, "/");
  auto tls = parse_service_url("pulsar+ssl://h1");
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->hosts, std::vector<std::string>{"pulsar+ssl://h1:6651"});
  auto http = parse_service_url("http://h1,h2:8080");
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->hosts, (std::vector<std::string>{"http://h1:80", "http://h2:8080"}));
  auto https = parse_service_url("https://h1");
  ASSERT_TRUE(https.ok());
  EXPECT_EQ(https->hosts, std::vector<std::string>{"https://h1:443"});
  // Broker URLs (lookup answers, failover probes) too.
  auto broker = parse_broker_url("pulsar://broker-1");
  ASSERT_TRUE(broker.ok());
  EXPECT_EQ(broker->port, "6650");
  auto broker_tls = parse_broker_url("pulsar+ssl://broker-1/");
  ASSERT_TRUE(broker_tls.ok());
  EXPECT_EQ(broker_tls->port, "6651");
  EXPECT_TRUE(broker_tls->tls);
  // Clients take them.
  EXPECT_TRUE(Client::create("pulsar://localhost").ok());
  EXPECT_TRUE(Client::create("pulsar://h1,h2").ok());
  EXPECT_TRUE(Client::create("http://localhost").ok());
}

TEST(ServiceUrlTest, BadUrlsAreInvalidConfigurationNamingTheUrl) {
  for (const std::string url :
       {"pulsar://", "pulsar://:6650", "pulsar://h1:6650,", "pulsar://h1:6650,,h2:6650",
        "pulsar://,h2", "pulsar://h1:port", "pulsar://h1:70000", "pulsar://h1:0",
        "pulsar+ssl://h1:6651,:6651", "http://", "http://h1:8080,", "https://,h2", "ftp://h1:21",
        "h1:6650", "pulsar://h 1:6650"}) {
    auto c = Client::create(url);
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_EQ(client_error_of(c.status()), ClientError::kInvalidConfiguration)
        << url << ": " << c.status().to_string();
    EXPECT_NE(c.status().message().find(url), std::string::npos) << c.status().to_string();
  }
}

// --- ServiceHosts ---------------------------------------------------------------------------

ServiceHosts three_hosts(ServiceHosts::Options o = {}) {
  return ServiceHosts({"pulsar://a:6650", "pulsar://b:6650", "pulsar://c:6650"}, o);
}

TEST(ServiceHostsTest, HealthyHostsTakeTurns) {
  auto hosts = three_hosts();
  const TimePoint now{std::chrono::seconds(1000)};
  std::vector<size_t> order;
  for (int i = 0; i < 6; ++i) order.push_back(hosts.next(now));
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 0, 1, 2}));
}

TEST(ServiceHostsTest, AFailedHostIsSkippedUntilItsQuarantineEnds) {
  auto hosts = three_hosts();
  const TimePoint t0{std::chrono::seconds(1000)};
  ASSERT_EQ(hosts.next(t0), 0u);
  EXPECT_EQ(hosts.failed(0, t0), 100ms);
  std::vector<size_t> order;
  for (int i = 0; i < 4; ++i) order.push_back(hosts.next(t0 + 50ms));
  EXPECT_EQ(order, (std::vector<size_t>{1, 2, 1, 2})) << "host 0 skipped, the others in turn";
  EXPECT_TRUE(hosts.quarantined(0, t0 + 99ms));
  EXPECT_FALSE(hosts.quarantined(0, t0 + 100ms));
  EXPECT_EQ(hosts.next(t0 + 100ms), 0u) << "back in the rotation when its quarantine ends";
}

TEST(ServiceHostsTest, QuarantineDoublesUpToTheMaximumAndASuccessResetsIt) {
  auto hosts = three_hosts({.initial = 100ms, .max = 30'000ms});
  TimePoint t{std::chrono::seconds(1000)};
  std::vector<int64_t> quarantines;
  for (int i = 0; i < 12; ++i) {
    const auto q = hosts.failed(1, t);
    quarantines.push_back(q.count());
    t += q;  // tried again as soon as it may be
  }
  EXPECT_EQ(quarantines, (std::vector<int64_t>{100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600,
                                               30000, 30000, 30000}));
  EXPECT_EQ(hosts.failures(1), 12);
  hosts.succeeded(1);
  EXPECT_FALSE(hosts.quarantined(1, t));
  EXPECT_EQ(hosts.failed(1, t), 100ms) << "a success starts the backoff over";
}

TEST(ServiceHostsTest, FailuresDuringAQuarantineDoNotExtendIt) {
  // Several loops whose attempts started together fail together: one quarantine, not four.
  auto hosts = three_hosts();
  const TimePoint t0{std::chrono::seconds(1000)};
  EXPECT_EQ(hosts.failed(2, t0), 100ms);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(hosts.failed(2, t0 + 1ms), 0ms);
  EXPECT_EQ(hosts.failures(2), 4);
  EXPECT_FALSE(hosts.quarantined(2, t0 + 100ms));
  EXPECT_EQ(hosts.failed(2, t0 + 100ms), 200ms);
}

TEST(ServiceHostsTest, WhenEveryHostIsQuarantinedTheLeastRecentlyFailedIsTried) {
  auto hosts = three_hosts({.initial = 10'000ms, .max = 30'000ms});
  const TimePoint t0{std::chrono::seconds(1000)};
  (void)hosts.failed(1, t0);
  (void)hosts.failed(2, t0 + 1ms);
  (void)hosts.failed(0, t0 + 2ms);
  EXPECT_EQ(hosts.next(t0 + 3ms), 1u);
  (void)hosts.failed(1, t0 + 4ms);  // tried anyway, failed again
  EXPECT_EQ(hosts.next(t0 + 5ms), 2u);
  (void)hosts.failed(2, t0 + 6ms);
  EXPECT_EQ(hosts.next(t0 + 7ms), 0u);
  hosts.succeeded(0);
  EXPECT_EQ(hosts.next(t0 + 8ms), 0u) << "the only healthy host";
  EXPECT_EQ(hosts.next(t0 + 9ms), 0u);
}

TEST(ServiceHostsTest, ZeroInitialQuarantineIsPlainRoundRobin) {
  auto hosts = three_hosts({.initial = 0ms, .max = 0ms});
  const TimePoint t0{std::chrono::seconds(1000)};
  EXPECT_EQ(hosts.failed(0, t0), 0ms);
  std::vector<size_t> order;
  for (int i = 0; i < 3; ++i) order.push_back(hosts.next(t0));
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2}));
}

TEST(ServiceHostsTest, SharedByThreads) {
  // Lookups of several loops share one object (run under TSan in the sanitizer build).
  auto hosts = three_hosts({.initial = 1ms, .max = 4ms});
  std::vector<std::thread> threads;
  std::atomic<int64_t> picks{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&hosts, &picks, t] {
      for (int i = 0; i < 5000; ++i) {
        const size_t index = hosts.next();
        ASSERT_LT(index, hosts.size());
        if ((i + t) % 7 == 0) {
          (void)hosts.failed(index);
        } else {
          hosts.succeeded(index);
        }
        ++picks;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(picks.load(), 20'000);
}

// --- Multi-host service URLs against the in-process broker ---------------------------------

// A host that accepts connections and closes each at once, counting them: a broker that is
// up as far as TCP goes but answers nothing.
class ClosingHost {
 public:
  ClosingHost() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) continue;
        ++accepted_;
        ::close(c);
      }
    });
  }
  ~ClosingHost() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

std::string local(const std::string& scheme, int port) {
  return scheme + "://127.0.0.1:" + std::to_string(port);
}

// Creates `n` producers and `n` consumers on topics of `t`, sends through each producer and
// receives on the matching consumer.
void produce_and_consume(Client& c, const std::string& t, int n) {
  for (int i = 0; i < n; ++i) {
    const std::string topic = t + "-" + std::to_string(i);
    const auto start = std::chrono::steady_clock::now();
    auto consumer = c.subscribe(topic, "sub");
    ASSERT_TRUE(consumer.ok()) << i << ": " << consumer.status().to_string();
    auto producer = c.create_producer(topic);
    ASSERT_TRUE(producer.ok()) << i << ": " << producer.status().to_string();
    // The dead host costs no retry backoff: the next host is asked at once.
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s) << i;
    ASSERT_TRUE(producer->send(Message("m" + std::to_string(i))).ok());
    auto m = consumer->receive(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->data(), "m" + std::to_string(i));
  }
}

TEST_F(ClientTest, ADeadFirstHostDoesNotStopProducersAndConsumers) {
  ClientOptions o = fast_options();
  o.io_threads = 2;
  const std::string service =
      local("pulsar", closed_port()) + "," + "127.0.0.1:" + std::to_string(broker_->port());
  auto c = Client::create(service, o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  produce_and_consume(*c, topic(), 6);
  EXPECT_TRUE(c->close().ok());
}

TEST_F(ClientTest, AFailedHostIsSkippedWhileQuarantined) {
  ClosingHost dead;
  const std::string live = "127.0.0.1:" + std::to_string(broker_->port());
  // A long quarantine: the dead host is tried once, then never again in this test.
  {
    ClientOptions o = fast_options();
    o.io_threads = 2;
    o.service_url_quarantine_initial = 60s;
    auto c = Client::create(local("pulsar", dead.port()) + "," + live, o);
    ASSERT_TRUE(c.ok());
    produce_and_consume(*c, topic("-long"), 5);
    EXPECT_EQ(dead.accepted(), 1) << "asked once, then skipped";
    EXPECT_TRUE(c->close().ok());
  }
  // The default quarantine (100 ms, doubling): a few attempts over the test, not one per
  // lookup.
  const int before = dead.accepted();
  {
    auto c = Client::create(local("pulsar", dead.port()) + "," + live, fast_options());
    ASSERT_TRUE(c.ok());
    produce_and_consume(*c, topic("-default"), 5);
    EXPECT_LE(dead.accepted() - before, 6);
    EXPECT_TRUE(c->close().ok());
  }
  // Without quarantine (Pulsar's plain round robin) the dead host is asked by every lookup
  // (20 here): what the counters above would have shown.
  const int plain_before = dead.accepted();
  {
    ClientOptions o = fast_options();
    o.service_url_quarantine_initial = 0ms;
    auto c = Client::create(local("pulsar", dead.port()) + "," + live, o);
    ASSERT_TRUE(c.ok());
    produce_and_consume(*c, topic("-plain"), 5);
    EXPECT_GE(dead.accepted() - plain_before, 10);
    EXPECT_TRUE(c->close().ok());
  }
}

TEST_F(ClientTest, HttpLookupsSkipAFailedHostToo) {
  ClosingHost dead;
  const std::string web = serve_http();
  ClientOptions o = fast_options();
  o.service_url_quarantine_initial = 60s;
  auto c = Client::create(
      local("http", dead.port()) + "," + web.substr(std::string("http://").size()), o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  produce_and_consume(*c, topic(), 4);
  EXPECT_EQ(dead.accepted(), 1) << "asked once, then skipped";
  EXPECT_TRUE(c->close().ok());
}

TEST_F(ClientTest, EveryHostDownStillTriesThemAndTimesOut) {
  ClientOptions o;
  o.operation_timeout = 1500ms;
  o.initial_backoff = 50ms;
  ClosingHost a;
  ClosingHost b;
  auto c =
      Client::create(local("pulsar", a.port()) + "," + "127.0.0.1:" + std::to_string(b.port()), o);
  ASSERT_TRUE(c.ok());
  auto p = c->create_producer(topic());
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().is(Errc::kTimeout) || p.status().is(Errc::kUnavailable))
      << p.status().to_string();
  // Both quarantined after their first failures, and still asked (least recently failed
  // first) rather than failing without trying.
  EXPECT_GE(a.accepted(), 2);
  EXPECT_GE(b.accepted(), 2);
}

// --- Through a proxy -----------------------------------------------------------------------

wire::BaseCommand proxy_command(wire::BaseCommand::Type type) {
  wire::BaseCommand c;
  c.set_type(type);
  return c;
}

bool write_all(int fd, const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

int connect_local(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// A stand-in for a Pulsar proxy (pulsar-security-proxy.md §6.2, §6.3), one thread per client
// connection:
//  - CONNECT without proxy_to_broker_url: a lookup connection. CONNECTED; PARTITIONED_METADATA
//    answered "not partitioned"; LOOKUP answered by `answer`; PING answered.
//  - CONNECT with it: a data connection to `routes[target]` (else 127.0.0.1 and the target's
//    port), the bytes spliced both ways, the CONNECT included; the client's frames are decoded
//    on the way and recorded. An unknown target closes the client's socket, as Pulsar's does.
class FakeProxy {
 public:
  using Answer =
      std::function<void(const wire::CommandLookupTopic&, wire::CommandLookupTopicResponse&)>;

  FakeProxy(std::map<std::string, int> routes, Answer answer)
      : routes_(std::move(routes)), answer_(std::move(answer)) {
    listen_fd_ = listen_on_loopback(16, &port_);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~FakeProxy() {
    stop_ = true;
    acceptor_.join();
    for (auto& t : connections_) t.join();
    ::close(listen_fd_);
  }

  std::string url() const { return "pulsar://127.0.0.1:" + std::to_string(port_); }
  // proxy_to_broker_url of every CONNECT, in order ("" for lookup connections).
  std::vector<std::string> connect_targets() {
    std::lock_guard lock(mu_);
    return targets_;
  }
  // LOOKUPs the client sent on spliced connections: (target, authoritative).
  std::vector<std::pair<std::string, bool>> spliced_lookups() {
    std::lock_guard lock(mu_);
    return spliced_lookups_;
  }
  int lookups_answered() const { return lookups_.load(); }
  int spliced_commands() const { return spliced_commands_.load(); }
  // Closes every spliced connection, as a proxy does when the broker behind it goes away.
  void drop_spliced() { ++drop_generation_; }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      connections_.emplace_back([this, fd] {
        serve(fd);
        ::close(fd);
      });
    }
  }

  void send(int fd, const wire::BaseCommand& cmd) {
    Buffer b = protocol::encode_command(cmd);
    (void)write_all(fd, b.data(), b.size());
  }

  // Reads what is there (waiting up to 20 ms); false when the peer closed.
  static bool read_some(int fd, std::vector<uint8_t>& raw, protocol::FrameDecoder& decoder,
                        bool& got) {
    got = false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) return true;
    uint8_t buf[65536];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) return false;
    raw.assign(buf, buf + n);
    decoder.feed(Buffer::copy_of(buf, static_cast<size_t>(n)));
    got = true;
    return true;
  }

  void serve(int fd) {
    protocol::FrameDecoder decoder(protocol::DecoderOptions{.parse_metadata = false});
    std::vector<uint8_t> received;  // every byte so far, until the connection's kind is known
    while (!stop_) {
      std::vector<uint8_t> raw;
      bool got = false;
      if (!read_some(fd, raw, decoder, got)) return;
      if (!got) continue;
      received.insert(received.end(), raw.begin(), raw.end());
      auto f = decoder.next();
      if (!f.ok()) return;
      if (!f->has_value()) continue;
      const wire::BaseCommand first = (*f)->command;
      if (first.type() != wire::BaseCommand::CONNECT) return;
      {
        std::lock_guard lock(mu_);
        targets_.push_back(first.connect().proxy_to_broker_url());
      }
      if (first.connect().has_proxy_to_broker_url()) {
        return splice(fd, first.connect().proxy_to_broker_url(), received, decoder);
      }
      auto connected = proxy_command(wire::BaseCommand::CONNECTED);
      connected.mutable_connected()->set_server_version("fake-proxy");
      connected.mutable_connected()->set_protocol_version(21);
      send(fd, connected);
      return serve_lookups(fd, decoder);
    }
  }

  void serve_lookups(int fd, protocol::FrameDecoder& decoder) {
    while (!stop_) {
      for (;;) {
        auto f = decoder.next();
        if (!f.ok()) return;
        if (!f->has_value()) break;
        const wire::BaseCommand& cmd = (*f)->command;
        if (cmd.type() == wire::BaseCommand::PING) {
          auto pong = proxy_command(wire::BaseCommand::PONG);
          pong.mutable_pong();
          send(fd, pong);
        } else if (cmd.type() == wire::BaseCommand::PARTITIONED_METADATA) {
          auto r = proxy_command(wire::BaseCommand::PARTITIONED_METADATA_RESPONSE);
          r.mutable_partitionmetadataresponse()->set_request_id(
              cmd.partitionmetadata().request_id());
          r.mutable_partitionmetadataresponse()->set_partitions(0);
          send(fd, r);
        } else if (cmd.type() == wire::BaseCommand::LOOKUP) {
          auto r = proxy_command(wire::BaseCommand::LOOKUP_RESPONSE);
          r.mutable_lookuptopicresponse()->set_request_id(cmd.lookuptopic().request_id());
          answer_(cmd.lookuptopic(), *r.mutable_lookuptopicresponse());
          ++lookups_;
          send(fd, r);
        }
      }
      std::vector<uint8_t> raw;
      bool got = false;
      if (!read_some(fd, raw, decoder, got)) return;
    }
  }

  void splice(int client, const std::string& target, const std::vector<uint8_t>& received,
              protocol::FrameDecoder& decoder) {
    int port = 0;
    if (auto it = routes_.find(target); it != routes_.end()) {
      port = it->second;
    } else {
      port = std::stoi(target.substr(target.rfind(':') + 1));
    }
    const int broker = connect_local(port);
    if (broker < 0) return;
    const int generation = drop_generation_.load();
    bool ok = write_all(broker, received.data(), received.size());
    while (ok && !stop_ && drop_generation_.load() == generation) {
      // Frames from the client, recorded on the way (the CONNECT first).
      for (;;) {
        auto f = decoder.next();
        if (!f.ok() || !f->has_value()) break;
        ++spliced_commands_;
        const wire::BaseCommand& cmd = (*f)->command;
        if (cmd.type() == wire::BaseCommand::LOOKUP) {
          std::lock_guard lock(mu_);
          spliced_lookups_.emplace_back(target, cmd.lookuptopic().authoritative());
        }
      }
      pollfd p[2] = {{client, POLLIN, 0}, {broker, POLLIN, 0}};
      if (::poll(p, 2, 20) <= 0) continue;
      uint8_t buf[65536];
      if (p[0].revents != 0) {
        const ssize_t n = ::read(client, buf, sizeof(buf));
        if (n <= 0) break;
        decoder.feed(Buffer::copy_of(buf, static_cast<size_t>(n)));
        ok = write_all(broker, buf, static_cast<size_t>(n));
      }
      if (ok && p[1].revents != 0) {
        const ssize_t n = ::read(broker, buf, sizeof(buf));
        if (n <= 0) break;
        ok = write_all(client, buf, static_cast<size_t>(n));
      }
    }
    ::close(broker);
  }

  const std::map<std::string, int> routes_;
  const Answer answer_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> drop_generation_{0};
  std::atomic<int> lookups_{0};
  std::atomic<int> spliced_commands_{0};
  std::mutex mu_;
  std::vector<std::string> targets_;
  std::vector<std::pair<std::string, bool>> spliced_lookups_;
  std::thread acceptor_;
  std::vector<std::thread> connections_;  // touched by the acceptor only, joined at the end
};

// A name only the proxy can reach: a client dialling it directly would fail to resolve it.
constexpr const char* kHiddenBroker = "broker-behind-proxy.invalid:6650";

TEST_F(ClientTest, LookupAnswersWithProxyThroughServiceUrlGoThroughTheProxy) {
  FakeProxy proxy({{kHiddenBroker, broker_->port()}},
                  [](const wire::CommandLookupTopic&, wire::CommandLookupTopicResponse& r) {
                    // What a Pulsar proxy always answers (§6.2).
                    r.set_response(wire::CommandLookupTopicResponse::Connect);
                    r.set_brokerserviceurl(std::string("pulsar://") + kHiddenBroker);
                    r.set_brokerserviceurltls(std::string("pulsar://") + kHiddenBroker);
                    r.set_authoritative(true);
                    r.set_proxy_through_service_url(true);
                  });
  auto c = Client::create(proxy.url(), fast_options());
  ASSERT_TRUE(c.ok());
  auto consumer = c->subscribe(topic(), "sub");
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  auto producer = c->create_producer(topic(), unbatched());
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(producer->send(Message("m" + std::to_string(i))).ok());
  for (int i = 0; i < 5; ++i) {
    auto m = consumer->receive(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    EXPECT_EQ(m->data(), "m" + std::to_string(i));
    ASSERT_TRUE(consumer->acknowledge(*m).ok());
  }
  // The lookup connection's CONNECT names no broker; the data connection's names the
  // logical broker as host:port, no scheme. One data connection (one loop) serves both.
  EXPECT_EQ(proxy.connect_targets(), (std::vector<std::string>{"", kHiddenBroker}));
  EXPECT_GE(proxy.lookups_answered(), 2);

  // The broker behind the proxy goes away (the proxy closes the spliced sockets): producer
  // and consumer look the topic up again through the proxy and reconnect through it.
  const int lookups = proxy.lookups_answered();
  proxy.drop_spliced();
  ASSERT_TRUE(producer->send(Message("after")).ok());
  auto m = consumer->receive(10s);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->data(), "after");
  EXPECT_GE(proxy.lookups_answered(), lookups + 2);
  const auto targets = proxy.connect_targets();
  for (size_t i = 1; i < targets.size(); ++i) EXPECT_EQ(targets[i], kHiddenBroker) << i;
  EXPECT_GE(std::count(targets.begin(), targets.end(), std::string(kHiddenBroker)), 2)
      << "a new data connection through the proxy";
}

TEST_F(ClientTest, ARedirectThroughTheProxyIsAskedThroughTheProxyAgain) {
  FakeProxy proxy({{kHiddenBroker, broker_->port()}},
                  [](const wire::CommandLookupTopic&, wire::CommandLookupTopicResponse& r) {
                    r.set_response(wire::CommandLookupTopicResponse::Redirect);
                    r.set_brokerserviceurl(std::string("pulsar://") + kHiddenBroker);
                    r.set_authoritative(true);
                    r.set_proxy_through_service_url(true);
                  });
  auto c = Client::create(proxy.url(), fast_options());
  ASSERT_TRUE(c.ok());
  auto producer = c->create_producer(topic(), unbatched());
  ASSERT_TRUE(producer.ok()) << producer.status().to_string();
  ASSERT_TRUE(producer->send(Message("via a redirect")).ok());
  // The redirect's broker was asked through the proxy, with the authoritative flag given;
  // it answered Connect with its own URL (no proxy flag: brokers never set it), and the
  // producer still went through the proxy to it.
  const auto lookups = proxy.spliced_lookups();
  ASSERT_EQ(lookups.size(), 1u);
  EXPECT_EQ(lookups[0], std::make_pair(std::string(kHiddenBroker), true));
  const auto targets = proxy.connect_targets();
  ASSERT_EQ(targets.size(), 3u) << "lookup, redirect through the proxy, data";
  EXPECT_EQ(targets[0], "");
  EXPECT_EQ(targets[1], kHiddenBroker);
  EXPECT_EQ(targets[2].find("://"), std::string::npos) << targets[2];
  EXPECT_TRUE(targets[2].ends_with(":" + std::to_string(broker_->port()))) << targets[2];
}

}  // namespace
}  // namespace magnetar::client::test
