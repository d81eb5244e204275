#include "testing/zookeeper_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

namespace magnetar::testing {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<ZooKeeperServer> start_server() {
  auto server = ZooKeeperServer::start();
  EXPECT_TRUE(server.ok()) << server.status().to_string();
  return server.ok() ? std::move(server).value() : nullptr;
}

// Polls until `port` refuses connections.
bool refused_within(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    Result<std::string> answer = four_letter_word(port, "ruok", 500ms);
    if (!answer.ok() && answer.status().is(Errc::kUnavailable)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

TEST(ZooKeeperServerTest, StandaloneAnswersRuokOnLoopback) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->running());
  EXPECT_EQ(server->connect_string(), "127.0.0.1:" + std::to_string(server->port()));
  EXPECT_NE(server->dir().find("magnetar-zk-"), std::string::npos);

  Result<std::string> answer = four_letter_word(server->port(), "ruok", 2s);
  ASSERT_TRUE(answer.ok()) << answer.status().to_string();
  EXPECT_EQ(*answer, "imok");
  Result<std::string> mode = server->mode();
  ASSERT_TRUE(mode.ok()) << mode.status().to_string();
  EXPECT_EQ(*mode, "standalone");
}

TEST(ZooKeeperServerTest, DestructorKillsJvmAndRemovesDataDir) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  const std::string dir = server->dir();
  ASSERT_TRUE(std::filesystem::exists(dir + "/zoo.cfg"));
  server.reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_TRUE(refused_within(port, 1s));
}

TEST(ZooKeeperServerTest, StopThenRestartServesOnSamePort) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  const int port = server->port();

  ASSERT_TRUE(server->stop().ok());
  EXPECT_FALSE(server->running());
  EXPECT_TRUE(four_letter_word(port, "ruok", 1s).status().is(Errc::kUnavailable));

  Status st = server->restart();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_TRUE(server->running());
  EXPECT_EQ(server->port(), port);
  Result<std::string> answer = four_letter_word(port, "ruok", 2s);
  ASSERT_TRUE(answer.ok()) << answer.status().to_string();
  EXPECT_EQ(*answer, "imok");
}

TEST(ZooKeeperServerTest, KillMakesPortRefuseConnections) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  server->kill();
  EXPECT_FALSE(server->running());
  Result<std::string> answer = four_letter_word(server->port(), "ruok", 1s);
  ASSERT_FALSE(answer.ok());
  EXPECT_TRUE(answer.status().is(Errc::kUnavailable)) << answer.status().to_string();
  EXPECT_NE(answer.status().message().find("refused"), std::string::npos)
      << answer.status().to_string();
}

TEST(ZooKeeperServerTest, PauseMakesSrvrTimeOutAndResumeRestoresIt) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);

  server->pause();
  EXPECT_TRUE(server->running());
  Result<std::string> answer = four_letter_word(server->port(), "srvr", 500ms);
  ASSERT_FALSE(answer.ok()) << *answer;
  EXPECT_TRUE(answer.status().is(Errc::kTimeout)) << answer.status().to_string();
  EXPECT_TRUE(server->wait_until_serving(300ms).is(Errc::kTimeout));

  server->resume();
  Status st = server->wait_until_serving(10s);
  EXPECT_TRUE(st.ok()) << st.to_string();
}

TEST(ZooKeeperServerTest, StopEndsAPausedServer) {
  auto server = start_server();
  ASSERT_NE(server, nullptr);
  server->pause();
  ASSERT_TRUE(server->stop().ok());
  EXPECT_FALSE(server->running());
  EXPECT_TRUE(refused_within(server->port(), 1s));
}

TEST(ZooKeeperServerTest, JvmInheritsNoDescriptors) {
  // A listening socket without close-on-exec, as a careless test might hold one.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);

  auto server = start_server();
  ::close(fd);
  ASSERT_NE(server, nullptr);
  // Had the JVM inherited the socket, the port would still accept connections.
  EXPECT_TRUE(refused_within(port, 1s));
}

