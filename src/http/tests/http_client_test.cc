// The HTTP client against our own HttpServer, a socket that never answers, a closed port and
// a raw server that answers garbage.

#include "http/http_client.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "http/http_server.h"

namespace magnetar::http {
namespace {

using asio::ip::tcp;
using namespace std::chrono_literals;

std::unique_ptr<HttpServer> start_server() {
  ServerOptions o;
  o.port = 0;
  auto s = HttpServer::start(o, log::Logger("http-client-test"));
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

// Answers "<method> <target> <content-type> <authorization> <body>".
Handler echo() {
  return [](const Request& req) -> Task<Response> {
    auto header = [&req](const char* name) {
      auto it = req.headers.find(name);
      return it == req.headers.end() ? std::string("-") : it->second;
    };
    Response r;
    r.body = req.method + " " + req.target + " " + header("content-type") + " " +
             header("authorization") + " " + req.body;
    co_return r;
  };
}

HttpRequest make_request(std::string method, std::string url, std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.body = std::move(body);
  return r;
}

std::string base(const HttpServer& server) {
  return "http://127.0.0.1:" + std::to_string(server.port());
}

class HttpClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = start_server();
    ASSERT_TRUE(server_);
    for (const char* m : {"GET", "PUT", "POST", "DELETE"})
      server_->route_prefix(m, "/echo", echo());
  }
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpClientTest, SendsMethodsBodiesAndHeaders) {
  ClientOptions options;
  options.default_headers["Authorization"] = "Bearer secret";
  HttpClient client(options);
  for (const char* method : {"GET", "PUT", "POST", "DELETE"}) {
    HttpRequest req;
    req.method = method;
    req.url = base(*server_) + "/echo/a?x=1";
    if (std::string(method) != "GET") req.body = R"({"k":1})";
    auto r = client.send_blocking(req);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->status, 200);
    const std::string body_part =
        req.body.empty() ? "- Bearer secret " : "application/json Bearer secret {\"k\":1}";
    EXPECT_EQ(r->body, std::string(method) + " /echo/a?x=1 " + body_part);
    EXPECT_EQ(r->header("Server"), "Magnetar");
  }
}

TEST_F(HttpClientTest, ReturnsErrorStatusesAsResponses) {
  HttpClient client;
  auto r = client.send_blocking(make_request("GET", base(*server_) + "/nope"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, R"({"reason":"Not Found"})");
  EXPECT_EQ(r->header("content-type"), "application/json");
}

TEST_F(HttpClientTest, WorksAsACoroutineOnAnExecutor) {
  HttpClient client;
  asio::io_context io;
  std::optional<Result<HttpResponse>> got;
  const std::string url = base(*server_) + "/echo/co";
  auto run = [&]() -> Task<void> {
    HttpRequest req;
    req.method = "POST";
    req.url = url;
    req.body = "17";
    got.emplace(co_await client.send(std::move(req)));
  };
  asio::co_spawn(io, run, asio::detached);
  io.run();
  ASSERT_TRUE(got && got->ok()) << (got ? got->status().to_string() : "not run");
  EXPECT_EQ((*got)->body, "POST /echo/co application/json - 17");
}

TEST_F(HttpClientTest, Follows307KeepingMethodAndBody) {
  auto other = start_server();
  ASSERT_TRUE(other);
  other->route_prefix("POST", "/echo", echo());
  const std::string target = base(*other) + "/echo/moved";
  server_->route("POST", "/old", [target](const Request&) -> Task<Response> {
    Response r;
    r.status = 307;
    r.headers["Location"] = target;
    co_return r;
  });
  HttpClient client;
  auto r = client.send_blocking(make_request("POST", base(*server_) + "/old", "[1]"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /echo/moved application/json - [1]");
  EXPECT_EQ(r->url, target);
}

TEST_F(HttpClientTest, Follows302And301AsGetWithRelativeLocations) {
  server_->route("POST", "/a/found", [](const Request&) -> Task<Response> {
    Response r;
    r.status = 302;
    r.headers["Location"] = "perm";  // relative to /a/
    co_return r;
  });
  server_->route("GET", "/a/perm", [](const Request&) -> Task<Response> {
    Response r;
    r.status = 301;
    r.headers["Location"] = "/echo/final";
    co_return r;
  });
  HttpClient client;
  auto r = client.send_blocking(make_request("POST", base(*server_) + "/a/found", "x"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->body, "GET /echo/final - - ");
}

TEST_F(HttpClientTest, StopsAfterFiveRedirects) {
  int hops = 0;
  server_->route("GET", "/loop", [&hops](const Request&) -> Task<Response> {
    ++hops;
    Response r;
    r.status = 307;
    r.headers["Location"] = "/loop";
    co_return r;
  });
  HttpClient client;
  auto r = client.send_blocking(make_request("GET", base(*server_) + "/loop"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kTooManyRedirects);
  EXPECT_EQ(hops, 6);  // the first request and five redirects
}

TEST(HttpClientErrorsTest, TimesOutAgainstAServerThatNeverAnswers) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  acceptor.listen();  // the kernel completes the handshake; nobody ever accepts or replies
  ClientOptions options;
  options.timeout = 300ms;
  HttpClient client(options);
  const auto start = std::chrono::steady_clock::now();
  auto r = client.send_blocking(make_request(
      "GET", "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/x"));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kTimeout) << r.status().to_string();
  EXPECT_TRUE(r.status().is(Errc::kTimeout));
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 5s);
}

TEST(HttpClientErrorsTest, PerRequestTimeoutOverridesTheDefault) {
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  acceptor.listen();
  HttpClient client;  // 30 s by default
  HttpRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/x";
  req.timeout = 200ms;
  auto r = client.send_blocking(req);
  EXPECT_EQ(r.status().code(), ClientError::kTimeout);
}

TEST(HttpClientErrorsTest, ReportsConnectionRefused) {
  uint16_t port = 0;
  {
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }  // closed: nothing listens there now
  HttpClient client;
  auto r =
      client.send_blocking(make_request("GET", "http://127.0.0.1:" + std::to_string(port) + "/"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kConnectionRefused) << r.status().to_string();
  EXPECT_TRUE(r.status().is(Errc::kUnavailable));
  EXPECT_NE(r.status().message().find("connection refused"), std::string::npos);
}

// Accepts one connection, reads the request head, writes `answer` and closes.
class RawServer {
 public:
  explicit RawServer(std::string answer)
      : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    thread_ = std::thread([this, answer = std::move(answer)] {
      boost::system::error_code ec;
      tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec) return;
      asio::streambuf head;
      asio::read_until(s, head, "\r\n\r\n", ec);
      asio::write(s, asio::buffer(answer), ec);
      s.shutdown(tcp::socket::shutdown_both, ec);
    });
  }
  ~RawServer() { thread_.join(); }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/";
  }

 private:
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::thread thread_;
};

