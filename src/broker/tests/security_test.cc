// The broker's security on the binary protocol: token authentication of CONNECT, the refresh
// of expired credentials (AUTH_CHALLENGE / AUTH_RESPONSE), and authorization of the commands
// that name a topic or namespace. A broker and a bookie in this process over a memory: store,
// driven frame by frame (testing/pulsar_test_client.h).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "broker/broker.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/pulsar_test_client.h"
#include "testing/test_name.h"
#include "testing/eventually.h"

namespace magnetar::broker {
namespace {

using namespace std::chrono_literals;
using ledger::test::Cluster;
using testing::PulsarTestClient;
using testing::server_error_of;

using magnetar::testing::test_name;

int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A secret, tokens signed with it, and the broker settings that accept them.
struct TokenKeys {
  std::string secret = auth::generate_secret(auth::Algorithm::kHS256);
  std::string token(const nlohmann::ordered_json& claims) const {
    return *auth::encode_jwt(claims, *auth::TokenKey::secret(secret), auth::Algorithm::kHS256);
  }
  std::string token_for(const std::string& role) const { return token({{"sub", role}}); }
  void configure(BrokerConfig& c) const {
    c.authentication.enabled = true;
    c.authentication.providers = {
        "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"};
    c.authentication.token.secret_key = "data:;base64," + auth::base64_encode(secret);
  }
};

class SecurityTest : public ::testing::Test {
 protected:
  SecurityTest() : cluster_(test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
    put("/admin/policies/public", R"({"adminRoles":["public-admin"],"allowedClusters":[]})");
    put("/admin/policies/public/default", "{}");
    put("/admin/policies/other", R"({"adminRoles":["other-admin"],"allowedClusters":[]})");
    put("/admin/policies/other/ns", "{}");
  }
  ~SecurityTest() override {
    if (broker_) broker_->stop();
  }

  void put(const std::string& path, const std::string& value) {
    auto made = cluster_.await(store_->put_recursive(path, value));
    ASSERT_TRUE(made.ok()) << made.status().to_string();
  }

  void start_broker(const std::function<void(BrokerConfig&)>& tweak) {
    if (broker_) broker_->stop();
    broker_.reset();
    BrokerConfig c;
    c.broker_service_port = 0;
    c.bind_address = "127.0.0.1";
    c.num_io_threads = 2;
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    c.managed_ledger_factory.cache_size_mb = 16;
    keys_.configure(c);
    if (tweak) tweak(c);
    auto b = Broker::start(c, metadata::MetadataStores{store_, store_});
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    broker_ = std::move(b).value();
  }

