// Value parsing and output layout of magnetar-admin, without a server.

#include "cli/arguments.h"

#include <gtest/gtest.h>

#include "cli/admin.h"
#include "cli/session.h"

namespace magnetar::cli {
namespace {

TEST(NamesTest, MapsNamespacesAndTopicsToRestPaths) {
  EXPECT_EQ(*namespace_path("public/default"), "public/default");
  for (const char* bad : {"public", "public/", "/default", "a/b/c", "a b/c"}) {
    EXPECT_FALSE(namespace_path(bad).ok()) << bad;
  }
  EXPECT_EQ(*topic_path("my-topic"), "/admin/v2/persistent/public/default/my-topic");
  EXPECT_EQ(*topic_path("t/ns/x"), "/admin/v2/persistent/t/ns/x");
  EXPECT_EQ(*topic_path("persistent://t/ns/x"), "/admin/v2/persistent/t/ns/x");
  EXPECT_EQ(*topic_path("non-persistent://t/ns/x"), "/admin/v2/non-persistent/t/ns/x");
  EXPECT_FALSE(topic_path("persistent://t/x").ok());
  EXPECT_EQ(*namespace_topics_root("t/ns", "non-persistent"), "/admin/v2/non-persistent/t/ns");
  EXPECT_EQ(encode_segment("a b/c~d"), "a%20b%2Fc~d");
}

TEST(MessageIdTest, BuildsResetCursorBodies) {
  EXPECT_EQ(reset_cursor_body(*parse_message_id("3:4"), false),
            R"({"batchIndex":-1,"entryId":4,"isExcluded":false,"ledgerId":3,"partitionIndex":-1})");
  EXPECT_TRUE(parse_message_id("latest")->is_latest());
  EXPECT_TRUE(parse_message_id("earliest")->is_earliest());
  EXPECT_FALSE(parse_message_id("3").ok());
  EXPECT_FALSE(parse_message_id("a:b").ok());
}

TEST(RewriteTest, TurnsSingleDashLongOptionsIntoDoubleDash) {
  std::vector<std::string> in = {"namespaces", "set-message-ttl", "a/b", "-ttl",
                                 "60",         "-force",          "--",  "-lt"};
  std::vector<std::string> want = {"namespaces", "set-message-ttl", "a/b", "--messageTTL",
                                   "60",         "--force",         "--",  "-lt"};
  EXPECT_EQ(rewrite_single_dash_options(in), want);
}

TEST(PrettyJsonTest, LaysOutLikeJacksonsDefaultPrettyPrinter) {
  Json j =
      Json::parse(R"({"a":1,"b":[],"c":{},"d":["x","y"],"e":{"f":[{"g":true}],"h":null},"i":0.5})");
  EXPECT_EQ(pretty_json(j),
            "{\n"
            "  \"a\" : 1,\n"
            "  \"b\" : [ ],\n"
            "  \"c\" : { },\n"
            "  \"d\" : [ \"x\", \"y\" ],\n"
            "  \"e\" : {\n"
            "    \"f\" : [ {\n"
            "      \"g\" : true\n"
            "    } ],\n"
            "    \"h\" : null\n"
            "  },\n"
            "  \"i\" : 0.5\n"
            "}");
  EXPECT_EQ(pretty_json(Json(3600)), "3600");
}

}  // namespace
}  // namespace magnetar::cli
