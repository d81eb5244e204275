#include "http/http_server.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "common/metrics.h"

namespace magnetar::http {
namespace {

using asio::ip::tcp;

// Sends raw bytes, returns everything the server answers until it closes the connection.
std::string exchange(int port, const std::string& request) {
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  asio::write(s, asio::buffer(request));
  std::string out;
  char buf[4096];
  boost::system::error_code ec;
  while (true) {
    size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    out.append(buf, n);
  }
  return out;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = 0;
    o.max_body_bytes = 1024;
    auto s = HttpServer::start(o, log::Logger("http-test"));
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }
  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, ServesPrometheusMetrics) {
  auto* c = metrics::default_registry()
                .counter("magnetar_http_test_total", "A counter for the HTTP test")
                .value();
  c->get()->inc(3);
  add_metrics_route(*server_);
  std::string r = exchange(server_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("text/plain; version=0.0.4"), std::string::npos) << r;
  EXPECT_NE(r.find("magnetar_http_test_total 3"), std::string::npos) << r;
}

TEST_F(HttpServerTest, RoutesQueryBodyAndErrors) {
  server_->route("PUT", "/admin/v2/tenants/t", [](const Request& req) -> Task<Response> {
    co_return Response::json(204, "");
  });
  server_->route_prefix("GET", "/echo/", [](const Request& req) -> Task<Response> {
    Response r;
    auto it = req.query.find("name");
    r.body = req.path + "|" + (it == req.query.end() ? "" : it->second);
    co_return r;
  });
  std::string echo = exchange(server_->port(),
                              "GET /echo/a/b?name=x%20y&z HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
  EXPECT_NE(echo.find("/echo/a/b|x y"), std::string::npos) << echo;
  std::string missing = exchange(server_->port(), "GET /nope HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(missing.find("404"), std::string::npos);
  EXPECT_NE(missing.find("{\"reason\":\"Not Found\"}"), std::string::npos) << missing;
  std::string wrong = exchange(server_->port(),
                               "DELETE /admin/v2/tenants/t HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(wrong.find("405"), std::string::npos) << wrong;
  std::string big = exchange(server_->port(),
                             "PUT /admin/v2/tenants/t HTTP/1.1\r\nContent-Length: 5000\r\n\r\n" +
                                 std::string(5000, 'x'));
  EXPECT_NE(big.find("413"), std::string::npos) << big;
  std::string garbage = exchange(server_->port(), "\x01\x02 garbage\r\n\r\n");
  EXPECT_NE(garbage.find("400"), std::string::npos) << garbage;
}

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  add_metrics_route(*server_);
  std::string two = exchange(server_->port(),
                             "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                             "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  size_t first = two.find("HTTP/1.1 200 OK");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(two.find("HTTP/1.1 200 OK", first + 1), std::string::npos);
}

TEST(UrlDecodeTest, DecodesAndRejectsBadEscapes) {
  EXPECT_EQ(*url_decode("a%2Fb%20c"), "a/b c");
  EXPECT_FALSE(url_decode("bad%2").has_value());
  EXPECT_FALSE(url_decode("bad%zz").has_value());
}

}  // namespace
}  // namespace magnetar::http
