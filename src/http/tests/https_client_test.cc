// The HTTP client over TLS against our own HttpServer's HTTPS listener: trusted and untrusted
// certificates, host name validation, client certificates, bad TLS files, plain text on a
// TLS port, and redirects between http:// and https://.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "http/http_client.h"
#include "http/http_server.h"
#include "net/tls.h"
#include "testing/tls_suite.h"

namespace magnetar::http {
namespace {

// Answers "<scheme seen by the server> <authorization>".
Handler whoami(std::string scheme) {
  return [scheme](const Request& req) -> Task<Response> {
    auto it = req.headers.find("authorization");
    Response r;
    r.body = scheme + " " + (it == req.headers.end() ? std::string("-") : it->second);
    co_return r;
  };
}

class HttpsClientTest : public ::testing::Test, protected testing::TlsSuiteCerts {
 protected:
  static void SetUpTestSuite() {
    make_suite_certs("https-client");
  }
  static void TearDownTestSuite() {
    remove_suite_certs();
  }

  void SetUp() override { server_ = start(false); }

  // A server with an HTTPS listener (and mutual TLS when `require_client_cert`), its
  // certificate for another host when `wrong_host`.
  std::unique_ptr<HttpServer> start(bool require_client_cert, bool wrong_host = false) {
    net::TlsOptions t;
    t.certificate_file = wrong_host ? certs_->wrong_host_cert : certs_->server_cert;
    t.private_key_file = wrong_host ? certs_->wrong_host_key : certs_->server_key;
    if (require_client_cert) {
      t.trust_certs_file = certs_->ca_cert;
      t.require_peer_certificate = true;
    }
    auto tls = net::TlsContext::create(net::TlsRole::kServer, t);
    EXPECT_TRUE(tls.ok()) << tls.status().to_string();
    ServerOptions o;
    o.port = 0;
    o.tls = *tls;
    auto s = HttpServer::start(o, log::Logger("https-client-test"));
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return nullptr;
    (*s)->route("GET", "/who", whoami("plain"));
    return std::move(s).value();
  }

  std::string https(const std::string& host = "127.0.0.1") const {
    return "https://" + host + ":" + std::to_string(server_->tls_port());
  }
  std::string http() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  static ClientOptions trusting() {
    ClientOptions o;
    o.tls_trust_certs_file_path = certs_->ca_cert;
    o.timeout = std::chrono::milliseconds(10'000);
    return o;
  }

  static HttpRequest get(std::string url) {
    HttpRequest r;
    r.url = std::move(url);
    return r;
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpsClientTest, GetsOverHttpsWithATrustedCertificate) {
  ClientOptions o = trusting();
  o.tls_validate_hostname = true;
  HttpClient client(o);
  for (const char* host : {"127.0.0.1", "localhost"}) {
    auto r = client.send_blocking(get(https(host) + "/who"));
    ASSERT_TRUE(r.ok()) << host << ": " << r.status().to_string();
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "plain -");
  }
  // The same client still speaks plain HTTP.
  auto plain = client.send_blocking(get(http() + "/who"));
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_EQ(plain->status, 200);
}

TEST_F(HttpsClientTest, AnUntrustedCertificateFailsTheHandshakeNamingWhy) {
  HttpClient client;  // the system's CAs, which did not sign our test CA
  auto r = client.send_blocking(get(https() + "/who"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kTlsHandshakeFailed);
  EXPECT_NE(r.status().message().find("certificate verify failed"), std::string::npos)
      << r.status().message();

  ClientOptions insecure;
  insecure.tls_allow_insecure_connection = true;
  auto ok = HttpClient(insecure).send_blocking(get(https() + "/who"));
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->status, 200);
}

TEST_F(HttpsClientTest, HostNameValidationRefusesACertificateForAnotherName) {
  server_ = start(false, true);  // a certificate for wrong-host.invalid, from our CA
  ASSERT_TRUE(server_);
  ClientOptions o = trusting();
  auto unchecked = HttpClient(o).send_blocking(get(https() + "/who"));
  ASSERT_TRUE(unchecked.ok()) << unchecked.status().to_string();
  o.tls_validate_hostname = true;
  auto r = HttpClient(o).send_blocking(get(https() + "/who"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ClientError::kTlsHandshakeFailed);
  EXPECT_NE(r.status().message().find("IP address mismatch"), std::string::npos)
      << r.status().message();
}

TEST_F(HttpsClientTest, BadTlsFilesAndPlainTextPortsAreClearErrors) {
  ClientOptions o;
  o.tls_trust_certs_file_path = *dir_ + "/missing.pem";
  auto bad = HttpClient(o).send_blocking(get(https() + "/who"));
  EXPECT_EQ(bad.status().code(), ClientError::kTlsConfiguration);
  EXPECT_NE(bad.status().message().find("missing.pem"), std::string::npos)
      << bad.status().message();

  auto plain_port =
      HttpClient(trusting())
          .send_blocking(get("https://127.0.0.1:" + std::to_string(server_->port()) + "/who"));
  EXPECT_EQ(plain_port.status().code(), ClientError::kTlsHandshakeFailed)
      << plain_port.status().to_string();
}

TEST_F(HttpsClientTest, SendsAClientCertificateWhenTheServerRequiresOne) {
  server_ = start(true);
  ASSERT_TRUE(server_);
  ClientOptions o = trusting();
  o.tls_certificate_file_path = certs_->client_cert;
  o.tls_private_key_file_path = certs_->client_key;
  auto r = HttpClient(o).send_blocking(get(https() + "/who"));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->status, 200);

  auto without = HttpClient(trusting()).send_blocking(get(https() + "/who"));
  EXPECT_FALSE(without.ok());
}

TEST_F(HttpsClientTest, FollowsRedirectsBetweenHttpAndHttpsDroppingAuthOnDowngrade) {
  const std::string secure_target = https() + "/who";
  const std::string plain_target = http() + "/who";
  server_->route("GET", "/to-https", [secure_target](const Request&) -> Task<Response> {
    Response r;
    r.status = 307;
    r.headers["Location"] = secure_target;
    co_return r;
  });
  server_->route("GET", "/to-http", [plain_target](const Request&) -> Task<Response> {
    Response r;
    r.status = 302;
    r.headers["Location"] = plain_target;
    co_return r;
  });
  ClientOptions o = trusting();
  o.default_headers["Authorization"] = "Bearer secret";
  HttpClient client(o);

  auto up = client.send_blocking(get(http() + "/to-https"));
  ASSERT_TRUE(up.ok()) << up.status().to_string();
  EXPECT_EQ(up->status, 200);
  EXPECT_EQ(up->url, secure_target);
  EXPECT_EQ(up->body, "plain Bearer secret");

  auto down = client.send_blocking(get(https() + "/to-http"));
  ASSERT_TRUE(down.ok()) << down.status().to_string();
  EXPECT_EQ(down->status, 200);
  EXPECT_EQ(down->url, plain_target);
  EXPECT_EQ(down->body, "plain -");
}

}  // namespace
}  // namespace magnetar::http
