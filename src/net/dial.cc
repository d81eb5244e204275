#include "net/dial.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/redirect_error.hpp>

namespace magnetar::net {

Task<Result<std::unique_ptr<Stream>>> dial(Executor executor, std::string host, uint16_t port,
                                           DialOptions options,
                                           std::chrono::steady_clock::time_point deadline) {
  const std::string where = host.find(':') != std::string::npos
                                ? fmt::format("[{}]:{}", host, port)
                                : fmt::format("{}:{}", host, port);
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(executor);
  auto socket = std::make_shared<asio::ip::tcp::socket>(executor);
  auto timed_out = std::make_shared<bool>(false);
  asio::steady_timer guard(executor);
  guard.expires_at(deadline);
  guard.async_wait([resolver, socket, timed_out](boost::system::error_code ec) {
    if (ec) return;
    *timed_out = true;
    resolver->cancel();
    boost::system::error_code ignored;
    socket->close(ignored);
  });
  boost::system::error_code ec;
  auto results = co_await resolver->async_resolve(host, std::to_string(port),
                                                  asio::redirect_error(asio::use_awaitable, ec));
  if (*timed_out) co_return Status(Errc::kTimeout, fmt::format("timed out resolving {}", where));
  if (ec) {
    guard.cancel();
    co_return Status(Errc::kUnavailable,
                     fmt::format("cannot resolve {}: {}", where, ec.message()));
  }
  std::vector<asio::ip::tcp::endpoint> endpoints;
  for (const auto& r : results) {
    if (!options.address_allowed || options.address_allowed(r.endpoint().address())) {
      endpoints.push_back(r.endpoint());
    }
  }
  if (endpoints.empty()) {
    guard.cancel();
    co_return Status(Errc::kPermissionDenied,
                     fmt::format("{} resolves to no address that may be connected to", where));
  }
  co_await asio::async_connect(*socket, endpoints, asio::redirect_error(asio::use_awaitable, ec));
  if (*timed_out) co_return Status(Errc::kTimeout, fmt::format("timed out connecting to {}", where));
  if (ec) {
    guard.cancel();
    co_return Status(Errc::kUnavailable, fmt::format("cannot connect to {}: {}", where, ec.message()));
  }
  guard.cancel();
  std::unique_ptr<Stream> stream = options.tls ? tls_stream(std::move(*socket), options.tls)
                                               : tcp_stream(std::move(*socket));
  Status handshaken = co_await stream->handshake(host, deadline);
  if (!handshaken.ok()) {
    stream->close();
    co_return Status(handshaken.code(),
                     fmt::format("{} with {}", handshaken.message(), where));
  }
  co_return stream;
}

}  // namespace magnetar::net
