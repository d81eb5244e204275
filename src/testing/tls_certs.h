#pragma once
// Certificates for TLS tests, made at test time with OpenSSL (no key material is kept in the
// repository): a CA, a server certificate and a client certificate it signs, and a second,
// unrelated CA with a client certificate of its own, for "not trusted" cases. EC P-256 keys,
// valid from an hour ago for a day.

#include <string>

#include "common/status.h"

namespace magnetar::testing {

struct TestCerts {
  std::string ca_cert;  // PEM files under the directory given
  // CN=localhost; subjectAltName IP:127.0.0.1, DNS:localhost. Signed by the CA.
  std::string server_cert, server_key;
  // Signed by the CA, for a host name nobody connects to (DNS:wrong-host.invalid only).
  std::string wrong_host_cert, wrong_host_key;
  // CN=magnetar-test-client, signed by the CA (mutual TLS).
  std::string client_cert, client_key;
  // Another CA, and a client certificate it signs: trusted by nobody above.
  std::string other_ca_cert;
  std::string untrusted_client_cert, untrusted_client_key;
};

// Creates `dir` (and parents) and writes the files there.
Result<TestCerts> make_test_certs(const std::string& dir);

}  // namespace magnetar::testing
