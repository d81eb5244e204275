// magnetar-admin run in-process: clusters, tenants and namespaces end to end against the real
// admin routes (an HttpServer over memory: stores, seeded as `magnetar standalone` seeds
// them); topics and brokers against a fake server that records each request and answers
// canned JSON, since their endpoints live elsewhere.

#include "cli/admin.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "broker/admin/admin_resources.h"
#include "http/http_server.h"
#include "metadata/metadata_store.h"
#include "net/tls.h"
#include "protocol/batch.h"
#include "testing/tls_certs.h"
#include "testing/test_name.h"

namespace magnetar::cli {
namespace {

using PlainJson = nlohmann::json;

struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

Ran run(std::vector<std::string> args, const std::string& input = "") {
  std::ostringstream out;
  std::ostringstream err;
  std::istringstream in(input);
  Ran o;
  o.code = run_admin(std::move(args), out, err, in);
  o.out = out.str();
  o.err = err.str();
  return o;
}

using magnetar::testing::test_name;

std::string url_of(const http::HttpServer& server) {
  return "http://127.0.0.1:" + std::to_string(server.port());
}

// ------------------------------------------------------------------------------------------
// Against the real admin routes

class AdminToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    configuration_ = open("memory:cli-config-" + test_name());
    cluster_ = open("memory:cli-cluster-" + test_name());
    ASSERT_TRUE(configuration_ && cluster_);
    put("/admin/clusters/standalone",
        R"({"serviceUrl":"http://127.0.0.1:8080","brokerServiceUrl":"pulsar://127.0.0.1:6650"})");
    put("/admin/policies/public", R"({"adminRoles":[],"allowedClusters":["standalone"]})");
    put("/admin/policies/public/default",
        R"({"replication_clusters":["standalone"],"bundles":{"numBundles":4}})");
    http::ServerOptions options;
    options.port = 0;
    auto server = http::HttpServer::start(options, log::Logger("cli-test"));
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
    broker::AdminResourcesOptions admin;
    broker::add_admin_resource_routes(*server_, metadata::MetadataStores{cluster_, configuration_},
                                      admin);
  }

  void TearDown() override {
    if (server_) server_->stop();
    for (auto* store : {&configuration_, &cluster_}) {
      if (*store) (void)run_sync<Status>([store] { return (*store)->close(); });
    }
  }

  static std::shared_ptr<metadata::MetadataStore> open(std::string url) {
    auto store = run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
        [&url] { return metadata::open_store(url); });
    if (!store.ok()) return nullptr;
    return std::shared_ptr<metadata::MetadataStore>(std::move(store).value());
  }

  void put(const std::string& path, const std::string& value) {
    auto made = run_sync<Result<metadata::PutResult>>(
        [&] { return configuration_->put_recursive(path, value); });
    ASSERT_TRUE(made.ok()) << made.status().to_string();
  }

  // magnetar-admin --admin-url <this server> args...
  Ran admin(std::vector<std::string> args) {
    args.insert(args.begin(), {"--admin-url", url_of(*server_)});
    return run(std::move(args));
  }

  // Runs a command that must succeed and returns what it printed.
  std::string ok(std::vector<std::string> args) {
    Ran o = admin(args);
    EXPECT_EQ(o.code, 0) << args[0] << " " << args[1] << ": " << o.err;
    EXPECT_EQ(o.err, "");
    return o.out;
  }

  std::shared_ptr<metadata::MetadataStore> configuration_;
  std::shared_ptr<metadata::MetadataStore> cluster_;
  std::unique_ptr<http::HttpServer> server_;
};

