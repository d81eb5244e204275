// Durability of the embedded RocksDB backend across process lifetimes. Child processes are
// forked to play "the previous process" (which may die without closing anything), before
// this process opened RocksDB itself.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/config.h"
#include "metadata/metadata_store.h"
#include "metadata/tests/store_test_support.h"
#include "testing/child_process.h"

namespace magnetar::metadata {
namespace {

using test::Loop;

class RocksDbStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("magnetar-rocks-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    url_ = "rocksdb://" + dir_.string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs `body` in a child process that exits with _exit(code) right after, without
  // closing anything: what a SIGKILL leaves behind, given synced writes.
  template <typename F>
  int in_child(F body) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = body();
      ::_exit(code);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
  }

  std::filesystem::path dir_;
  std::string url_;
};

TEST_F(RocksDbStoreTest, DataSurvivesReopenAndEphemeralsOfADeadProcessAreRemoved) {
  std::string url = url_;
  int code = in_child([url] {
    Loop loop;
    auto store = loop.await(open_store(url));
    if (!store.ok()) return 1;
    if (!loop.await((*store)->put("/kept", "durable")).ok()) return 2;
    if (!loop.await((*store)->put("/gone", "ephemeral", PutOptions{std::nullopt, true, false}))
             .ok()) {
      return 3;
    }
    if (!loop.await((*store)->put("/seq", "")).ok()) return 4;
    if (!loop.await((*store)->put("/seq/x-", "", PutOptions{std::nullopt, false, true})).ok()) {
      return 5;
    }
    return 0;  // exits without close(): the session dies with the process
  });
  ASSERT_EQ(code, 0);

  Loop loop;
  auto store = loop.await(open_store(url_));
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  auto kept = loop.await((*store)->get("/kept"));
  ASSERT_TRUE(kept.ok() && kept->has_value());
  EXPECT_EQ((*kept)->value, "durable");
  auto gone = loop.await((*store)->get("/gone"));
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(gone->has_value());
  // Sequence counters persist: the next suffix follows the previous process's.
  auto next = loop.await((*store)->put("/seq/x-", "", PutOptions{std::nullopt, false, true}));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->path, "/seq/x-0000000001");
  ASSERT_TRUE(loop.await((*store)->close()).ok());
}

TEST_F(RocksDbStoreTest, MissingParentDirectoriesAreCreated) {
  Loop loop;
  auto store = loop.await(open_store(url_ + "/deeper/still"));
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ASSERT_TRUE(loop.await((*store)->put("/x", "1")).ok());
  ASSERT_TRUE(loop.await((*store)->close()).ok());
}

// Run only in the re-executed child of the next test: the open must fail as "in use".
TEST(RocksDbStoreChild, DISABLED_OpenFailsWhileAnotherProcessHoldsIt) {
  const char* url = std::getenv("MAGNETAR_ROCKSDB_TEST_URL");
  ASSERT_NE(url, nullptr);
  Loop loop;
  auto other = loop.await(open_store(url));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), make_error_code(Error::kBackend)) << other.status().to_string();
}

TEST_F(RocksDbStoreTest, SecondProcessCannotOpenADirectoryInUse) {
  Loop loop;
  auto store = loop.await(open_store(url_));
  ASSERT_TRUE(store.ok());
  // The second process is this binary executed afresh, not a fork: a fork of a process with
  // RocksDB open inherits RocksDB's internal locks in whatever state its threads held them.
  ASSERT_EQ(::setenv("MAGNETAR_ROCKSDB_TEST_URL", url_.c_str(), 1), 0);
  auto pid = testing::spawn_child(
      {"/proc/self/exe", "--gtest_filter=RocksDbStoreChild.DISABLED_OpenFailsWhileAnotherProcessHoldsIt",
       "--gtest_also_run_disabled_tests"},
      (dir_.string() + "-child.log"));
  ASSERT_TRUE(pid.ok()) << pid.status().to_string();
  auto status = testing::reap_child(*pid, true);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << "child wait status " << *status;
  std::filesystem::remove(dir_.string() + "-child.log");
  ASSERT_TRUE(loop.await((*store)->close()).ok());
}

TEST_F(RocksDbStoreTest, UnwritableDirectoryIsAClearError) {
  Loop loop;
  auto store = loop.await(open_store("rocksdb:///proc/magnetar-cannot-write-here"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), make_error_code(Error::kBackend));
  EXPECT_NE(store.status().message().find("/proc/magnetar-cannot-write-here"), std::string::npos)
      << store.status().message();
}

TEST(MemoryStoreTest, NamesAreIsolatedAndSessionsShareATree) {
  Loop loop;
  auto a = loop.await(open_store("memory:iso-a"));
  auto a2 = loop.await(open_store("memory:iso-a"));
  auto b = loop.await(open_store("memory:iso-b"));
  ASSERT_TRUE(a.ok() && a2.ok() && b.ok());
  ASSERT_TRUE(loop.await((*a)->put("/x", "1")).ok());
  EXPECT_TRUE(loop.await((*a2)->get("/x"))->has_value());
  EXPECT_FALSE(loop.await((*b)->get("/x"))->has_value());
  for (auto* s : {&a, &a2, &b}) ASSERT_TRUE(loop.await((**s)->close()).ok());
}

}  // namespace
}  // namespace magnetar::metadata

namespace magnetar::metadata {
namespace {

TEST(OpenStoresTest, ConfigurationStoreDefaultsToTheClusterStore) {
  Loop loop;
  MetadataConfig config;
  config.metadata_store_url = "memory:stores-cluster";
  auto same = loop.await(open_stores(config));
  ASSERT_TRUE(same.ok()) << same.status().to_string();
  EXPECT_EQ(same->cluster.get(), same->configuration.get());
  ASSERT_TRUE(loop.await(same->cluster->close()).ok());

  config.configuration_metadata_store_url = "memory:stores-config";
  auto split = loop.await(open_stores(config));
  ASSERT_TRUE(split.ok());
  ASSERT_NE(split->cluster.get(), split->configuration.get());
  ASSERT_TRUE(loop.await(split->configuration->put("/admin", "")).ok());
  EXPECT_FALSE(loop.await(split->cluster->get("/admin"))->has_value());
  ASSERT_TRUE(loop.await(split->cluster->close()).ok());
  ASSERT_TRUE(loop.await(split->configuration->close()).ok());
}

TEST(OpenStoresTest, ConfigKeysUsePulsarNames) {
  MetadataConfig config;
  ConfigSchema schema("broker");
  bind_metadata_config(schema, &config);
  ASSERT_TRUE(schema
                  .load_text("metadataStoreUrl=zk:127.0.0.1:2181/pulsar\n"
                             "configurationMetadataStoreUrl=zk:127.0.0.1:2181/global\n"
                             "metadataStoreSessionTimeoutMillis=5000\n",
                             "broker.conf")
                  .ok());
  EXPECT_EQ(config.metadata_store_url, "zk:127.0.0.1:2181/pulsar");
  EXPECT_EQ(config.store_options().session_timeout, std::chrono::milliseconds(5000));
  EXPECT_FALSE(schema.load_text("metadataStoreSessionTimeoutMillis=5", "broker.conf").ok());
}

}  // namespace
}  // namespace magnetar::metadata
