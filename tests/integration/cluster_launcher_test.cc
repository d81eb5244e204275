// `magnetar cluster up` / `down` as a user runs them: a real cluster comes up on 127.0.0.1,
// serves a message through each broker, and `down` leaves no process behind; `up` again on
// the same directory brings the same cluster back on its ports with its messages, and
// refuses another shape. Once with ZooKeeper, once with etcd as the metadata store. With
// `--proxies`, our client library produces and consumes through a proxy alone.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "magnetar/client.h"
#include "testing/child_process.h"
#include "testing/pulsar_test_client.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY"
#endif

namespace magnetar::testing {
namespace {

class ClusterLauncherTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ClusterLauncherTest, UpServesThroughEveryBrokerAndDownStopsEverything) {
  const std::string metadata = GetParam();
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-launcher-{}-{}", metadata, ::getpid());
  std::filesystem::remove_all(dir);
  const std::string binary = MAGNETAR_BINARY;
  auto [code, out] = run_command(fmt::format("{} cluster up --metadata {} --brokers 2 --bookies 2 "
                                             "--data {}",
                                             binary, metadata, dir.string()));
  ASSERT_EQ(code, 0) << out;
  const std::regex broker_line(R"(broker\s+pulsar://127\.0\.0\.1:(\d+)\s+http://127\.0\.0\.1:(\d+))");
  std::vector<int> ports;
  for (std::sregex_iterator it(out.begin(), out.end(), broker_line), end; it != end; ++it) {
    ports.push_back(std::stoi((*it)[1]));
  }
  ASSERT_EQ(ports.size(), 2u) << out;
  // A second `up` on the same directory refuses.
  auto [again, again_out] =
      run_command(fmt::format("{} cluster up --data {}", binary, dir.string()));
  EXPECT_NE(again, 0) << again_out;
  EXPECT_NE(again_out.find("already running"), std::string::npos) << again_out;

  std::ifstream state(dir / "cluster.json");
  std::stringstream text;
  text << state.rdbuf();
  auto j = nlohmann::json::parse(text.str());
  std::vector<int> pids;
  for (const auto& p : j["processes"]) pids.push_back(p["pid"].get<int>());
  ASSERT_EQ(pids.size(), 5u);  // the metadata store, 2 bookies, 2 brokers
  const std::string url = j["metadataStoreUrl"].get<std::string>();
  EXPECT_EQ(url.rfind(metadata == "etcd" ? "etcd:http://127.0.0.1:" : "zk:127.0.0.1:", 0), 0u)
      << url;

  // The owner of a topic, found from `start` by following redirects as a client does.
  auto owner_of = [](const std::string& topic, int start) {
    int port = start;
    bool authoritative = false;
    for (int hop = 0; hop < 6; ++hop) {
      PulsarTestClient::Options o;
      o.port = port;
      o.timeout = std::chrono::seconds(30);
      auto c = PulsarTestClient::connect(o);
      if (!c.ok()) return -1;
      auto lookup = (*c)->lookup(topic, authoritative);
      if (!lookup.ok()) return -1;
      const std::string url = lookup->brokerserviceurl();
      const int next = std::stoi(url.substr(url.rfind(':') + 1));
      if (lookup->response() == wire::CommandLookupTopicResponse::Connect) return next;
      authoritative = lookup->authoritative();
      port = next;
    }
    return -1;
  };
  // Every broker answers lookups; a message is stored through each topic's owner.
  std::vector<std::string> sent;
  for (size_t i = 0; i < ports.size(); ++i) {
    const std::string topic = fmt::format("persistent://public/default/launcher-{}", i);
    const int owner = owner_of(topic, ports[i]);
    ASSERT_TRUE(owner == ports[0] || owner == ports[1]) << topic << " owned by " << owner;
    PulsarTestClient::Options o;
    o.port = owner;
    auto c = PulsarTestClient::connect(o);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    ASSERT_TRUE((*c)->create_producer(topic, 1).ok());
    EXPECT_TRUE((*c)->send_message(1, 0, "hello").ok());
    sent.push_back(topic);
  }