TEST_F(AdminToolTest, ManagesClusters) {
  EXPECT_EQ(ok({"clusters", "list"}), "standalone\n");
  EXPECT_EQ(ok({"clusters", "create", "c2", "--url", "http://c2:8080", "--broker-url",
                "pulsar://c2:6650"}),
            "");
  EXPECT_EQ(ok({"clusters", "list"}), "c2\nstandalone\n");
  const std::string got = ok({"clusters", "get", "c2"});
  EXPECT_NE(got.find("  \"serviceUrl\" : \"http://c2:8080\",\n"), std::string::npos) << got;
  EXPECT_EQ(PlainJson::parse(got)["brokerServiceUrl"], "pulsar://c2:6650");
  EXPECT_EQ(ok({"clusters", "update", "c2", "--url", "http://c2b:8080"}), "");
  EXPECT_EQ(PlainJson::parse(ok({"clusters", "get", "c2"}))["serviceUrl"], "http://c2b:8080");
  EXPECT_EQ(ok({"clusters", "delete", "c2"}), "");

  Ran missing = admin({"clusters", "get", "c2"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.out, "");
  EXPECT_EQ(missing.err, "Cluster does not exist\n\nReason: Cluster does not exist\n");
  Ran bad_url = admin({"clusters", "create", "c3", "--broker-url", "http://x:6650"});
  EXPECT_EQ(bad_url.code, 1);
  EXPECT_NE(bad_url.err.find("Illegal broker service url"), std::string::npos) << bad_url.err;
}

TEST_F(AdminToolTest, ReachesAnHttpsAdminUrlWithTlsFlagsOrClientConf) {
  const std::string dir = (std::filesystem::temp_directory_path() /
                           ("magnetar-admin-tls-" + std::to_string(::getpid())))
                              .string();
  auto certs = testing::make_test_certs(dir);
  ASSERT_TRUE(certs.ok()) << certs.status().to_string();
  net::TlsOptions t;
  t.certificate_file = certs->server_cert;
  t.private_key_file = certs->server_key;
  auto tls = net::TlsContext::create(net::TlsRole::kServer, t);
  ASSERT_TRUE(tls.ok()) << tls.status().to_string();
  server_->stop();
  http::ServerOptions options;
  options.port = 0;
  options.tls = *tls;
  auto server = http::HttpServer::start(options, log::Logger("cli-test"));
  ASSERT_TRUE(server.ok()) << server.status().to_string();
  server_ = std::move(server).value();
  broker::add_admin_resource_routes(*server_, metadata::MetadataStores{cluster_, configuration_},
                                    broker::AdminResourcesOptions{});
  const std::string https = "https://127.0.0.1:" + std::to_string(server_->tls_port());

  Ran trusted = run({"--admin-url", https, "--tls-trust-cert-path", certs->ca_cert,
                         "--tls-enable-hostname-verification", "tenants", "list"});
  EXPECT_EQ(trusted.code, 0) << trusted.err;
  EXPECT_EQ(trusted.out, "public\n");

  Ran untrusted = run({"--admin-url", https, "tenants", "list"});
  EXPECT_EQ(untrusted.code, 1);
  EXPECT_NE(untrusted.err.find("certificate verify failed"), std::string::npos) << untrusted.err;

  Ran insecure = run({"--admin-url", https, "--tls-allow-insecure", "tenants", "list"});
  EXPECT_EQ(insecure.code, 0) << insecure.err;

  const std::string conf = dir + "/client.conf";
  {
    std::ofstream f(conf);
    f << "webServiceUrl=" << https << "\ntlsTrustCertsFilePath=" << certs->ca_cert
      << "\ntlsEnableHostnameVerification=true\n";
  }
  Ran from_conf = run({"--conf", conf, "tenants", "list"});
  EXPECT_EQ(from_conf.code, 0) << from_conf.err;
  EXPECT_EQ(from_conf.out, "public\n");
  std::filesystem::remove_all(dir);
}

TEST_F(AdminToolTest, ManagesTenants) {
  // Without --allowed-clusters the tenant gets every cluster.
  EXPECT_EQ(ok({"tenants", "create", "acme", "-r", "alice,bob"}), "");
  EXPECT_EQ(ok({"tenants", "get", "acme"}),
            "{\n"
            "  \"adminRoles\" : [ \"alice\", \"bob\" ],\n"
            "  \"allowedClusters\" : [ \"standalone\" ]\n"
            "}\n");
  EXPECT_EQ(ok({"tenants", "list"}), "acme\npublic\n");
  // update keeps what it is not given.
  EXPECT_EQ(ok({"tenants", "update", "acme", "--admin-roles", "carol"}), "");
  PlainJson acme = PlainJson::parse(ok({"tenants", "get", "acme"}));
  EXPECT_EQ(acme["adminRoles"], PlainJson::parse(R"(["carol"])"));
  EXPECT_EQ(acme["allowedClusters"], PlainJson::parse(R"(["standalone"])"));

  Ran exists = admin({"tenants", "create", "acme", "-c", "standalone"});
  EXPECT_EQ(exists.code, 1);
  EXPECT_EQ(exists.err, "Tenant already exists\n\nReason: Tenant already exists\n");
  Ran unknown_cluster = admin({"tenants", "create", "t2", "--allowed-clusters", "nope"});
  EXPECT_EQ(unknown_cluster.code, 1);
  EXPECT_NE(unknown_cluster.err.find("Clusters do not exist"), std::string::npos);

  EXPECT_EQ(ok({"tenants", "delete", "acme"}), "");
  Ran gone = admin({"tenants", "get", "acme"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_EQ(gone.err, "Tenant does not exist\n\nReason: Tenant does not exist\n");
}

TEST_F(AdminToolTest, CreatesListsAndDeletesNamespaces) {
  EXPECT_EQ(ok({"namespaces", "create", "public/ns1", "--bundles", "8", "-c", "standalone"}), "");
  EXPECT_EQ(ok({"namespaces", "list", "public"}), "public/default\npublic/ns1\n");
  PlainJson policies = PlainJson::parse(ok({"namespaces", "policies", "public/ns1"}));
  EXPECT_EQ(policies["bundles"]["numBundles"], 8);
  EXPECT_EQ(policies["replication_clusters"], PlainJson::parse(R"(["standalone"])"));
  EXPECT_EQ(PlainJson::parse(ok({"namespaces", "bundles", "public/ns1"}))["boundaries"].size(), 9u);
  EXPECT_EQ(ok({"namespaces", "topics", "public/ns1"}), "");
  EXPECT_EQ(ok({"namespaces", "get-clusters", "public/ns1"}), "standalone\n");
  EXPECT_EQ(ok({"namespaces", "set-clusters", "public/ns1", "--clusters", "standalone"}), "");

  Ran again = admin({"namespaces", "create", "public/ns1"});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.err, "Namespace already exists\n\nReason: Namespace already exists\n");
  EXPECT_EQ(ok({"namespaces", "delete", "public/ns1"}), "");
  Ran gone = admin({"namespaces", "policies", "public/ns1"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_EQ(gone.err, "Namespace does not exist\n\nReason: Namespace does not exist\n");
  Ran bad = admin({"namespaces", "policies", "just-a-tenant"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("Invalid namespace name"), std::string::npos);
}

TEST_F(AdminToolTest, SetsGetsAndRemovesNamespacePolicies) {
  const std::string ns = "public/default";
  EXPECT_EQ(ok({"namespaces", "get-retention", ns}), "null\n");
  EXPECT_EQ(ok({"namespaces", "set-retention", ns, "--size", "10G", "--time", "3h"}), "");
  EXPECT_EQ(ok({"namespaces", "get-retention", ns}),
            "{\n  \"retentionTimeInMinutes\" : 180,\n  \"retentionSizeInMB\" : 10240\n}\n");
  EXPECT_EQ(ok({"namespaces", "set-retention", ns, "-s", "-1", "-t", "-1"}), "");
  EXPECT_EQ(PlainJson::parse(ok({"namespaces", "get-retention", ns}))["retentionSizeInMB"], -1);
  EXPECT_EQ(ok({"namespaces", "remove-retention", ns}), "");
  EXPECT_EQ(ok({"namespaces", "get-retention", ns}), "null\n");

  EXPECT_EQ(ok({"namespaces", "set-message-ttl", ns, "-ttl", "1h"}), "");
  EXPECT_EQ(ok({"namespaces", "get-message-ttl", ns}), "3600\n");
  EXPECT_EQ(ok({"namespaces", "set-message-ttl", ns, "--messageTTL", "120"}), "");
  EXPECT_EQ(ok({"namespaces", "get-message-ttl", ns}), "120\n");
  EXPECT_EQ(ok({"namespaces", "remove-message-ttl", ns}), "");
  EXPECT_EQ(ok({"namespaces", "get-message-ttl", ns}), "null\n");

  EXPECT_EQ(ok({"namespaces", "set-backlog-quota", ns, "-l", "1G", "-p", "producer_exception"}),
            "");
  EXPECT_EQ(ok({"namespaces", "set-backlog-quota", ns, "-lt", "2h", "-p",
                "consumer_backlog_eviction", "-bt", "message_age"}),
            "");
  // Printed as pulsar-admin prints the map: each BacklogQuota's toString().
  const std::string quotas = ok({"namespaces", "get-backlog-quotas", ns});
  EXPECT_NE(quotas.find("destination_storage    BacklogQuotaImpl(limit=1073741824, "
                        "limitSize=1073741824, limitTime="),
            std::string::npos)
      << quotas;
  EXPECT_NE(quotas.find("policy=producer_exception)\n"), std::string::npos) << quotas;
  EXPECT_NE(quotas.find("limitTime=7200, policy=consumer_backlog_eviction)\n"), std::string::npos)
      << quotas;
  EXPECT_EQ(ok({"namespaces", "remove-backlog-quota", ns}), "");
  EXPECT_EQ(ok({"namespaces", "remove-backlog-quota", ns, "-t", "message_age"}), "");
  EXPECT_EQ(ok({"namespaces", "get-backlog-quotas", ns}), "");

  EXPECT_EQ(ok({"namespaces", "get-deduplication", ns}), "null\n");
  EXPECT_EQ(ok({"namespaces", "set-deduplication", ns, "--enable"}), "");
  EXPECT_EQ(ok({"namespaces", "get-deduplication", ns}), "true\n");
  EXPECT_EQ(ok({"namespaces", "set-deduplication", ns, "-d"}), "");
  EXPECT_EQ(ok({"namespaces", "get-deduplication", ns}), "false\n");

  EXPECT_EQ(ok({"namespaces", "get-delayed-delivery", ns}), "null\n");
  EXPECT_EQ(ok({"namespaces", "set-delayed-delivery", ns, "-e", "-t", "2s", "-md", "1m"}), "");
  EXPECT_EQ(ok({"namespaces", "get-delayed-delivery", ns}),
            "{\n  \"tickTime\" : 2000,\n  \"active\" : true,\n  \"maxDeliveryDelayInMillis\" : "
            "60000\n}\n");
  EXPECT_EQ(ok({"namespaces", "set-delayed-delivery", ns, "--disable"}), "");
  EXPECT_EQ(ok({"namespaces", "get-delayed-delivery", ns}),
            "{\n  \"tickTime\" : 1000,\n  \"active\" : false,\n  \"maxDeliveryDelayInMillis\" : "
            "0\n}\n");
  EXPECT_EQ(ok({"namespaces", "remove-delayed-delivery", ns}), "");
  EXPECT_EQ(ok({"namespaces", "get-delayed-delivery", ns}), "null\n");

  EXPECT_EQ(
      ok({"namespaces", "grant-permission", ns, "--role", "app", "--actions", "produce,consume"}),
      "");
  // pulsar-admin prints the map as Java does: role, four spaces, the set.
  EXPECT_EQ(ok({"namespaces", "permissions", ns}), "app    [consume, produce]\n");
  EXPECT_EQ(ok({"namespaces", "grant-subscription-permission", ns, "--subscription", "s1",
                "--roles", "app,ops"}),
            "");
  EXPECT_EQ(ok({"namespaces", "revoke-subscription-permission", ns, "--subscription", "s1",
                "--role", "app"}),
            "");
  EXPECT_EQ(ok({"namespaces", "revoke-permission", ns, "--role", "app"}), "");
  EXPECT_EQ(ok({"namespaces", "permissions", ns}), "");
}

TEST_F(AdminToolTest, RejectsBadArgumentValuesWithoutCallingTheServer) {
  const std::string ns = "public/default";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"namespaces", "set-retention", ns, "-s", "10X", "-t", "1h"},
           {"namespaces", "set-retention", ns, "-s", "1G", "-t", "soon"},
           {"namespaces", "set-message-ttl", ns, "-ttl", "-5"},
           {"namespaces", "set-deduplication", ns},
           {"namespaces", "set-delayed-delivery", ns, "-t", "1s"},
           {"namespaces", "set-delayed-delivery", ns, "-e", "-t", "soon"},
           {"namespaces", "set-backlog-quota", ns, "-p", "producer_exception"},
           {"namespaces", "set-backlog-quota", ns, "-l", "1G", "-p", "drop_everything"},
       }) {
    Ran o = admin(args);
    EXPECT_EQ(o.code, 1) << args[1];
    EXPECT_FALSE(o.err.empty()) << args[1];
  }
  EXPECT_EQ(ok({"namespaces", "get-retention", ns}), "null\n");
  EXPECT_EQ(ok({"namespaces", "get-deduplication", ns}), "null\n");
}

// ------------------------------------------------------------------------------------------
// Usage and connection errors

TEST(AdminToolUsageTest, PrintsUsageAndExitsOneOnUsageErrors) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"tenants"},
           {"tenants", "get"},
           {"tenants", "fly"},
           {"namespaces", "create", "a/b", "--bundles", "many"},
           {"topics", "skip", "t", "-s", "sub"},
           {"clusters", "list", "--no-such-flag"},
       }) {
    Ran o = run(args);
    EXPECT_EQ(o.code, 1) << (args.empty() ? "" : args.back());
    EXPECT_NE(o.err.find("Usage"), std::string::npos) << o.err;
    EXPECT_EQ(o.out, "");
  }
}

