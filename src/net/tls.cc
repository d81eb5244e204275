#include "net/tls.h"

#include <fmt/format.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <boost/asio/ssl/context.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/asio.h"

namespace magnetar::net {

namespace {

namespace ssl = boost::asio::ssl;

Status invalid(std::string message) {
  return Status(Errc::kInvalidArgument, std::move(message));
}

// OK when `path` can be opened for reading; else why not, naming the file.
Status check_readable(std::string_view what, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return invalid(fmt::format("{} '{}': {}", what, path, std::strerror(errno)));
  std::fclose(f);
  return Status::OK();
}

Result<int> protocol_version(const std::string& name) {
  if (name == "TLSv1" || name == "TLSv1.0") return TLS1_VERSION;
  if (name == "TLSv1.1") return TLS1_1_VERSION;
  if (name == "TLSv1.2") return TLS1_2_VERSION;
  if (name == "TLSv1.3") return TLS1_3_VERSION;
  return invalid(
      fmt::format("unknown TLS protocol '{}' (TLSv1, TLSv1.1, TLSv1.2 or TLSv1.3)", name));
}

bool is_tls13_suite(std::string_view name) {
  for (std::string_view s :
       {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
        "TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256"}) {
    if (name == s) return true;
  }
  return false;
}

std::string join(const std::vector<std::string>& items, char sep) {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += sep;
    out += i;
  }
  return out;
}

// TLS 1.2 ciphers and TLS 1.3 suites are configured apart in OpenSSL; a kind nobody listed
// keeps its defaults. Each name is checked alone so an unknown one is named.
Status set_ciphers(SSL_CTX* ctx, const std::vector<std::string>& names) {
  std::vector<std::string> tls12, tls13;
  for (const std::string& name : names) {
    if (is_tls13_suite(name)) {
      if (SSL_CTX_set_ciphersuites(ctx, name.c_str()) != 1) {
        return invalid(fmt::format("TLS 1.3 cipher suite '{}' is not supported", name));
      }
      tls13.push_back(name);
      continue;
    }
    std::string openssl_name = name;
    if (name.rfind("TLS_", 0) == 0) {  // an IANA name: OpenSSL knows it by another
      const char* mapped = OPENSSL_cipher_name(name.c_str());
      if (mapped == nullptr || std::strcmp(mapped, "(NONE)") == 0) {
        return invalid(fmt::format("unknown cipher '{}'", name));
      }
      openssl_name = mapped;
    }
    if (SSL_CTX_set_cipher_list(ctx, openssl_name.c_str()) != 1) {
      return invalid(fmt::format("unknown or unusable cipher '{}'", name));
    }
    tls12.push_back(openssl_name);
  }
  if (!tls12.empty() && SSL_CTX_set_cipher_list(ctx, join(tls12, ':').c_str()) != 1) {
    return invalid(fmt::format("cannot use the ciphers {}", join(tls12, ',')));
  }
  if (!tls13.empty() && SSL_CTX_set_ciphersuites(ctx, join(tls13, ':').c_str()) != 1) {
    return invalid(fmt::format("cannot use the TLS 1.3 cipher suites {}", join(tls13, ',')));
  }
  return Status::OK();
}

}  // namespace

TlsContext::TlsContext(TlsRole role, TlsOptions options)
    : role_(role),
      options_(std::move(options)),
      ctx_(std::make_unique<ssl::context>(role == TlsRole::kServer ? ssl::context::tls_server
                                                                   : ssl::context::tls_client)) {}

TlsContext::~TlsContext() = default;

Result<std::shared_ptr<TlsContext>> TlsContext::create(TlsRole role, const TlsOptions& options) {
  std::shared_ptr<TlsContext> c(new TlsContext(role, options));
  MAGNETAR_TRY(c->load());
  return c;
}

