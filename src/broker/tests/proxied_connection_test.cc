// Connections through a Pulsar proxy (proxyRoles, authenticateOriginalAuthData): a proxy role
// must name the client it speaks for, and both roles must be authorized, on the binary
// protocol (CONNECT's original_principal, LOOKUP's and PARTITIONED_METADATA's own) and on the
// admin API (X-Original-Principal), with Pulsar's answers
// (../shared/reference/pulsar-security-proxy.md §1.5, §4.2-4.3). A whole BrokerServer over an
// in-process bookie and a memory: store; the proxy is played by a raw protocol client.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "auth/base64.h"
#include "auth/jwt.h"
#include "broker/broker_server.h"
#include "http/http_client.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/eventually.h"
#include "testing/pulsar_test_client.h"
#include "testing/test_name.h"

namespace magnetar::broker::proxied_test {
namespace {

using namespace std::chrono_literals;
using ledger::test::Cluster;
using testing::PulsarTestClient;

// What a proxy adds to its CONNECT (or a LOOKUP) for the client behind it.
struct Forwarded {
  std::optional<std::string> principal;
  std::optional<std::string> auth_method;
  std::optional<std::string> auth_data;
};

// The ServerError and text of a failed result (the test client's message is
// "<ServerError>: <text>").
std::pair<std::optional<wire::ServerError>, std::string> refusal_of(const Status& st) {
  if (st.ok()) return {std::nullopt, ""};
  std::string text = st.message();
  auto error = testing::server_error_of(st);
  if (error) {
    const std::string prefix = wire::ServerError_Name(*error) + ": ";
    if (text.rfind(prefix, 0) == 0) text = text.substr(prefix.size());
  }
  return {error, text};
}
template <typename T>
std::pair<std::optional<wire::ServerError>, std::string> refusal_of(const Result<T>& r) {
  return refusal_of(r.ok() ? Status::OK() : r.status());
}

int64_t epoch_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ProxiedConnectionTest : public ::testing::Test {
 protected:
  ProxiedConnectionTest() : cluster_(magnetar::testing::test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
    put("/admin/policies/public", R"({"adminRoles":["public-admin"],"allowedClusters":[]})");
    // app1 may produce and consume in public/default; nobody else has a grant.
    policies(R"({"auth_policies": {"namespace_auth": {"app1": ["produce", "consume"]}}})");
    put("/admin/policies/other", R"({"adminRoles":["other-admin"],"allowedClusters":[]})");
    put("/admin/policies/other/ns", "{}");
  }
  ~ProxiedConnectionTest() override {
    if (server_) server_->stop();
  }

  void put(const std::string& path, const std::string& value) {
    auto made = cluster_.await(store_->put_recursive(path, value));
    ASSERT_TRUE(made.ok()) << made.status().to_string();
  }
  void policies(const std::string& json) { put("/admin/policies/public/default", json); }

  // Tokens, authorization, super user root, proxy roles "proxy" and "proxy2"; then `tweak`.
  void start(const std::function<void(BrokerConfig&)>& tweak = {}) {
    BrokerConfig c;
    c.cluster_name = "test";
    c.bind_address = "127.0.0.1";
    c.broker_service_port = 0;
    c.web_service_port = 0;
    c.num_io_threads = 2;
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    c.managed_ledger_factory.cache_size_mb = 16;
    c.authentication.enabled = true;
    c.authentication.providers = {
        "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"};
    c.authentication.token.secret_key = "data:;base64," + auth::base64_encode(secret_);
    c.authorization_enabled = true;
    c.super_user_roles = {"root"};
    c.proxy_roles = {"proxy", "proxy2"};
    if (tweak) tweak(c);
    auto s = BrokerServer::start(c, metadata::MetadataStores{store_, store_}, false);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
  }

  std::string token(const nlohmann::ordered_json& claims) const {
    return *auth::encode_jwt(claims, *auth::TokenKey::secret(secret_), auth::Algorithm::kHS256);
  }
  std::string token_for(const std::string& role) const { return token({{"sub", role}}); }

  // A CONNECT with `role`'s token and what `forwarded` adds; the client once CONNECTED, or
  // the ERROR that came instead as its Status.
  Result<std::unique_ptr<PulsarTestClient>> connect_as(const std::string& role,
                                                       const Forwarded& forwarded,
                                                       bool supports_refresh = false) {
    PulsarTestClient::Options o;
    o.port = server_->port();
    o.auth_method = "token";
    o.auth_data = token_for(role);
    o.supports_auth_refresh = supports_refresh;
    o.handshake = false;
    auto c = PulsarTestClient::connect(o);
    if (!c.ok()) return c.status();
    wire::BaseCommand cmd = (*c)->connect_command();
    wire::CommandConnect* connect = cmd.mutable_connect();
    if (forwarded.principal) connect->set_original_principal(*forwarded.principal);
    if (forwarded.auth_method) connect->set_original_auth_method(*forwarded.auth_method);
    if (forwarded.auth_data) connect->set_original_auth_data(*forwarded.auth_data);
    if (Status sent = (*c)->send(cmd); !sent.ok()) return sent;
    auto answer = (*c)->receive_if([](const protocol::Frame& f) {
      return f.command.type() == wire::BaseCommand::CONNECTED ||
             f.command.type() == wire::BaseCommand::ERROR;
    });
    if (!answer.ok()) return answer.status();
    if (answer->command.type() == wire::BaseCommand::ERROR) {
      // The broker closes after its ERROR.
      EXPECT_TRUE((*c)->closed_by_peer(3s))
          << "still open after " << answer->command.error().message();
      return testing::server_error_status(answer->command.error().error(),
                                          answer->command.error().message());
    }
    return std::move(c).value();
  }
  std::unique_ptr<PulsarTestClient> proxied(const std::string& proxy, const std::string& original) {
    auto c = connect_as(proxy, Forwarded{original, {}, {}});
    EXPECT_TRUE(c.ok()) << proxy << " for " << original << ": " << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // An admin call as `role`'s token with `headers` added.
  struct Answer {
    int status = 0;
    std::string body;
    std::string reason() const {
      auto j = nlohmann::json::parse(body, nullptr, false);
      if (!j.is_object() || !j.contains("reason") || !j["reason"].is_string()) return "";
      return j["reason"].get<std::string>();
    }
  };
  Answer call(const std::string& role, const std::string& method, const std::string& target,
              const std::map<std::string, std::string>& headers = {},
              const std::string& body = "") {
    http::ClientOptions o;
    o.timeout = 10s;
    o.max_redirects = 0;
    http::HttpClient client(o);
    http::HttpRequest request;
    request.method = method;
    request.url = fmt::format("http://127.0.0.1:{}{}", server_->web_port(), target);
    request.body = body;
    request.headers["Authorization"] = "Bearer " + token_for(role);
    for (const auto& [name, value] : headers) request.headers[name] = value;
    auto got = client.send_blocking(std::move(request));
    Answer r;
    if (!got.ok()) {
      ADD_FAILURE() << method << " " << target << ": " << got.status().to_string();
      return r;
    }
    r.status = got->status;
    r.body = got->body;
    return r;
  }
  static std::map<std::string, std::string> for_client(const std::string& original) {
    return {{"X-Original-Principal", original}};
  }
  // The cluster "test" (for the super-user route GET /admin/v2/clusters/test).
  void make_cluster() {
    const nlohmann::json cluster = {
        {"serviceUrl", fmt::format("http://127.0.0.1:{}", server_->web_port())},
        {"brokerServiceUrl", fmt::format("pulsar://127.0.0.1:{}", server_->port())}};
    ASSERT_EQ(call("root", "PUT", "/admin/v2/clusters/test", {}, cluster.dump()).status, 204);
  }

  static bool eventually(const std::function<bool()>& check) {
    return magnetar::testing::eventually(check, std::chrono::seconds(3),
                                         std::chrono::milliseconds(20));
  }

  Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::string secret_ = auth::generate_secret(auth::Algorithm::kHS256);
  std::unique_ptr<BrokerServer> server_;
};

const std::string kTopic = "persistent://public/default/through-proxy";

// --- CONNECT --------------------------------------------------------------------------------

TEST_F(ProxiedConnectionTest, AProxyRoleWithoutAUsableOriginalPrincipalGetsInvalidRoles) {
  start([](BrokerConfig& c) { c.super_user_roles = {"root", "proxy"}; });
  const std::vector<std::pair<std::string, Forwarded>> refused = {
      {"none", Forwarded{}},
      {"empty", Forwarded{std::string(), {}, {}}},
      {"blank", Forwarded{std::string(" \t"), {}, {}}},
      {"itself", Forwarded{std::string("proxy"), {}, {}}},
      {"another proxy role", Forwarded{std::string("proxy2"), {}, {}}},
  };
  for (const auto& [what, forwarded] : refused) {
    auto c = connect_as("proxy", forwarded);
    ASSERT_FALSE(c.ok()) << what;
    EXPECT_EQ(refusal_of(c).first, wire::AuthorizationError)
        << what << ": " << c.status().to_string();
    EXPECT_EQ(refusal_of(c).second, "Invalid roles.") << what;
  }
  EXPECT_TRUE(connect_as("proxy", Forwarded{std::string("app1"), {}, {}}).ok());
}

TEST_F(ProxiedConnectionTest, WithoutAuthorizationAProxyRoleNeedNotNameAClient) {
  start([](BrokerConfig& c) { c.authorization_enabled = false; });
  auto c = connect_as("proxy", Forwarded{});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE((*c)->create_producer(kTopic, 1).ok());
}

// --- Authorization of both roles ------------------------------------------------------------

TEST_F(ProxiedConnectionTest, AProxyThatIsASuperUserGetsWhatTheClientIsGranted) {
  start([](BrokerConfig& c) { c.super_user_roles = {"root", "proxy"}; });
  auto granted = proxied("proxy", "app1");
  ASSERT_TRUE(granted);
  EXPECT_TRUE(granted->partitioned_metadata(kTopic).ok());
  EXPECT_TRUE(granted->lookup(kTopic).ok());
  ASSERT_TRUE(granted->create_producer(kTopic, 1).ok());
  EXPECT_TRUE(granted->send_message(1, 0, "via the proxy").ok());
  EXPECT_TRUE(granted->subscribe(kTopic, "s", wire::CommandSubscribe::Shared, 1).ok());
  // Not beyond the client's grants: app1 has none in other/ns.
  auto elsewhere = granted->create_producer("persistent://other/ns/t", 2);
  EXPECT_EQ(refusal_of(elsewhere).first, wire::AuthorizationError);

  auto stranger = proxied("proxy", "app2");
  ASSERT_TRUE(stranger);
  auto meta = stranger->partitioned_metadata(kTopic);
  EXPECT_EQ(refusal_of(meta).first, wire::AuthorizationError);
  EXPECT_EQ(refusal_of(meta).second, "Client is not authorized to Get Partition Metadata");
  auto lookup = stranger->lookup(kTopic);
  EXPECT_EQ(refusal_of(lookup).second, "Client is not authorized to Lookup");
  auto producer = stranger->create_producer(kTopic, 1);
  EXPECT_EQ(refusal_of(producer).second, "Client is not authorized to Produce");
  auto sub = stranger->subscribe(kTopic, "s", wire::CommandSubscribe::Shared, 1);
  EXPECT_EQ(refusal_of(sub).second, "Client is not authorized to subscribe");
  wire::BaseCommand list;
  list.set_type(wire::BaseCommand::GET_TOPICS_OF_NAMESPACE);
  list.mutable_gettopicsofnamespace()->set_request_id(stranger->next_request_id());
  list.mutable_gettopicsofnamespace()->set_namespace_("public/default");
  auto topics = stranger->request(list, list.gettopicsofnamespace().request_id());
  EXPECT_EQ(refusal_of(topics).first, wire::AuthorizationError);
  // A super user behind the proxy may take a replicator's name; app1 may not.
  auto forged = granted->create_producer(kTopic, 3, std::string("pulsar.repl.west-->test"));
  EXPECT_EQ(refusal_of(forged).first, wire::AuthorizationError);
  auto root = proxied("proxy", "root");
  ASSERT_TRUE(root);
  EXPECT_TRUE(root->create_producer(kTopic, 1, std::string("pulsar.repl.west-->test")).ok());
}

TEST_F(ProxiedConnectionTest, AProxyWithoutGrantsIsRefusedEvenForAGrantedClient) {
  start();
  auto c = proxied("proxy", "app1");
  ASSERT_TRUE(c);
  auto meta = c->partitioned_metadata(kTopic);
  EXPECT_EQ(refusal_of(meta).first, wire::AuthorizationError);
  EXPECT_EQ(refusal_of(meta).second, "Client is not authorized to Get Partition Metadata");
  EXPECT_EQ(refusal_of(c->create_producer(kTopic, 1)).first, wire::AuthorizationError);
  EXPECT_EQ(refusal_of(c->subscribe(kTopic, "s", wire::CommandSubscribe::Shared, 1)).first,
            wire::AuthorizationError);
  // Nor does a super user behind a proxy without grants get anything.
  auto root = proxied("proxy", "root");
  ASSERT_TRUE(root);
  EXPECT_FALSE(root->create_producer(kTopic, 1).ok());

  // Given the client's grants, the proxy passes.
  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["produce", "consume"],
                                                     "proxy": ["produce", "consume"]}}})");
  uint64_t id = 10;
  EXPECT_TRUE(eventually([&] { return c->create_producer(kTopic, id++).ok(); }));
  EXPECT_TRUE(c->send_message(id - 1, 0, "both allowed").ok());
}

