// Security with real processes: a `magnetar standalone`, and a ZooKeeper, three bookies and two
// `magnetar broker` processes, all with token authentication and authorization on. Keys and
// tokens come from `magnetar tokens`; the super user's token is the one Pulsar's own tool makes
// for that key (computed here from the documented format). Grants are made with
// `magnetar-admin` and the REST API; producers and consumers are our client library.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>

#include "broker_fixture.h"
#include "security_support.h"
#include "http/http_client.h"
#include "magnetar/client.h"
#include "standalone_process.h"
#include "testing/eventually.h"

#ifndef MAGNETAR_ADMIN_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_ADMIN_BINARY"
#endif

namespace magnetar::testing {
namespace {

using magnetar::testing::eventually;

bool can_produce(client::Client& c, const std::string& topic) {
  auto p = c.create_producer(topic);
  if (!p.ok()) return false;
  const bool sent = p->send(client::Message("hello")).ok();
  (void)p->close();
  return sent;
}

class SecurityProcessesTest : public BrokerClusterFixture {};

TEST_F(SecurityProcessesTest, TwoBrokersWithAuthorizationGrantRevokeAndTenantAdmins) {
  Keys keys(root_);
  Settings settings = keys.settings();
  settings.push_back({"brokerClientAuthenticationPlugin",
                      "org.apache.pulsar.client.impl.auth.AuthenticationToken"});
  settings.push_back({"brokerClientAuthenticationParameters", "token:" + keys.token("root")});
  const BrokerChild first = start_broker(settings);
  const BrokerChild second = start_broker(settings);
  ASSERT_FALSE(HasFailure());
  const std::string root = keys.token("root");
  // The super user's token (Pulsar's tool's shape) makes the tenant; its admin the namespace.
  auto [tcode, tbody] = call(first.web_port, root, "PUT", "/admin/v2/tenants/acme",
                             R"({"adminRoles":["acme-admin"],"allowedClusters":["test"]})");
  ASSERT_EQ(tcode, 204) << tbody;
  const std::string admin = keys.token("acme-admin");
  auto [ncode, nbody] = call(second.web_port, admin, "PUT", "/admin/v2/namespaces/acme/ns");
  ASSERT_EQ(ncode, 204) << nbody;
  // A tenant admin administers its own tenant only; tenants are the super user's.
  auto [ocode, obody] = call(first.web_port, admin, "PUT", "/admin/v2/namespaces/public/mine");
  EXPECT_EQ(ocode, 401) << obody;
  EXPECT_NE(obody.find("Don't have permission to administrate resources on this tenant"),
            std::string::npos);
  auto [scode, sbody] = call(first.web_port, admin, "PUT", "/admin/v2/tenants/other",
                             R"({"allowedClusters":["test"]})");
  EXPECT_EQ(scode, 401) << sbody;
  EXPECT_NE(sbody.find("This operation requires super-user access"), std::string::npos);
  auto [ucode, ubody] = call(first.web_port, "", "GET", "/admin/v2/tenants");
  EXPECT_EQ(ucode, 401) << ubody;

  // app1 may consume: its token from `magnetar tokens create > file`, read by the client.
  auto [gcode, gbody] = call(first.web_port, admin, "POST",
                             "/admin/v2/namespaces/acme/ns/permissions/app1", R"(["consume"])");
  ASSERT_EQ(gcode, 204) << gbody;
  const std::string topic = "persistent://acme/ns/orders";
  auto app1 = client_as(first.url(), client::AuthToken::from_file(keys.token_file(root_, "app1")));
  ASSERT_TRUE(app1.ok()) << app1.status().to_string();
  auto consumer = app1->subscribe(topic, "app1-sub");
  ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
  auto refused = app1->create_producer(topic);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("Client is not authorized to Produce"),
            std::string::npos)
      << refused.status().to_string();

  // Granted through the other broker: both brokers see it without a restart.
  auto [pcode, pbody] =
      call(second.web_port, admin, "POST", "/admin/v2/namespaces/acme/ns/permissions/app1",
           R"(["consume","produce"])");
  ASSERT_EQ(pcode, 204) << pbody;
  EXPECT_TRUE(eventually([&] { return can_produce(*app1, topic); }));
  auto got = consumer->receive(10s);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->payload(), "hello");
  auto via_second = client_as(second.url(), client::AuthToken::create(keys.token("app1")));
  ASSERT_TRUE(via_second.ok());
  EXPECT_TRUE(can_produce(*via_second, "persistent://acme/ns/other"));

