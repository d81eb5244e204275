// conf/grafana/magnetar-overview.json against what Magnetar exports: a standalone with traffic
// (a producer, a subscription, a replicator towards a second cluster) must export every series
// the dashboard's queries name, broker and bookie alike, so that no panel stays empty because of
// a misspelt or removed metric.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "broker_fixture.h"
#include "standalone_process.h"
#include "testing/pulsar_test_client.h"

#ifndef MAGNETAR_DASHBOARD
#error "tests/integration/CMakeLists.txt passes MAGNETAR_DASHBOARD, the Grafana dashboard"
#endif

namespace magnetar {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::PulsarTestClient;
using testing::Standalone;
using testing::http;

Json load_dashboard() {
  std::ifstream in(MAGNETAR_DASHBOARD);
  return Json::parse(in, nullptr, false);
}

// The metric names in the PromQL of every panel target (pulsar_* and magnetar_*).
std::set<std::string> dashboard_series(const Json& dashboard) {
  std::set<std::string> names;
  const std::regex metric("(pulsar|magnetar)_[a-z0-9_]+");
  for (const auto& panel : dashboard.value("panels", Json::array())) {
    for (const auto& target : panel.value("targets", Json::array())) {
      const std::string expr = target.value("expr", "");
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric);
           it != std::sregex_iterator(); ++it) {
        names.insert(it->str());
      }
    }
  }
  return names;
}

// The names of the series with samples in a Prometheus exposition.
std::set<std::string> exported_series(const std::string& exposition) {
  std::set<std::string> names;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    names.insert(line.substr(0, line.find_first_of("{ ")));
  }
  return names;
}

TEST(GrafanaDashboardTest, IsAGrafanaDashboardCoveringWhatOperatorsWatch) {
  const Json dashboard = load_dashboard();
  ASSERT_TRUE(dashboard.is_object()) << MAGNETAR_DASHBOARD << " is not JSON";
  EXPECT_FALSE(dashboard.value("uid", "").empty());
  std::set<int> ids;
  for (const auto& panel : dashboard.value("panels", Json::array())) {
    const int id = panel.value("id", 0);
    EXPECT_TRUE(ids.insert(id).second) << "panel id " << id << " used twice";
    ASSERT_TRUE(panel.contains("gridPos")) << panel.value("title", "");
    std::set<std::string> refs;
    for (const auto& target : panel.value("targets", Json::array())) {
      EXPECT_TRUE(refs.insert(target.value("refId", "")).second) << panel.value("title", "");
      EXPECT_FALSE(target.value("expr", "").empty()) << panel.value("title", "");
    }
  }
  // What the operations guide promises the dashboard shows: publish and dispatch rates,
  // publish latency, backlog, the bookies' journal and add latency, replication lag.
  const auto series = dashboard_series(dashboard);
  for (const char* wanted :
       {"pulsar_rate_in", "pulsar_rate_out", "pulsar_storage_write_latency_le_1",
        "pulsar_broker_publish_latency", "magnetar_ledger_bookie_request_latency_ms_bucket",
        "pulsar_msg_backlog", "pulsar_subscription_back_log",
        "magnetar_bookie_journal_add_latency_ms_bucket",
        "magnetar_bookie_journal_sync_latency_ms_bucket",
        "magnetar_bookie_add_request_latency_ms_bucket", "pulsar_replication_backlog",
        "pulsar_replication_delay_in_seconds"}) {
    EXPECT_TRUE(series.count(wanted)) << "the dashboard does not show " << wanted;
  }
}

TEST(GrafanaDashboardTest, AStandaloneExportsEverySeriesTheDashboardAsksFor) {
  const auto series = dashboard_series(load_dashboard());
  ASSERT_GT(series.size(), 50u);
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-grafana-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  Standalone s(dir, {"statsUpdateFrequencyInSecs=1"});
  ASSERT_TRUE(s.start());
  // A second cluster nobody serves, and a namespace replicated to it: its topics get a
  // replicator that stays disconnected, with a growing backlog and delay.
  const int web = s.web_port();
  auto expect_done = [web](const std::string& method, const std::string& path, const Json& body) {
    auto [code, text] = http(web, method, path, body.dump());
    EXPECT_TRUE(code == 200 || code == 204) << method << " " << path << ": " << code << " " << text;
  };
  expect_done("PUT", "/admin/v2/clusters/far",
              Json{{"serviceUrl", "http://127.0.0.1:9"}, {"brokerServiceUrl", "pulsar://127.0.0.1:9"}});
  expect_done("POST", "/admin/v2/tenants/public",
              Json{{"adminRoles", Json::array()}, {"allowedClusters", {"standalone", "far"}}});
  expect_done("PUT", "/admin/v2/namespaces/public/geo", Json::object());
  expect_done("POST", "/admin/v2/namespaces/public/geo/replication", Json{"standalone", "far"});
  PulsarTestClient::Options o;
  o.port = s.port();
  o.timeout = 10s;
  auto c = PulsarTestClient::connect(o);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  const std::string topic = "persistent://public/default/dashboard";
  ASSERT_TRUE((*c)->subscribe(topic, "sub", wire::CommandSubscribe::Shared, 7).ok());
  ASSERT_TRUE((*c)->flow(7, 100).ok());
  ASSERT_TRUE((*c)->create_producer(topic, 1).ok());
  ASSERT_TRUE((*c)->create_producer("persistent://public/geo/dashboard", 2).ok());
  for (uint64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE((*c)->send_message(1, i, "m").ok());
    ASSERT_TRUE((*c)->send_message(2, i, "m").ok());
  }
  for (int i = 0; i < 20; ++i) ASSERT_TRUE((*c)->receive_message(5s).ok());
  std::set<std::string> missing;
  for (int i = 0; i < 150; ++i) {  // until a stats period (and a write-cache flush) has passed
    const auto exported = exported_series(http(web, "GET", "/metrics").second);
    missing.clear();
    for (const auto& name : series) {
      if (!exported.count(name)) missing.insert(name);
    }
    if (missing.empty()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_TRUE(missing.empty()) << "not exported: " << ::testing::PrintToString(missing);
  s.kill();
  if (!::testing::Test::HasFailure()) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magnetar