TEST_F(ProxiedConnectionTest, AnOriginalPrincipalFromARoleThatIsNoProxyCountsForNothing) {
  start();
  // app2 (no grants) claiming to speak for the super user is still app2.
  auto claims_root = connect_as("app2", Forwarded{std::string("root"), {}, {}});
  ASSERT_TRUE(claims_root.ok()) << claims_root.status().to_string();
  EXPECT_EQ(refusal_of((*claims_root)->create_producer(kTopic, 1)).first, wire::AuthorizationError);
  // app1 speaking "for" a stranger keeps its own grants.
  auto claims_stranger = connect_as("app1", Forwarded{std::string("nobody"), {}, {}});
  ASSERT_TRUE(claims_stranger.ok()) << claims_stranger.status().to_string();
  EXPECT_TRUE((*claims_stranger)->create_producer(kTopic, 1).ok());
}

// --- authenticateOriginalAuthData -----------------------------------------------------------

TEST_F(ProxiedConnectionTest, ForwardedCredentialsAreAuthenticatedAndTheirRoleIsTheClients) {
  start([](BrokerConfig& c) {
    c.super_user_roles = {"root", "proxy"};
    c.authenticate_original_auth_data = true;
  });
  // A forged principal with junk credentials, or none at all, is refused like a bad direct
  // credential.
  const std::vector<std::pair<std::string, Forwarded>> refused = {
      {"junk token", Forwarded{std::string("root"), std::string("token"), std::string("junk")}},
      {"another key's token",
       Forwarded{std::string("root"), std::string("token"),
                 *auth::encode_jwt({{"sub", "root"}}, *auth::TokenKey::secret(std::string(32, 'k')),
                                   auth::Algorithm::kHS256)}},
      {"no credentials", Forwarded{std::string("root"), {}, {}}},
      {"expired", Forwarded{std::string("app1"), std::string("token"),
                            token({{"sub", "app1"}, {"exp", 1000}})}},
  };
  for (const auto& [what, forwarded] : refused) {
    auto c = connect_as("proxy", forwarded);
    ASSERT_FALSE(c.ok()) << what;
    EXPECT_EQ(refusal_of(c).first, wire::AuthenticationError)
        << what << ": " << c.status().to_string();
    EXPECT_EQ(refusal_of(c).second, "Failed to authenticate") << what;
  }
  // A real token under a forged name: the token's role is the one that counts.
  auto c =
      connect_as("proxy", Forwarded{std::string("root"), std::string("token"), token_for("app1")});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE((*c)->create_producer(kTopic, 1).ok());
  EXPECT_EQ(refusal_of((*c)->create_producer("persistent://other/ns/t", 2)).first,
            wire::AuthorizationError);
}