Status TlsContext::load() {
  const TlsOptions& o = options_;
  const bool server = role_ == TlsRole::kServer;
  SSL_CTX* native = ctx_->native_handle();
  boost::system::error_code ec;
  ctx_->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                        ssl::context::no_sslv3 | ssl::context::no_compression |
                        ssl::context::single_dh_use,
                    ec);

  // Protocol versions: TLS 1.2 and up unless told otherwise.
  int lowest = TLS1_2_VERSION, highest = 0;
  if (!o.protocols.empty()) {
    lowest = TLS1_3_VERSION;
    for (const std::string& name : o.protocols) {
      MAGNETAR_ASSIGN_OR_RETURN(const int v, protocol_version(name));
      lowest = std::min(lowest, v);
      highest = std::max(highest, v);
    }
  }
  SSL_CTX_set_min_proto_version(native, lowest);
  if (highest != 0) SSL_CTX_set_max_proto_version(native, highest);
  MAGNETAR_TRY(set_ciphers(native, o.ciphers));

  // Our own certificate and key.
  if (server && (o.certificate_file.empty() || o.private_key_file.empty())) {
    return invalid("a TLS server needs a certificate file and a private key file");
  }
  if (o.certificate_file.empty() != o.private_key_file.empty()) {
    return invalid(fmt::format(
        "a TLS certificate needs its private key and the other way round (certificate '{}', "
        "private key '{}')",
        o.certificate_file, o.private_key_file));
  }
  if (!o.certificate_file.empty()) {
    MAGNETAR_TRY(check_readable("certificate file", o.certificate_file));
    MAGNETAR_TRY(check_readable("private key file", o.private_key_file));
    ctx_->use_certificate_chain_file(o.certificate_file, ec);
    if (ec) {
      return invalid(fmt::format("certificate file '{}' holds no usable PEM certificate: {}",
                                 o.certificate_file, ec.message()));
    }
    ctx_->use_private_key_file(o.private_key_file, ssl::context::pem, ec);
    if (ec && ec.message().find("mismatch") != std::string::npos) {
      return invalid(fmt::format("private key file '{}' does not match certificate file '{}'",
                                 o.private_key_file, o.certificate_file));
    }
    if (ec) {
      return invalid(fmt::format("private key file '{}' holds no usable PEM key: {}",
                                 o.private_key_file, ec.message()));
    }
    if (SSL_CTX_check_private_key(native) != 1) {
      return invalid(fmt::format("private key file '{}' does not match certificate file '{}'",
                                 o.private_key_file, o.certificate_file));
    }
  }

  // Whom we trust.
  if (!o.trust_certs_file.empty()) {
    MAGNETAR_TRY(check_readable("trusted certificates file", o.trust_certs_file));
    ctx_->load_verify_file(o.trust_certs_file, ec);
    if (ec) {
      return invalid(
          fmt::format("trusted certificates file '{}' holds no usable PEM "
                      "certificate: {}",
                      o.trust_certs_file, ec.message()));
    }
  } else if (!server) {
    ctx_->set_default_verify_paths(ec);  // the system's CAs; none found is not an error here
  }

  if (!server) {
    ctx_->set_verify_mode(o.allow_insecure ? ssl::verify_none : ssl::verify_peer, ec);
    return Status::OK();
  }
  // Server: whether to ask for client certificates, and whether one is required.
  if (o.require_peer_certificate && o.trust_certs_file.empty() && !o.allow_insecure) {
    return invalid(
        "requiring trusted client certificates needs a trusted certificates file to check "
        "them against");
  }
  ssl::verify_mode mode = ssl::verify_none;
  if (o.require_peer_certificate) {
    mode = ssl::verify_peer | ssl::verify_fail_if_no_peer_cert;
  } else if (!o.trust_certs_file.empty()) {
    mode = ssl::verify_peer;  // optional: a client may present none
  }
  ctx_->set_verify_mode(mode, ec);
  if (mode != ssl::verify_none && o.allow_insecure) {
    ctx_->set_verify_callback([](bool, ssl::verify_context&) { return true; }, ec);
  }
  if (!o.trust_certs_file.empty()) {
    // Tells clients which CAs we accept, so they pick the right certificate.
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(o.trust_certs_file.c_str())) {
      SSL_CTX_set_client_CA_list(native, names);
    }
  }
  // Needed once client certificates are verified, or resumed sessions fail.
  static constexpr unsigned char kSessionContext[] = "magnetar";
  SSL_CTX_set_session_id_context(native, kSessionContext, sizeof(kSessionContext) - 1);
  return Status::OK();
}

std::string verified_peer_common_name(void* handle) {
  SSL* ssl = static_cast<SSL*>(handle);
  X509* peer = ssl != nullptr ? SSL_get0_peer_certificate(ssl) : nullptr;
  if (peer == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return "";
  const X509_NAME* subject = X509_get_subject_name(peer);
  // RFC 2253 order lists the last RDN first: the first CN there is the last one here.
  int last = -1;
  for (int at = -1; (at = X509_NAME_get_index_by_NID(subject, NID_commonName, at)) >= 0;) {
    last = at;
  }
  if (last < 0) return "";
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, last));
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n <= 0) return "";
  std::string cn(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  return cn;
}

}  // namespace magnetar::net
