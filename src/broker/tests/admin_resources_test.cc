// The admin REST API for clusters, tenants and namespaces, over HTTP: an http::HttpServer on a
// free port with the routes over two memory: stores (configuration and cluster), seeded as
// `magnetar standalone` seeds them, and a blocking HTTP/1.1 client.

#include "broker/admin/admin_resources.h"
#include "testing/test_name.h"

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>
#include <thread>

namespace magnetar::broker {
namespace {

using asio::ip::tcp;
using Json = nlohmann::json;

using magnetar::testing::test_name;

struct Reply {
  int status = 0;
  std::string body;

  Json json() const { return Json::parse(body, nullptr, false); }
  std::string reason() const {
    Json j = json();
    return j.is_object() && j.contains("reason") ? j["reason"].get<std::string>() : body;
  }
};

// One request on its own connection; the server closes it after answering.
Reply call(int port, const std::string& method, const std::string& target,
           const std::string& body = "") {
  asio::io_context io;
  tcp::socket s(io);
  s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), static_cast<uint16_t>(port)));
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n";
  if (!body.empty()) {
    request +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + body;
  asio::write(s, asio::buffer(request));
  std::string raw;
  char buf[4096];
  boost::system::error_code ec;
  while (true) {
    size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    raw.append(buf, n);
  }
  Reply reply;
  if (raw.size() >= 12 && raw.rfind("HTTP/1.1 ", 0) == 0)
    reply.status = std::stoi(raw.substr(9, 3));
  const size_t start = raw.find("\r\n\r\n");
  if (start != std::string::npos) reply.body = raw.substr(start + 4);
  return reply;
}

class AdminResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    configuration_ = open("memory:admin-config-" + test_name());
    cluster_ = open("memory:admin-cluster-" + test_name());
    ASSERT_TRUE(configuration_ && cluster_);
    // What `magnetar standalone` creates at its first start.
    put(*configuration_, "/admin/clusters/standalone",
        R"({"serviceUrl":"http://127.0.0.1:8080","brokerServiceUrl":"pulsar://127.0.0.1:6650"})");
    put(*configuration_, "/admin/policies/public",
        R"({"adminRoles":[],"allowedClusters":["standalone"]})");
    put(*configuration_, "/admin/policies/public/default",
        R"({"replication_clusters":["standalone"],"bundles":{"numBundles":4}})");
    http::ServerOptions options;
    options.port = 0;
    auto server = http::HttpServer::start(options, log::Logger("admin-test"));
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
    AdminResourcesOptions admin;
    add_admin_resource_routes(*server_, metadata::MetadataStores{cluster_, configuration_}, admin);
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

  static void put(metadata::MetadataStore& store, const std::string& path,
                  const std::string& value) {
    auto made =
        run_sync<Result<metadata::PutResult>>([&] { return store.put_recursive(path, value); });
    ASSERT_TRUE(made.ok()) << made.status().to_string();
  }

  static void remove(metadata::MetadataStore& store, const std::string& path) {
    Status st = run_sync<Status>([&] { return store.remove_recursive(path); });
    ASSERT_TRUE(st.ok()) << st.to_string();
  }

  // The stored JSON of a node (null when it does not exist).
  Json stored(const std::string& path) {
    auto got = run_sync<Result<std::optional<metadata::GetResult>>>(
        [&] { return configuration_->get(path); });
    if (!got.ok() || !got->has_value()) return Json();
    return Json::parse((*got)->value, nullptr, false);
  }

  Reply get(const std::string& target) { return call(server_->port(), "GET", target); }
  Reply put(const std::string& target, const std::string& body = "") {
    return call(server_->port(), "PUT", target, body);
  }
  Reply post(const std::string& target, const std::string& body = "") {
    return call(server_->port(), "POST", target, body);
  }
  Reply del(const std::string& target) { return call(server_->port(), "DELETE", target); }

  std::shared_ptr<metadata::MetadataStore> configuration_;
  std::shared_ptr<metadata::MetadataStore> cluster_;
  std::unique_ptr<http::HttpServer> server_;
};

const std::string kNs = "/admin/v2/namespaces/public/default";

// --- Clusters --------------------------------------------------------------------------------

TEST_F(AdminResourcesTest, ListsAndGetsClusters) {
  Reply list = get("/admin/v2/clusters");
  EXPECT_EQ(list.status, 200);
  EXPECT_EQ(list.json(), Json::parse(R"(["standalone"])"));
  Reply one = get("/admin/v2/clusters/standalone");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json()["serviceUrl"], "http://127.0.0.1:8080");
  EXPECT_EQ(one.json()["brokerServiceUrl"], "pulsar://127.0.0.1:6650");
  EXPECT_EQ(one.json()["brokerClientTlsEnabled"], false);
  Reply missing = get("/admin/v2/clusters/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.reason(), "Cluster does not exist");
}

