// TLS contexts and streams over loopback: what a bad configuration says, handshakes that
// succeed or fail for the right reason, the handshake deadline, and bytes intact both ways.

#include "net/tls.h"

#include <gtest/gtest.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fstream>

#include "net/stream.h"
#include "testing/tls_suite.h"

namespace magnetar::net {
namespace {

using namespace std::chrono_literals;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

class TlsTest : public ::testing::Test, protected testing::TlsSuiteCerts {
 protected:
  static void SetUpTestSuite() {
    make_suite_certs("net-tls");
  }
  static void TearDownTestSuite() {
    remove_suite_certs();
  }

  static TlsOptions server_options() {
    TlsOptions o;
    o.certificate_file = certs_->server_cert;
    o.private_key_file = certs_->server_key;
    return o;
  }
  static TlsOptions client_options() {
    TlsOptions o;
    o.trust_certs_file = certs_->ca_cert;
    return o;
  }
  static std::shared_ptr<TlsContext> context(TlsRole role, const TlsOptions& o) {
    auto c = TlsContext::create(role, o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? *c : nullptr;
  }

  struct Outcome {
    Status server;
    Status client;
    std::string received;  // by the server, once both handshakes succeeded
  };

  // A server and a client handshake on loopback; when both succeed the client sends
  // `payload` (as many small buffers and one large one) and the server reads it all.
  static Outcome handshake(std::shared_ptr<TlsContext> server_ctx,
                           std::shared_ptr<TlsContext> client_ctx, std::string host,
                           std::string payload = "hello") {
    return run_sync<Outcome>([=]() -> Task<Outcome> {
      auto ex = co_await asio::this_coro::executor;
      tcp::acceptor acceptor(ex, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
      Outcome out;
      bool server_done = false;
      asio::steady_timer server_finished(ex);
      server_finished.expires_at(asio::steady_timer::time_point::max());
      auto serve = [&]() -> Task<void> {
        boost::system::error_code ec;
        tcp::socket s(ex);
        co_await acceptor.async_accept(s, asio::redirect_error(asio::use_awaitable, ec));
        auto server = tls_stream(std::move(s), server_ctx);
        out.server = co_await server->handshake("", Clock::now() + 5s);
        if (out.server.ok()) {
          std::vector<char> buf(64 * 1024);
          while (out.received.size() < payload.size()) {
            const size_t n = co_await server->read_some(asio::buffer(buf), ec);
            if (ec) break;
            out.received.append(buf.data(), n);
          }
        }
        server_done = true;
        server_finished.cancel();
      };
      asio::co_spawn(ex, std::move(serve), asio::detached);
      tcp::socket c(ex);
      boost::system::error_code ec;
      co_await c.async_connect(acceptor.local_endpoint(),
                               asio::redirect_error(asio::use_awaitable, ec));
      std::unique_ptr<Stream> client_stream = tls_stream(std::move(c), client_ctx);
      out.client = co_await client_stream->handshake(host, Clock::now() + 5s);
      if (out.client.ok()) {
        // Small buffers and a large one: the gathered write must keep them in order.
        std::vector<asio::const_buffer> buffers;
        const size_t small = std::min<size_t>(payload.size(), 1000);
        for (size_t i = 0; i < small; ++i) buffers.emplace_back(payload.data() + i, 1);
        if (payload.size() > small) {
          buffers.emplace_back(payload.data() + small, payload.size() - small);
        }
        co_await client_stream->write(buffers, ec);
        EXPECT_FALSE(ec) << ec.message();
      }
      if (!server_done) {
        co_await server_finished.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      co_return out;
    });
  }

};


bool contains(const Status& st, std::string_view text) {
  return st.message().find(text) != std::string::npos;
}

TEST_F(TlsTest, MissingOrWrongFilesAreNamed) {
  auto o = server_options();
  o.certificate_file = *dir_ + "/nope.pem";
  auto r = TlsContext::create(TlsRole::kServer, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(contains(r.status(), "nope.pem")) << r.status().to_string();
  EXPECT_TRUE(contains(r.status(), "No such file")) << r.status().to_string();

  o = server_options();
  o.private_key_file = certs_->client_key;  // not the server certificate's key
  r = TlsContext::create(TlsRole::kServer, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status(), "does not match")) << r.status().to_string();

  o = server_options();
  o.certificate_file = certs_->server_key;  // a key where a certificate belongs
  r = TlsContext::create(TlsRole::kServer, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status(), certs_->server_key)) << r.status().to_string();

  const std::string garbage = *dir_ + "/garbage.pem";
  std::ofstream(garbage) << "not a certificate\n";
  auto c = client_options();
  c.trust_certs_file = garbage;
  r = TlsContext::create(TlsRole::kClient, c);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status(), "garbage.pem")) << r.status().to_string();

