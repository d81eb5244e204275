#include "net/tls_config.h"

#include "common/config.h"

namespace magnetar::net {

TlsOptions TlsServerConfig::options() const {
  TlsOptions o;
  o.certificate_file = certificate_file_path;
  o.private_key_file = key_file_path;
  o.trust_certs_file = trust_certs_file_path;
  o.require_peer_certificate = require_trusted_client_cert_on_connect;
  o.allow_insecure = allow_insecure_connection;
  o.protocols = protocols;
  o.ciphers = ciphers;
  return o;
}

void bind_tls_server_config(ConfigSchema& s, TlsServerConfig* c, const std::string& who) {
  s.bind("tlsCertificateFilePath", &c->certificate_file_path,
         "The " + who + "'s TLS certificate chain (PEM); needed by the TLS ports");
  s.bind("tlsKeyFilePath", &c->key_file_path,
         "The private key of tlsCertificateFilePath (PEM, unencrypted)");
  s.bind("tlsTrustCertsFilePath", &c->trust_certs_file_path,
         "CAs (PEM) that client certificates must chain to; empty: client certificates are "
         "not asked for");
  s.bind("tlsRequireTrustedClientCertOnConnect", &c->require_trusted_client_cert_on_connect,
         "Refuse TLS clients without a certificate signed by tlsTrustCertsFilePath (mutual TLS)");
  s.bind("tlsAllowInsecureConnection", &c->allow_insecure_connection,
         "Accept client certificates that do not verify");
  s.bind("tlsProtocols", &c->protocols,
         "TLS versions accepted, e.g. TLSv1.3,TLSv1.2; empty: TLSv1.2 and up");
  s.bind("tlsCiphers", &c->ciphers,
         "Cipher suites accepted (OpenSSL or IANA names); empty: OpenSSL's defaults");
  s.bind("tlsHandshakeTimeoutMillis", &c->handshake_timeout_millis,
         "A TLS client that has not completed its handshake by then is dropped")
      .range(1, 600000);
}

}  // namespace magnetar::net