  Result<std::unique_ptr<PulsarTestClient>> connect_as(std::optional<std::string> method,
                                                       std::string data,
                                                       bool supports_refresh = false) {
    PulsarTestClient::Options o;
    o.port = broker_->port();
    o.auth_method = std::move(method);
    o.auth_data = std::move(data);
    o.supports_auth_refresh = supports_refresh;
    return PulsarTestClient::connect(o);
  }
  std::unique_ptr<PulsarTestClient> client_as(const std::string& role) {
    auto c = connect_as("token", keys_.token_for(role));
    EXPECT_TRUE(c.ok()) << role << ": " << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  TokenKeys keys_;
  std::unique_ptr<Broker> broker_;
};

// --- Authentication of CONNECT --------------------------------------------------------------

TEST_F(SecurityTest, WithTokenAuthenticationOnlyValidTokensConnect) {
  start_broker({});
  auto good = connect_as("token", keys_.token_for("app1"));
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  ASSERT_TRUE((*good)->create_producer("persistent://public/default/authed", 1).ok());
  EXPECT_TRUE((*good)->send_message(1, 0, "hello").ok());

  TokenKeys other;
  // Another algorithm: signed with an RSA key, and the unsigned "alg: none" form.
  auto pair = auth::generate_key_pair(auth::Algorithm::kRS256);
  ASSERT_TRUE(pair.ok());
  const std::string rs256 = *auth::encode_jwt(
      {{"sub", "app1"}}, *auth::TokenKey::private_key(pair->private_der), auth::Algorithm::kRS256);
  const std::string unsigned_token = auth::base64url_encode(R"({"alg":"none"})") + "." +
                                     auth::base64url_encode(R"({"sub":"app1"})") + ".";
  const std::vector<std::pair<std::string, std::optional<std::string>>> refused = {
      {"no credentials", std::nullopt},
      {"another key's token", other.token_for("app1")},
      {"RS256 against an HMAC key", rs256},
      {"alg none", unsigned_token},
      {"expired", keys_.token({{"sub", "app1"}, {"exp", 1000}})},
      {"no sub", keys_.token({{"iss", "x"}})},
      {"garbage", std::string("\x00\xff garbage", 10)},
      {"1 MiB", keys_.token({{"sub", std::string(1 << 20, 'x')}})},
  };
  for (const auto& [what, data] : refused) {
    auto c =
        connect_as(data ? std::optional<std::string>("token") : std::nullopt, data.value_or(""));
    ASSERT_FALSE(c.ok()) << what;
    EXPECT_TRUE(c.status().is(Errc::kUnauthenticated)) << what << ": " << c.status().to_string();
    EXPECT_NE(c.status().message().find("Failed to authenticate"), std::string::npos) << what;
  }
  // The broker kept serving the good client and takes new ones.
  EXPECT_TRUE((*good)->send_message(1, 1, "still here").ok());
  EXPECT_TRUE(connect_as("token", keys_.token_for("app2")).ok());
}

TEST_F(SecurityTest, AnonymousRoleAdmitsClientsWithoutCredentialsButNotBadTokens) {
  start_broker([](BrokerConfig& c) { c.authentication.anonymous_role = "anonymous"; });
  EXPECT_TRUE(connect_as(std::nullopt, "").ok());
  EXPECT_TRUE(connect_as("none", "").ok());
  auto bad = connect_as("token", "not-a-token");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().is(Errc::kUnauthenticated));
}

TEST_F(SecurityTest, AuthenticationSettingsThatCannotWorkStopTheStart) {
  BrokerConfig c;
  c.broker_service_port = 0;
  c.bind_address = "127.0.0.1";
  c.authentication.enabled = true;
  c.authentication.providers = {
      "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"};
  auto b = Broker::start(c, metadata::MetadataStores{store_, store_});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("No secret key was provided for token authentication"),
            std::string::npos)
      << b.status().to_string();
  c.authentication.providers = {
      "org.apache.pulsar.broker.authentication.AuthenticationProviderKerberos"};
  b = Broker::start(c, metadata::MetadataStores{store_, store_});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("AuthenticationProviderKerberos is not supported"),
            std::string::npos)
      << b.status().to_string();
  c.authentication.providers.clear();
  b = Broker::start(c, metadata::MetadataStores{store_, store_});
  EXPECT_FALSE(b.ok()) << "authentication on with no way in";
}

// --- Refresh of expired credentials ------------------------------------------------------------

// A token that expires more than `seconds` and at most `seconds` + 1 from now. exp counts
// whole seconds and is refused from that second on, so "now + 1" taken late in a second was
// refused at the connect a few milliseconds later (CI saw it: "JWT expired at 1796609854.
// Current time: 1796609854").
std::string expiring(const TokenKeys& keys, const std::string& role, int64_t seconds) {
  return keys.token({{"sub", role}, {"exp", now_seconds() + seconds + 1}});
}

TEST_F(SecurityTest, AnExpiredTokenIsChallengedAndAFreshOneKeepsTheConnection) {
  start_broker([](BrokerConfig& c) { c.authentication_refresh_check_seconds = 1; });
  auto c = connect_as("token", expiring(keys_, "app1", 2), true);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto& cnx = **c;
  ASSERT_TRUE(cnx.create_producer("persistent://public/default/refresh", 1).ok());
  auto challenge = cnx.receive(wire::BaseCommand::AUTH_CHALLENGE, 6s);
  ASSERT_TRUE(challenge.ok()) << challenge.status().to_string();
  EXPECT_EQ(challenge->command.authchallenge().challenge().auth_method_name(), "token");
  EXPECT_EQ(challenge->command.authchallenge().challenge().auth_data(), "PulsarAuthRefresh");

  wire::BaseCommand answer;
  answer.set_type(wire::BaseCommand::AUTH_RESPONSE);
  answer.mutable_authresponse()->set_client_version("magnetar-test");
  answer.mutable_authresponse()->mutable_response()->set_auth_method_name("token");
  answer.mutable_authresponse()->mutable_response()->set_auth_data(keys_.token_for("app1"));
  ASSERT_TRUE(cnx.send(answer).ok());
  // Kept: no ERROR, no close, and no second challenge (the new token does not expire).
  EXPECT_FALSE(cnx.closed_by_peer(2500ms));
  EXPECT_TRUE(cnx.send_message(1, 0, "after the refresh").ok());
  EXPECT_FALSE(cnx.receive(wire::BaseCommand::AUTH_CHALLENGE, 100ms).ok());
}

