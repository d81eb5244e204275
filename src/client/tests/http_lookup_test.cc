// HTTP lookup (http:// service URLs): the in-process broker of client_test_support.h with its
// HTTP routes (lookup, partitions, admin resources) on a web port (serve_http); producers and
// consumers found through them, a redirecting front server, and services that are not there.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <set>

#include "client/tests/client_test_support.h"
#include "http/http_server.h"

namespace magnetar::client::test {
namespace {

std::unique_ptr<http::HttpServer> start_web() {
  http::ServerOptions o;
  o.address = "127.0.0.1";
  o.port = 0;
  auto web = http::HttpServer::start(o, log::Logger("web"));
  EXPECT_TRUE(web.ok()) << web.status().to_string();
  return web.ok() ? std::move(web).value() : nullptr;
}

class HttpLookupTest : public ClientTest {
 protected:
  HttpLookupTest() : web_url_(serve_http()) {}
  ~HttpLookupTest() override {
    if (http_client_) (void)http_client_->close();
    if (front_) front_->stop();
  }

  const std::string& web_url() const { return web_url_; }

  // A client over `url` (by default the broker's web service).
  Client& http_client(const std::string& url = "") {
    if (!http_client_) {
      auto c = Client::create(url.empty() ? web_url() : url, fast_options());
      EXPECT_TRUE(c.ok()) << c.status().to_string();
      http_client_ = std::make_unique<Client>(std::move(c).value());
    }
    return *http_client_;
  }

  // A front web server answering every GET with 307 to `target` + the same path and query
  // (to itself when `target` is empty); returns its URL.
  std::string start_redirector(std::string target) {
    front_ = start_web();
    std::string self = "http://127.0.0.1:" + std::to_string(front_->port());
    if (target.empty()) target = self;
    std::atomic<int>* hits = &redirects_;
    front_->route_prefix("GET", "/",
                         [target, hits](const http::Request& req) -> Task<http::Response> {
                           hits->fetch_add(1);
                           http::Response r;
                           r.status = 307;
                           r.headers["Location"] = target + req.target;
                           co_return r;
                         });
    return self;
  }

  const std::string web_url_;
  std::unique_ptr<http::HttpServer> front_;
  std::atomic<int> redirects_{0};
  std::unique_ptr<Client> http_client_;
};

TEST_F(HttpLookupTest, ProducesAndConsumesThroughAnHttpServiceUrl) {
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = http_client().subscribe(topic(), "sub", co);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto p = http_client().create_producer(topic(), unbatched());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  send_n(*p, 10);
  auto got = receive_n(*c, 10);
  ASSERT_EQ(got.size(), 10u);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(got[static_cast<size_t>(i)].payload(), "msg-" + std::to_string(i));
  // What an http:// client wrote is there for a pulsar:// client too.
  auto reader = client().create_reader(topic(), MessageId::earliest());
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto first = reader->read_next(5s);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->payload(), "msg-0");
}

TEST_F(HttpLookupTest, PartitionedTopicThroughHttp) {
  make_partitioned(test_name(), 3);
  auto parts = http_client().get_partitions_for_topic(topic());
  ASSERT_TRUE(parts.ok()) << parts.status().to_string();
  EXPECT_EQ(*parts, (std::vector<std::string>{topic("-partition-0"), topic("-partition-1"),
                                              topic("-partition-2")}));
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = http_client().subscribe(topic(), "sub", co);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto p = http_client().create_producer(topic(), unbatched());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::set<int> partitions;
  for (int i = 0; i < 9; ++i) {
    auto id = p->send(Message("m" + std::to_string(i)));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    partitions.insert(id->partition());
  }
  EXPECT_EQ(partitions.size(), 3u);  // round robin over the three
  EXPECT_EQ(receive_n(*c, 9).size(), 9u);
  // Not partitioned: the topic itself.
  auto plain = http_client().get_partitions_for_topic(topic("-plain"));
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(*plain, std::vector<std::string>{topic("-plain")});
}

TEST_F(HttpLookupTest, PatternConsumerFindsTopicsOverHttp) {
  auto a = producer(topic("-a"), unbatched());
  auto b = producer(topic("-b"), unbatched());
  send_n(a, 2, "a-");
  send_n(b, 2, "b-");
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto pattern = http_client().subscribe_pattern(
      "persistent://public/default/" + test_name() + "-.*", "pattern", co);
  ASSERT_TRUE(pattern.ok()) << pattern.status().to_string();
  std::set<std::string> got;
  for (int i = 0; i < 4; ++i) {
    auto m = pattern->receive(5s);
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    got.insert(m->payload());
  }
  EXPECT_EQ(got, (std::set<std::string>{"a-0", "a-1", "b-0", "b-1"}));
}

TEST_F(HttpLookupTest, RedirectsAreFollowed) {
  const std::string front = start_redirector(web_url());
  ConsumerOptions co;
  co.initial_position = InitialPosition::kEarliest;
  auto c = http_client(front).subscribe(topic(), "sub", co);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto p = http_client().create_producer(topic(), unbatched());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  send_n(*p, 3);
  EXPECT_EQ(receive_n(*c, 3).size(), 3u);
  // Each creation asked for the partitions and then the owner, both through the front.
  EXPECT_GE(redirects_.load(), 4);
}

TEST_F(HttpLookupTest, EndlessRedirectsFailWithinTheOperationTimeout) {
  const std::string front = start_redirector("");
  ClientOptions o = fast_options();
  o.operation_timeout = 2s;
  o.max_lookup_redirects = 3;
  auto made = Client::create(front, o);
  ASSERT_TRUE(made.ok());
  const auto start = std::chrono::steady_clock::now();
  auto p = made->create_producer(topic());
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.status().is(Errc::kTimeout) || p.status().is(Errc::kUnavailable))
      << p.status().to_string();
  EXPECT_NE(p.status().to_string().find("redirect"), std::string::npos) << p.status().to_string();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
  EXPECT_TRUE(made->close().ok());
}