  // Revoked: refused again.
  auto [rcode, rbody] = call(first.web_port, admin, "POST",
                             "/admin/v2/namespaces/acme/ns/permissions/app1", R"(["consume"])");
  ASSERT_EQ(rcode, 204) << rbody;
  EXPECT_TRUE(eventually([&] { return !can_produce(*app1, topic); }));
  // Nobody without credentials, nobody with a forged token.
  auto anonymous = client_as(first.url(), nullptr);
  ASSERT_TRUE(anonymous.ok());
  EXPECT_FALSE(anonymous->create_producer("persistent://public/default/x").ok());
  auto forged = client_as(
      first.url(), client::AuthToken::create(pulsar_tool_token(std::string(32, 'x'), "root")));
  ASSERT_TRUE(forged.ok());
  EXPECT_FALSE(forged->create_producer("persistent://public/default/x").ok());
  // The super user anywhere.
  auto super = client_as(second.url(), client::AuthToken::create(root));
  ASSERT_TRUE(super.ok());
  EXPECT_TRUE(can_produce(*super, "persistent://public/default/root-topic"));
  for (auto* c : {&*app1, &*via_second, &*anonymous, &*forged, &*super}) (void)c->close();
}

class SecurityStandaloneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           fmt::format("magnetar-security-{}-{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    standalone_.reset();
    if (!HasFailure()) std::filesystem::remove_all(dir_);
  }
  std::pair<int, std::string> admin(const std::string& token_file, const std::string& args) {
    return run_command(fmt::format(
        "{} --admin-url http://127.0.0.1:{} --auth-plugin "
        "org.apache.pulsar.client.impl.auth.AuthenticationToken --auth-params file://{} {} 2>&1",
        MAGNETAR_ADMIN_BINARY, standalone_->web_port(), token_file, args));
  }
  std::filesystem::path dir_;
  std::unique_ptr<Standalone> standalone_;
};

TEST_F(SecurityStandaloneTest, ToolsAndClientsWithTokensAgainstAnAuthorizingStandalone) {
  Keys keys(dir_);
  std::vector<std::string> settings;
  for (const auto& [k, v] : keys.settings()) settings.push_back(k + "=" + v);
  standalone_ = std::make_unique<Standalone>(dir_ / "data", settings);
  std::filesystem::create_directories(dir_ / "data");
  ASSERT_TRUE(standalone_->start());
  const std::string root = keys.token_file(dir_, "root");
  const std::string app = keys.token_file(dir_, "app");
  // magnetar-admin with pulsar-admin's flags: grants and Pulsar's output.
  auto [code, out] = admin(root,
                           "namespaces grant-permission public/default --role app "
                           "--actions consume");
  ASSERT_EQ(code, 0) << out;
  std::tie(code, out) = admin(root, "namespaces permissions public/default");
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "app    [consume]\n");
  std::tie(code, out) = admin(app, "tenants create nope");
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("This operation requires super-user access"), std::string::npos) << out;

  const std::string url = fmt::format("pulsar://127.0.0.1:{}", standalone_->port());
  auto app_client = client_as(url, client::AuthToken::from_file(app));
  ASSERT_TRUE(app_client.ok());
  const std::string topic = "persistent://public/default/audited";
  EXPECT_TRUE(app_client->subscribe(topic, "s").ok());
  EXPECT_FALSE(app_client->create_producer(topic).ok());
  std::tie(code, out) =
      admin(root, "topics grant-permission " + topic + " --role app --actions produce");
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(eventually([&] { return can_produce(*app_client, topic); }));
  std::tie(code, out) = admin(root, "topics permissions " + topic);
  EXPECT_EQ(out, "app    [consume, produce]\n");
  std::tie(code, out) = admin(root, "topics revoke-permission " + topic + " --role app");
  EXPECT_EQ(code, 0) << out;
  EXPECT_TRUE(eventually([&] { return !can_produce(*app_client, topic); }));
  // magnetar-client with client.conf-style flags produces as the super user.
  std::tie(code, out) = run_command(
      fmt::format("{} --url {} --auth-plugin token --auth-params file://{} produce {} -m hi 2>&1",
                  MAGNETAR_CLIENT_BINARY, url, root, topic));
  EXPECT_EQ(code, 0) << out;
  (void)app_client->close();
}