TEST_F(SecurityTest, AnExpiredTokenIsCutOffWhenTheChallengeFailsOrGoesUnanswered) {
  start_broker([](BrokerConfig& c) { c.authentication_refresh_check_seconds = 1; });
  // Answered with a bad token: AuthenticationError, then closed.
  {
    auto c = connect_as("token", expiring(keys_, "app1", 1), true);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    ASSERT_TRUE((*c)->receive(wire::BaseCommand::AUTH_CHALLENGE, 5s).ok());
    wire::BaseCommand answer;
    answer.set_type(wire::BaseCommand::AUTH_RESPONSE);
    answer.mutable_authresponse()->mutable_response()->set_auth_method_name("token");
    answer.mutable_authresponse()->mutable_response()->set_auth_data("forged.token.value");
    ASSERT_TRUE((*c)->send(answer).ok());
    auto error = (*c)->receive(wire::BaseCommand::ERROR, 3s);
    ASSERT_TRUE(error.ok()) << error.status().to_string();
    EXPECT_EQ(error->command.error().error(), wire::AuthenticationError);
    EXPECT_EQ(error->command.error().message(), "Failed to authenticate");
    EXPECT_TRUE((*c)->closed_by_peer(3s));
  }
  // Answered with another role's token: closed.
  {
    auto c = connect_as("token", expiring(keys_, "app1", 1), true);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->receive(wire::BaseCommand::AUTH_CHALLENGE, 5s).ok());
    wire::BaseCommand answer;
    answer.set_type(wire::BaseCommand::AUTH_RESPONSE);
    answer.mutable_authresponse()->mutable_response()->set_auth_method_name("token");
    answer.mutable_authresponse()->mutable_response()->set_auth_data(keys_.token_for("root"));
    ASSERT_TRUE((*c)->send(answer).ok());
    EXPECT_TRUE((*c)->closed_by_peer(3s));
  }
  // Never answered: closed at the next check.
  {
    auto c = connect_as("token", expiring(keys_, "app1", 1), true);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->receive(wire::BaseCommand::AUTH_CHALLENGE, 5s).ok());
    EXPECT_TRUE((*c)->closed_by_peer(4s));
  }
  // A client that cannot refresh: closed without a challenge.
  {
    auto c = connect_as("token", expiring(keys_, "app1", 1), false);
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE((*c)->closed_by_peer(5s));
  }
  // A token without expiry is never challenged; the broker still serves new clients.
  auto forever = connect_as("token", keys_.token_for("app1"), true);
  ASSERT_TRUE(forever.ok());
  EXPECT_FALSE((*forever)->receive(wire::BaseCommand::AUTH_CHALLENGE, 2500ms).ok());
  EXPECT_FALSE((*forever)->closed_by_peer(100ms));
}

// --- Authorization of commands ----------------------------------------------------------------

// The ServerError of a failed result, and the broker's text (the test client's message is
// "<ServerError>: <text>").
std::pair<std::optional<wire::ServerError>, std::string> failure(const Status& st) {
  if (st.ok()) return {std::nullopt, ""};
  std::string text = st.message();
  if (auto e = server_error_of(st)) {
    const std::string prefix = wire::ServerError_Name(*e) + ": ";
    if (text.rfind(prefix, 0) == 0) text = text.substr(prefix.size());
  }
  return {server_error_of(st), text};
}
template <typename T>
std::pair<std::optional<wire::ServerError>, std::string> failure(const Result<T>& r) {
  return failure(r.ok() ? Status::OK() : r.status());
}

class AuthorizationTest : public SecurityTest {
 protected:
  void SetUp() override {
    start_broker([](BrokerConfig& c) {
      c.authorization_enabled = true;
      c.super_user_roles = {"root"};
    });
  }
  // The namespace policies of public/default, as the admin API would store them.
  void policies(const std::string& json) { put("/admin/policies/public/default", json); }
  // Waits until `check` holds: a policy change reaches the broker's cache through the store's
  // notification, which may come just after the write.
  static bool eventually(const std::function<bool()>& check) {
    return magnetar::testing::eventually(check, std::chrono::seconds(2),
                                         std::chrono::milliseconds(20));
  }
  static bool can_produce(PulsarTestClient& c, const std::string& topic, uint64_t id) {
    return c.create_producer(topic, id).ok();
  }
};