TEST_F(ProxiedConnectionTest, ForwardedCredentialsAreTheOnesARefreshRenews) {
  start([](BrokerConfig& c) {
    c.super_user_roles = {"root", "proxy"};
    c.authenticate_original_auth_data = true;
    c.authentication_refresh_check_seconds = 1;
  });
  const std::string expiring = token({{"sub", "app1"}, {"exp", epoch_seconds() + 2}});
  auto c =
      connect_as("proxy", Forwarded{std::string("app1"), std::string("token"), expiring}, true);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto challenge = (*c)->receive(wire::BaseCommand::AUTH_CHALLENGE, 6s);
  ASSERT_TRUE(challenge.ok()) << challenge.status().to_string();
  EXPECT_EQ(challenge->command.authchallenge().challenge().auth_data(), "PulsarAuthRefresh");
  // The proxy relays the client's new token: the connection stays.
  wire::BaseCommand answer;
  answer.set_type(wire::BaseCommand::AUTH_RESPONSE);
  answer.mutable_authresponse()->mutable_response()->set_auth_method_name("token");
  answer.mutable_authresponse()->mutable_response()->set_auth_data(token_for("app1"));
  ASSERT_TRUE((*c)->send(answer).ok());
  EXPECT_FALSE((*c)->closed_by_peer(2500ms));
  EXPECT_TRUE((*c)->create_producer(kTopic, 1).ok());

  // The proxy's own token is no answer for the client's.
  auto d = connect_as("proxy",
                      Forwarded{std::string("app1"), std::string("token"),
                                token({{"sub", "app1"}, {"exp", epoch_seconds() + 2}})},
                      true);
  ASSERT_TRUE(d.ok()) << d.status().to_string();
  ASSERT_TRUE((*d)->receive(wire::BaseCommand::AUTH_CHALLENGE, 6s).ok());
  answer.mutable_authresponse()->mutable_response()->set_auth_data(token_for("proxy"));
  ASSERT_TRUE((*d)->send(answer).ok());
  EXPECT_TRUE((*d)->closed_by_peer(3s));
}

