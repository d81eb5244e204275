// `magnetar cluster up` / `down` as a user runs them: a real cluster comes up on 127.0.0.1,
// serves a message through each broker, and `down` leaves no process behind.

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

#include "testing/child_process.h"
#include "testing/pulsar_test_client.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY"
#endif

namespace magnetar::testing {
namespace {

TEST(ClusterLauncherTest, UpServesThroughEveryBrokerAndDownStopsEverything) {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-launcher-{}", ::getpid());
  std::filesystem::remove_all(dir);
  const std::string binary = MAGNETAR_BINARY;
  auto [code, out] =
      run_command(fmt::format("{} cluster up --brokers 2 --bookies 2 --data {}", binary, dir.string()));
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
  ASSERT_EQ(pids.size(), 5u);  // zookeeper, 2 bookies, 2 brokers

  // Every broker answers lookups and takes a message for a topic it owns or redirects.
  for (size_t i = 0; i < ports.size(); ++i) {
    PulsarTestClient::Options o;
    o.port = ports[i];
    auto c = PulsarTestClient::connect(o);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    const std::string topic = fmt::format("persistent://public/default/launcher-{}", i);
    auto lookup = (*c)->lookup(topic);
    ASSERT_TRUE(lookup.ok()) << lookup.status().to_string();
    if (lookup->response() == wire::CommandLookupTopicResponse::Connect &&
        lookup->brokerserviceurl() == fmt::format("pulsar://127.0.0.1:{}", ports[i])) {
      ASSERT_TRUE((*c)->create_producer(topic, 1).ok());
      EXPECT_TRUE((*c)->send_message(1, 0, "hello").ok());
    }
  }

  auto [down, down_out] = run_command(fmt::format("{} cluster down --data {}", binary, dir.string()));
  EXPECT_EQ(down, 0) << down_out;
  EXPECT_NE(down_out.find("5 process(es) stopped"), std::string::npos) << down_out;
  for (int pid : pids) EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " still runs";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magnetar::testing
