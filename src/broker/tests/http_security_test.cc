// The admin REST API and /metrics with authentication and authorization on: a whole
// BrokerServer over an in-process bookie and a memory: store, requests with and without
// "Authorization: Bearer" tokens, answers checked against Pulsar's statuses and reasons
// (../shared/reference/pulsar-security-proxy.md §4-5).

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "auth/authentication.h"
#include "auth/base64.h"
#include "auth/jwt.h"
#include "broker/broker_server.h"
#include "broker/service/metrics.h"
#include "common/logging.h"
#include "http/http_client.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/eventually.h"
#include "testing/pulsar_test_client.h"
#include "testing/test_name.h"

namespace magnetar::broker {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using ledger::test::Cluster;

using magnetar::testing::test_name;

struct Answer {
  int status = 0;
  std::string body;
  std::string reason() const {
    Json j = Json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("reason") || !j["reason"].is_string()) return "";
    return j["reason"].get<std::string>();
  }
  Json json() const { return Json::parse(body, nullptr, false); }
};
std::ostream& operator<<(std::ostream& os, const Answer& r) {
  return os << r.status << " " << r.body;
}

const std::string kNsUrl = "/admin/v2/namespaces/public/default";
const std::string kTopic = "/admin/v2/persistent/public/default/t1";

class HttpSecurityTest : public ::testing::Test {
 protected:
  HttpSecurityTest() : cluster_(test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
  }
  ~HttpSecurityTest() override {
    if (server_) server_->stop();
  }

  void start(const std::function<void(BrokerConfig&)>& tweak) {
    if (server_) server_->stop();
    server_.reset();
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
    if (tweak) tweak(c);
    auto s = BrokerServer::start(c, metadata::MetadataStores{store_, store_}, false);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
    base_ = fmt::format("http://127.0.0.1:{}", server_->web_port());
  }

  // As root: the cluster, tenants public (admin t-admin) and other (admin o-admin), and
  // public/default.
  void make_resources() {
    const Json cluster = {
        {"serviceUrl", base_},
        {"brokerServiceUrl", fmt::format("pulsar://127.0.0.1:{}", server_->port())}};
    ASSERT_EQ(call("root", "PUT", "/admin/v2/clusters/test", cluster.dump()).status, 204);
    ASSERT_EQ(call("root", "PUT", "/admin/v2/tenants/public",
                   R"({"adminRoles":["t-admin"],"allowedClusters":["test"]})")
                  .status,
              204);
    ASSERT_EQ(call("root", "PUT", "/admin/v2/tenants/other",
                   R"({"adminRoles":["o-admin"],"allowedClusters":["test"]})")
                  .status,
              204);
    ASSERT_EQ(call("root", "PUT", kNsUrl).status, 204);
  }

  std::string token(const std::string& role) const {
    return *auth::encode_jwt({{"sub", role}}, *auth::TokenKey::secret(secret_),
                             auth::Algorithm::kHS256);
  }

  // `role` empty: no Authorization header; starting with "raw:": that header value as is.
  Answer call(const std::string& role, const std::string& method, const std::string& target,
             const std::string& body = "") {
    http::ClientOptions o;
    o.timeout = 10s;
    o.max_redirects = 0;
    http::HttpClient client(o);
    http::HttpRequest request;
    request.method = method;
    request.url = base_ + target;
    request.body = body;
    if (role.rfind("raw:", 0) == 0) {
      request.headers["Authorization"] = role.substr(4);
    } else if (!role.empty()) {
      request.headers["Authorization"] = "Bearer " + token(role);
    }
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

  Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::string secret_ = auth::generate_secret(auth::Algorithm::kHS256);
  std::unique_ptr<BrokerServer> server_;
  std::string base_;
};

TEST_F(HttpSecurityTest, RequestsWithoutValidCredentialsGet401WithoutAReasonBody) {
  start({});
  make_resources();
  for (const std::string& who :
       {std::string(), std::string("raw:Basic cm9vdDp4"), std::string("raw:Bearer "),
        std::string("raw:bearer ") + token("root"), std::string("raw:Bearer not.a.jwt")}) {
    Answer r = call(who, "GET", "/admin/v2/tenants");
    EXPECT_EQ(r.status, 401) << who << ": " << r;
    EXPECT_EQ(r.reason(), "") << "the container's 401 has no {reason}: " << r;
  }
  Answer other_key =
      call("raw:Bearer " + *auth::encode_jwt({{"sub", "root"}},
                                             *auth::TokenKey::secret(std::string(32, 'k')),
                                             auth::Algorithm::kHS256),
           "GET", "/admin/v2/tenants");
  EXPECT_EQ(other_key.status, 401);
  EXPECT_EQ(call("root", "GET", "/admin/v2/tenants").status, 200);
  // /metrics is open by default.
  EXPECT_EQ(call("", "GET", "/metrics").status, 200);
}

// The web console's files hold no data: served without credentials, while every call the page
// makes for data is authenticated as any other.
TEST_F(HttpSecurityTest, TheWebConsoleFilesAreOpenAndItsDataCallsAreNot) {
  start({});
  make_resources();
  Answer index = call("", "GET", "/console/");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.body.find("<title>Magnetar console</title>"), std::string::npos);
  EXPECT_EQ(call("", "GET", "/console/main.js").status, 200);
  EXPECT_EQ(call("", "GET", "/console/secret.key").status, 404);
  EXPECT_EQ(call("", "GET", "/admin/v2/clusters").status, 401);
  EXPECT_EQ(call("raw:Bearer not.a.jwt", "GET", "/admin/v2/clusters").status, 401);
  EXPECT_EQ(call("root", "GET", "/admin/v2/clusters").status, 200);
}