TEST_F(ProxiedConnectionTest, AnExpiredProxyCredentialWithoutForwardedOnesClosesWithoutError) {
  start([](BrokerConfig& c) {
    c.super_user_roles = {"root", "proxy"};
    c.authentication_refresh_check_seconds = 1;
  });
  PulsarTestClient::Options o;
  o.port = server_->port();
  o.auth_method = "token";
  // + 2: exp counts whole seconds, so "+ 1" taken late in a second can be refused at the
  // connect (security_test.cc's expiring() met it in CI).
  o.auth_data = token({{"sub", "proxy"}, {"exp", epoch_seconds() + 2}});
  o.supports_auth_refresh = true;
  o.handshake = false;
  auto c = PulsarTestClient::connect(o);
  ASSERT_TRUE(c.ok());
  wire::BaseCommand cmd = (*c)->connect_command();
  cmd.mutable_connect()->set_original_principal("app1");
  ASSERT_TRUE((*c)->send(cmd).ok());
  ASSERT_TRUE((*c)->receive(wire::BaseCommand::CONNECTED).ok());
  EXPECT_TRUE((*c)->closed_by_peer(5s));
  EXPECT_FALSE((*c)->receive(wire::BaseCommand::AUTH_CHALLENGE, 10ms).ok());
  EXPECT_FALSE((*c)->receive(wire::BaseCommand::ERROR, 10ms).ok());
}

