#pragma once
// The fixture of the broker's HTTP endpoint tests (broker_routes_test.cc, stats_routes_test.cc):
// a whole BrokerServer (web port, broker, load manager) and an in-process bookie over a memory:
// metadata store; the cluster, tenant and namespace made through the admin REST API itself;
// requests sent with the blocking http::HttpClient and messages produced with
// testing::PulsarTestClient.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>

#include "broker/broker_server.h"
#include "broker/config/broker_config.h"
#include "http/http_client.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/pulsar_test_client.h"

namespace magnetar::broker::routes_test {


using namespace std::chrono_literals;
using Json = nlohmann::json;
using ledger::test::Cluster;
using testing::PulsarTestClient;

inline std::string test_name() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->name();
}

inline int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Reply {
  int status = 0;
  std::string body;
  std::string location;

  Json json() const { return Json::parse(body, nullptr, false); }
  // The {"reason": ...} of an error ("" when the body has none).
  std::string reason() const {
    Json j = json();
    if (!j.is_object() || !j.contains("reason") || !j["reason"].is_string()) return "";
    return j["reason"].get<std::string>();
  }
  bool has_reason() const {
    Json j = json();
    return j.is_object() && j.contains("reason") && j["reason"].is_string();
  }
};

inline std::ostream& operator<<(std::ostream& os, const Reply& r) {
  return os << r.status << " " << r.body;
}

inline const std::string kTopics = "/admin/v2/persistent/public/default";
inline const std::string kNamespace = "/admin/v2/namespaces/public/default";
inline const std::string kLookup = "/lookup/v2/topic/persistent/public/default";

class BrokerRoutesTest : public ::testing::Test {
 protected:
  BrokerRoutesTest() : cluster_(test_name()) {
    cluster_.add_bookie();
    store_ = std::shared_ptr<metadata::MetadataStore>(&cluster_.store(),
                                                      [](metadata::MetadataStore*) {});
  }

  ~BrokerRoutesTest() override {
    if (server_) server_->stop();
  }

  // A fixture's own settings for the server SetUp() starts.
  virtual void configure(BrokerConfig&) {}

  void SetUp() override {
    start_server([this](BrokerConfig& c) { configure(c); });
    ASSERT_TRUE(server_);
    const Json cluster = {
        {"serviceUrl", base_},
        {"brokerServiceUrl", fmt::format("pulsar://127.0.0.1:{}", server_->port())}};
    ASSERT_EQ(put("/admin/v2/clusters/test", cluster.dump()).status, 204);
    ASSERT_EQ(
        put("/admin/v2/tenants/public", R"({"adminRoles":[],"allowedClusters":["test"]})").status,
        204);
    ASSERT_EQ(put(kNamespace).status, 204);
  }

  // Starts the server (after stopping the current one, if any) on the same metadata store.
  void start_server(const std::function<void(BrokerConfig&)>& tweak = {},
                    bool load_manager = true) {
    if (server_) {
      server_->stop();
      server_.reset();
    }
    BrokerConfig c;
    c.cluster_name = "test";
    c.bind_address = "127.0.0.1";
    c.broker_service_port = 0;
    c.web_service_port = 0;
    c.num_io_threads = 2;
    c.managed_ledger.ensemble_size = 1;
    c.managed_ledger.write_quorum = 1;
    c.managed_ledger.ack_quorum = 1;
    c.managed_ledger.mark_delete_rate_limit = 0;
    c.managed_ledger_factory.cache_size_mb = 16;
    if (tweak) tweak(c);
    auto s = BrokerServer::start(c, metadata::MetadataStores{store_, store_}, load_manager);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    server_ = std::move(s).value();
    base_ = fmt::format("http://127.0.0.1:{}", server_->web_port());
  }