// Replicators authenticate to the remote cluster: east's with the ClusterData of west
// (authenticationPlugin / authenticationParameters), west's with its
// brokerClientAuthentication* settings; both clusters authorize, the broker role is a super
// user of each. Messages go both ways; a producer's role at one end consumes at the other.
TEST_F(SecurityStandaloneTest, ReplicatorsAuthenticateToAnAuthorizingRemoteCluster) {
  Keys keys(dir_);  // one key: each cluster accepts the other's broker role
  const std::string root = keys.token("root");
  std::map<std::string, std::unique_ptr<Standalone>> clusters;
  for (const std::string name : {"east", "west"}) {
    std::vector<std::string> settings = {"clusterName=" + name};
    for (const auto& [k, v] : keys.settings()) settings.push_back(k + "=" + v);
    if (name == "west") {
      settings.push_back("brokerClientAuthenticationPlugin=token");
      settings.push_back("brokerClientAuthenticationParameters=token:" + root);
    }
    std::filesystem::create_directories(dir_ / name);
    clusters[name] = std::make_unique<Standalone>(dir_ / name, settings);
    ASSERT_TRUE(clusters[name]->start()) << name;
  }
  Standalone& east = *clusters["east"];
  Standalone& west = *clusters["west"];
  auto cluster_data = [](Standalone& s, bool with_credentials, const std::string& token) {
    nlohmann::json j = {{"serviceUrl", fmt::format("http://127.0.0.1:{}", s.web_port())},
                        {"brokerServiceUrl", fmt::format("pulsar://127.0.0.1:{}", s.port())}};
    if (with_credentials) {
      j["authenticationPlugin"] = "org.apache.pulsar.client.impl.auth.AuthenticationToken";
      j["authenticationParameters"] = "token:" + token;
    }
    return j.dump();
  };
  for (auto [at, name, other, creds] :
       {std::tuple{&east, "west", &west, true}, std::tuple{&west, "east", &east, false}}) {
    auto [code, body] = call(at->web_port(), root, "PUT", std::string("/admin/v2/clusters/") + name,
                             cluster_data(*other, creds, root));
    ASSERT_EQ(code, 204) << body;
  }
  for (Standalone* s : {&east, &west}) {
    auto [t, tb] = call(s->web_port(), root, "POST", "/admin/v2/tenants/public",
                        R"({"adminRoles":[],"allowedClusters":["east","west"]})");
    ASSERT_EQ(t, 204) << tb;
    auto [n, nb] = call(s->web_port(), root, "PUT", "/admin/v2/namespaces/public/geo");
    ASSERT_EQ(n, 204) << nb;
    auto [r, rb] = call(s->web_port(), root, "POST", "/admin/v2/namespaces/public/geo/replication",
                        R"(["east","west"])");
    ASSERT_EQ(r, 204) << rb;
    auto [g, gb] =
        call(s->web_port(), root, "POST", "/admin/v2/namespaces/public/geo/permissions/app",
             R"(["produce","consume"])");
    ASSERT_EQ(g, 204) << gb;
  }
  const std::string topic = "persistent://public/geo/both-ways";
  auto at = [&](Standalone& s) {
    auto c = client_as(fmt::format("pulsar://127.0.0.1:{}", s.port()),
                       client::AuthToken::create(keys.token("app")));
    EXPECT_TRUE(c.ok());
    return std::move(c).value();
  };
  client::Client east_client = at(east);
  client::Client west_client = at(west);
  client::ConsumerOptions earliest;
  earliest.initial_position = client::InitialPosition::kEarliest;
  auto west_consumer = west_client.subscribe(topic, "app-check", earliest);
  auto east_consumer = east_client.subscribe(topic, "app-check", earliest);
  ASSERT_TRUE(west_consumer.ok() && east_consumer.ok());
  auto from_east = east_client.create_producer(topic);
  auto from_west = west_client.create_producer(topic);
  ASSERT_TRUE(from_east.ok() && from_west.ok());
  ASSERT_TRUE(from_east->send(client::Message("from-east")).ok());
  ASSERT_TRUE(from_west->send(client::Message("from-west")).ok());
  auto expect_both = [](client::Consumer& c, const char* where) {
    std::set<std::string> seen;
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (seen.size() < 2 && std::chrono::steady_clock::now() < until) {
      auto m = c.receive(500ms);
      if (m.ok()) seen.insert(m->payload());
    }
    EXPECT_EQ(seen, (std::set<std::string>{"from-east", "from-west"})) << where;
  };
  expect_both(*west_consumer, "west");
  expect_both(*east_consumer, "east");
  (void)east_client.close();
  (void)west_client.close();
}

}  // namespace
}  // namespace magnetar::testing