// --- LOOKUP and PARTITIONED_METADATA naming their own client --------------------------------

TEST_F(ProxiedConnectionTest, LookupsMayNameTheirOwnClientUnderTheSameRules) {
  start([](BrokerConfig& c) { c.super_user_roles = {"root", "proxy"}; });
  auto c = proxied("proxy", "app1");
  ASSERT_TRUE(c);
  auto lookup_for = [&](std::optional<std::string> original) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::LOOKUP);
    auto* l = cmd.mutable_lookuptopic();
    l->set_topic(kTopic);
    l->set_request_id(c->next_request_id());
    if (original) l->set_original_principal(*original);
    auto frame = c->request(cmd, l->request_id());
    EXPECT_TRUE(frame.ok()) << frame.status().to_string();
    return frame.ok() ? frame->command.lookuptopicresponse() : wire::CommandLookupTopicResponse();
  };
  EXPECT_EQ(lookup_for(std::nullopt).response(), wire::CommandLookupTopicResponse::Connect);
  EXPECT_EQ(lookup_for("app1").response(), wire::CommandLookupTopicResponse::Connect);
  auto stranger = lookup_for("app2");
  EXPECT_EQ(stranger.response(), wire::CommandLookupTopicResponse::Failed);
  EXPECT_EQ(stranger.error(), wire::AuthorizationError);
  EXPECT_EQ(stranger.message(), "Client is not authorized to Lookup");
  auto a_proxy = lookup_for("proxy2");
  EXPECT_EQ(a_proxy.error(), wire::AuthorizationError);
  EXPECT_EQ(a_proxy.message(), "Valid Proxy Client role should be provided for lookup ");

  auto metadata_for = [&](const std::string& original) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::PARTITIONED_METADATA);
    auto* m = cmd.mutable_partitionmetadata();
    m->set_topic(kTopic);
    m->set_request_id(c->next_request_id());
    m->set_original_principal(original);
    auto frame = c->request(cmd, m->request_id());
    EXPECT_TRUE(frame.ok()) << frame.status().to_string();
    return frame.ok() ? frame->command.partitionmetadataresponse()
                      : wire::CommandPartitionedTopicMetadataResponse();
  };
  EXPECT_EQ(metadata_for("app1").response(),
            wire::CommandPartitionedTopicMetadataResponse::Success);
  EXPECT_EQ(metadata_for("app2").message(), "Client is not authorized to Get Partition Metadata");
  EXPECT_EQ(metadata_for("").message(),
            "Valid Proxy Client role should be provided for getPartitionMetadataRequest ");

  // A role that is no proxy cannot borrow another's grants this way either.
  auto app2 = connect_as("app2", Forwarded{});
  ASSERT_TRUE(app2.ok());
  wire::BaseCommand cmd;
  cmd.set_type(wire::BaseCommand::LOOKUP);
  cmd.mutable_lookuptopic()->set_topic(kTopic);
  cmd.mutable_lookuptopic()->set_request_id((*app2)->next_request_id());
  cmd.mutable_lookuptopic()->set_original_principal("root");
  auto frame = (*app2)->request(cmd, cmd.lookuptopic().request_id());
  ASSERT_TRUE(frame.ok());
  EXPECT_EQ(frame->command.lookuptopicresponse().error(), wire::AuthorizationError);
}

