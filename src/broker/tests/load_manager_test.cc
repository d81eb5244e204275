// The load manager's reports over a memory: store, with a fake CPU clock.

#include "broker/namespace/load_manager.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "broker/namespace/namespace_service.h"
#include "testing/event_loop.h"

namespace magnetar::broker {
namespace {

class NoTopics final : public BundleTopics {
 public:
  Task<int> close_topics(std::function<bool(const protocol::TopicName&)>) override { co_return 0; }
  Task<std::vector<TopicLoad>> topic_loads() override { co_return std::vector<TopicLoad>{}; }
};

Task<bool> stop_both(LoadManager& load, NamespaceService& namespaces) {
  co_await load.stop();
  co_await namespaces.stop();
  co_return true;
}

// The kernel counts CPU time in 10 ms ticks: a first report taken milliseconds after the
// start, across a tick, once read as several cores busy, and placement passed the new broker
// over as overloaded. Usage is measured over a window of a second or more.
TEST(LoadManagerTest, AFreshBrokersFirstReportDoesNotClaimTheCpuOfATick) {
  testing::EventLoop loop;
  auto opened = loop.await(metadata::open_store("memory:load-manager-test"));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  std::shared_ptr<metadata::MetadataStore> store(std::move(opened).value());
  Gate gate;
  BrokerConfig config;
  NamespaceService namespaces(
      loop.executor(), metadata::MetadataStores{store, store}, config, gate,
      BrokerUrls{"pulsar://127.0.0.1:16650", "", "http://127.0.0.1:18080", ""});
  NoTopics topics;
  namespaces.set_topics(&topics);
  LoadManagerOptions options;
  double cpu = 10.0;
  options.cpu_seconds = [&cpu] { return cpu += 0.01; };  // a tick passes at every reading
  LoadManager load(namespaces, options);
  namespaces.set_load_manager(&load);
  ASSERT_TRUE(loop.await(load.start()).ok());
  auto node = loop.await(store->get("/loadbalance/brokers/127.0.0.1:18080"));
  ASSERT_TRUE(node.ok() && node->has_value());
  const auto report = nlohmann::json::parse((*node)->value);
  ASSERT_TRUE(report.contains("cpu")) << report.dump();
  EXPECT_EQ(report["cpu"].value("usage", -1.0), 0.0) << report.dump();
  EXPECT_TRUE(loop.await(stop_both(load, namespaces)));
  (void)loop.await(store->close());
}

}  // namespace
}  // namespace magnetar::broker
