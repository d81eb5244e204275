// The servers started as a Pulsar user starts Pulsar's: `magnetar standalone` with pulsar
// standalone's flags (-nfw -nss --wipe-data --advertised-address --bookkeeper-port) and with
// Pulsar's own standalone.conf; `magnetar broker` with Pulsar's broker.conf and `magnetar
// bookie` with BookKeeper's bookkeeper.conf; a failed first start that leaves nothing in the
// way of the next; a restart on other ports that the cluster's URLs follow.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker_fixture.h"
#include "common/ports.h"
#include "standalone_process.h"
#include "testing/child_process.h"
#include "testing/pulsar_test_client.h"

#ifndef MAGNETAR_PULSAR_CONF_DIR
#error "tests/integration/CMakeLists.txt passes MAGNETAR_PULSAR_CONF_DIR"
#endif

namespace magnetar {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;
using testing::PulsarTestClient;
using testing::Standalone;
using testing::http;

const std::string kConfDir = MAGNETAR_PULSAR_CONF_DIR;

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             fmt::format("magnetar-habits-{}-{}", name, ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Produces one message to `topic` on 127.0.0.1:port; an error when it was not stored.
Status produce_one(int port, const std::string& topic) {
  PulsarTestClient::Options o;
  o.port = port;
  o.timeout = 10s;
  auto c = PulsarTestClient::connect(o);
  if (!c.ok()) return c.status();
  auto p = (*c)->create_producer(topic, 1);
  if (!p.ok()) return p.status();
  auto sent = (*c)->send_message(1, 0, "hello");
  return sent.ok() ? Status::OK() : sent.status();
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(PulsarHabitsTest, StandaloneTakesPulsarsFlagsAndItsStandaloneConf) {
  const auto dir = fresh_dir("flags");
  Standalone s(dir);
  s.set_args({"-nfw", "-nss", "--conf", kConfDir + "/standalone.conf", "--advertised-address",
              "localhost", "--bookkeeper-port", std::to_string(s.bookie_port())});
  ASSERT_TRUE(s.start());
  const std::string log = s.log();
  // Pulsar's keys we do not act on: one warning naming them.
  EXPECT_EQ(occurrences(log, "accepted but not acted on by the standalone"), 1u) << log;
  EXPECT_NE(log.find("webSocketServiceEnabled"), std::string::npos);
  // The advertised host name is in the cluster's URLs and in lookups.
  auto [status, body] = http(s.web_port(), "GET", "/admin/v2/clusters/standalone");
  ASSERT_EQ(status, 200) << body;
  const Json cluster = Json::parse(body, nullptr, false);
  EXPECT_EQ(cluster.value("serviceUrl", ""), fmt::format("http://localhost:{}", s.web_port()));
  EXPECT_EQ(cluster.value("brokerServiceUrl", ""), fmt::format("pulsar://localhost:{}", s.port()));
  auto lookup = http(s.web_port(), "GET", "/lookup/v2/topic/persistent/public/default/t");
  ASSERT_EQ(lookup.first, 200) << lookup.second;
  EXPECT_EQ(Json::parse(lookup.second, nullptr, false).value("brokerUrl", ""),
            fmt::format("pulsar://localhost:{}", s.port()));
  // The embedded bookie listens on what the host name resolves to: messages are stored.
  Status st = produce_one(s.port(), "persistent://public/default/t");
  EXPECT_TRUE(st.ok()) << st.to_string();
  s.kill();
  std::filesystem::remove_all(dir);
}

TEST(PulsarHabitsTest, AFailedFirstStartLeavesNothingInTheWayOfTheNext) {
  const auto dir = fresh_dir("failed");
  Standalone s(dir);
  s.keep_ports_when_taken();
  {
    // The web port is taken: the first start fails after the metadata and the bookie
    // started.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(s.web_port()));
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(fd, 1), 0);
    EXPECT_FALSE(s.start());
    ::close(fd);
  }
  ASSERT_TRUE(s.start()) << s.log();
  Status st = produce_one(s.port(), "persistent://public/default/after-failure");
  EXPECT_TRUE(st.ok()) << st.to_string();
  s.kill();

  // Started again on other broker ports over the same data: the cluster's URLs follow, the
  // topic is still there; --wipe-data starts from nothing.
  Standalone moved(dir);
  moved.set_bookie_port(s.bookie_port());
  ASSERT_TRUE(moved.start());
  auto [status, body] = http(moved.web_port(), "GET", "/admin/v2/clusters/standalone");
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(Json::parse(body, nullptr, false).value("brokerServiceUrl", ""),
            fmt::format("pulsar://localhost:{}", moved.port()));
  const std::string stats = "/admin/v2/persistent/public/default/after-failure/stats";
  EXPECT_EQ(http(moved.web_port(), "GET", stats).first, 200);
  moved.kill();
  moved.set_args({"--wipe-data"});
  ASSERT_TRUE(moved.start());
  EXPECT_EQ(http(moved.web_port(), "GET", stats).first, 404);
  EXPECT_EQ(http(moved.web_port(), "GET", "/admin/v2/namespaces/public").first, 200);
  moved.kill();
  std::filesystem::remove_all(dir);
}

// Runs `magnetar <role> --conf <Pulsar's file> --set ...` until `ready` shows in its log.
::testing::AssertionResult runs_until(const std::filesystem::path& dir, std::vector<std::string> args,
                                      const std::string& ready, std::string* log_text) {
  const std::string log = (dir / "server.log").string();
  auto pid = testing::spawn_child(std::move(args), log, dir.string());
  if (!pid.ok()) return ::testing::AssertionFailure() << pid.status().to_string();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  bool up = false;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(log);
    *log_text = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (log_text->find(ready) != std::string::npos) {
      up = true;
      break;
    }
    if (testing::reap_child(*pid, false).has_value()) break;
    std::this_thread::sleep_for(50ms);
  }
  ::kill(*pid, SIGTERM);
  const auto status = testing::reap_child(*pid, true);
  if (!up) return ::testing::AssertionFailure() << "not ready:\n" << *log_text;
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    return ::testing::AssertionFailure() << "did not stop cleanly:\n" << *log_text;
  }
  return ::testing::AssertionSuccess();
}

