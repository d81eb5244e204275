// `magnetar dr-drill` as a user runs it: two standalones replicating, our client configured
// with region-a primary and region-b secondary, region-a SIGKILLed under load. The drill's
// own checks decide its exit code (every acknowledged message consumed, the client on
// region-b and back on region-a once it restarts); this test also bounds the failover time
// and reads the numbers it printed.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <regex>

#include "testing/child_process.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY"
#endif

namespace magnetar::testing {
namespace {

class DrDrillTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DrDrillTest, TheClientFailsOverAndBackLosingNothing) {
  const auto dir = std::filesystem::temp_directory_path() /
                   fmt::format("magnetar-dr-test-{}-{}", ::getpid(), GetParam());
  std::filesystem::remove_all(dir);
  constexpr int kFailoverDelayMs = 500;
  auto [code, out] = run_command(fmt::format(
      "{} dr-drill --dir {} --drills 1 --rate 200 --subscription-type {} "
      "--snapshot-frequency-ms 200 --failover-delay-ms {} --check-interval-ms 100 "
      "--switch-back-delay-ms 1000 --before-kill-ms 2000 --on-secondary-ms 2000",
      MAGNETAR_BINARY, dir.string(), GetParam(), kFailoverDelayMs));
  std::cout << out;
  EXPECT_EQ(code, 0) << out;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(lost (\d+), redelivered (\d+))"))) << out;
  EXPECT_EQ(m[1], "0");
  ASSERT_TRUE(std::regex_search(
      out, m, std::regex(R"(first message consumed on region-b ([0-9.]+) s after the kill)")))
      << out;
  // failoverDelay plus a few seconds (probes, reconnection, the first dispatch).
  EXPECT_LT(std::stod(m[1]), kFailoverDelayMs / 1000.0 + 5) << out;
  EXPECT_NE(out.find("back on region-a"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir / "drill-1")) << "the drill's clusters were left";
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(SubscriptionTypes, DrDrillTest,
                         ::testing::Values("Shared", "Failover"));

}  // namespace
}  // namespace magnetar::testing