TEST_F(AuthorizationTest, AConsumeOnlyRoleCannotProduceUntilGrantedAndNotAfterRevoke) {
  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["consume"]}}})");
  auto app1 = client_as("app1");
  ASSERT_TRUE(app1);
  const std::string topic = "persistent://public/default/orders";
  // The C++ client's order: partitioned metadata, lookup, then the producer.
  EXPECT_TRUE(app1->partitioned_metadata(topic).ok());
  EXPECT_TRUE(app1->lookup(topic).ok());
  auto refused = app1->create_producer(topic, 1);
  EXPECT_EQ(failure(refused).first, wire::AuthorizationError);
  EXPECT_EQ(failure(refused).second, "Client is not authorized to Produce");
  EXPECT_TRUE(app1->subscribe(topic, "s", wire::CommandSubscribe::Shared, 1).ok());

  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["consume", "produce"]}}})");
  uint64_t id = 2;
  EXPECT_TRUE(eventually([&] { return can_produce(*app1, topic, id++); }));
  EXPECT_TRUE(app1->send_message(id - 1, 0, "granted").ok());

  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["consume"]}}})");
  EXPECT_TRUE(eventually([&] { return !can_produce(*app1, topic, id++); }));
}

TEST_F(AuthorizationTest, ARoleWithoutGrantsIsRefusedAtTheFirstCommandWithPulsarsTexts) {
  auto nobody = client_as("nobody");
  ASSERT_TRUE(nobody);
  const std::string topic = "persistent://public/default/secret";
  auto meta = nobody->partitioned_metadata(topic);
  EXPECT_EQ(failure(meta).first, wire::AuthorizationError);
  EXPECT_EQ(failure(meta).second, "Client is not authorized to Get Partition Metadata");
  auto lookup = nobody->lookup(topic);
  EXPECT_EQ(failure(lookup).first, wire::AuthorizationError);
  EXPECT_EQ(failure(lookup).second, "Client is not authorized to Lookup");
  auto sub = nobody->subscribe(topic, "s", wire::CommandSubscribe::Exclusive, 1);
  EXPECT_EQ(failure(sub).first, wire::AuthorizationError);
  EXPECT_EQ(failure(sub).second, "Client is not authorized to subscribe");

  wire::BaseCommand list;
  list.set_type(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE);
  list.mutable_gettopicsofnamespace()->set_request_id(nobody->next_request_id());
  list.mutable_gettopicsofnamespace()->set_namespace_("public/default");
  auto topics = nobody->request(list, list.gettopicsofnamespace().request_id());
  EXPECT_EQ(failure(topics).first, wire::AuthorizationError);
  EXPECT_EQ(failure(topics).second, "Client is not authorized to GetTopicsOfNamespace");

  // Schemas are not for strangers either (Pulsar does not check them).
  wire::BaseCommand schema;
  schema.set_type(wire::BaseCommand::GET_SCHEMA);
  schema.mutable_getschema()->set_request_id(nobody->next_request_id());
  schema.mutable_getschema()->set_topic(topic);
  auto got = nobody->request(schema, schema.getschema().request_id());
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->command.getschemaresponse().error_code(), wire::AuthorizationError);
  EXPECT_EQ(got->command.getschemaresponse().error_message(),
            "Client is not authorized to Get Schema");

  // A namespace that does not exist.
  auto missing = nobody->partitioned_metadata("persistent://public/nope/x");
  EXPECT_EQ(failure(missing).first, wire::TopicNotFound);
  EXPECT_EQ(failure(missing).second, "Tenant or namespace or topic does not exist: public/nope");
  // Nothing was created for the refused role, and the connection still works.
  EXPECT_TRUE(nobody->ping().ok());
}

TEST_F(AuthorizationTest, SuperUsersAndTenantAdminsNeedNoGrantsButAdminsOnlyInTheirTenant) {
  auto root = client_as("root");
  auto admin = client_as("public-admin");
  ASSERT_TRUE(root && admin);
  EXPECT_TRUE(can_produce(*root, "persistent://public/default/a", 1));
  EXPECT_TRUE(can_produce(*root, "persistent://other/ns/a", 2));
  EXPECT_TRUE(can_produce(*admin, "persistent://public/default/b", 1));
  EXPECT_TRUE(
      admin->subscribe("persistent://public/default/b", "s", wire::CommandSubscribe::Shared, 1)
          .ok());
  auto elsewhere = admin->create_producer("persistent://other/ns/b", 2);
  EXPECT_EQ(failure(elsewhere).first, wire::AuthorizationError);
}