TEST_F(ProxiedConnectionTest, LookupCredentialsAreAuthenticatedWhenTheBrokerAsks) {
  start([](BrokerConfig& c) {
    c.super_user_roles = {"root", "proxy"};
    c.authenticate_original_auth_data = true;
  });
  auto c =
      connect_as("proxy", Forwarded{std::string("app1"), std::string("token"), token_for("app1")});
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  auto lookup = [&](const std::string& original, const std::string& data) {
    wire::BaseCommand cmd;
    cmd.set_type(wire::BaseCommand::LOOKUP);
    auto* l = cmd.mutable_lookuptopic();
    l->set_topic(kTopic);
    l->set_request_id((*c)->next_request_id());
    l->set_original_principal(original);
    l->set_original_auth_method("token");
    l->set_original_auth_data(data);
    auto frame = (*c)->request(cmd, l->request_id());
    EXPECT_TRUE(frame.ok()) << frame.status().to_string();
    return frame.ok() ? frame->command.lookuptopicresponse() : wire::CommandLookupTopicResponse();
  };
  auto forged = lookup("root", "junk");
  EXPECT_EQ(forged.error(), wire::AuthenticationError);
  EXPECT_EQ(forged.message(), "Failed to authenticate");
  // The name counts for nothing: the token's role is checked.
  EXPECT_EQ(lookup("root", token_for("app2")).message(), "Client is not authorized to Lookup");
  EXPECT_EQ(lookup("app2", token_for("app1")).response(),
            wire::CommandLookupTopicResponse::Connect);
  // The connection serves on.
  EXPECT_TRUE((*c)->ping().ok());
}