  // One request on a plain socket, without following redirects: status and Location.
  Reply raw_call(const std::string& method, const std::string& target) {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    boost::system::error_code ec;
    socket.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                           static_cast<uint16_t>(server_->web_port())),
                   ec);
    Reply reply;
    if (ec) {
      ADD_FAILURE() << "connect: " << ec.message();
      return reply;
    }
    const std::string request =
        method + " " + target + " HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
    asio::write(socket, asio::buffer(request), ec);
    std::string raw;
    char buf[4096];
    while (true) {
      const size_t n = socket.read_some(asio::buffer(buf), ec);
      if (ec) break;
      raw.append(buf, n);
    }
    if (raw.rfind("HTTP/1.1 ", 0) == 0 && raw.size() >= 12) {
      reply.status = std::stoi(raw.substr(9, 3));
    }
    const size_t end = raw.find("\r\n\r\n");
    const std::string head = raw.substr(0, end);
    if (end != std::string::npos) reply.body = raw.substr(end + 4);
    std::smatch m;
    if (std::regex_search(head, m, std::regex("\r\n[Ll]ocation: ([^\r]*)"))) reply.location = m[1];
    return reply;
  }

  // Makes another (fake) broker the owner of `bundle` of public/default.
  void give_bundle_away(const std::string& bundle) {
    const Json urls = {{"nativeUrl", "pulsar://10.255.255.1:6650"},
                       {"nativeUrlTls", ""},
                       {"httpUrl", "http://10.255.255.1:8080"},
                       {"httpUrlTls", ""},
                       {"disabled", false}};
    auto made =
        cluster_.await(store_->put_recursive("/namespace/public/default/" + bundle, urls.dump()));
    ASSERT_TRUE(made.ok()) << made.status().to_string();
  }

  // A request through the blocking client. Redirects are not followed (a 307 fails the test:
  // every redirect test uses raw_call()).
  Reply call(const std::string& method, const std::string& target, const std::string& body = "") {
    http::ClientOptions o;
    o.timeout = 10s;
    o.max_redirects = 0;
    http::HttpClient client(o);
    http::HttpRequest request;
    request.method = method;
    request.url = base_ + target;
    request.body = body;
    auto got = client.send_blocking(std::move(request));
    Reply r;
    if (!got.ok()) {
      ADD_FAILURE() << method << " " << target << ": " << got.status().to_string();
      return r;
    }
    r.status = got->status;
    r.body = got->body;
    r.location = got->header("location");
    return r;
  }
  Reply get(const std::string& target) { return call("GET", target); }
  Reply put(const std::string& target, const std::string& body = "") {
    return call("PUT", target, body);
  }
  Reply post(const std::string& target, const std::string& body = "") {
    return call("POST", target, body);
  }
  Reply del(const std::string& target) { return call("DELETE", target); }

  std::unique_ptr<PulsarTestClient> client() {
    PulsarTestClient::Options o;
    o.port = server_->port();
    auto c = PulsarTestClient::connect(o);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Sends `n` messages "m-<seq>" with sequence ids from `first_sequence` through producer
  // `producer_id` of `c`, published at `publish_time` (0: now). Creates the producer first
  // unless `first_sequence` > 0 (more messages from the same producer). Returns their ids.
  std::vector<wire::MessageIdData> produce(PulsarTestClient& c, const std::string& topic, int n,
                                           uint64_t producer_id = 1, uint64_t publish_time = 0,
                                           uint64_t first_sequence = 0) {
    if (first_sequence == 0) {
      auto p = c.create_producer(topic, producer_id);
      EXPECT_TRUE(p.ok()) << p.status().to_string();
    }
    wire::MessageMetadata tmpl;
    if (publish_time != 0) tmpl.set_publish_time(publish_time);
    std::vector<wire::MessageIdData> ids;
    for (int i = 0; i < n; ++i) {
      const uint64_t seq = first_sequence + static_cast<uint64_t>(i);
      auto r = c.send_message(producer_id, seq, "m-" + std::to_string(seq),
                              publish_time != 0 ? &tmpl : nullptr);
      EXPECT_TRUE(r.ok()) << r.status().to_string();
      if (r.ok()) ids.push_back(r->message_id());
    }
    return ids;
  }

  static std::string message_id(const wire::MessageIdData& id) {
    return Json{{"ledgerId", id.ledgerid()}, {"entryId", id.entryid()}}.dump();
  }

  // stats.subscriptions[sub].msgBacklog, or -1.
  int64_t backlog(const std::string& topic, const std::string& sub) {
    Reply r = get(kTopics + "/" + topic + "/stats");
    EXPECT_EQ(r.status, 200) << r;
    Json j = r.json();
    if (!j.is_object() || !j["subscriptions"].contains(sub)) return -1;
    return j["subscriptions"][sub]["msgBacklog"].get<int64_t>();
  }

  // The bundle of public/default/<topic> according to the lookup endpoint.
  std::string bundle_of(const std::string& topic) {
    Reply r = get(kLookup + "/" + topic + "/bundle");
    EXPECT_EQ(r.status, 200) << r;
    return r.body;
  }

  std::set<std::string> owned_bundles() {
    Reply r = get(
        fmt::format("/admin/v2/brokers/test/127.0.0.1:{}/ownedNamespaces", server_->web_port()));
    EXPECT_EQ(r.status, 200) << r;
    std::set<std::string> out;
    const Json owned = r.json();
    if (!owned.is_object()) return out;
    for (const auto& [k, v] : owned.items()) out.insert(k);
    return out;
  }

  Json namespace_policies() {
    Reply r = get(kNamespace);
    EXPECT_EQ(r.status, 200) << r;
    return r.json();
  }

  Cluster cluster_;
  std::shared_ptr<metadata::MetadataStore> store_;
  std::unique_ptr<BrokerServer> server_;
  std::string base_;
};

// Error replies carry Pulsar's {"reason": ...} body.
inline ::testing::AssertionResult IsError(const Reply& r, int code) {
  if (r.status == code && r.has_reason()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << code << " with a reason, got " << r;
}
#define EXPECT_ERROR(reply, code) EXPECT_TRUE(IsError((reply), (code)))

}  // namespace magnetar::broker::routes_test
