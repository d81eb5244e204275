#include "common/logging.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace magnetar::log {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LoggingTest, WritesModuleMessageAndQuotedContext) {
  std::string path = ::testing::TempDir() + "/logging_test_text.log";
  std::remove(path.c_str());
  init(Options{Level::kInfo, false, path});
  Logger("broker").with("topic", "persistent://public/default/t").with("note", "two words")
      .info("producer {} created", 3);
  Logger("broker").debug("hidden at info level");
  init(Options{});
  std::string out = read_file(path);
  EXPECT_NE(out.find("INFO  [broker] producer 3 created topic=persistent://public/default/t "
                     "note=\"two words\""),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("hidden"), std::string::npos);
}

TEST(LoggingTest, JsonModeWritesOneObjectPerLine) {
  std::string path = ::testing::TempDir() + "/logging_test_json.log";
  std::remove(path.c_str());
  init(Options{Level::kDebug, true, path});
  Logger("bookie").with("ledger_id", 42).warn("journal slow: {} ms", 120);
  init(Options{});
  std::string out = read_file(path);
  EXPECT_NE(out.find("\"level\":\"WARN\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"module\":\"bookie\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"msg\":\"journal slow: 120 ms\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"context\":\"ledger_id=42\""), std::string::npos) << out;
}

TEST(LoggingTest, ParsesLevels) {
  Level l;
  EXPECT_TRUE(parse_level("warning", &l));
  EXPECT_EQ(l, Level::kWarn);
  EXPECT_TRUE(parse_level("trace", &l));
  EXPECT_EQ(l, Level::kTrace);
  EXPECT_FALSE(parse_level("loud", &l));
}

}  // namespace
}  // namespace magnetar::log