  r = TlsContext::create(TlsRole::kServer, TlsOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status(), "certificate")) << r.status().to_string();
}

TEST_F(TlsTest, ProtocolsAndCiphersAreChecked) {
  auto o = server_options();
  o.protocols = {"TLSv1.2", "SSLv3"};
  auto r = TlsContext::create(TlsRole::kServer, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status(), "SSLv3")) << r.status().to_string();

  o = server_options();
  o.ciphers = {"TLS_NOT_A_CIPHER"};
  r = TlsContext::create(TlsRole::kServer, o);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.status(), "TLS_NOT_A_CIPHER")) << r.status().to_string();

  // IANA and OpenSSL names both work; a TLS 1.2-only server and client agree on one.
  o = server_options();
  o.protocols = {"TLSv1.2"};
  o.ciphers = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
               "TLS_AES_128_GCM_SHA256"};
  auto server = context(TlsRole::kServer, o);
  ASSERT_TRUE(server);
  auto out = handshake(server, context(TlsRole::kClient, client_options()), "127.0.0.1");
  EXPECT_TRUE(out.server.ok()) << out.server.to_string();
  EXPECT_TRUE(out.client.ok()) << out.client.to_string();

  // No protocol in common: both sides fail.
  auto c = client_options();
  c.protocols = {"TLSv1.3"};
  out = handshake(server, context(TlsRole::kClient, c), "127.0.0.1");
  EXPECT_FALSE(out.server.ok());
  EXPECT_FALSE(out.client.ok());
}

TEST_F(TlsTest, BytesArriveIntactThroughGatheredWrites) {
  std::string payload(300 * 1024, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 31 + i / 7);
  auto out = handshake(context(TlsRole::kServer, server_options()),
                       context(TlsRole::kClient, client_options()), "127.0.0.1", payload);
  ASSERT_TRUE(out.server.ok()) << out.server.to_string();
  ASSERT_TRUE(out.client.ok()) << out.client.to_string();
  EXPECT_TRUE(out.received == payload) << out.received.size() << " bytes received";
}

TEST_F(TlsTest, UntrustedServerIsRefusedUnlessInsecure) {
  auto server = context(TlsRole::kServer, server_options());
  auto c = client_options();
  c.trust_certs_file = certs_->other_ca_cert;
  auto out = handshake(server, context(TlsRole::kClient, c), "127.0.0.1");
  ASSERT_FALSE(out.client.ok());
  EXPECT_TRUE(contains(out.client, "certificate verify failed")) << out.client.to_string();
  EXPECT_FALSE(out.server.ok());

  c.allow_insecure = true;
  out = handshake(server, context(TlsRole::kClient, c), "127.0.0.1");
  EXPECT_TRUE(out.client.ok()) << out.client.to_string();
  EXPECT_TRUE(out.server.ok()) << out.server.to_string();
}

TEST_F(TlsTest, HostNameValidation) {
  auto o = server_options();
  o.certificate_file = certs_->wrong_host_cert;
  o.private_key_file = certs_->wrong_host_key;
  auto wrong = context(TlsRole::kServer, o);
  auto right = context(TlsRole::kServer, server_options());
  auto c = client_options();
  auto lenient = context(TlsRole::kClient, c);
  c.validate_hostname = true;
  auto strict = context(TlsRole::kClient, c);

  EXPECT_TRUE(handshake(wrong, lenient, "127.0.0.1").client.ok());
  auto out = handshake(wrong, strict, "127.0.0.1");
  ASSERT_FALSE(out.client.ok());
  EXPECT_TRUE(contains(out.client, "IP address mismatch")) << out.client.to_string();
  out = handshake(wrong, strict, "localhost");
  ASSERT_FALSE(out.client.ok());
  EXPECT_TRUE(contains(out.client, "hostname mismatch")) << out.client.to_string();
  EXPECT_TRUE(handshake(right, strict, "127.0.0.1").client.ok());
  EXPECT_TRUE(handshake(right, strict, "localhost").client.ok());
}

