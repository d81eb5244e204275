// The client's credentials: AuthToken's forms and Pulsar's parameter strings, CONNECT against
// a broker with token authentication, HTTP lookups with the Bearer header, and the answer to
// the broker's refresh challenge once a token expires.

#include "magnetar/authentication.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "broker/service/metrics.h"
#include "client_test_support.h"

namespace magnetar::client::test {
namespace {

TEST(AuthTokenTest, PulsarsParameterFormsAndTheirErrors) {
  auto get = [](std::string_view params) -> std::string {
    auto a = AuthToken::from_params(params);
    if (!a.ok()) return "error: " + a.status().message();
    auto c = (*a)->credentials();
    return c.ok() ? *c : "error: " + c.status().message();
  };
  EXPECT_EQ(get("token:abc.def.ghi"), "abc.def.ghi");
  EXPECT_EQ(get("abc.def.ghi"), "abc.def.ghi");
  EXPECT_EQ(get(R"({"token":"abc.def.ghi"})"), "abc.def.ghi");
  const auto file = std::filesystem::temp_directory_path() / "magnetar-auth-token-test.txt";
  {
    std::ofstream out(file);
    out << "from.the.file\n";  // as `tokens create > file` leaves it
  }
  EXPECT_EQ(get("file://" + file.string()), "from.the.file");
  EXPECT_EQ(get(R"({"file":")" + file.string() + R"("})"), "from.the.file");
  // Re-read on every use.
  auto from_file = AuthToken::from_file(file.string());
  {
    std::ofstream out(file);
    out << "rotated.token.value";
  }
  EXPECT_EQ(*from_file->credentials(), "rotated.token.value");
  std::filesystem::remove(file);
  EXPECT_FALSE(from_file->credentials().ok());
  ::setenv("MAGNETAR_AUTH_TEST_TOKEN", "from.the.env", 1);
  EXPECT_EQ(get("env:MAGNETAR_AUTH_TEST_TOKEN"), "from.the.env");
  EXPECT_NE(get("env:MAGNETAR_NO_SUCH_VARIABLE").find("error"), std::string::npos);
  EXPECT_NE(get("").find("error"), std::string::npos);
  EXPECT_NE(get("{not json").find("error"), std::string::npos);
  EXPECT_NE(get(R"({"other":1})").find("error"), std::string::npos);
  // Errors never carry the token.
  EXPECT_EQ(get("token:").find("secret"), std::string::npos);

  EXPECT_TRUE(create_authentication("", "").ok());
  EXPECT_FALSE(*create_authentication("", ""));
  EXPECT_TRUE(
      create_authentication("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:x.y.z")
          .ok());
  EXPECT_TRUE(create_authentication("TOKEN", "x.y.z").ok());
  auto tls = create_authentication("org.apache.pulsar.client.impl.auth.AuthenticationSasl", "");
  ASSERT_FALSE(tls.ok());
  EXPECT_TRUE(tls.status().is(Errc::kNotSupported));
  auto headers = (*create_authentication("token", "x.y.z"))->http_headers();
  ASSERT_TRUE(headers.ok());
  EXPECT_EQ(headers->at("Authorization"), "Bearer x.y.z");
}

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class TokenClientTest : public ClientTest {
 protected:
  TokenClientTest() {
    broker_->stop();
    start_broker([this](broker::BrokerConfig& c) {
      c.authentication.enabled = true;
      c.authentication.providers = {
          "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"};
      c.authentication.token.secret_key = "data:;base64," + auth::base64_encode(secret_);
      c.authentication_refresh_check_seconds = 1;
    });
  }
  std::string token(const std::string& role, std::optional<int64_t> exp = std::nullopt) const {
    nlohmann::ordered_json claims = {{"sub", role}};
    if (exp) claims["exp"] = *exp;
    return *auth::encode_jwt(claims, *auth::TokenKey::secret(secret_), auth::Algorithm::kHS256);
  }
  Result<Client> client_with(std::shared_ptr<Authentication> a, const std::string& service) {
    ClientOptions o = fast_options();
    o.operation_timeout = 5s;
    o.authentication = std::move(a);
    return Client::create(service, o);
  }
  std::string secret_ = auth::generate_secret(auth::Algorithm::kHS256);
};

TEST_F(TokenClientTest, AValidTokenConnectsOverBothLookupsAndNoneOrABadOneDoesNot) {
  const std::string http = serve_http();
  for (const std::string& service : {url(), http}) {
    auto good = client_with(AuthToken::create(token("app")), service);
    ASSERT_TRUE(good.ok());
    auto p = good->create_producer(topic());
    ASSERT_TRUE(p.ok()) << service << ": " << p.status().to_string();
    EXPECT_TRUE(p->send(Message("m")).ok());
    (void)good->close();
  }
  auto none = client_with(nullptr, url());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->create_producer(topic()).ok());
  (void)none->close();
  auto missing = client_with(AuthToken::from_file("/nonexistent/token"), url());
  ASSERT_TRUE(missing.ok());
  auto refused = missing->create_producer(topic());
  ASSERT_FALSE(refused.ok());
  (void)missing->close();
}

TEST_F(TokenClientTest, ExpiringTokensAreRefreshedFromTheSupplierWithoutDroppingTheProducer) {
  std::atomic<int> asked{0};
  auto supplier = [this, &asked] {
    ++asked;
    return token("app", now_seconds() + 2);  // expires two seconds after each ask
  };
  auto c = client_with(AuthToken::from_supplier(supplier), url());
  ASSERT_TRUE(c.ok());
  auto p = c->create_producer(topic());
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  // Several refresh rounds: the broker challenges, the client answers with a fresh token, and
  // the connection stays (a client that cannot refresh is closed and reconnects: counted by
  // pulsar_connection_created_total_count).
  auto created = broker::connection_counters(broker_->config().cluster_name).created;
  const double before = created->value();
  for (int i = 0; i < 6; ++i) {
    std::this_thread::sleep_for(1s);
    ASSERT_TRUE(p->send(Message("m" + std::to_string(i))).ok()) << i;
  }
  EXPECT_EQ(created->value(), before) << "the connection was replaced instead of refreshed";
  EXPECT_GE(asked.load(), 3) << "the supplier was asked again at each challenge";
  (void)c->close();
}

}  // namespace
}  // namespace magnetar::client::test