// --- The admin API ---------------------------------------------------------------------------

const std::string kNamespaceTopics = "/admin/v2/namespaces/public/default/topics";

TEST_F(ProxiedConnectionTest, AdminRequestsFromAProxyMustNameTheClient) {
  start([](BrokerConfig& c) { c.super_user_roles = {"root", "proxy"}; });
  make_cluster();
  Answer missing = call("proxy", "GET", kNamespaceTopics);
  EXPECT_EQ(missing.status, 401) << missing.body;
  EXPECT_EQ(missing.reason(), "Original principal cannot be empty if the request is via proxy.");
  EXPECT_EQ(call("proxy", "GET", kNamespaceTopics, for_client(" ")).status, 401);
  Answer itself = call("proxy", "GET", kNamespaceTopics, for_client("proxy2"));
  EXPECT_EQ(itself.status, 401);
  EXPECT_EQ(itself.reason(), "Original principal cannot be a proxy role");
  // Named: the client's grants apply, and the proxy's (a super user) pass.
  EXPECT_EQ(call("proxy", "GET", kNamespaceTopics, for_client("app1")).status, 200);
  EXPECT_EQ(call("proxy", "GET", "/admin/v2/clusters/test", for_client("root")).status, 200);
  Answer stranger = call("proxy", "GET", kNamespaceTopics, for_client("app2"));
  EXPECT_EQ(stranger.status, 401) << stranger.body;
  EXPECT_EQ(stranger.reason(),
            "Proxy not authorized to access resource (proxy:proxy,original:app2)");
  Answer not_root = call("proxy", "GET", "/admin/v2/clusters/test", for_client("app1"));
  EXPECT_EQ(not_root.status, 401);
  EXPECT_EQ(not_root.reason(),
            "Proxy not authorized for super-user operation (proxy:proxy,original:app1)");
}

TEST_F(ProxiedConnectionTest, AdminRequestsCheckTheProxyToo) {
  start();
  make_cluster();
  // The proxy is neither a super user nor granted anything: a granted client, or even a
  // super user, is refused through it.
  Answer granted = call("proxy", "GET", kNamespaceTopics, for_client("app1"));
  EXPECT_EQ(granted.status, 401) << granted.body;
  EXPECT_EQ(granted.reason(),
            "Proxy not authorized to access resource (proxy:proxy,original:app1)");
  Answer root = call("proxy", "GET", "/admin/v2/clusters/test", for_client("root"));
  EXPECT_EQ(root.status, 401);
  EXPECT_EQ(root.reason(),
            "Proxy not authorized for super-user operation (proxy:proxy,original:root)");
  // The same grant for the proxy opens it.
  policies(R"({"auth_policies": {"namespace_auth": {"app1": ["produce", "consume"],
                                                     "proxy": ["consume"]}}})");
  EXPECT_TRUE(eventually(
      [&] { return call("proxy", "GET", kNamespaceTopics, for_client("app1")).status == 200; }));
}

TEST_F(ProxiedConnectionTest, AdminRequestsOfOtherRolesIgnoreTheHeader) {
  start();
  make_cluster();
  // A proxy forwarding the client's own token names that same role: allowed.
  EXPECT_EQ(call("app1", "GET", kNamespaceTopics, for_client("app1")).status, 200);
  // Naming someone else changes nothing, either way.
  EXPECT_EQ(call("app1", "GET", kNamespaceTopics, for_client("app2")).status, 200);
  Answer borrowed = call("app2", "GET", "/admin/v2/clusters/test", for_client("root"));
  EXPECT_EQ(borrowed.status, 401);
  EXPECT_EQ(borrowed.reason(), "This operation requires super-user access");
  EXPECT_EQ(call("root", "GET", "/admin/v2/clusters/test", for_client("app2")).status, 200);
}

}  // namespace
}  // namespace magnetar::broker::proxied_test
