// Sizes and relative times as Pulsar's tools write them.

#include "common/units.h"

#include <gtest/gtest.h>

namespace magnetar {
namespace {

TEST(ParseSizeTest, TakesPulsarAdminSizes) {
  EXPECT_EQ(*parse_size("123"), 123);
  EXPECT_EQ(*parse_size("10k"), 10 * 1024);
  EXPECT_EQ(*parse_size("10M"), 10 * 1024 * 1024);
  EXPECT_EQ(*parse_size("2G"), int64_t{2} << 30);
  EXPECT_EQ(*parse_size("1t"), int64_t{1} << 40);
  EXPECT_EQ(*parse_size("-1"), -1);
  for (const char* bad :
       {"", "G", "10X", "1.5G", "-2", "+5", "99999999999999999999", "9000000000T"}) {
    EXPECT_FALSE(parse_size(bad).ok()) << bad;
  }
}

TEST(ParseRelativeSecondsTest, TakesPulsarAdminTimes) {
  EXPECT_EQ(*parse_relative_seconds("45"), 45);
  EXPECT_EQ(*parse_relative_seconds("45s"), 45);
  EXPECT_EQ(*parse_relative_seconds("10m"), 600);
  EXPECT_EQ(*parse_relative_seconds("3h"), 3 * 3600);
  EXPECT_EQ(*parse_relative_seconds("1d"), 86400);
  EXPECT_EQ(*parse_relative_seconds("2w"), 14 * 86400);
  EXPECT_EQ(*parse_relative_seconds("1y"), 365 * 86400);
  EXPECT_EQ(*parse_relative_seconds("-1", true), -1);
  EXPECT_FALSE(parse_relative_seconds("-1").ok());
  for (const char* bad : {"", "h", "3H", "3x", "1.5h", "-5m"}) {
    EXPECT_FALSE(parse_relative_seconds(bad, true).ok()) << bad;
  }
}

}  // namespace
}  // namespace magnetar
