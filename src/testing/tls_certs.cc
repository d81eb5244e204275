#include "testing/tls_certs.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace magnetar::testing {

namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;

Status failed(std::string what) {
  return Status(Errc::kInternal, "test certificates: " + what);
}

Key new_key() {
  return Key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
}

Status add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, Free> ext(
      X509V3_EXT_conf_nid(nullptr, &ctx, nid, const_cast<char*>(value)));
  if (!ext || X509_add_ext(cert, ext.get(), -1) != 1) {
    return failed(fmt::format("extension {} = {}", OBJ_nid2sn(nid), value));
  }
  return Status::OK();
}

// A certificate for `key` named `cn`, signed by `issuer_key` (`issuer` null: self-signed).
// `ca`: a CA certificate; else a leaf with `san` (may be empty) for server and client use.
Result<Cert> make_cert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                       bool ca, const char* san, long serial) {
  Cert cert(X509_new());
  if (!cert) return failed("X509_new");
  X509* x = cert.get();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 24 * 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("Magnetar tests"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : x;
  MAGNETAR_TRY(add_extension(x, signer, NID_subject_key_identifier, "hash"));
  if (ca) {
    MAGNETAR_TRY(add_extension(x, signer, NID_basic_constraints, "critical,CA:TRUE"));
    MAGNETAR_TRY(add_extension(x, signer, NID_key_usage, "critical,keyCertSign,cRLSign"));
  } else {
    MAGNETAR_TRY(add_extension(x, signer, NID_authority_key_identifier, "keyid:always"));
    MAGNETAR_TRY(add_extension(x, signer, NID_basic_constraints, "CA:FALSE"));
    MAGNETAR_TRY(add_extension(x, signer, NID_key_usage, "critical,digitalSignature"));
    MAGNETAR_TRY(add_extension(x, signer, NID_ext_key_usage, "serverAuth,clientAuth"));
    if (san && *san) MAGNETAR_TRY(add_extension(x, signer, NID_subject_alt_name, san));
  }
  if (X509_sign(x, issuer_key, EVP_sha256()) == 0) return failed("X509_sign " + cn);
  return cert;
}

Status write_cert(const std::string& path, X509* cert) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return failed("cannot write " + path);
  const bool ok = PEM_write_X509(f, cert) == 1;
  std::fclose(f);
  return ok ? Status::OK() : failed("PEM_write_X509 " + path);
}

Status write_key(const std::string& path, EVP_PKEY* key) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return failed("cannot write " + path);
  const bool ok = PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  return ok ? Status::OK() : failed("PEM_write_PrivateKey " + path);
}

}  // namespace

Result<TestCerts> make_test_certs(const std::string& dir) {
  std::error_code fs_ec;
  std::filesystem::create_directories(dir, fs_ec);
  if (fs_ec) return failed(fmt::format("cannot create {}: {}", dir, fs_ec.message()));
  TestCerts out;
  auto path = [&dir](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  out.ca_cert = path("ca.cert.pem");
  out.server_cert = path("server.cert.pem");
  out.server_key = path("server.key.pem");
  out.wrong_host_cert = path("wrong-host.cert.pem");
  out.wrong_host_key = path("wrong-host.key.pem");
  out.client_cert = path("client.cert.pem");
  out.client_key = path("client.key.pem");
  out.other_ca_cert = path("other-ca.cert.pem");
  out.untrusted_client_cert = path("untrusted-client.cert.pem");
  out.untrusted_client_key = path("untrusted-client.key.pem");

  Key ca_key = new_key(), other_ca_key = new_key(), server_key = new_key(), wrong_key = new_key(),
      client_key = new_key(), untrusted_key = new_key();
  if (!ca_key || !other_ca_key || !server_key || !wrong_key || !client_key || !untrusted_key) {
    return failed("EC key generation");
  }
  MAGNETAR_ASSIGN_OR_RETURN(
      Cert ca, make_cert(ca_key.get(), "Magnetar test CA", nullptr, ca_key.get(), true, "", 1));
  MAGNETAR_ASSIGN_OR_RETURN(Cert other_ca, make_cert(other_ca_key.get(), "Another test CA", nullptr,
                                                     other_ca_key.get(), true, "", 2));
  MAGNETAR_ASSIGN_OR_RETURN(Cert server,
                            make_cert(server_key.get(), "localhost", ca.get(), ca_key.get(), false,
                                      "IP:127.0.0.1,DNS:localhost", 3));
  MAGNETAR_ASSIGN_OR_RETURN(
      Cert wrong, make_cert(wrong_key.get(), "wrong-host.invalid", ca.get(), ca_key.get(), false,
                            "DNS:wrong-host.invalid", 4));
  MAGNETAR_ASSIGN_OR_RETURN(Cert client, make_cert(client_key.get(), "magnetar-test-client",
                                                   ca.get(), ca_key.get(), false, "", 5));
  MAGNETAR_ASSIGN_OR_RETURN(Cert untrusted,
                            make_cert(untrusted_key.get(), "untrusted-client", other_ca.get(),
                                      other_ca_key.get(), false, "", 6));
  MAGNETAR_TRY(write_cert(out.ca_cert, ca.get()));
  MAGNETAR_TRY(write_cert(out.other_ca_cert, other_ca.get()));
  MAGNETAR_TRY(write_cert(out.server_cert, server.get()));
  MAGNETAR_TRY(write_key(out.server_key, server_key.get()));
  MAGNETAR_TRY(write_cert(out.wrong_host_cert, wrong.get()));
  MAGNETAR_TRY(write_key(out.wrong_host_key, wrong_key.get()));
  MAGNETAR_TRY(write_cert(out.client_cert, client.get()));
  MAGNETAR_TRY(write_key(out.client_key, client_key.get()));
  MAGNETAR_TRY(write_cert(out.untrusted_client_cert, untrusted.get()));
  MAGNETAR_TRY(write_key(out.untrusted_client_key, untrusted_key.get()));
  return out;
}

}  // namespace magnetar::testing
