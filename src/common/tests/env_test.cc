#include "common/env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace magnetar {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("magnetar-env-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    ASSERT_TRUE(posix_env().create_dirs(dir_ + "/sub").ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(EnvTest, WriteSyncReadBack) {
  Env& env = posix_env();
  auto f = env.new_writable_file(dir_ + "/a");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->preallocate(1 << 20).ok());
  ASSERT_TRUE((*f)->append(Buffer::copy_of("hello ")).ok());
  ASSERT_TRUE((*f)->append("world", 5).ok());
  EXPECT_EQ((*f)->size(), 11u);
  ASSERT_TRUE((*f)->sync().ok());
  ASSERT_TRUE((*f)->close().ok());
  auto r = env.open_file(dir_ + "/a");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*(*r)->size(), 11u);  // preallocation keeps the size
  EXPECT_EQ((*r)->read(6, 100)->view(), "world");
  EXPECT_TRUE((*r)->read(50, 10)->empty());
  auto again = env.reopen_writable_file(dir_ + "/a");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->size(), 11u);
  ASSERT_TRUE((*again)->append("!", 1).ok());
  EXPECT_EQ(*env.read_small_file(dir_ + "/a"), "hello world!");
}

TEST_F(EnvTest, AtomicWriteAndListing) {
  Env& env = posix_env();
  ASSERT_TRUE(env.write_file_atomically(dir_ + "/mark", "v1").ok());
  ASSERT_TRUE(env.write_file_atomically(dir_ + "/mark", "v2").ok());
  EXPECT_EQ(*env.read_small_file(dir_ + "/mark"), "v2");
  auto names = env.list_dir(dir_);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, (std::vector<std::string>{"mark", "sub"}));
  ASSERT_TRUE(env.remove_file(dir_ + "/mark").ok());
  EXPECT_FALSE(env.exists(dir_ + "/mark"));
}

TEST_F(EnvTest, ErrorsCarryThePathAndAGenericCondition) {
  Env& env = posix_env();
  auto missing = env.open_file(dir_ + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().is(Errc::kNotFound));
  EXPECT_NE(missing.status().message().find(dir_ + "/nope"), std::string::npos);
  auto usage = env.disk_usage(dir_);
  ASSERT_TRUE(usage.ok());
  EXPECT_GT(usage->total_bytes, 0u);
}

TEST_F(EnvTest, FaultInjectionFailsSyncWritesAndReportsFullDisk) {
  FaultInjectionEnv env(posix_env());
  auto f = env.new_writable_file(dir_ + "/j");
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->append("x", 1).ok());
  ASSERT_TRUE((*f)->sync().ok());
  EXPECT_EQ(env.syncs.load(), 1u);
  env.fail_sync = true;
  EXPECT_TRUE((*f)->sync().is(Errc::kIoError));
  env.fail_sync = false;
  env.disk_full = true;
  Status full = (*f)->append("y", 1);
  EXPECT_TRUE(full.is(Errc::kResourceExhausted)) << full.to_string();
  EXPECT_TRUE((*f)->preallocate(1 << 20).is(Errc::kResourceExhausted));
  EXPECT_FALSE(env.new_writable_file(dir_ + "/k").ok());
  env.disk_full = false;
  env.free_bytes_override = 4096;
  EXPECT_EQ(env.disk_usage(dir_)->free_bytes, 4096u);
}

}  // namespace
}  // namespace magnetar