TEST(AdminToolUsageTest, HelpGoesToStandardOutput) {
  Ran o = run({"namespaces", "set-retention", "--help"});
  EXPECT_EQ(o.code, 0);
  EXPECT_NE(o.out.find("--size"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--time"), std::string::npos) << o.out;
  Ran top = run({"--help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_NE(top.out.find("namespaces"), std::string::npos);
}

TEST(AdminToolUsageTest, ReportsAnUnreachableServer) {
  uint16_t port = 0;
  {
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor(
        io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  Ran o = run({"--admin-url", url, "tenants", "list"});
  EXPECT_EQ(o.code, 1);
  EXPECT_NE(o.err.find("connection refused"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("Error connecting to: " + url), std::string::npos) << o.err;
  Ran bad = run({"--admin-url", "localhost:8080", "tenants", "list"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("Invalid admin URL"), std::string::npos) << bad.err;
}

// ------------------------------------------------------------------------------------------
// Against a fake server

struct Recorded {
  std::string method;
  std::string target;
  std::string body;
  std::string authorization;
};

// Records every request; answers the canned response for "METHOD /path" (query ignored), or
// 204.
class FakeAdmin {
 public:
  FakeAdmin() {
    http::ServerOptions options;
    options.port = 0;
    auto server = http::HttpServer::start(options, log::Logger("fake-admin"));
    EXPECT_TRUE(server.ok());
    server_ = std::move(server).value();
    for (const char* m : {"GET", "PUT", "POST", "DELETE"}) {
      server_->route_prefix(m, "/", [this](const http::Request& req) -> Task<http::Response> {
        std::lock_guard<std::mutex> lock(mu_);
        auto auth = req.headers.find("authorization");
        requests_.push_back(
            {req.method, req.target, req.body, auth == req.headers.end() ? "" : auth->second});
        auto it = canned_.find(req.method + " " + req.path);
        if (it != canned_.end()) co_return it->second;
        http::Response r;
        r.status = 204;
        co_return r;
      });
    }
  }

  void answer(const std::string& key, int status, std::string body,
              std::map<std::string, std::string> headers = {}) {
    std::lock_guard<std::mutex> lock(mu_);
    http::Response r = http::Response::json(status, std::move(body));
    r.headers = std::move(headers);
    canned_[key] = std::move(r);
  }

  std::vector<Recorded> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  Ran admin(std::vector<std::string> args) {
    args.insert(args.begin(), {"--admin-url", url_of(*server_)});
    return run(std::move(args));
  }

  std::string url() const { return url_of(*server_); }

 private:
  std::unique_ptr<http::HttpServer> server_;
  std::mutex mu_;
  std::map<std::string, http::Response> canned_;
  std::vector<Recorded> requests_;
};

struct Expected {
  std::vector<std::string> args;
  std::string method;
  std::string target;
  std::string body;
};

void expect_requests(const std::vector<Expected>& cases) {
  for (const Expected& c : cases) {
    FakeAdmin fake;
    Ran o = fake.admin(c.args);
    std::string cmd;
    for (const auto& a : c.args) cmd += a + " ";
    EXPECT_EQ(o.code, 0) << cmd << o.err;
    auto requests = fake.requests();
    ASSERT_EQ(requests.size(), 1u) << cmd;
    EXPECT_EQ(requests[0].method, c.method) << cmd;
    EXPECT_EQ(requests[0].target, c.target) << cmd;
    EXPECT_EQ(requests[0].body, c.body) << cmd;
  }
}

const std::string kTopic = "/admin/v2/persistent/public/default/orders";
const std::string kSub = kTopic + "/subscription/my-sub";
const std::string kEarliest =
    R"({"batchIndex":-1,"entryId":-1,"isExcluded":false,"ledgerId":-1,"partitionIndex":-1})";
const std::string kLatest = R"({"batchIndex":-1,"entryId":9223372036854775807,"isExcluded":false,)"
                            R"("ledgerId":9223372036854775807,"partitionIndex":-1})";

TEST(AdminToolFakeServerTest, TopicCommandsSendPulsarsRequests) {
  expect_requests({
      {{"topics", "create", "orders"}, "PUT", kTopic, ""},
      {{"topics", "create", "non-persistent://t/ns/x"},
       "PUT",
       "/admin/v2/non-persistent/t/ns/x",
       ""},
      {{"topics", "create-partitioned-topic", "persistent://public/default/orders", "-p", "4"},
       "PUT",
       kTopic + "/partitions",
       "4"},
      {{"topics", "update-partitioned-topic", "public/default/orders", "--partitions", "8"},
       "POST",
       kTopic + "/partitions?updateLocalTopicOnly=false&force=false",
       "8"},
      {{"topics", "delete-partitioned-topic", "orders", "-f"},
       "DELETE",
       kTopic + "/partitions?force=true",
       ""},
      {{"topics", "get-partitioned-topic-metadata", "orders"}, "GET", kTopic + "/partitions", ""},
      {{"topics", "delete", "orders"}, "DELETE", kTopic + "?force=false", ""},
      {{"topics", "delete", "orders", "--force"}, "DELETE", kTopic + "?force=true", ""},
      {{"topics", "stats", "orders"}, "GET", kTopic + "/stats", ""},
      {{"topics", "partitioned-stats", "orders", "--per-partition"},
       "GET",
       kTopic + "/partitioned-stats?perPartition=true",
       ""},
      {{"topics", "stats-internal", "orders"}, "GET", kTopic + "/internalStats", ""},
      {{"topics", "subscriptions", "orders"}, "GET", kTopic + "/subscriptions", ""},
      {{"topics", "create-subscription", "orders", "-s", "my-sub"},
       "PUT",
       kSub + "?replicated=false",
       kLatest},
      {{"topics", "create-subscription", "orders", "-s", "my-sub", "-m", "earliest"},
       "PUT",
       kSub + "?replicated=false",
       kEarliest},
      {{"topics", "unsubscribe", "orders", "-s", "my-sub", "-f"},
       "DELETE",
       kSub + "?force=true",
       ""},
      {{"topics", "skip", "orders", "-s", "my-sub", "-n", "5"}, "POST", kSub + "/skip/5", ""},
      {{"topics", "clear-backlog", "orders", "--subscription", "my-sub"},
       "POST",
       kSub + "/skip_all",
       ""},
      {{"topics", "reset-cursor", "orders", "-s", "my-sub", "-m", "3:4"},
       "POST",
       kSub + "/resetcursor",
       R"({"batchIndex":-1,"entryId":4,"isExcluded":false,"ledgerId":3,"partitionIndex":-1})"},
      {{"topics", "expire-messages", "orders", "-s", "my-sub", "-t", "1h"},
       "POST",
       kSub + "/expireMessages/3600",
       ""},
      {{"topics", "expire-messages-all-subscriptions", "orders", "--expireTime", "30"},
       "POST",
       kTopic + "/all_subscription/expireMessages/30",
       ""},
      {{"topics", "unload", "orders"}, "PUT", kTopic + "/unload", ""},
      {{"topics", "last-message-id", "orders"}, "GET", kTopic + "/lastMessageId", ""},
      {{"topics", "set-replication-clusters", "orders", "--clusters", "east,west"},
       "POST",
       kTopic + "/replication?isGlobal=false",
       R"(["east","west"])"},
      {{"topics", "set-replication-clusters", "orders", "-c", "east", "-g"},
       "POST",
       kTopic + "/replication?isGlobal=true",
       R"(["east"])"},
      {{"topics", "get-replication-clusters", "orders", "--applied"},
       "GET",
       kTopic + "/replication?applied=true&isGlobal=false",
       ""},
      {{"topics", "remove-replication-clusters", "orders"},
       "DELETE",
       kTopic + "/replication?isGlobal=false",
       ""},
  });
}

TEST(AdminToolFakeServerTest, NamespaceAndBrokerCommandsSendPulsarsRequests) {
  const std::string ns = "/admin/v2/namespaces/public/default";
  expect_requests({
      {{"namespaces", "unload", "public/default"}, "PUT", ns + "/unload", ""},
      {{"namespaces", "unload", "public/default", "-b", "0x00000000_0x40000000"},
       "PUT",
       ns + "/0x00000000_0x40000000/unload",
       ""},
      {{"namespaces", "split-bundle", "public/default", "-b", "0x00000000_0x40000000", "-u"},
       "PUT",
       ns + "/0x00000000_0x40000000/split?unload=true",
       ""},
      {{"namespaces", "clear-backlog", "public/default", "-force"},
       "POST",
       ns + "/clearBacklog",
       ""},
      {{"namespaces", "clear-backlog", "public/default", "-s", "my-sub", "--force"},
       "POST",
       ns + "/clearBacklog/my-sub",
       ""},
      {{"namespaces", "delete", "public/default", "-f"}, "DELETE", ns + "?force=true", ""},
      {{"namespaces", "topics", "public/default", "-m", "all"}, "GET", ns + "/topics?mode=ALL", ""},
      {{"namespaces", "set-backlog-quota", "public/default", "-lt", "1h", "-p",
        "consumer_backlog_eviction", "-bt", "message_age"},
       "POST",
       ns + "/backlogQuota?backlogQuotaType=message_age",
       R"({"limitSize":-1,"limitTime":3600,"policy":"consumer_backlog_eviction"})"},
      {{"namespaces", "grant-permission", "public/default", "--role", "a b", "--actions",
        "consume"},
       "POST",
       ns + "/permissions/a%20b",
       R"(["consume"])"},
      {{"brokers", "list", "standalone"}, "GET", "/admin/v2/brokers/standalone", ""},
      {{"brokers", "healthcheck"}, "GET", "/admin/v2/brokers/health", ""},
      {{"brokers", "leader-broker"}, "GET", "/admin/v2/brokers/leaderBroker", ""},
      {{"brokers", "get-internal-config"}, "GET", "/admin/v2/brokers/internal-configuration", ""},
  });
}

TEST(AdminToolFakeServerTest, ResetCursorByTimeSendsATimestampThatLongAgo) {
  FakeAdmin fake;
  const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  ASSERT_EQ(fake.admin({"topics", "reset-cursor", "orders", "-s", "my-sub", "-t", "10m"}).code, 0);
  auto requests = fake.requests();
  ASSERT_EQ(requests.size(), 1u);
  const std::string prefix = kSub + "/resetcursor/";
  ASSERT_EQ(requests[0].target.rfind(prefix, 0), 0u) << requests[0].target;
  const int64_t ts = std::stoll(requests[0].target.substr(prefix.size()));
  EXPECT_NEAR(static_cast<double>(ts), static_cast<double>(now_ms - 600'000), 10'000.0);
  // Exactly one of --time and --messageId.
  EXPECT_EQ(fake.admin({"topics", "reset-cursor", "orders", "-s", "my-sub"}).code, 1);
  EXPECT_EQ(fake.requests().size(), 1u);
}

TEST(AdminToolFakeServerTest, ListsTopicsOfBothDomains) {
  FakeAdmin fake;
  fake.answer("GET /admin/v2/persistent/public/default", 200,
              R"(["persistent://public/default/a","persistent://public/default/b"])");
  fake.answer("GET /admin/v2/non-persistent/public/default", 404, R"({"reason":"Not Found"})");
  Ran o = fake.admin({"topics", "list", "public/default"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out, "persistent://public/default/a\npersistent://public/default/b\n");
  auto requests = fake.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].target, "/admin/v2/non-persistent/public/default");

  fake.answer("GET /admin/v2/non-persistent/public/default", 200,
              R"(["non-persistent://public/default/n"])");
  EXPECT_EQ(fake.admin({"topics", "list", "public/default", "-td", "non_persistent"}).out,
            "non-persistent://public/default/n\n");
}

TEST(AdminToolFakeServerTest, PrintsAnswersAsPulsarAdminDoes) {
  FakeAdmin fake;
  fake.answer("GET " + kTopic + "/stats", 200,
              R"({"msgRateIn":0.0,"publishers":[],"subscriptions":{"s":{"msgBacklog":3}}})");
  EXPECT_EQ(fake.admin({"topics", "stats", "orders"}).out,
            "{\n"
            "  \"msgRateIn\" : 0.0,\n"
            "  \"publishers\" : [ ],\n"
            "  \"subscriptions\" : {\n"
            "    \"s\" : {\n"
            "      \"msgBacklog\" : 3\n"
            "    }\n"
            "  }\n"
            "}\n");
  fake.answer("POST " + kTopic + "/terminate", 200,
              R"({"ledgerId":3,"entryId":7,"partitionIndex":-1})");
  EXPECT_EQ(fake.admin({"topics", "terminate", "orders"}).out,
            "Topic successfully terminated at 3:7:-1\n");
  fake.answer("GET /admin/v2/brokers/health", 200, "ok");
  EXPECT_EQ(fake.admin({"brokers", "healthcheck"}).out, "ok\n");
  fake.answer("GET " + kTopic + "/subscriptions", 200, R"(["a","b"])");
  EXPECT_EQ(fake.admin({"topics", "subscriptions", "orders"}).out, "a\nb\n");

  fake.answer("GET " + kTopic + "/lastMessageId", 500, "oops");
  Ran failed = fake.admin({"topics", "last-message-id", "orders"});
  EXPECT_EQ(failed.code, 1);
  EXPECT_EQ(failed.err,
            "HTTP 500 Internal Server Error\n\nReason: HTTP 500 Internal Server Error\n");
}

TEST(AdminToolFakeServerTest, PeeksMessagesOneRequestPerPosition) {
  FakeAdmin fake;
  fake.answer("GET " + kSub + "/position/1", 200, "hello",
              {{"X-Pulsar-Message-ID", "3:0"},
               {"X-Pulsar-publish-time", "2026-09-15T16:51:11.802Z"},
               {"X-Pulsar-PROPERTY", R"({"color":"red","Size":"L"})"}});
  fake.answer("GET " + kSub + "/position/2", 200, "",
              {{"X-Pulsar-Message-ID", "3:1:-1"}, {"X-Pulsar-PROPERTY-Trace", "t1"}});
  Ran o = fake.admin({"topics", "peek-messages", "orders", "-s", "my-sub", "-n", "2"});
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(o.out,
            "Message ID: 3:0\n"
            "Publish time: 1789491071802\n"
            "Event time: 0\n"
            "Properties:\n"
            "Size    L\n"
            "color    red\n"
            "         +-------------------------------------------------+\n"
            "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n"
            "+--------+-------------------------------------------------+----------------+\n"
            "|00000000| 68 65 6c 6c 6f                                  |hello           |\n"
            "+--------+-------------------------------------------------+----------------+\n"
            "-------------------------------------------------------------------------\n\n"
            "Message ID: 3:1\n"
            "Publish time: 0\n"
            "Event time: 0\n"
            "Properties:\n"
            "Trace    t1\n"
            "\n");
  auto requests = fake.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].target, kSub + "/position/1");
  EXPECT_EQ(requests[1].target, kSub + "/position/2");
}

// A batch answered whole is split into its messages, which share the entry's time lines and
// one sorted map of every message's properties with the two X-Pulsar-* keys; -n counts
// messages, so the second entry's batch is cut short; a 404 past the end stops quietly.
TEST(AdminToolFakeServerTest, PeekSplitsBatchesAndCountsMessages) {
  FakeAdmin fake;
  protocol::BatchBuilder batch;
  wire::SingleMessageMetadata one;
  auto* p1 = one.add_properties();
  p1->set_key("k");
  p1->set_value("v1");
  batch.add(one, "m0");
  wire::SingleMessageMetadata two;
  auto* p2 = two.add_properties();
  p2->set_key("other");
  p2->set_value("x");
  batch.add(two, "m1");
  const std::string body = batch.finish().to_string();
  fake.answer("GET " + kSub + "/position/1", 200, body,
              {{"X-Pulsar-Message-ID", "7:4"},
               {"X-Pulsar-publish-time", "1970-01-01T00:00:01.000Z"},
               {"X-Pulsar-num-batch-message", "2"},
               {"X-Pulsar-batch-size", "99"}});
  fake.answer("GET " + kSub + "/position/2", 200, body,
              {{"X-Pulsar-Message-ID", "7:5"}, {"X-Pulsar-num-batch-message", "2"}});
  Ran o = fake.admin({"topics", "peek-messages", "orders", "-s", "my-sub", "-n", "3"});
  ASSERT_EQ(o.code, 0) << o.err;
  const std::string dump_m0 =
      "         +-------------------------------------------------+\n"
      "         |  0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f |\n"
      "+--------+-------------------------------------------------+----------------+\n"
      "|00000000| 6d 30                                           |m0              |\n"
      "+--------+-------------------------------------------------+----------------+\n";
  const std::string first =
      "Batch Message ID: 7:4:0\n"
      "Publish time: 1000\n"
      "Event time: 0\n"
      "Properties:\n"
      "X-Pulsar-batch-size    99\n"
      "X-Pulsar-num-batch-message    2\n"
      "k    v1\n"
      "other    x\n" +
      dump_m0;
  EXPECT_EQ(o.out.substr(0, first.size()), first);
  EXPECT_NE(o.out.find("Batch Message ID: 7:4:1\n"), std::string::npos);
  EXPECT_NE(o.out.find("Batch Message ID: 7:5:0\n"), std::string::npos);
  EXPECT_EQ(o.out.find("Batch Message ID: 7:5:1"), std::string::npos);
  EXPECT_EQ(fake.requests().size(), 2u);

  fake.answer("GET " + kSub + "/position/3", 404, R"({"reason":"Message not found"})");
  Ran past_end = fake.admin({"topics", "peek-messages", "orders", "-s", "my-sub", "-n", "9"});
  EXPECT_EQ(past_end.code, 0) << past_end.err;
  EXPECT_NE(past_end.out.find("Batch Message ID: 7:5:1\n"), std::string::npos);

  // A batch that does not parse is an error naming the entry, not a crash.
  fake.answer("GET " + kSub + "/position/1", 200, "garbage",
              {{"X-Pulsar-Message-ID", "7:4"}, {"X-Pulsar-num-batch-message", "2"}});
  Ran bad = fake.admin({"topics", "peek-messages", "orders", "-s", "my-sub"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("the batch of 7:4 does not parse"), std::string::npos) << bad.err;
}

TEST(AdminToolFakeServerTest, ExamineAndGetByIdPrintTheFirstMessage) {
  FakeAdmin fake;
  fake.answer("GET " + kTopic + "/examinemessage", 200, "abc", {{"X-Pulsar-Message-ID", "1:1"}});
  Ran examined =
      fake.admin({"topics", "examine-messages", "orders", "-i", "earliest", "-m", "2"});
  ASSERT_EQ(examined.code, 0) << examined.err;
  EXPECT_EQ(fake.requests().back().target,
            kTopic + "/examinemessage?initialPosition=earliest&messagePosition=2");
  EXPECT_EQ(examined.out.substr(0, 47), "Message ID: 1:1\nPublish time: 0\nEvent time: 0\n ");
  fake.answer("GET " + kTopic + "/ledger/1/entry/1", 200, "abc", {{"X-Pulsar-Message-ID", "1:1"}});
  Ran by_id = fake.admin({"topics", "get-message-by-id", "orders", "-l", "1", "-e", "1"});
  ASSERT_EQ(by_id.code, 0) << by_id.err;
  EXPECT_NE(by_id.out.find("Event time: 0\nRedelivery count: 0\n"), std::string::npos) << by_id.out;
  EXPECT_EQ(fake.admin({"topics", "examine-messages", "orders", "-i", "middle"}).code, 1);
}

TEST(AdminToolFakeServerTest, ClearBacklogWithoutForceAsksFirst) {
  FakeAdmin fake;
  std::ostringstream out, err;
  std::istringstream no("n\n");
  EXPECT_EQ(run_admin({"--admin-url", fake.url(), "namespaces", "clear-backlog", "public/default"},
                      out, err, no),
            0);
  EXPECT_NE(out.str().find("Are you sure you want to clear the backlog? (Y or N) "),
            std::string::npos);
  EXPECT_TRUE(fake.requests().empty());
  std::istringstream yes("y\n");
  EXPECT_EQ(run_admin({"--admin-url", fake.url(), "namespaces", "clear-backlog", "public/default"},
                      out, err, yes),
            0);
  EXPECT_EQ(fake.requests().size(), 1u);
}

TEST(AdminToolFakeServerTest, SendsTheTokenAsBearerAndNeverPrintsIt) {
  FakeAdmin fake;
  fake.answer("GET /admin/v2/tenants/x", 401, R"({"reason":"Unauthorized"})");
  Ran o = fake.admin({"--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationToken",
                          "--auth-params", "token:s3cr3t-t0ken", "tenants", "get", "x"});
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err, "Unauthorized\n\nReason: Unauthorized\n");
  EXPECT_EQ(o.out.find("s3cr3t"), std::string::npos);
  EXPECT_EQ(o.err.find("s3cr3t"), std::string::npos);
  ASSERT_EQ(fake.requests().size(), 1u);
  EXPECT_EQ(fake.requests()[0].authorization, "Bearer s3cr3t-t0ken");

  Ran unsupported =
      fake.admin({"--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationSasl",
                  "--auth-params", "x", "tenants", "list"});
  EXPECT_EQ(unsupported.code, 1);
  EXPECT_NE(unsupported.err.find("not supported"), std::string::npos);
  Ran half_tls =
      fake.admin({"--auth-plugin", "org.apache.pulsar.client.impl.auth.AuthenticationTls",
                  "--auth-params", "tlsCertFile:/x", "tenants", "list"});
  EXPECT_EQ(half_tls.code, 1);
  EXPECT_NE(half_tls.err.find("tlsKeyFile"), std::string::npos) << half_tls.err;
}

TEST(AdminToolFakeServerTest, ReadsUrlAndTokenFromClientConf) {
  FakeAdmin fake;
  const std::string dir = ::testing::TempDir();
  const std::string token_file = dir + "/cli-test-token";
  std::ofstream(token_file) << "t0ken-from-file\n";
  const std::string conf = dir + "/cli-test-client.conf";
  std::ofstream(conf) << "# a comment\nwebServiceUrl=" << fake.url() << "/\n"
                      << "brokerServiceUrl=pulsar://localhost:6650\n"
                      << "authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken\n"
                      << "authParams=file://" << token_file << "\n";
  Ran o = run({"--conf", conf, "tenants", "list"});
  EXPECT_EQ(o.code, 0) << o.err;
  ASSERT_EQ(fake.requests().size(), 1u);
  EXPECT_EQ(fake.requests()[0].target, "/admin/v2/tenants");
  EXPECT_EQ(fake.requests()[0].authorization, "Bearer t0ken-from-file");

  // The environment names the file too; flags win over it.
  ::setenv("PULSAR_CLIENT_CONF", conf.c_str(), 1);
  Ran env = run({"tenants", "list"});
  Ran flag = run({"--auth-params", "token:other", "tenants", "list"});
  ::unsetenv("PULSAR_CLIENT_CONF");
  EXPECT_EQ(env.code, 0) << env.err;
  EXPECT_EQ(flag.code, 0) << flag.err;
  ASSERT_EQ(fake.requests().size(), 3u);
  EXPECT_EQ(fake.requests()[2].authorization, "Bearer other");
}

TEST(AdminToolFakeServerTest, FollowsRedirectsToTheOwningBroker) {
  FakeAdmin owner;
  FakeAdmin first;
  first.answer("PUT " + kTopic + "/unload", 307, "",
               {{"Location", owner.url() + kTopic + "/unload?authoritative=true"}});
  EXPECT_EQ(first.admin({"topics", "unload", "orders"}).code, 0);
  ASSERT_EQ(owner.requests().size(), 1u);
  EXPECT_EQ(owner.requests()[0].method, "PUT");
  EXPECT_EQ(owner.requests()[0].target, kTopic + "/unload?authoritative=true");
}

TEST(AdminToolFakeServerTest, BookiesCommandsSendPulsarsRequests) {
  const std::string racks = "/admin/v2/bookies/racks-info";
  expect_requests({
      {{"bookies", "racks-placement"}, "GET", racks, ""},
      {{"bookies", "list-bookies"}, "GET", "/admin/v2/bookies/all", ""},
      {{"bookies", "get-bookie-rack", "--bookie", "my-bookie:3181"},
       "GET",
       racks + "/my-bookie%3A3181",
       ""},
      {{"bookies", "delete-bookie-rack", "-b", "my-bookie:3181"},
       "DELETE",
       racks + "/my-bookie%3A3181",
       ""},
      {{"bookies", "set-bookie-rack", "--group", "my-group", "--bookie", "my-bookie:3181", "--rack",
        "rack-1", "--hostname", "host-1"},
       "POST",
       racks + "/my-bookie%3A3181?group=my-group",
       R"({"rack":"rack-1","hostname":"host-1"})"},
      // Group "default" and no hostname unless given.
      {{"bookies", "set-bookie-rack", "-b", "h:3181", "-r", "/eu/r1"},
       "POST",
       racks + "/h%3A3181?group=default",
       R"({"rack":"/eu/r1"})"},
  });
}

TEST(AdminToolFakeServerTest, BookiesCommandsPrintAsPulsarAdminDoes) {
  FakeAdmin fake;
  fake.answer("GET /admin/v2/bookies/racks-info", 200,
              R"({"default":{"10.0.0.1:3181":{"rack":"/r1","hostname":"bk1"},)"
              R"("10.0.0.2:3181":{"rack":"/r2"}},"other":{"10.0.0.3:3181":{"rack":"/r3"}}})");
  Ran placement = fake.admin({"bookies", "racks-placement"});
  EXPECT_EQ(placement.code, 0) << placement.err;
  EXPECT_EQ(placement.out,
            "default    {10.0.0.1:3181=BookieInfoImpl(rack=/r1, hostname=bk1), "
            "10.0.0.2:3181=BookieInfoImpl(rack=/r2, hostname=null)}\n"
            "other    {10.0.0.3:3181=BookieInfoImpl(rack=/r3, hostname=null)}\n");

  fake.answer("GET /admin/v2/bookies/all", 200,
              R"({"bookies":[{"bookieId":"127.0.0.1:3181"},{"bookieId":"127.0.0.1:3182"}]})");
  EXPECT_EQ(fake.admin({"bookies", "list-bookies"}).out,
            "{\n"
            "  \"bookies\" : [ {\n"
            "    \"bookieId\" : \"127.0.0.1:3181\"\n"
            "  }, {\n"
            "    \"bookieId\" : \"127.0.0.1:3182\"\n"
            "  } ]\n"
            "}\n");

  fake.answer("GET /admin/v2/bookies/racks-info/b%3A1", 200, R"({"rack":"/r1","hostname":"h"})");
  fake.answer("GET /admin/v2/bookies/racks-info/b:1", 200, R"({"rack":"/r1","hostname":"h"})");
  EXPECT_EQ(fake.admin({"bookies", "get-bookie-rack", "-b", "b:1"}).out,
            "{\n  \"rack\" : \"/r1\",\n  \"hostname\" : \"h\"\n}\n");

  fake.answer("GET /admin/v2/bookies/racks-info/x%3A1", 404,
              R"({"reason":"Bookie rack placement configuration not found: x:1"})");
  fake.answer("GET /admin/v2/bookies/racks-info/x:1", 404,
              R"({"reason":"Bookie rack placement configuration not found: x:1"})");
  Ran missing = fake.admin({"bookies", "get-bookie-rack", "-b", "x:1"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err,
            "Bookie rack placement configuration not found: x:1\n\n"
            "Reason: Bookie rack placement configuration not found: x:1\n");

  // pulsar-admin's own checks: --rack required, and not empty or "/".
  const size_t before = fake.requests().size();
  Ran slash = fake.admin({"bookies", "set-bookie-rack", "-b", "b:1", "-r", "/"});
  EXPECT_EQ(slash.code, 1);
  EXPECT_NE(slash.err.find("rack name is invalid, it should not be null, empty or '/'"),
            std::string::npos)
      << slash.err;
  EXPECT_EQ(fake.admin({"bookies", "set-bookie-rack", "-b", "b:1"}).code, 1);
  EXPECT_EQ(fake.admin({"bookies", "get-bookie-rack"}).code, 1);
  EXPECT_EQ(fake.requests().size(), before);
}

}  // namespace
}  // namespace magnetar::cli
