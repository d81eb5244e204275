#pragma once
// TLS settings and contexts (OpenSSL through Boost.Asio) shared by the broker's Pulsar and
// HTTP ports and the client library.
//
// A TlsContext holds the loaded certificate chain, private key and trusted CAs; it is
// created once (at startup, or when a Client is made) and shared by every stream of that
// listener or client. Creation reads the PEM files and fails with a message naming the file
// that is missing, unreadable or not what it should be. Immutable after creation, so it may
// be used from every event loop at once.

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace boost::asio::ssl {
class context;
}

namespace magnetar::net {

struct TlsOptions {
  // Our certificate chain and its private key (PEM). A server needs both; a client sends
  // them when given (mutual TLS).
  std::string certificate_file;
  std::string private_key_file;
  // CAs (PEM) the peer's certificate must chain to. Empty: a client uses the system's
  // default CAs; a server requests no client certificate unless require_peer_certificate.
  std::string trust_certs_file;
  // Accept a peer certificate that does not verify (a client then checks nothing at all).
  bool allow_insecure = false;
  // Server: refuse a client that presents no trusted certificate (mutual TLS).
  bool require_peer_certificate = false;
  // Client: the server's certificate must name the host connected to (SAN DNS or IP).
  bool validate_hostname = false;
  // "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"; the lowest and highest listed bound the
  // versions offered. Empty: OpenSSL's defaults.
  std::vector<std::string> protocols;
  // Cipher suites, by OpenSSL or IANA name ("ECDHE-RSA-AES128-GCM-SHA256",
  // "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"). Empty: defaults.
  std::vector<std::string> ciphers;
};

enum class TlsRole { kServer, kClient };

class TlsContext {
 public:
  // Errors (Errc::kInvalidArgument): a file missing or unreadable, a file that is not the
  // PEM it should be, a key that does not match the certificate, an unknown protocol or
  // cipher, a server without certificate or key.
  static Result<std::shared_ptr<TlsContext>> create(TlsRole role, const TlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  TlsRole role() const { return role_; }
  const TlsOptions& options() const { return options_; }
  boost::asio::ssl::context& native() { return *ctx_; }

 private:
  TlsContext(TlsRole role, TlsOptions options);
  Status load();

  const TlsRole role_;
  const TlsOptions options_;
  std::unique_ptr<boost::asio::ssl::context> ctx_;
};

// The verified peer certificate's role for certificate authentication (Pulsar's
// AuthenticationProviderTls): the first CN of its subject in RFC 2253 order (the most
// specific RDN first); "" without a certificate, or when it did not verify against the
// trusted CAs (allow_insecure's accept-anything included). `ssl` is a connection after its
// handshake (SSL* of OpenSSL).
std::string verified_peer_common_name(void* ssl);

}  // namespace magnetar::net