TEST_F(HttpSecurityTest, SuperUsersTenantAdminsAndOthers) {
  start({});
  make_resources();
  // Only super users create tenants and clusters.
  Answer t = call("t-admin", "PUT", "/admin/v2/tenants/third", R"({"allowedClusters":["test"]})");
  EXPECT_EQ(t.status, 401) << t;
  EXPECT_EQ(t.reason(), "This operation requires super-user access");
  // A tenant admin administers its namespaces, and no other tenant's.
  EXPECT_EQ(call("t-admin", "PUT", "/admin/v2/namespaces/public/ns2").status, 204);
  EXPECT_EQ(call("t-admin", "POST", "/admin/v2/namespaces/public/ns2/messageTTL", "60").status,
            204);
  Answer foreign = call("t-admin", "PUT", "/admin/v2/namespaces/other/ns");
  EXPECT_EQ(foreign.status, 401) << foreign;
  EXPECT_EQ(foreign.reason(), "Don't have permission to administrate resources on this tenant");
  EXPECT_EQ(call("o-admin", "PUT", "/admin/v2/namespaces/other/ns").status, 204);
  EXPECT_EQ(call("t-admin", "GET", "/admin/v2/namespaces/nosuch").status, 404);
  // Anybody else: a topic operation names the operation and the topic.
  EXPECT_EQ(call("t-admin", "PUT", kTopic).status, 204);
  Answer stats = call("app1", "GET", kTopic + "/stats");
  EXPECT_EQ(stats.status, 401) << stats;
  EXPECT_EQ(stats.reason(),
            "Unauthorized to validateTopicOperation for operation [GET_STATS] on topic "
            "[persistent://public/default/t1]");
  // A namespace-level consume grant opens the stats and the topic list, not the policies.
  EXPECT_EQ(call("t-admin", "POST", kNsUrl + "/permissions/app1", R"(["consume"])").status, 204);
  // (The grant reaches the authorization cache by a store notification: soon, not at once.)
  EXPECT_TRUE(magnetar::testing::eventually(
      [&] { return call("app1", "GET", kTopic + "/stats").status == 200; }));
  EXPECT_EQ(call("app1", "GET", kNsUrl + "/topics").status, 200);
  EXPECT_EQ(call("app1", "GET", kNsUrl + "/messageTTL").status, 401);
  EXPECT_EQ(call("app1", "PUT", "/admin/v2/persistent/public/default/t9").status, 401);
}

