#pragma once
// Opening a server's listening socket: open, SO_REUSEADDR, bind, listen, with errors that name
// the address and port (a port in use is the usual one). Used by the broker's and the proxy's
// listeners.

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "common/status.h"

namespace magnetar::net {

// Errors: Errc::kInvalidArgument when `bind_address` is not an IP address,
// Errc::kUnavailable ("cannot listen on 127.0.0.1:6650: Address already in use").
Status listen_on(boost::asio::ip::tcp::acceptor& acceptor, const std::string& bind_address,
                 int port);

}  // namespace magnetar::net
