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

TEST(IsoTimeTest, FormatsAndParsesWhatPulsarAdminTakes) {
  EXPECT_EQ(format_iso_time(1624906877123), "2021-06-28T19:01:17.123Z");
  EXPECT_EQ(format_iso_time(1624906877120, true), "2021-06-28T19:01:17.12Z");
  EXPECT_EQ(format_iso_time(1624906877000, true), "2021-06-28T19:01:17Z");
  EXPECT_EQ(format_iso_time(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(*parse_iso_time("2021-06-28T19:01:17Z"), 1624906877000);
  EXPECT_EQ(*parse_iso_time("2021-06-28T19:01:17.123Z"), 1624906877123);
  EXPECT_EQ(*parse_iso_time("2021-06-28T21:01:17.5+02:00"), 1624906877500);
  EXPECT_EQ(*parse_iso_time("2021-06-28T14:31-04:30"), 1624906860000);
  EXPECT_EQ(*parse_iso_time("2000-02-29T00:00:00Z"), 951782400000);
  EXPECT_EQ(*parse_iso_time("1969-12-31T23:59:59Z"), -1000);
  for (const char* bad : {"", "2021-06-28", "2021-06-28T19:01:17", "2021-13-01T00:00Z",
                          "2021-06-28 19:01:17Z", "2021-06-28T19:01:17+2:00",
                          "2021-06-28T19:01:17.Z", "2021-06-28T19:01:17Zjunk", "now"}) {
    EXPECT_FALSE(parse_iso_time(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace magnetar