TEST(PulsarHabitsTest, PulsarsBrokerConfAndBookKeepersConfStartOurServers) {
  const auto dir = fresh_dir("confs");
  auto ports = pick_free_ports(3);
  ASSERT_TRUE(ports.ok()) << ports.status().to_string();
  std::string log;
  EXPECT_TRUE(runs_until(
      dir,
      {MAGNETAR_BINARY, "broker", "--conf", kConfDir + "/broker.conf", "--set",
       "clusterName=habits", "--set", "metadataStoreUrl=rocksdb://" + (dir / "meta").string(),
       "--set", "bindAddress=127.0.0.1", "--set", "advertisedAddress=localhost", "--set",
       fmt::format("brokerServicePort={}", (*ports)[0]), "--set",
       fmt::format("webServicePort={}", (*ports)[1])},
      "broker ready", &log));
  EXPECT_EQ(occurrences(log, "accepted but not acted on by the broker"), 1u) << log;

  EXPECT_TRUE(runs_until(
      dir,
      {MAGNETAR_BINARY, "bookie", "--conf", kConfDir + "/bookkeeper.conf", "--set",
       "metadataStoreUrl=rocksdb://" + (dir / "bk-meta").string(), "--set",
       "journalDirectories=" + (dir / "journal").string(), "--set",
       "ledgerDirectories=" + (dir / "ledgers").string(), "--set",
       fmt::format("bookiePort={}", (*ports)[2])},
      "serving the bookie protocol", &log));
  EXPECT_EQ(occurrences(log, "accepted but not acted on by the bookie"), 1u) << log;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace magnetar