TEST_F(AdminResourcesTest, CreatesUpdatesAndDeletesACluster) {
  const std::string data =
      R"({"serviceUrl":"http://c2:8080","brokerServiceUrl":"pulsar://c2:6650","unknown":1})";
  EXPECT_EQ(put("/admin/v2/clusters/c2", data).status, 204);
  Reply again = put("/admin/v2/clusters/c2", data);
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.reason(), "Cluster already exists");
  EXPECT_EQ(get("/admin/v2/clusters").json(), Json::parse(R"(["c2","standalone"])"));
  EXPECT_FALSE(stored("/admin/clusters/c2").contains("unknown"));

  EXPECT_EQ(post("/admin/v2/clusters/c2", R"({"serviceUrl":"http://c2b:8080"})").status, 204);
  Reply updated = get("/admin/v2/clusters/c2");
  EXPECT_EQ(updated.json()["serviceUrl"], "http://c2b:8080");
  EXPECT_FALSE(updated.json().contains("brokerServiceUrl"));  // POST replaces, as Pulsar's

  EXPECT_EQ(del("/admin/v2/clusters/c2").status, 204);
  EXPECT_EQ(get("/admin/v2/clusters/c2").status, 404);
  EXPECT_EQ(del("/admin/v2/clusters/c2").status, 404);
  EXPECT_EQ(post("/admin/v2/clusters/c2", R"({"serviceUrl":"http://c2:8080"})").status, 404);
}

TEST_F(AdminResourcesTest, RejectsBadClusterInput) {
  Reply bad_name = put("/admin/v2/clusters/a%20b", R"({"serviceUrl":"http://x:8080"})");
  EXPECT_EQ(bad_name.status, 412);
  EXPECT_EQ(bad_name.reason(), "Cluster name is not valid");
  EXPECT_EQ(put("/admin/v2/clusters/c2").status, 400);  // no ClusterData
  EXPECT_EQ(put("/admin/v2/clusters/c2", "{not json").status, 400);
  EXPECT_EQ(put("/admin/v2/clusters/c2", "[1,2]").status, 400);
  EXPECT_EQ(put("/admin/v2/clusters/c2", R"({"serviceUrl":5})").status, 400);
  EXPECT_EQ(put("/admin/v2/clusters/c2", R"({"brokerClientTlsEnabled":"yes"})").status, 400);
  Reply bad_url = put("/admin/v2/clusters/c2", R"({"brokerServiceUrl":"http://x:6650"})");
  EXPECT_EQ(bad_url.status, 400);
  EXPECT_NE(bad_url.reason().find("Illegal broker service url"), std::string::npos);
  EXPECT_EQ(put("/admin/v2/clusters/c2", R"({"serviceUrlTls":"http://x:8443"})").status, 400);
  EXPECT_EQ(get("/admin/v2/clusters/c2").status, 404);  // nothing was created
  EXPECT_EQ(get("/admin/v2/clusters/standalone/nope").status, 404);
  EXPECT_EQ(call(server_->port(), "PATCH", "/admin/v2/clusters/standalone").status, 405);
}

TEST_F(AdminResourcesTest, SetsAndGetsPeerClusters) {
  EXPECT_EQ(get("/admin/v2/clusters/standalone/peers").status, 204);  // none set
  Reply unknown = post("/admin/v2/clusters/standalone/peers", R"(["c2"])");
  EXPECT_EQ(unknown.status, 412);
  EXPECT_EQ(unknown.reason(), "Peer cluster c2 does not exist");
  EXPECT_EQ(post("/admin/v2/clusters/standalone/peers", R"(["standalone"])").status, 412);
  EXPECT_EQ(post("/admin/v2/clusters/standalone/peers", R"("c2")").status, 400);
  ASSERT_EQ(put("/admin/v2/clusters/c2", R"({"serviceUrl":"http://c2:8080"})").status, 204);
  EXPECT_EQ(post("/admin/v2/clusters/standalone/peers", R"(["c2"])").status, 204);
  EXPECT_EQ(get("/admin/v2/clusters/standalone/peers").json(), Json::parse(R"(["c2"])"));
  // The rest of the ClusterData is kept.
  EXPECT_EQ(get("/admin/v2/clusters/standalone").json()["serviceUrl"], "http://127.0.0.1:8080");
  EXPECT_EQ(get("/admin/v2/clusters/nope/peers").status, 404);
}

TEST_F(AdminResourcesTest, ClusterUsedByANamespaceCannotBeDeleted) {
  Reply refused = del("/admin/v2/clusters/standalone");
  EXPECT_EQ(refused.status, 412);
  EXPECT_EQ(refused.reason(), "Cluster not empty: namespaces public/default replicate to it");
  EXPECT_EQ(get("/admin/v2/clusters/standalone").status, 200);
}

// --- Tenants ---------------------------------------------------------------------------------

TEST_F(AdminResourcesTest, ListsAndGetsTenants) {
  EXPECT_EQ(get("/admin/v2/tenants").json(), Json::parse(R"(["public"])"));
  Reply pub = get("/admin/v2/tenants/public");
  ASSERT_EQ(pub.status, 200);
  EXPECT_EQ(pub.json(), Json::parse(R"({"adminRoles":[],"allowedClusters":["standalone"]})"));
  Reply missing = get("/admin/v2/tenants/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.reason(), "Tenant does not exist");
}

TEST_F(AdminResourcesTest, CreatesUpdatesAndDeletesATenant) {
  const std::string info = R"({"adminRoles":["admin"],"allowedClusters":["standalone"]})";
  EXPECT_EQ(put("/admin/v2/tenants/t1", info).status, 204);
  Reply again = put("/admin/v2/tenants/t1", info);
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.reason(), "Tenant already exists");
  EXPECT_EQ(get("/admin/v2/tenants/t1").json(), Json::parse(info));
  EXPECT_EQ(get("/admin/v2/tenants").json(), Json::parse(R"(["public","t1"])"));

  const std::string changed = R"({"adminRoles":["a","b"],"allowedClusters":["standalone"]})";
  EXPECT_EQ(post("/admin/v2/tenants/t1", changed).status, 204);
  EXPECT_EQ(get("/admin/v2/tenants/t1").json(), Json::parse(changed));

  EXPECT_EQ(del("/admin/v2/tenants/t1").status, 204);
  EXPECT_EQ(get("/admin/v2/tenants/t1").status, 404);
  EXPECT_EQ(del("/admin/v2/tenants/t1").status, 404);
  EXPECT_EQ(post("/admin/v2/tenants/t1", info).status, 404);
}

TEST_F(AdminResourcesTest, TenantClustersMustExist) {
  Reply unknown = put("/admin/v2/tenants/t1", R"({"allowedClusters":["nope"]})");
  EXPECT_EQ(unknown.status, 412);
  EXPECT_EQ(unknown.reason(), "Clusters do not exist");
  Reply empty = put("/admin/v2/tenants/t1", R"({"adminRoles":[],"allowedClusters":[]})");
  EXPECT_EQ(empty.status, 412);
  EXPECT_EQ(empty.reason(), "Clusters can not be empty");
  EXPECT_EQ(put("/admin/v2/tenants/t1").status, 412);  // no TenantInfo: no clusters
  EXPECT_EQ(put("/admin/v2/tenants/t1", R"({"allowedClusters":[" "]})").status, 412);
  EXPECT_EQ(put("/admin/v2/tenants/t1", R"({"allowedClusters":["global"]})").status, 204);
  EXPECT_EQ(post("/admin/v2/tenants/public", R"({"allowedClusters":["nope"]})").status, 412);
  EXPECT_EQ(get("/admin/v2/tenants/public").json()["allowedClusters"],
            Json::parse(R"(["standalone"])"));
}

TEST_F(AdminResourcesTest, RejectsBadTenantInput) {
  const std::string info = R"({"allowedClusters":["standalone"]})";
  Reply bad_name = put("/admin/v2/tenants/a%2Fb", info);
  EXPECT_EQ(bad_name.status, 412);
  EXPECT_EQ(bad_name.reason(), "Tenant name is not valid");
  EXPECT_EQ(put("/admin/v2/tenants/..", info).status, 412);
  EXPECT_EQ(put("/admin/v2/tenants/t1", "{").status, 400);
  EXPECT_EQ(
      put("/admin/v2/tenants/t1", R"({"adminRoles":"admin","allowedClusters":["standalone"]})")
          .status,
      400);
  EXPECT_EQ(put("/admin/v2/tenants/t1", R"({"allowedClusters":[1]})").status, 400);
  EXPECT_EQ(put("/admin/v2/tenants/t1", "true").status, 400);
  EXPECT_EQ(get("/admin/v2/tenants/%zz").status, 400);  // malformed escape
  EXPECT_EQ(get("/admin/v2/tenants/public/x").status, 404);
  EXPECT_EQ(get("/admin/v2/tenants").json(), Json::parse(R"(["public"])"));
}

TEST_F(AdminResourcesTest, TenantWithNamespacesCannotBeDeleted) {
  Reply refused = del("/admin/v2/tenants/public");
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(refused.reason(), "The tenant still has active namespaces");
  EXPECT_EQ(del("/admin/v2/tenants/public?force=true").status, 405);
  EXPECT_EQ(get("/admin/v2/tenants/public").status, 200);
}

TEST_F(AdminResourcesTest, ClusterUsedByTheTenantsNamespacesCannotLeaveIt) {
  ASSERT_EQ(put("/admin/v2/clusters/c2", R"({"serviceUrl":"http://c2:8080"})").status, 204);
  Reply refused = post("/admin/v2/tenants/public", R"({"allowedClusters":["c2"]})");
  EXPECT_EQ(refused.status, 409);
  EXPECT_NE(refused.reason().find("public/default"), std::string::npos) << refused.body;
  EXPECT_EQ(post("/admin/v2/tenants/public", R"({"allowedClusters":["standalone","c2"]})").status,
            204);
}

// --- Namespaces ------------------------------------------------------------------------------

TEST_F(AdminResourcesTest, ListsNamespaces) {
  EXPECT_EQ(get("/admin/v2/namespaces/public").json(), Json::parse(R"(["public/default"])"));
  EXPECT_EQ(get("/admin/v2/namespaces/nope").status, 404);
  EXPECT_EQ(put("/admin/v2/namespaces/public").status, 405);
}

TEST_F(AdminResourcesTest, CreatesGetsAndDeletesANamespace) {
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1").status, 204);
  Reply again = put("/admin/v2/namespaces/public/ns1");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.reason(), "Namespace already exists");
  EXPECT_EQ(get("/admin/v2/namespaces/public").json(),
            Json::parse(R"(["public/default","public/ns1"])"));

  Reply policies = get("/admin/v2/namespaces/public/ns1");
  ASSERT_EQ(policies.status, 200);
  Json p = policies.json();
  EXPECT_EQ(p["replication_clusters"], Json::parse(R"(["standalone"])"));
  EXPECT_EQ(p["bundles"]["numBundles"], 4);
  EXPECT_EQ(p["bundles"]["boundaries"],
            Json::parse(R"(["0x00000000","0x40000000","0x80000000","0xc0000000","0xffffffff"])"));
  EXPECT_EQ(p["auth_policies"]["namespace_auth"], Json::object());
  EXPECT_EQ(p["backlog_quota_map"], Json::object());
  EXPECT_EQ(p["deleted"], false);
  EXPECT_FALSE(p.contains("message_ttl_in_seconds"));

  EXPECT_EQ(del("/admin/v2/namespaces/public/ns1").status, 204);
  Reply gone = get("/admin/v2/namespaces/public/ns1");
  EXPECT_EQ(gone.status, 404);
  EXPECT_EQ(gone.reason(), "Namespace does not exist");
  EXPECT_EQ(del("/admin/v2/namespaces/public/ns1").status, 404);
  EXPECT_TRUE(stored("/admin/policies/public/ns1").is_null());
}

TEST_F(AdminResourcesTest, CreatesANamespaceWithPolicies) {
  const std::string body = R"({
    "bundles": {"numBundles": 8},
    "retention_policies": {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100},
    "message_ttl_in_seconds": 120,
    "deduplicationEnabled": true,
    "backlog_quota_map": {"destination_storage": {"limitSize": 1024, "policy": "producer_exception"}},
    "max_producers_per_topic": 3
  })";
  ASSERT_EQ(put("/admin/v2/namespaces/public/ns1", body).status, 204);
  Json p = get("/admin/v2/namespaces/public/ns1").json();
  EXPECT_EQ(p["bundles"]["numBundles"], 8);
  EXPECT_EQ(p["bundles"]["boundaries"].size(), 9u);
  EXPECT_EQ(p["bundles"]["boundaries"][1], "0x20000000");
  EXPECT_EQ(p["retention_policies"]["retentionTimeInMinutes"], 60);
  EXPECT_EQ(p["message_ttl_in_seconds"], 120);
  EXPECT_EQ(p["deduplicationEnabled"], true);
  EXPECT_EQ(p["backlog_quota_map"]["destination_storage"],
            Json::parse(R"({"limitSize":1024,"limitTime":-1,"policy":"producer_exception"})"));
  EXPECT_EQ(p["max_producers_per_topic"], 3);  // kept, although this broker ignores it
  EXPECT_EQ(p["replication_clusters"], Json::parse(R"(["standalone"])"));

  const std::string explicit_bundles =
      R"({"bundles":{"boundaries":["0xffffffff","0x00000000","0x80000000"],"numBundles":9}})";
  ASSERT_EQ(put("/admin/v2/namespaces/public/ns2", explicit_bundles).status, 204);
  EXPECT_EQ(
      get("/admin/v2/namespaces/public/ns2/bundles").json(),
      Json::parse(R"({"boundaries":["0x00000000","0x80000000","0xffffffff"],"numBundles":2})"));
}

TEST_F(AdminResourcesTest, RejectsBadNamespaceCreation) {
  Reply no_tenant = put("/admin/v2/namespaces/nope/ns1");
  EXPECT_EQ(no_tenant.status, 404);
  EXPECT_EQ(no_tenant.reason(), "Tenant does not exist");
  EXPECT_EQ(put("/admin/v2/namespaces/public/a%20b").status, 412);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", "{").status, 400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", "[]").status, 400);
  EXPECT_EQ(
      put("/admin/v2/namespaces/public/ns1", R"({"bundles":{"boundaries":["0x0","0x7"]}})").status,
      400);  // does not cover the hash range
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"bundles":{"boundaries":["zz"]}})").status,
            400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"bundles":{"numBundles":"4"}})").status,
            400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"bundles":{"numBundles":100000}})").status,
            412);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"message_ttl_in_seconds":-5})").status, 412);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"message_ttl_in_seconds":1.5})").status,
            400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"deduplicationEnabled":"yes"})").status,
            400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"retention_policies":[]})").status, 400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1",
                R"({"retention_policies":{"retentionTimeInMinutes":10,"retentionSizeInMB":0}})")
                .status,
            412);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1", R"({"backlog_quota_map":{"bogus":{}}})").status,
            400);
  EXPECT_EQ(
      put("/admin/v2/namespaces/public/ns1", R"({"replication_clusters":"standalone"})").status,
      400);
  EXPECT_EQ(put("/admin/v2/namespaces/public/ns1",
                R"({"auth_policies":{"namespace_auth":{"r":["fly"]}}})")
                .status,
            400);
  Reply unknown = put("/admin/v2/namespaces/public/ns1", R"({"replication_clusters":["nope"]})");
  EXPECT_EQ(unknown.status, 403);
  EXPECT_EQ(unknown.reason(), "Invalid cluster id: nope");
  ASSERT_EQ(put("/admin/v2/clusters/c2", R"({"serviceUrl":"http://c2:8080"})").status, 204);
  Reply not_allowed = put("/admin/v2/namespaces/public/ns1", R"({"replication_clusters":["c2"]})");
  EXPECT_EQ(not_allowed.status, 403);
  EXPECT_NE(not_allowed.reason().find("not in the list of allowed clusters"), std::string::npos);
  EXPECT_EQ(get("/admin/v2/namespaces/public").json(), Json::parse(R"(["public/default"])"));
}

TEST_F(AdminResourcesTest, NamespaceWithTopicsCannotBeDeleted) {
  ASSERT_EQ(put("/admin/v2/namespaces/public/ns1").status, 204);
  put(*cluster_, "/managed-ledgers/public/ns1/persistent/my-topic", "");
  Reply refused = del("/admin/v2/namespaces/public/ns1");
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(refused.reason(), "Cannot delete non empty namespace");
  EXPECT_EQ(del("/admin/v2/namespaces/public/ns1?force=true").status, 405);
  remove(*cluster_, "/managed-ledgers/public/ns1/persistent/my-topic");

  put(*configuration_, "/admin/partitioned-topics/public/ns1/persistent/p", R"({"partitions":2})");
  EXPECT_EQ(del("/admin/v2/namespaces/public/ns1").status, 409);
  remove(*configuration_, "/admin/partitioned-topics/public/ns1/persistent/p");

  EXPECT_EQ(del("/admin/v2/namespaces/public/ns1").status, 204);
  // The empty topic directories went with it.
  auto left =
      run_sync<Result<bool>>([this] { return cluster_->exists("/managed-ledgers/public/ns1"); });
  ASSERT_TRUE(left.ok());
  EXPECT_FALSE(*left);
  EXPECT_TRUE(stored("/admin/partitioned-topics/public/ns1").is_null());
}

TEST_F(AdminResourcesTest, ListsTheTopicsOfANamespace) {
  EXPECT_EQ(get(kNs + "/topics").json(), Json::array());
  put(*cluster_, "/managed-ledgers/public/default/persistent/a", "");
  put(*cluster_, "/managed-ledgers/public/default/persistent/b%20c-partition-0", "");
  EXPECT_EQ(get(kNs + "/topics").json(), Json::parse(R"(["persistent://public/default/a",
                            "persistent://public/default/b c-partition-0"])"));
  EXPECT_EQ(get(kNs + "/topics?mode=ALL").json().size(), 2u);
  EXPECT_EQ(get(kNs + "/topics?mode=NON_PERSISTENT").json(), Json::array());
  EXPECT_EQ(get(kNs + "/topics?mode=bogus").status, 400);
  EXPECT_EQ(get("/admin/v2/namespaces/public/nope/topics").status, 404);
  // A partitioned topic's partitions are listed at once, before any is used.
  put(*configuration_, "/admin/partitioned-topics/public/default/persistent/p",
      R"({"partitions":2})");
  EXPECT_EQ(get(kNs + "/topics").json(), Json::parse(R"(["persistent://public/default/a",
                            "persistent://public/default/b c-partition-0",
                            "persistent://public/default/p-partition-0",
                            "persistent://public/default/p-partition-1"])"));
}

TEST_F(AdminResourcesTest, Retention) {
  EXPECT_EQ(get(kNs + "/retention").status, 204);  // unset
  EXPECT_EQ(
      post(kNs + "/retention", R"({"retentionTimeInMinutes":60,"retentionSizeInMB":-1})").status,
      204);
  EXPECT_EQ(get(kNs + "/retention").json(),
            Json::parse(R"({"retentionTimeInMinutes":60,"retentionSizeInMB":-1})"));
  EXPECT_EQ(del(kNs + "/retention").status, 204);
  EXPECT_EQ(get(kNs + "/retention").status, 204);

  EXPECT_EQ(post(kNs + "/retention").status, 400);
  EXPECT_EQ(post(kNs + "/retention", "5").status, 400);
  EXPECT_EQ(post(kNs + "/retention", R"({"retentionTimeInMinutes":"1h"})").status, 400);
  EXPECT_EQ(post(kNs + "/retention", R"({"retentionTimeInMinutes":99999999999})").status, 400);
  EXPECT_EQ(
      post(kNs + "/retention", R"({"retentionTimeInMinutes":-2,"retentionSizeInMB":1})").status,
      412);
  EXPECT_EQ(
      post(kNs + "/retention", R"({"retentionTimeInMinutes":0,"retentionSizeInMB":10})").status,
      412);
  EXPECT_EQ(post("/admin/v2/namespaces/public/nope/retention", R"({})").status, 404);
  EXPECT_EQ(get("/admin/v2/namespaces/public/nope/retention").status, 404);
}

TEST_F(AdminResourcesTest, MessageTtl) {
  EXPECT_EQ(get(kNs + "/messageTTL").status, 204);
  EXPECT_EQ(post(kNs + "/messageTTL", "3600").status, 204);
  EXPECT_EQ(get(kNs + "/messageTTL").json(), 3600);
  EXPECT_EQ(post(kNs + "/messageTTL", "-1").status, 412);
  EXPECT_EQ(post(kNs + "/messageTTL", "\"60\"").status, 400);
  EXPECT_EQ(post(kNs + "/messageTTL", "4294967296").status, 400);
  EXPECT_EQ(post(kNs + "/messageTTL").status, 400);
  EXPECT_EQ(get(kNs + "/messageTTL").json(), 3600);
  EXPECT_EQ(del(kNs + "/messageTTL").status, 204);
  EXPECT_EQ(get(kNs + "/messageTTL").status, 204);
  EXPECT_EQ(post("/admin/v2/namespaces/public/nope/messageTTL", "10").status, 404);
}

TEST_F(AdminResourcesTest, BacklogQuotas) {
  EXPECT_EQ(get(kNs + "/backlogQuotaMap").json(), Json::object());
  EXPECT_EQ(
      post(kNs + "/backlogQuota", R"({"limitSize":1048576,"policy":"producer_exception"})").status,
      204);
  EXPECT_EQ(post(kNs + "/backlogQuota?backlogQuotaType=message_age",
                 R"({"limitTime":600,"policy":"consumer_backlog_eviction"})")
                .status,
            204);
  EXPECT_EQ(get(kNs + "/backlogQuotaMap").json(), Json::parse(R"({
    "destination_storage": {"limitSize":1048576,"limitTime":-1,"policy":"producer_exception"},
    "message_age": {"limitSize":-1,"limitTime":600,"policy":"consumer_backlog_eviction"}})"));
  // The older field name "limit" is accepted.
  EXPECT_EQ(post(kNs + "/backlogQuota?backlogQuotaType=destination_storage",
                 R"({"limit":2048,"policy":"producer_request_hold"})")
                .status,
            204);
  EXPECT_EQ(get(kNs + "/backlogQuotaMap").json()["destination_storage"]["limitSize"], 2048);

  EXPECT_EQ(post(kNs + "/backlogQuota?backlogQuotaType=bogus", R"({"limitSize":1})").status, 400);
  EXPECT_EQ(post(kNs + "/backlogQuota", R"({"limitSize":1,"policy":"drop_everything"})").status,
            400);
  EXPECT_EQ(post(kNs + "/backlogQuota", R"({"limitSize":"1G"})").status, 400);
  EXPECT_EQ(post(kNs + "/backlogQuota").status, 400);

  EXPECT_EQ(del(kNs + "/backlogQuota?backlogQuotaType=message_age").status, 204);
  EXPECT_EQ(del(kNs + "/backlogQuota").status, 204);
  EXPECT_EQ(get(kNs + "/backlogQuotaMap").json(), Json::object());
  EXPECT_EQ(get(kNs + "/backlogQuota").status, 405);
  EXPECT_EQ(get("/admin/v2/namespaces/public/nope/backlogQuotaMap").status, 404);
}

TEST_F(AdminResourcesTest, BacklogQuotaMustStayBelowRetention) {
  ASSERT_EQ(
      post(kNs + "/retention", R"({"retentionTimeInMinutes":-1,"retentionSizeInMB":1})").status,
      204);
  Reply over = post(kNs + "/backlogQuota", R"({"limitSize":2097152})");
  EXPECT_EQ(over.status, 412);
  EXPECT_NE(over.reason().find("Backlog Quota exceeds configured retention quota"),
            std::string::npos);
  EXPECT_EQ(post(kNs + "/backlogQuota", R"({"limitSize":1000})").status, 204);
  Reply under = post(kNs + "/retention", R"({"retentionTimeInMinutes":-1,"retentionSizeInMB":0})");
  EXPECT_EQ(under.status, 412);  // 0 with a non-zero limit
  Reply small = post(kNs + "/retention", R"({"retentionTimeInMinutes":10,"retentionSizeInMB":-1})");
  EXPECT_EQ(small.status, 204);  // only the size is checked against destination_storage
}

TEST_F(AdminResourcesTest, Deduplication) {
  EXPECT_EQ(get(kNs + "/deduplication").status, 204);
  EXPECT_EQ(post(kNs + "/deduplication", "true").status, 204);
  EXPECT_EQ(get(kNs + "/deduplication").json(), true);
  EXPECT_EQ(post(kNs + "/deduplication", "false").status, 204);
  EXPECT_EQ(get(kNs + "/deduplication").json(), false);
  EXPECT_EQ(post(kNs + "/deduplication", "1").status, 400);
  EXPECT_EQ(post(kNs + "/deduplication", "yes").status, 400);
  EXPECT_EQ(post(kNs + "/deduplication").status, 400);
  EXPECT_EQ(del(kNs + "/deduplication").status, 204);
  EXPECT_EQ(get(kNs + "/deduplication").status, 204);
}

TEST_F(AdminResourcesTest, Replication) {
  EXPECT_EQ(get(kNs + "/replication").json(), Json::parse(R"(["standalone"])"));
  Reply unknown = post(kNs + "/replication", R"(["c2"])");
  EXPECT_EQ(unknown.status, 403);
  EXPECT_EQ(unknown.reason(), "Invalid cluster id: c2");
  ASSERT_EQ(put("/admin/v2/clusters/c2", R"({"serviceUrl":"http://c2:8080"})").status, 204);
  EXPECT_EQ(post(kNs + "/replication", R"(["standalone","c2"])").status, 403);  // not allowed
  ASSERT_EQ(post("/admin/v2/tenants/public", R"({"allowedClusters":["standalone","c2"]})").status,
            204);
  EXPECT_EQ(post(kNs + "/replication", R"(["standalone","c2","c2"])").status, 204);
  EXPECT_EQ(get(kNs + "/replication").json(), Json::parse(R"(["standalone","c2"])"));
  EXPECT_EQ(post(kNs + "/replication", "[]").status, 412);
  EXPECT_EQ(post(kNs + "/replication", R"(["global"])").status, 412);
  EXPECT_EQ(post(kNs + "/replication", R"({"c":1})").status, 400);
  EXPECT_EQ(post("/admin/v2/namespaces/public/nope/replication", R"(["standalone"])").status, 404);
  EXPECT_EQ(del(kNs + "/replication").status, 405);
}

TEST_F(AdminResourcesTest, Permissions) {
  EXPECT_EQ(get(kNs + "/permissions").json(), Json::object());
  EXPECT_EQ(post(kNs + "/permissions/app-1", R"(["produce","consume","produce"])").status, 204);
  EXPECT_EQ(post(kNs + "/permissions/ops%40example.com", R"(["functions"])").status, 204);
  EXPECT_EQ(get(kNs + "/permissions").json(), Json::parse(R"({
    "app-1": ["consume","produce"], "ops@example.com": ["functions"]})"));
  EXPECT_EQ(post(kNs + "/permissions/app-1", R"(["fly"])").status, 400);
  EXPECT_EQ(post(kNs + "/permissions/app-1", R"("produce")").status, 400);
  EXPECT_EQ(post(kNs + "/permissions/app-1").status, 400);
  EXPECT_EQ(post(kNs + "/permissions/%FF", R"(["produce"])").status, 412);  // not UTF-8
  EXPECT_EQ(del(kNs + "/permissions/app-1").status, 204);
  EXPECT_EQ(del(kNs + "/permissions/never-granted").status, 204);
  EXPECT_EQ(get(kNs + "/permissions").json(), Json::parse(R"({"ops@example.com":["functions"]})"));
  EXPECT_EQ(post("/admin/v2/namespaces/public/nope/permissions/r", R"(["produce"])").status, 404);
}

TEST_F(AdminResourcesTest, Bundles) {
  EXPECT_EQ(get(kNs + "/bundles").json(), Json::parse(R"({
    "boundaries":["0x00000000","0x40000000","0x80000000","0xc0000000","0xffffffff"],
    "numBundles":4})"));
  EXPECT_EQ(bundle_boundaries(1), (std::vector<std::string>{"0x00000000", "0xffffffff"}));
  EXPECT_EQ(bundle_boundaries(3),
            (std::vector<std::string>{"0x00000000", "0x55555555", "0xaaaaaaaa", "0xffffffff"}));
  EXPECT_EQ(get("/admin/v2/namespaces/public/nope/bundles").status, 404);
}

// Broker::load_topic reads these exact names and types from the Policies node.
TEST_F(AdminResourcesTest, StoresPoliciesUnderTheNamesTheBrokerReads) {
  ASSERT_EQ(
      post(kNs + "/retention", R"({"retentionTimeInMinutes":30,"retentionSizeInMB":512})").status,
      204);
  ASSERT_EQ(post(kNs + "/messageTTL", "90").status, 204);
  ASSERT_EQ(
      post(kNs + "/backlogQuota", R"({"limitSize":4096,"policy":"producer_exception"})").status,
      204);
  ASSERT_EQ(post(kNs + "/deduplication", "true").status, 204);
  Json p = stored("/admin/policies/public/default");
  EXPECT_EQ(p["retention_policies"]["retentionTimeInMinutes"], 30);
  EXPECT_EQ(p["retention_policies"]["retentionSizeInMB"], 512);
  EXPECT_TRUE(p["message_ttl_in_seconds"].is_number_integer());
  EXPECT_EQ(p["message_ttl_in_seconds"], 90);
  EXPECT_EQ(p["backlog_quota_map"]["destination_storage"]["limitSize"], 4096);
  EXPECT_EQ(p["backlog_quota_map"]["destination_storage"]["policy"], "producer_exception");
  EXPECT_EQ(p["deduplicationEnabled"], true);
  // What the standalone bootstrap wrote is still there.
  EXPECT_EQ(p["replication_clusters"], Json::parse(R"(["standalone"])"));
  EXPECT_EQ(p["bundles"]["numBundles"], 4);
}

// Every update is a compare-and-set: concurrent changes to one namespace all land.
TEST_F(AdminResourcesTest, ConcurrentUpdatesAreNotLost) {
  constexpr int kClients = 8;
  std::vector<std::thread> clients;
  std::vector<int> statuses(kClients + 2);
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      statuses[i] = post(kNs + "/permissions/role-" + std::to_string(i), R"(["consume"])").status;
    });
  }
  clients.emplace_back([&] { statuses[kClients] = post(kNs + "/messageTTL", "30").status; });
  clients.emplace_back(
      [&] { statuses[kClients + 1] = post(kNs + "/deduplication", "true").status; });
  for (auto& t : clients) t.join();
  for (int s : statuses) EXPECT_EQ(s, 204);
  EXPECT_EQ(get(kNs + "/permissions").json().size(), static_cast<size_t>(kClients));
  EXPECT_EQ(get(kNs + "/messageTTL").json(), 30);
  EXPECT_EQ(get(kNs + "/deduplication").json(), true);
}

