// A lock held by a process that dies by SIGKILL (no close, no cleanup) is released when its
// ZooKeeper session times out, and another process's waiting acquire then gets it. The
// holder is this test binary re-executed to run the disabled LockHolderProcess test.

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "metadata/resource_lock.h"
#include "metadata/tests/store_test_support.h"
#include "testing/zookeeper_server.h"

extern char** environ;

namespace magnetar::metadata {
namespace {

using test::Loop;

constexpr auto kSessionTimeout = std::chrono::milliseconds(2000);

StoreOptions short_session() {
  StoreOptions o;
  o.session_timeout = kSessionTimeout;
  o.operation_timeout = std::chrono::milliseconds(10000);
  return o;
}

// Run only inside the child process (see below): takes the lock, says so, waits to die.
TEST(LockHolderProcess, DISABLED_HoldLockUntilKilled) {
  const char* url = std::getenv("MAGNETAR_LOCK_TEST_URL");
  ASSERT_NE(url, nullptr);
  Loop loop;
  auto store = loop.await(open_store(url, short_session()));
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  LockManager locks(store->get(), loop.executor());
  auto attempt = loop.await(locks.try_acquire("/bundle-0x00000000_0x40000000", "child"));
  ASSERT_TRUE(attempt.ok() && attempt->acquired());
  std::printf("LOCKED\n");
  std::fflush(stdout);
  loop.run_for(std::chrono::seconds(120));  // until SIGKILL
}

TEST(LockAcrossProcessesTest, LockOfAKilledProcessPassesToAWaiterAfterTheSessionTimeout) {
  auto zk = testing::ZooKeeperServer::start();
  ASSERT_TRUE(zk.ok()) << zk.status().to_string();
  std::string url = "zk:" + (*zk)->connect_string() + "/locks";

  // Start the holder: this binary, running only the disabled test above.
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::string env_url = "MAGNETAR_LOCK_TEST_URL=" + url;
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  envp.push_back(env_url.data());
  envp.push_back(nullptr);
  std::string self = "/proc/self/exe";
  std::string filter = "--gtest_filter=LockHolderProcess.DISABLED_HoldLockUntilKilled";
  std::string also = "--gtest_also_run_disabled_tests";
  char* argv[] = {self.data(), filter.data(), also.data(), nullptr};
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data()), 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);

  // Wait for "LOCKED" (bounded).
  std::string seen;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen.find("LOCKED") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    char buf[256];
    ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  ASSERT_NE(seen.find("LOCKED"), std::string::npos) << "holder output: " << seen;

  Loop loop;
  auto store = loop.await(open_store(url, short_session()));
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  LockManager locks(store->get(), loop.executor());
  auto busy = loop.await(locks.try_acquire("/bundle-0x00000000_0x40000000", "parent"));
  ASSERT_TRUE(busy.ok());
  ASSERT_FALSE(busy->acquired());
  EXPECT_EQ(busy->holder_value, "child");

  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto killed_at = std::chrono::steady_clock::now();
  auto lock = loop.await(locks.acquire("/bundle-0x00000000_0x40000000", "parent",
                                       std::chrono::milliseconds(30000)));
  auto waited = std::chrono::steady_clock::now() - killed_at;
  ASSERT_TRUE(lock.ok()) << lock.status().to_string();
  EXPECT_TRUE((*lock)->is_held());
  // Not before the dead session could have expired, and not long after.
  EXPECT_GE(waited, kSessionTimeout / 2);
  EXPECT_LT(waited, kSessionTimeout * 8);
  auto holder = loop.await(locks.holder_value("/bundle-0x00000000_0x40000000"));
  ASSERT_TRUE(holder.ok() && holder->has_value());
  EXPECT_EQ(**holder, "parent");
  (void)loop.await((*lock)->release());
  (void)loop.await((*store)->close());
}

}  // namespace
}  // namespace magnetar::metadata
