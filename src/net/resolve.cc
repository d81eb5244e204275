#include "net/resolve.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace magnetar::net {

Result<std::string> resolve_listen_address(const std::string& host) {
  namespace ip = boost::asio::ip;
  boost::system::error_code ec;
  (void)ip::make_address(host, ec);
  if (!ec) return host;
  boost::asio::io_context io;
  ip::tcp::resolver resolver(io);
  auto found = resolver.resolve(host, "", ec);
  if (ec || found.empty()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("'{}' is neither an IP address nor a host name that resolves{}",
                              host, ec ? ": " + ec.message() : ""));
  }
  for (const auto& entry : found) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint().address().to_string();
  }
  return found.begin()->endpoint().address().to_string();
}

}  // namespace magnetar::net