TEST_F(AdminResourcesTest, UnknownPathsAndMethods) {
  EXPECT_EQ(get(kNs + "/nope").status, 404);
  EXPECT_EQ(get(kNs + "/permissions/r/x").status, 405);  // DELETE revokes a subscription role
  EXPECT_EQ(post(kNs, "{}").status, 405);
  EXPECT_EQ(put(kNs + "/retention", "{}").status, 405);
  EXPECT_EQ(get("/admin/v2/namespaces/").status, 404);
  EXPECT_EQ(get("/admin/v2/namespaces/public/a%20b").status, 412);
  EXPECT_EQ(put("/admin/v2/clusters").status, 405);
  EXPECT_EQ(get("/admin/v2/clusters/").json(), Json::parse(R"(["standalone"])"));
}

// Garbage bodies on every write endpoint are refused with 4xx, and change nothing.
TEST_F(AdminResourcesTest, MalformedInputNeverAnswers500) {
  const std::vector<std::string> bodies = {
      "{",
      "}",
      "[",
      "nul",
      "\"",
      R"({"a":)",
      "1e999",
      "-",
      "[[[[[[[[[[",
      "\xff\xfe",
      "{\"\xff\":1}",
      "99999999999999999999999",
      "{}",
      "[]",
      "null",
      "0",
      "-1.5",
      R"({"retentionTimeInMinutes":{},"limitSize":[],"policy":7,"allowedClusters":{}})"};
  const std::vector<std::pair<std::string, std::string>> endpoints = {
      {"PUT", "/admin/v2/clusters/c9"},
      {"POST", "/admin/v2/clusters/standalone"},
      {"POST", "/admin/v2/clusters/standalone/peers"},
      {"PUT", "/admin/v2/tenants/t9"},
      {"POST", "/admin/v2/tenants/public"},
      {"PUT", "/admin/v2/namespaces/public/ns9"},
      {"POST", kNs + "/retention"},
      {"POST", kNs + "/messageTTL"},
      {"POST", kNs + "/backlogQuota"},
      {"POST", kNs + "/deduplication"},
      {"POST", kNs + "/replication"},
      {"POST", kNs + "/permissions/r"},
  };
  const Json before = stored("/admin/policies/public/default");
  for (const auto& [method, target] : endpoints) {
    for (const std::string& body : bodies) {
      Reply r = call(server_->port(), method, target, body);
      EXPECT_GE(r.status, 200) << method << " " << target << " " << body;
      EXPECT_LT(r.status, 500) << method << " " << target << " " << body << ": " << r.body;
      if (r.status >= 400) {
        EXPECT_TRUE(r.json().contains("reason")) << r.body;
      }
    }
  }
  // Only the bodies that are valid for an endpoint can have changed anything; the bootstrap
  // policies keep what the broker reads.
  Json after = stored("/admin/policies/public/default");
  EXPECT_EQ(after["bundles"], before["bundles"]);
  EXPECT_EQ(get("/admin/v2/clusters/standalone").status, 200);
}

}  // namespace
}  // namespace magnetar::broker