TEST(HttpClientErrorsTest, ReportsAMalformedResponse) {
  RawServer raw("this is not HTTP\r\n\r\n");
  auto r = HttpClient().send_blocking(make_request("GET", raw.url()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kMalformedResponse) << r.status().to_string();
}

TEST(HttpClientErrorsTest, AServerClosingWithoutAByteIsAConnectionFailure) {
  RawServer raw("");  // reads the request, closes without answering
  auto r = HttpClient().send_blocking(make_request("GET", raw.url()));
  ASSERT_FALSE(r.ok()) << "status " << r->status << ", body '" << r->body << "'";
  EXPECT_EQ(r.status().code(), ClientError::kConnectionFailed) << r.status().to_string();
  EXPECT_TRUE(r.status().is(Errc::kUnavailable));
}

TEST(HttpClientErrorsTest, BoundsTheResponseSize) {
  RawServer raw("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'x'));
  ClientOptions options;
  options.max_response_bytes = 1000;
  auto r = HttpClient(options).send_blocking(make_request("GET", raw.url()));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kResponseTooLarge) << r.status().to_string();
}

TEST(HttpClientErrorsTest, ReadsABodyDelimitedByClose) {
  RawServer raw("HTTP/1.0 200 OK\r\nX-Test: a\r\n\r\nuntil close");
  auto r = HttpClient().send_blocking(make_request("GET", raw.url()));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->body, "until close");
  EXPECT_EQ(r->header("x-test"), "a");
  ASSERT_EQ(r->fields.size(), 1u);
  EXPECT_EQ(r->fields[0].first, "X-Test");  // as received
}

TEST(HttpClientErrorsTest, RefusesOtherSchemesAndBadUrls) {
  HttpClient client;
  auto ftp = client.send_blocking(make_request("GET", "ftp://127.0.0.1:8443/"));
  EXPECT_EQ(ftp.status().code(), ClientError::kUnsupportedScheme);
  EXPECT_TRUE(ftp.status().is(Errc::kNotSupported));
  EXPECT_EQ(client.send_blocking(make_request("GET", "localhost:8080")).status().code(),
            ClientError::kBadUrl);
}

TEST_F(HttpClientTest, ResolvesHostNames) {
  HttpClient client;
  auto r = client.send_blocking(
      make_request("GET", "http://localhost:" + std::to_string(server_->port()) + "/echo/name"));
  // localhost may resolve to ::1 first, where nothing listens; the client tries each address.
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, 200);
}

TEST(UrlTest, ParsesAbsoluteUrls) {
  auto u = parse_url("HTTP://Broker-1.example:8080/admin/v2/tenants?x=1#frag");
  ASSERT_TRUE(u.ok()) << u.status().to_string();
  EXPECT_EQ(u->scheme, "http");
  EXPECT_EQ(u->host, "Broker-1.example");
  EXPECT_EQ(u->port, 8080);
  EXPECT_EQ(u->target, "/admin/v2/tenants?x=1");
  auto bare = parse_url("http://h");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->port, 80);
  EXPECT_EQ(bare->target, "/");
  auto v6 = parse_url("http://[::1]:9/p");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->origin(), "http://[::1]:9");
  EXPECT_EQ(parse_url("https://h/")->port, 443);
  for (const char* bad : {"h:80/x", "http://", "http://h:0/", "http://h:70000/", "http://h:x/",
                          "http://u:p@h/", "http://[::1/", "http://h/a b"}) {
    EXPECT_FALSE(parse_url(bad).ok()) << bad;
  }
}

TEST(UrlTest, ResolvesRedirectLocations) {
  const Url base = *parse_url("http://a:1/x/y?q=1");
  EXPECT_EQ(resolve_location(base, "http://b:2/z")->to_string(), "http://b:2/z");
  EXPECT_EQ(resolve_location(base, "//c:3/w")->to_string(), "http://c:3/w");
  EXPECT_EQ(resolve_location(base, "/abs?k=v")->to_string(), "http://a:1/abs?k=v");
  EXPECT_EQ(resolve_location(base, "rel")->to_string(), "http://a:1/x/rel");
  EXPECT_FALSE(resolve_location(base, "").ok());
}

}  // namespace
}  // namespace magnetar::http