  // BookKeeper's shell commands, by BookKeeper's names and options, against the cluster.
  const std::string shell = fmt::format("{} bookkeeper --set metadataStoreUrl={}", binary, url);
  auto [listed, listed_out] = run_command(shell + " listbookies -rw");
  EXPECT_EQ(listed, 0) << listed_out;
  EXPECT_EQ(listed_out.rfind("ReadWrite Bookies :\n127.0.0.1:", 0), 0u) << listed_out;
  EXPECT_EQ(listed_out.find("Readonly"), std::string::npos) << listed_out;
  auto [ledgers, ledgers_out] = run_command(shell + " listledgers");
  EXPECT_EQ(ledgers, 0) << ledgers_out;
  std::smatch first;
  ASSERT_TRUE(std::regex_search(ledgers_out, first, std::regex(R"(ledgerID: (\d+))"))) << ledgers_out;
  auto [meta, meta_out] = run_command(shell + " ledgermetadata -l " + first[1].str());
  EXPECT_EQ(meta, 0) << meta_out;
  EXPECT_EQ(meta_out.rfind("ledgerID: " + first[1].str() + "\n", 0), 0u) << meta_out;
  auto [read, read_out] = run_command(shell + " readledger -l " + first[1].str() + " -fe 0 -le 0");
  EXPECT_EQ(read, 0) << read_out;
  if (!read_out.empty()) {
    EXPECT_EQ(read_out.rfind("--------- Lid=" + first[1].str() + ", Eid=0, EntrySize=", 0), 0u)
        << read_out;
  }

  auto [down, down_out] = run_command(fmt::format("{} cluster down --data {}", binary, dir.string()));
  EXPECT_EQ(down, 0) << down_out;
  EXPECT_NE(down_out.find("5 process(es) stopped"), std::string::npos) << down_out;
  for (int pid : pids) EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " still runs";

