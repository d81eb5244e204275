#pragma once
// A connected byte stream, plain TCP or TLS, so that a protocol's connection code (the
// broker's and the client's Pulsar connections) is written once for both.
//
// Made by tcp_stream() or tls_stream() from a connected socket; handshake() comes first (a
// no-op for TCP), then reads and writes. A stream lives on the executor of its socket (one
// event loop) and every method must be called there. At most one read_some() and one
// write() may be outstanding at a time (one reader coroutine, one writer coroutine);
// close() may be called at any time, the handshake included.

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "common/asio.h"
#include "common/buffer.h"
#include "common/status.h"

namespace magnetar::net {

class TlsContext;

class Stream {
 public:
  virtual ~Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  virtual Executor executor() = 0;
  // TLS: the handshake, in the role of the stream's context (server: on an accepted socket;
  // client: `host` is the name connected to, sent as SNI and checked against the
  // certificate when the context validates host names). Bounded by `deadline`: past it the
  // socket is closed and the handshake fails with Errc::kTimeout. Other failures
  // (Errc::kUnavailable) say why, with the certificate verification error when there is
  // one ("certificate verify failed: unable to get local issuer certificate"); the socket is
  // then closed. Plain TCP: OK at once.
  virtual Task<Status> handshake(std::string host,
                                 std::chrono::steady_clock::time_point deadline) = 0;
  // Reads at least one byte into `into`. `ec`: eof once the peer closed, operation_aborted
  // after close(), else the failure (TLS errors in the ssl category).
  virtual Task<size_t> read_some(asio::mutable_buffer into, boost::system::error_code& ec) = 0;
  // Writes every byte of `buffers` (in order); `buffers` must stay valid until it returns.
  virtual Task<void> write(const std::vector<asio::const_buffer>& buffers,
                           boost::system::error_code& ec) = 0;
  // Closes the socket at once (no TLS close_notify); outstanding operations end with
  // operation_aborted. Idempotent.
  virtual void close() = 0;

  // Plain TCP only: the socket's descriptor, switched to non-blocking, for a relay that moves
  // bytes inside the kernel (net/splice.h); -1 for TLS (the bytes must be decrypted).
  virtual int splice_handle() { return -1; }
  // Plain TCP only: waits until the socket can be read (`write` false) or written.
  // `ec`: operation_aborted after close(); TLS streams fail with operation_not_supported.
  virtual Task<void> wait_ready(bool write, boost::system::error_code& ec);

  // TLS, after the handshake: the peer certificate's role for certificate authentication
  // (Pulsar's AuthenticationProviderTls): the first CN of its subject in RFC 2253 order (the
  // most specific RDN first), when the certificate was presented and verified against the
  // trusted CAs (never with allow_insecure's accept-anything); "" otherwise, and for plain TCP.
  virtual std::string verified_peer_common_name() const { return ""; }

  bool tls() const { return tls_; }
  // The peer as "address:port", or "unknown".
  const std::string& remote() const { return remote_; }

 protected:
  Stream(bool tls, std::string remote) : tls_(tls), remote_(std::move(remote)) {}

 private:
  const bool tls_;
  const std::string remote_;
};

// A plain TCP stream over a connected socket (TCP_NODELAY set).
std::unique_ptr<Stream> tcp_stream(asio::ip::tcp::socket socket);
// A TLS stream over a connected socket, in the role of `context`; handshake() next.
std::unique_ptr<Stream> tls_stream(asio::ip::tcp::socket socket,
                                   std::shared_ptr<TlsContext> context);

// A TLS (ssl category) error as text, for logs and statuses: OpenSSL's reason, e.g.
// "tlsv13 alert certificate required"; other errors: their message.
std::string describe_error(const boost::system::error_code& ec);
// Whether `ec` comes from OpenSSL (an alert, a bad record), not from the socket.
bool is_tls_error(const boost::system::error_code& ec);

}  // namespace magnetar::net