TEST_F(TlsTest, ClientCertificates) {
  auto o = server_options();
  o.trust_certs_file = certs_->ca_cert;
  o.require_peer_certificate = true;
  auto server = context(TlsRole::kServer, o);

  // No certificate: refused by the server (TLS 1.3: the client may only learn on reading).
  auto out = handshake(server, context(TlsRole::kClient, client_options()), "127.0.0.1");
  EXPECT_FALSE(out.server.ok());
  EXPECT_TRUE(out.received.empty());

  auto c = client_options();
  c.certificate_file = certs_->untrusted_client_cert;
  c.private_key_file = certs_->untrusted_client_key;
  out = handshake(server, context(TlsRole::kClient, c), "127.0.0.1");
  ASSERT_FALSE(out.server.ok());
  EXPECT_TRUE(contains(out.server, "certificate verify failed")) << out.server.to_string();

  c.certificate_file = certs_->client_cert;
  c.private_key_file = certs_->client_key;
  out = handshake(server, context(TlsRole::kClient, c), "127.0.0.1");
  EXPECT_TRUE(out.server.ok()) << out.server.to_string();
  EXPECT_TRUE(out.client.ok()) << out.client.to_string();
  EXPECT_EQ(out.received, "hello");

  // Requiring a certificate without anything to check it against is a configuration error.
  o.trust_certs_file.clear();
  auto r = TlsContext::create(TlsRole::kServer, o);
  EXPECT_FALSE(r.ok());
}

TEST_F(TlsTest, HandshakeHasADeadline) {
  auto server = context(TlsRole::kServer, server_options());
  auto r = run_sync<Status>([server]() -> Task<Status> {
    auto ex = co_await asio::this_coro::executor;
    tcp::acceptor acceptor(ex, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket silent(ex);  // connects, then says nothing
    boost::system::error_code ec;
    co_await silent.async_connect(acceptor.local_endpoint(),
                                  asio::redirect_error(asio::use_awaitable, ec));
    tcp::socket s(ex);
    co_await acceptor.async_accept(s, asio::redirect_error(asio::use_awaitable, ec));
    const auto start = Clock::now();
    auto stream = tls_stream(std::move(s), server);
    Status hs = co_await stream->handshake("", Clock::now() + 300ms);
    EXPECT_LT(Clock::now() - start, 3s);
    co_return hs;
  });
  EXPECT_TRUE(r.is(Errc::kTimeout)) << r.to_string();
}

TEST_F(TlsTest, PlainTextOnATlsServerFailsTheHandshake) {
  auto server = context(TlsRole::kServer, server_options());
  auto r = run_sync<Status>([server]() -> Task<Status> {
    auto ex = co_await asio::this_coro::executor;
    tcp::acceptor acceptor(ex, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    tcp::socket plain(ex);
    boost::system::error_code ec;
    co_await plain.async_connect(acceptor.local_endpoint(),
                                 asio::redirect_error(asio::use_awaitable, ec));
    const std::string junk(200, 'x');
    co_await asio::async_write(plain, asio::buffer(junk),
                               asio::redirect_error(asio::use_awaitable, ec));
    tcp::socket s(ex);
    co_await acceptor.async_accept(s, asio::redirect_error(asio::use_awaitable, ec));
    auto stream = tls_stream(std::move(s), server);
    co_return co_await stream->handshake("", Clock::now() + 5s);
  });
  EXPECT_TRUE(r.is(Errc::kUnavailable)) << r.to_string();
  EXPECT_TRUE(contains(r, "TLS handshake failed")) << r.to_string();
}

}  // namespace
}  // namespace magnetar::net