  // Another shape on the same data is refused, with the reason.
  auto [other, other_out] = run_command(fmt::format(
      "{} cluster up --metadata {} --brokers 1 --bookies 2 --data {}", binary, metadata,
      dir.string()));
  EXPECT_NE(other, 0) << other_out;
  EXPECT_NE(other_out.find("with 2 broker(s) and 2 bookie(s)"), std::string::npos) << other_out;
  const std::string other_store = metadata == "etcd" ? "zookeeper" : "etcd";
  auto [moved, moved_out] = run_command(fmt::format(
      "{} cluster up --metadata {} --brokers 2 --bookies 2 --data {}", binary, other_store,
      dir.string()));
  EXPECT_NE(moved, 0) << moved_out;
  EXPECT_NE(moved_out.find("on " + metadata + " with"), std::string::npos) << moved_out;
  // The same shape restarts it: the same brokers' URLs, the messages still there.
  auto [restart, restart_out] = run_command(fmt::format(
      "{} cluster up --metadata {} --brokers 2 --bookies 2 --data {}", binary, metadata,
      dir.string()));
  ASSERT_EQ(restart, 0) << restart_out;
  EXPECT_NE(restart_out.find("restarting cluster local"), std::string::npos) << restart_out;
  std::vector<int> again_ports;
  for (std::sregex_iterator it(restart_out.begin(), restart_out.end(), broker_line), end;
       it != end; ++it) {
    again_ports.push_back(std::stoi((*it)[1]));
  }
  EXPECT_EQ(again_ports, ports) << restart_out;
  // Wherever the topics are served now, what was sent is still stored: a reader from the
  // earliest position gets it.
  for (const std::string& topic : sent) {
    const int owner = owner_of(topic, ports[0]);
    ASSERT_TRUE(owner == ports[0] || owner == ports[1]) << topic << " owned by " << owner;
    PulsarTestClient::Options o;
    o.port = owner;
    o.timeout = std::chrono::seconds(30);
    auto c = PulsarTestClient::connect(o);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    ASSERT_TRUE((*c)->subscribe(topic, "after-restart", wire::CommandSubscribe::Exclusive, 1,
                                wire::CommandSubscribe::Earliest)
                    .ok());
    ASSERT_TRUE((*c)->flow(1, 10).ok());
    auto m = (*c)->receive_message(std::chrono::seconds(30));
    ASSERT_TRUE(m.ok()) << topic << ": " << m.status().to_string();
    EXPECT_EQ(m->payload.to_string(), "hello");
  }
  EXPECT_FALSE(sent.empty());
  auto [down2, down2_out] =
      run_command(fmt::format("{} cluster down --data {}", binary, dir.string()));
  EXPECT_EQ(down2, 0) << down2_out;
  EXPECT_NE(down2_out.find("5 process(es) stopped"), std::string::npos) << down2_out;
  std::filesystem::remove_all(dir);
}

TEST(ClusterLauncherProxiesTest, UpServesThroughAProxyAndDownStopsItFirst) {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-launcher-proxies-{}", ::getpid());
  std::filesystem::remove_all(dir);
  const std::string binary = MAGNETAR_BINARY;
  auto [code, out] = run_command(fmt::format(
      "{} cluster up --brokers 2 --bookies 2 --proxies 1 --data {}", binary, dir.string()));
  // Whatever fails below, nothing is left running.
  struct Down {
    std::string command;
    ~Down() { (void)run_command(command); }
  } stop_on_exit{fmt::format("{} cluster down --data {} >/dev/null 2>&1", binary, dir.string())};
  ASSERT_EQ(code, 0) << out;
  std::smatch proxy;
  const std::regex proxy_line(
      R"(\nproxy\s+(pulsar://127\.0\.0\.1:\d+)\s+(http://127\.0\.0\.1:\d+)\n)");
  ASSERT_TRUE(std::regex_search(out, proxy, proxy_line)) << out;
  const std::string service_url = proxy[1], web_url = proxy[2];
  EXPECT_NE(out.find("cluster up: 2 broker(s), 2 bookie(s), 1 proxy;"), std::string::npos) << out;

  std::ifstream state(dir / "cluster.json");
  std::stringstream text;
  text << state.rdbuf();
  auto j = nlohmann::json::parse(text.str());
  ASSERT_EQ(j["proxies"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["proxies"][0]["serviceUrl"], service_url);
  EXPECT_EQ(j["proxies"][0]["webServiceUrl"], web_url);
  ASSERT_EQ(j["layout"]["proxyPorts"].size(), 1u) << j.dump(2);
  EXPECT_EQ(j["layout"]["proxyPorts"][0][0].get<int>(),
            std::stoi(service_url.substr(service_url.rfind(':') + 1)));
  std::vector<int> pids;
  for (const auto& p : j["processes"]) pids.push_back(p["pid"].get<int>());
  ASSERT_EQ(pids.size(), 6u);  // ZooKeeper, 2 bookies, 2 brokers, the proxy

  // The client knows the proxy only: lookups and data both go through it.
  {
    client::ClientOptions options;
    options.operation_timeout = std::chrono::seconds(30);
    options.initial_backoff = std::chrono::milliseconds(50);
    options.max_backoff = std::chrono::seconds(1);
    auto c = client::Client::create(service_url, options);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    const std::string topic = "persistent://public/default/through-the-proxy";
    auto consumer = c->subscribe(topic, "sub");
    ASSERT_TRUE(consumer.ok()) << consumer.status().to_string();
    auto producer = c->create_producer(topic);
    ASSERT_TRUE(producer.ok()) << producer.status().to_string();
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(producer->send(client::Message(fmt::format("m{}", i))).ok());
    }
    for (int i = 0; i < 5; ++i) {
      auto m = consumer->receive(std::chrono::seconds(10));
      ASSERT_TRUE(m.ok()) << "message " << i << ": " << m.status().to_string();
      EXPECT_EQ(m->payload(), fmt::format("m{}", i));
      EXPECT_TRUE(consumer->acknowledge(*m).ok());
    }
    (void)c->close();
  }

  auto [down, down_out] =
      run_command(fmt::format("{} cluster down --data {}", binary, dir.string()));
  EXPECT_EQ(down, 0) << down_out;
  EXPECT_EQ(down_out.rfind("stopped proxy-0 ", 0), 0u) << down_out;  // before the brokers
  EXPECT_NE(down_out.find("6 process(es) stopped"), std::string::npos) << down_out;
  for (int pid : pids) EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " still runs";

  // Another number of proxies on the same data is refused, with the reason.
  auto [other, other_out] = run_command(fmt::format(
      "{} cluster up --brokers 2 --bookies 2 --proxies 2 --data {}", binary, dir.string()));
  EXPECT_NE(other, 0) << other_out;
  EXPECT_NE(other_out.find("with 2 broker(s), 2 bookie(s) and 1 proxy"), std::string::npos)
      << other_out;
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(MetadataStores, ClusterLauncherTest,
                         ::testing::Values(std::string("zookeeper"), std::string("etcd")),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "etcd" ? std::string("Etcd")
                                                       : std::string("ZooKeeper");
                         });

}  // namespace
}  // namespace magnetar::testing
