#include "net/listen.h"

#include <fmt/format.h>

namespace magnetar::net {

Status listen_on(boost::asio::ip::tcp::acceptor& acceptor, const std::string& bind_address,
                 int port) {
  namespace ip = boost::asio::ip;
  boost::system::error_code ec;
  const ip::address address = ip::make_address(bind_address, ec);
  if (ec) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("bindAddress '{}': {}", bind_address, ec.message()));
  }
  ip::tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(boost::asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Errc::kUnavailable,
                  fmt::format("cannot listen on {}:{}: {}", bind_address, port, ec.message()));
  }
  return Status::OK();
}

}  // namespace magnetar::net