TEST_F(HttpSecurityTest, GrantsAndRevokesThroughTheRestApi) {
  start({});
  make_resources();
  EXPECT_EQ(call("t-admin", "PUT", kTopic).status, 204);
  EXPECT_EQ(
      call("t-admin", "POST", kNsUrl + "/permissions/app1", R"(["consume","produce"])").status,
      204);
  EXPECT_EQ(call("t-admin", "GET", kNsUrl + "/permissions").json(),
            Json::parse(R"({"app1":["consume","produce"]})"));
  Answer bad = call("t-admin", "POST", kNsUrl + "/permissions/app1", R"(["write"])");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.reason(),
            "Illegal auth action 'write'. Possible values: [produce, consume, functions, sources, "
            "sinks, packages]");
  // Topic level: stored in destination_auth, listed with the namespace's grants.
  EXPECT_EQ(call("t-admin", "POST", kTopic + "/permissions/app2", R"(["produce"])").status, 204);
  EXPECT_EQ(call("t-admin", "GET", kTopic + "/permissions").json(),
            Json::parse(R"({"app1":["consume","produce"],"app2":["produce"]})"));
  EXPECT_EQ(call("t-admin", "POST", "/admin/v2/persistent/public/default/none/permissions/app2",
                 R"(["produce"])")
                .status,
            404);
  Answer ns_level = call("t-admin", "DELETE", kTopic + "/permissions/app1");
  EXPECT_EQ(ns_level.status, 412);
  EXPECT_EQ(ns_level.reason(), "Permissions are not set at the topic level");
  EXPECT_EQ(call("t-admin", "DELETE", kTopic + "/permissions/app2").status, 204);
  EXPECT_EQ(call("t-admin", "GET", kTopic + "/permissions").json(),
            Json::parse(R"({"app1":["consume","produce"]})"));
  // Subscription roles.
  EXPECT_EQ(
      call("t-admin", "POST", kNsUrl + "/permissions/subscription/sub-a", R"(["r2","r1"])").status,
      204);
  EXPECT_EQ(call("t-admin", "GET", kNsUrl + "/permissions/subscription").json(),
            Json::parse(R"({"sub-a":["r1","r2"]})"));
  EXPECT_EQ(call("t-admin", "DELETE", kNsUrl + "/permissions/sub-a/r1").status, 204);
  EXPECT_EQ(call("t-admin", "GET", kNsUrl + "/permissions/subscription").json(),
            Json::parse(R"({"sub-a":["r2"]})"));
  EXPECT_EQ(call("t-admin", "DELETE", kNsUrl + "/permissions/app1").status, 204);
  EXPECT_EQ(call("t-admin", "GET", kNsUrl + "/permissions").json(), Json::object());
  // Somebody else's grants are not theirs to change.
  EXPECT_EQ(call("app1", "POST", kNsUrl + "/permissions/app1", R"(["produce"])").status, 401);
}

TEST_F(HttpSecurityTest, GrantsAreKeptWithoutAuthorizationEnabled) {
  // As Pulsar 3.x/4.x: grants are stored either way (they apply once authorization is on).
  start([](BrokerConfig& c) { c.authorization_enabled = false; });
  make_resources();
  Answer r = call("anyone", "POST", kNsUrl + "/permissions/app1", R"(["produce"])");
  EXPECT_EQ(r.status, 204) << r;
  EXPECT_EQ(call("anyone", "GET", kNsUrl + "/permissions").json(),
            Json::parse(R"({"app1":["produce"]})"));
  EXPECT_EQ(call("anyone", "DELETE", kNsUrl + "/permissions/app1").status, 204);
  EXPECT_EQ(call("anyone", "GET", kNsUrl + "/permissions").json(), Json::object());
  // Authentication alone: any authenticated role may do anything, nobody else anything.
  EXPECT_EQ(call("anyone", "PUT", "/admin/v2/tenants/x", R"({"allowedClusters":["test"]})").status,
            204);
  EXPECT_EQ(call("", "GET", "/admin/v2/tenants").status, 401);
}