// A port that accepts connections (the kernel completes them) but never answers.
class SilentPort {
 public:
  SilentPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(fd_, 64);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~SilentPort() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(HttpLookupNoBrokerTest, NothingThereFailsWithATimeoutInsteadOfHanging) {
  SilentPort silent;
  ClientOptions o;
  o.operation_timeout = 1s;
  o.initial_backoff = 50ms;
  // Nobody listening (refused at once, retried until the timeout), and a server that never
  // answers (each request bounded by what is left of the operation timeout).
  for (const std::string& url : {"http://127.0.0.1:" + std::to_string(closed_port()),
                                 "http://127.0.0.1:" + std::to_string(silent.port())}) {
    auto c = Client::create(url, o);
    ASSERT_TRUE(c.ok()) << url;
    const auto start = std::chrono::steady_clock::now();
    auto p = c->create_producer("persistent://public/default/nowhere");
    ASSERT_FALSE(p.ok()) << url;
    EXPECT_TRUE(p.status().is(Errc::kTimeout) || p.status().is(Errc::kUnavailable))
        << p.status().to_string();
    auto s = c->subscribe("persistent://public/default/nowhere", "sub");
    EXPECT_FALSE(s.ok()) << url;
    auto parts = c->get_partitions_for_topic("persistent://public/default/nowhere");
    ASSERT_FALSE(parts.ok()) << url;
    EXPECT_EQ(client_error_of(parts.status()), ClientError::kTimeout) << parts.status().to_string();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s) << url;
    EXPECT_TRUE(c->close().ok());
  }
}

TEST(HttpLookupUrlTest, HttpAndHttpsUrlsAreParsed) {
  EXPECT_TRUE(Client::create("http://localhost:8080").ok());
  EXPECT_TRUE(Client::create("http://h1:8080,h2:8081/").ok());
  EXPECT_TRUE(Client::create("https://localhost:8443").ok());
  EXPECT_TRUE(Client::create("https://h1:8443,h2:8444/").ok());
  // An https:// client reads its TLS files at creation, as a pulsar+ssl:// one does.
  ClientOptions bad;
  bad.tls_trust_certs_file_path = "/no/such/ca.pem";
  auto https = Client::create("https://localhost:8443", bad);
  ASSERT_FALSE(https.ok());
  EXPECT_NE(https.status().message().find("/no/such/ca.pem"), std::string::npos)
      << https.status().to_string();
  EXPECT_FALSE(Client::create("https://").ok());
  EXPECT_FALSE(Client::create("http://").ok());
  EXPECT_FALSE(Client::create("http://h1:8080,").ok());
  EXPECT_FALSE(Client::create("http://h1:8080/admin").ok());
}

}  // namespace
}  // namespace magnetar::client::test