TEST(ZooKeeperServerTest, FailedStartQuotesTheJvmLog) {
  ZooKeeperOptions options;
  options.classpath = "/nonexistent/zookeeper.jar";
  options.start_timeout = 10s;
  auto server = ZooKeeperServer::start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_TRUE(server.status().is(Errc::kUnavailable)) << server.status().to_string();
  // The JVM's own complaint, from the tail of its log.
  EXPECT_NE(server.status().message().find("QuorumPeerMain"), std::string::npos)
      << server.status().to_string();

  options.classpath.clear();
  options.java_binary = "/nonexistent/java";
  EXPECT_TRUE(ZooKeeperServer::start(options).status().is(Errc::kNotFound));
}

TEST(ZooKeeperServerTest, AnotherServerOnThePortIsNotMistakenForOurs) {
  // Two tests can pick the same free port; the second JVM then fails to bind, but the first
  // answers on the port meanwhile. The fixture must not take that answer as its own.
  auto first = ZooKeeperServer::start();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  ZooKeeperOptions options;
  options.port = (*first)->port();
  options.start_timeout = 10s;
  auto second = ZooKeeperServer::start(options);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("another zookeeper"), std::string::npos)
      << second.status().to_string();
  EXPECT_TRUE(four_letter_word((*first)->port(), "ruok", 5s).ok());  // the first one is fine
}

TEST(ZooKeeperServerTest, JvmDiesWithTheTestProcess) {
  // A child process stands in for a crashing test: it starts a server, reports the port and
  // directory, and is SIGKILLed. PR_SET_PDEATHSIG must take the JVM down with it.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    auto server = ZooKeeperServer::start();
    std::string report =
        server.ok() ? fmt::format("{} {} {}", (*server)->pid(), (*server)->port(), (*server)->dir())
                    : "failed";
    report += '\n';
    (void)!::write(fds[1], report.data(), report.size());
    ::close(fds[1]);
    ::pause();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  char buf[512];
  // Up to the newline, not EOF: a JVM that inherited the pipe would hold it open.
  for (ssize_t n;
       report.find('\n') == std::string::npos && (n = ::read(fds[0], buf, sizeof buf)) > 0;) {
    report.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);

  pid_t jvm = -1;
  int port = 0;
  char dir[256] = {};
  ASSERT_EQ(std::sscanf(report.c_str(), "%d %d %255s", &jvm, &port, dir), 3) << report;
  const bool died = refused_within(port, 5s);
  if (!died) ::kill(jvm, SIGKILL);  // no longer our child: clean up by hand
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(died) << "JVM " << jvm << " outlived the process that started it";
}

std::map<std::string, int> count_modes(ZooKeeperEnsemble& ensemble) {
  std::map<std::string, int> modes;
  for (int i = 0; i < ensemble.size(); ++i) {
    if (!ensemble.server(i).running()) continue;
    Result<std::string> mode = ensemble.server(i).mode();
    ++modes[mode.ok() ? *mode : mode.status().to_string()];
  }
  return modes;
}

TEST(ZooKeeperEnsembleTest, ElectsOneLeaderAndSurvivesLosingIt) {
  auto started = ZooKeeperEnsemble::start();
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  ZooKeeperEnsemble& ensemble = **started;
  ASSERT_EQ(ensemble.size(), 3);
  EXPECT_EQ(ensemble.connect_string(), ensemble.server(0).connect_string() + "," +
                                           ensemble.server(1).connect_string() + "," +
                                           ensemble.server(2).connect_string());
  EXPECT_EQ(count_modes(ensemble), (std::map<std::string, int>{{"follower", 2}, {"leader", 1}}));

  Result<int> leader = ensemble.wait_for_leader(1s);
  ASSERT_TRUE(leader.ok()) << leader.status().to_string();
  ensemble.server(*leader).kill();

  // The two survivors are a quorum: they elect a new leader and serve again.
  Result<int> next = ensemble.wait_for_leader(20s);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_NE(*next, *leader);
  EXPECT_EQ(count_modes(ensemble), (std::map<std::string, int>{{"follower", 1}, {"leader", 1}}));

  // The old leader rejoins as a follower.
  Status st = ensemble.server(*leader).restart();
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(ensemble.server(*leader).mode().value_or(""), "follower");
}

}  // namespace
}  // namespace magnetar::testing