TEST_F(HttpSecurityTest, MetricsCanRequireAuthenticationAndAnonymousTakesFailedTokens) {
  start([](BrokerConfig& c) {
    c.authenticate_metrics_endpoint = true;
    c.authentication.anonymous_role = "guest";
  });
  make_resources();
  start([](BrokerConfig& c) { c.authenticate_metrics_endpoint = true; });
  EXPECT_EQ(call("", "GET", "/metrics").status, 401);
  EXPECT_EQ(call("raw:Bearer nope", "GET", "/metrics").status, 401);
  Answer metrics = call("app1", "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body.find(token("app1")), std::string::npos);
  // With an anonymous role, no token and a bad token both run as it (Pulsar's HTTP filter):
  // authorized as the guest it is, so the refusal is the authorization's.
  start([](BrokerConfig& c) { c.authentication.anonymous_role = "guest"; });
  for (const std::string& who : {std::string(), std::string("raw:Bearer garbage")}) {
    Answer r = call(who, "GET", "/admin/v2/namespaces/public");
    EXPECT_EQ(r.status, 401) << r;
    EXPECT_EQ(r.reason(), "Don't have permission to administrate resources on this tenant");
  }
  EXPECT_EQ(call("t-admin", "POST", kNsUrl + "/permissions/guest", R"(["consume"])").status, 204);
  EXPECT_EQ(call("", "GET", kNsUrl + "/topics").status, 200);
}

// Tokens, the key and the broker's own credentials appear in no log line (at debug level), no
// metric and no error body, while the authentication metrics count what happened.
TEST_F(HttpSecurityTest, SecretsStayOutOfLogsMetricsAndErrors) {
  const auto log_file =
      std::filesystem::temp_directory_path() / fmt::format("magnetar-secrets-{}.log", ::getpid());
  log::init(log::Options{log::Level::kDebug, false, log_file.string()});
  const std::string broker_token = token("broker-internal");
  // The counters are process-wide: what this test adds is what it checks.
  const auto counters = auth::authentication_metrics("AuthenticationProviderToken", "token");
  const double successes = counters.success->value();
  const double invalid = counters.failures.find("INVALID_TOKEN")->second->value();
  const double expired_before = counters.failures.find("EXPIRED_TOKEN")->second->value();
  const double expired_total = counters.expired->value();
  start([&](BrokerConfig& c) {
    c.broker_client_authentication_plugin = "token";
    c.broker_client_authentication_parameters = "token:" + broker_token;
  });
  make_resources();
  const std::string forged = *auth::encode_jwt(
      {{"sub", "root"}}, *auth::TokenKey::secret(std::string(32, 'f')), auth::Algorithm::kHS256);
  const std::string expired = *auth::encode_jwt(
      {{"sub", "root"}, {"exp", 1000}}, *auth::TokenKey::secret(secret_), auth::Algorithm::kHS256);
  std::vector<std::string> bodies;
  for (const std::string& bad : {forged, expired}) {
    bodies.push_back(call("raw:Bearer " + bad, "GET", "/admin/v2/tenants").body);
    testing::PulsarTestClient::Options o;
    o.port = server_->port();
    o.auth_method = "token";
    o.auth_data = bad;
    auto refused = testing::PulsarTestClient::connect(o);
    ASSERT_FALSE(refused.ok());
    bodies.push_back(refused.status().message());
  }
  const std::string app = token("app1");
  bodies.push_back(call("app1", "GET", kTopic + "/stats").body);  // refused: no grant
  Answer metrics = call("root", "GET", "/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("pulsar_authentication_success_total{provider_name="
                              "\"AuthenticationProviderToken\",auth_method=\"token\"}"),
            std::string::npos);
  EXPECT_NE(metrics.body.find("reason=\"INVALID_TOKEN\""), std::string::npos);
  EXPECT_NE(metrics.body.find("pulsar_expired_token_total"), std::string::npos);
  // Two forged tokens (HTTP and CONNECT), two expired ones, and the accepted ones.
  EXPECT_GE(counters.success->value() - successes, 3);
  EXPECT_EQ(counters.failures.find("INVALID_TOKEN")->second->value() - invalid, 2);
  EXPECT_EQ(counters.failures.find("EXPIRED_TOKEN")->second->value() - expired_before, 2);
  EXPECT_EQ(counters.expired->value() - expired_total, 2);
  server_->stop();
  log::init(log::Options{});
  std::ifstream in(log_file);
  const std::string logged{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::filesystem::remove(log_file);
  EXPECT_NE(logged.find("authentication failed"), std::string::npos) << "the log was written";
  const std::string secret_b64 = auth::base64_encode(secret_);
  for (const std::string& secret :
       {forged, expired, app, token("root"), broker_token, secret_b64}) {
    // The signature part is what makes a token a credential.
    const std::string part = secret.substr(secret.rfind('.') + 1);
    EXPECT_EQ(logged.find(part), std::string::npos) << "in the log";
    EXPECT_EQ(metrics.body.find(part), std::string::npos) << "in /metrics";
    for (const std::string& body : bodies) EXPECT_EQ(body.find(part), std::string::npos) << body;
  }
}

}  // namespace
}  // namespace magnetar::broker
