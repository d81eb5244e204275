#pragma once
// Dialing a server: resolve, connect to the first address that answers (and that the caller
// allows), then the TLS handshake when given a client context; all bounded by one deadline.
// Used by the proxy for its connections to brokers.
//
// Errors: Errc::kTimeout (the deadline passed), Errc::kPermissionDenied (every address the
// name resolves to was refused by `address_allowed`), Errc::kUnavailable (resolution,
// connection or handshake failed: the message says which, with the TLS reason).

#include <boost/asio/ip/address.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "net/stream.h"

namespace magnetar::net {

struct DialOptions {
  // A client context (TlsRole::kClient) for TLS; null: plain TCP.
  std::shared_ptr<TlsContext> tls;
  // Whether an address may be connected to; null: every one.
  std::function<bool(const boost::asio::ip::address&)> address_allowed;
};

Task<Result<std::unique_ptr<Stream>>> dial(Executor executor, std::string host, uint16_t port,
                                           DialOptions options,
                                           std::chrono::steady_clock::time_point deadline);

}  // namespace magnetar::net
