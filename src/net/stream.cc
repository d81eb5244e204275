#include "net/stream.h"

#include <fmt/format.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include "net/tls.h"

namespace magnetar::net {

namespace {

using asio::ip::tcp;
using boost::system::error_code;

std::string remote_of(const tcp::socket& socket) {
  error_code ec;
  auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown";
  return fmt::format("{}:{}", ep.address().to_string(), ep.port());
}

void close_socket(tcp::socket& socket) {
  error_code ec;
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

class TcpStream final : public Stream {
 public:
  explicit TcpStream(tcp::socket socket)
      : Stream(false, remote_of(socket)), socket_(std::move(socket)) {
    error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
  }
  ~TcpStream() override { close(); }

  Executor executor() override { return socket_.get_executor(); }

  Task<Status> handshake(std::string, std::chrono::steady_clock::time_point) override {
    co_return Status::OK();
  }

  Task<size_t> read_some(asio::mutable_buffer into, error_code& ec) override {
    co_return co_await socket_.async_read_some(into, asio::redirect_error(asio::use_awaitable, ec));
  }

  Task<void> write(const std::vector<asio::const_buffer>& buffers, error_code& ec) override {
    co_await asio::async_write(socket_, buffers, asio::redirect_error(asio::use_awaitable, ec));
  }

  void close() override { close_socket(socket_); }

  int splice_handle() override {
    if (!socket_.is_open()) return -1;
    if (!non_blocking_) {
      error_code ec;
      socket_.native_non_blocking(true, ec);
      if (ec) return -1;
      non_blocking_ = true;
    }
    return socket_.native_handle();
  }

  Task<void> wait_ready(bool write, error_code& ec) override {
    co_await socket_.async_wait(write ? tcp::socket::wait_write : tcp::socket::wait_read,
                                asio::redirect_error(asio::use_awaitable, ec));
  }

 private:
  tcp::socket socket_;
  bool non_blocking_ = false;  // set by splice_handle()
};

class TlsStream final : public Stream {
 public:
  TlsStream(tcp::socket socket, std::shared_ptr<TlsContext> context)
      : Stream(true, remote_of(socket)),
        context_(std::move(context)),
        stream_(std::move(socket), context_->native()) {
    error_code ec;
    stream_.next_layer().set_option(tcp::no_delay(true), ec);
  }
  ~TlsStream() override { close(); }

  Executor executor() override { return stream_.get_executor(); }

  Task<Status> handshake(std::string host, std::chrono::steady_clock::time_point deadline) override;

  Task<size_t> read_some(asio::mutable_buffer into, error_code& ec) override {
    co_return co_await stream_.async_read_some(into, asio::redirect_error(asio::use_awaitable, ec));
  }

  // Every TLS write makes at least one record and one system call per buffer, so small
  // buffers (frame headers, short messages) are first copied together into chunks: the copy
  // costs far less than the encryption. Buffers of a chunk or more go out as they are.
  Task<void> write(const std::vector<asio::const_buffer>& buffers, error_code& ec) override {
    for (const asio::const_buffer& b : buffers) {
      if (b.size() >= kChunk) {
        co_await flush(ec);
        if (ec) co_return;
        co_await asio::async_write(stream_, b, asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return;
        continue;
      }
      const char* p = static_cast<const char*>(b.data());
      size_t left = b.size();
      while (left > 0) {
        const size_t n = std::min(left, kChunk - staging_.size());
        staging_.insert(staging_.end(), p, p + n);
        p += n;
        left -= n;
        if (staging_.size() == kChunk) {
          co_await flush(ec);
          if (ec) co_return;
        }
      }
    }
    co_await flush(ec);
  }

  void close() override { close_socket(stream_.next_layer()); }

  std::string verified_peer_common_name() const override {
    return net::verified_peer_common_name(
        const_cast<asio::ssl::stream<tcp::socket>&>(stream_).native_handle());
  }

 private:
  static constexpr size_t kChunk = 64 * 1024;

  Task<void> flush(error_code& ec) {
    if (staging_.empty()) co_return;
    co_await asio::async_write(stream_, asio::buffer(staging_),
                               asio::redirect_error(asio::use_awaitable, ec));
    staging_.clear();
  }

  std::shared_ptr<TlsContext> context_;  // outlives the SSL object made from it
  asio::ssl::stream<tcp::socket> stream_;
  std::vector<char> staging_;  // used by write() only
};

}  // namespace

Task<void> Stream::wait_ready(bool, boost::system::error_code& ec) {
  ec = make_error_code(boost::system::errc::operation_not_supported);
  co_return;
}

std::unique_ptr<Stream> tcp_stream(tcp::socket socket) {
  return std::make_unique<TcpStream>(std::move(socket));
}

std::string describe_error(const error_code& ec) {
  if (ec == asio::ssl::error::stream_truncated) {
    return "the peer closed the connection in the middle of TLS";
  }
  if (ec == asio::error::eof) return "the peer closed the connection";
  return ec.message();
}

bool is_tls_error(const error_code& ec) {
  return ec.category() == asio::error::get_ssl_category() ||
         ec.category() == asio::ssl::error::get_stream_category();
}

std::unique_ptr<Stream> tls_stream(tcp::socket socket, std::shared_ptr<TlsContext> context) {
  return std::make_unique<TlsStream>(std::move(socket), std::move(context));
}

Task<Status> TlsStream::handshake(std::string host,
                                  std::chrono::steady_clock::time_point deadline) {
  const bool client = context_->role() == TlsRole::kClient;
  const TlsOptions& options = context_->options();
  SSL* ssl = stream_.native_handle();
  if (client && !host.empty()) {
    error_code not_ip;
    (void)asio::ip::make_address(host, not_ip);
    if (not_ip) SSL_set_tlsext_host_name(ssl, host.c_str());  // SNI carries names only
    if (options.validate_hostname && !options.allow_insecure) {
      if (not_ip) {
        SSL_set1_host(ssl, host.c_str());
      } else {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
      }
    }
  }
  // The deadline closes the socket, which ends the handshake. `done` keeps a timer that
  // fired just as the handshake finished from touching the stream afterwards.
  struct Guard {
    bool done = false;
    bool timed_out = false;
  };
  auto guard = std::make_shared<Guard>();
  asio::steady_timer timer(stream_.get_executor());
  timer.expires_at(deadline);
  timer.async_wait([guard, this](error_code ec) {
    if (ec || guard->done) return;
    guard->timed_out = true;
    close();
  });
  error_code ec;
  const auto type = client ? asio::ssl::stream_base::client : asio::ssl::stream_base::server;
  co_await stream_.async_handshake(type, asio::redirect_error(asio::use_awaitable, ec));
  guard->done = true;
  timer.cancel();
  if (guard->timed_out) {
    co_return Status(Errc::kTimeout, "the TLS handshake did not complete in time");
  }
  if (ec) {
    std::string why = describe_error(ec);
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) why += fmt::format(": {}", X509_verify_cert_error_string(verify));
    close();
    co_return Status(Errc::kUnavailable, fmt::format("TLS handshake failed: {}", why));
  }
  co_return Status::OK();
}

}  // namespace magnetar::net