TEST_F(AuthorizationTest, TopicGrantsCountOnThatTopicAndItsPartitionsOnly) {
  policies(R"({"auth_policies": {"destination_auth": {
      "persistent://public/default/t1": {"app3": ["produce"]}}}})");
  auto app3 = client_as("app3");
  ASSERT_TRUE(app3);
  EXPECT_TRUE(can_produce(*app3, "persistent://public/default/t1", 1));
  EXPECT_TRUE(can_produce(*app3, "persistent://public/default/t1-partition-0", 2));
  EXPECT_FALSE(can_produce(*app3, "persistent://public/default/t2", 3));
  // Produce is not consume.
  auto sub =
      app3->subscribe("persistent://public/default/t1", "s", wire::CommandSubscribe::Shared, 1);
  EXPECT_EQ(failure(sub).first, wire::AuthorizationError);
  // Topic grants do not list the namespace.
  wire::BaseCommand list;
  list.set_type(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE);
  list.mutable_gettopicsofnamespace()->set_request_id(app3->next_request_id());
  list.mutable_gettopicsofnamespace()->set_namespace_("public/default");
  EXPECT_FALSE(app3->request(list, list.gettopicsofnamespace().request_id()).ok());
}

TEST_F(AuthorizationTest, SubscriptionRolesAndPrefixModeGuardConsumers) {
  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["consume"], "app2": ["consume"]},
                                  "subscription_auth_roles": {"locked": ["app2"]}}})");
  auto app1 = client_as("app1");
  auto app2 = client_as("app2");
  ASSERT_TRUE(app1 && app2);
  const std::string topic = "persistent://public/default/subs";
  auto refused = app1->subscribe(topic, "locked", wire::CommandSubscribe::Shared, 1);
  EXPECT_EQ(failure(refused).first, wire::AuthorizationError);
  EXPECT_TRUE(app2->subscribe(topic, "locked", wire::CommandSubscribe::Shared, 1).ok());
  EXPECT_TRUE(app1->subscribe(topic, "free", wire::CommandSubscribe::Shared, 2).ok());

  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["consume"]}},
               "subscription_auth_mode": "Prefix"})");
  Status unprefixed;
  uint64_t id = 10;
  EXPECT_TRUE(eventually([&] {
    unprefixed = app1->subscribe(topic, "plain", wire::CommandSubscribe::Shared, id++);
    return !unprefixed.ok();
  }));
  EXPECT_EQ(failure(unprefixed).first, wire::AuthorizationError);
  EXPECT_NE(unprefixed.message().find("needs to be prefixed by the authentication role"),
            std::string::npos)
      << unprefixed.message();
  EXPECT_TRUE(app1->subscribe(topic, "app1-sub", wire::CommandSubscribe::Shared, id++).ok());
}

TEST_F(AuthorizationTest, ReplicatorProducerNamesAreForSuperUsersOnly) {
  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["produce"]}}})");
  auto app1 = client_as("app1");
  auto root = client_as("root");
  ASSERT_TRUE(app1 && root);
  const std::string topic = "persistent://public/default/replicated";
  auto forged = app1->create_producer(topic, 1, std::string("pulsar.repl.west-->standalone"));
  EXPECT_EQ(failure(forged).first, wire::AuthorizationError);
  EXPECT_TRUE(app1->create_producer(topic, 2, std::string("app1-producer")).ok());
  EXPECT_TRUE(root->create_producer(topic, 1, std::string("pulsar.repl.west-->standalone")).ok());
}

TEST_F(AuthorizationTest, AnUnknownAuthorizationProviderStopsTheStart) {
  BrokerConfig c;
  c.broker_service_port = 0;
  c.bind_address = "127.0.0.1";
  c.authorization_enabled = true;
  c.authorization_provider = "com.example.MyAuthorizationProvider";
  auto b = Broker::start(c, metadata::MetadataStores{store_, store_});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("com.example.MyAuthorizationProvider is not supported"),
            std::string::npos);
}

}  // namespace
}  // namespace magnetar::broker
