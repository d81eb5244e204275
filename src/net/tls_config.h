#pragma once
// The TLS keys of a server's listeners, with Pulsar's names: broker.conf and proxy.conf share
// them (tlsCertificateFilePath, tlsKeyFilePath, tlsTrustCertsFilePath,
// tlsRequireTrustedClientCertOnConnect, tlsAllowInsecureConnection, tlsProtocols, tlsCiphers,
// and our tlsHandshakeTimeoutMillis).

#include <cstdint>
#include <string>
#include <vector>

#include "net/tls.h"

namespace magnetar {
class ConfigSchema;
}

namespace magnetar::net {

struct TlsServerConfig {
  std::string certificate_file_path;  // tlsCertificateFilePath (PEM chain)
  std::string key_file_path;          // tlsKeyFilePath (PEM)
  std::string trust_certs_file_path;  // tlsTrustCertsFilePath (CAs of clients)
  bool require_trusted_client_cert_on_connect = false;  // ...ClientCertOnConnect (mutual TLS)
  bool allow_insecure_connection = false;  // tlsAllowInsecureConnection: any client certificate
  std::vector<std::string> protocols;      // tlsProtocols, e.g. TLSv1.3,TLSv1.2
  std::vector<std::string> ciphers;        // tlsCiphers (OpenSSL or IANA names)
  int32_t handshake_timeout_millis = 10000;  // tlsHandshakeTimeoutMillis (Magnetar's own)

  // The options of a server context (TlsRole::kServer) from these keys.
  TlsOptions options() const;
};

// Declares the keys above, bound to `config` (which must outlive `schema`); `who` names the
// server in the keys' descriptions ("broker", "proxy").
void bind_tls_server_config(ConfigSchema& schema, TlsServerConfig* config, const std::string& who);

}  // namespace magnetar::net
