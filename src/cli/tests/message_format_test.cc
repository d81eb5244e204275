// magnetar-client's argument parsing and message printing.

#include "cli/message_format.h"

#include <gtest/gtest.h>

namespace magnetar::cli {
namespace {

TEST(MessageFormatTest, SplitsRepeatedAndSeparatedValues) {
  EXPECT_EQ(split_values({"a,b", "c"}, ","), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_values({"a;b"}, ";"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_values({"a,b"}, ""), (std::vector<std::string>{"a,b"}));
}

TEST(MessageFormatTest, ParsesProperties) {
  auto p = parse_properties({"a=1,b=2", "c=x=y"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (std::map<std::string, std::string>{{"a", "1"}, {"b", "2"}, {"c", "x=y"}}));
  EXPECT_FALSE(parse_properties({"novalue"}).ok());
  EXPECT_FALSE(parse_properties({"=v"}).ok());
}

TEST(MessageFormatTest, ParsesNamesInAnyCase) {
  EXPECT_EQ(*parse_subscription_type("Key_Shared"), client::SubscriptionType::kKeyShared);
  EXPECT_EQ(*parse_subscription_type("shared"), client::SubscriptionType::kShared);
  EXPECT_FALSE(parse_subscription_type("Broadcast").ok());
  EXPECT_EQ(*parse_initial_position("Earliest"), client::InitialPosition::kEarliest);
  EXPECT_EQ(*parse_compression("zstd"), client::CompressionType::kZstd);
  EXPECT_FALSE(parse_compression("gzip").ok());
}

TEST(MessageFormatTest, ParsesStartMessageIds) {
  EXPECT_TRUE(parse_start_message_id("earliest")->is_earliest());
  EXPECT_TRUE(parse_start_message_id("latest")->is_latest());
  auto id = parse_start_message_id("12:34");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->ledger_id(), 12);
  EXPECT_EQ(id->entry_id(), 34);
  EXPECT_EQ(parse_start_message_id("1:2:3:4")->batch_index(), 4);
  EXPECT_FALSE(parse_start_message_id("12").ok());
  EXPECT_FALSE(parse_start_message_id("1:x").ok());
  EXPECT_FALSE(parse_start_message_id("1:2:3:4:5").ok());
}

TEST(MessageFormatTest, DescribesMessagesAsPulsarClientDoes) {
  client::Message m("hello");
  EXPECT_EQ(describe_message(m, false, false), "key:[null], properties:[], content:hello");
  m.set_key("k").set_property("b", "2").set_property("a", "1");
  EXPECT_EQ(describe_message(m, false, false), "key:[k], properties:[a=1, b=2], content:hello");
  EXPECT_EQ(describe_message(m, false, true), "key:[k], properties:[a=1, b=2]");
  EXPECT_EQ(describe_message(m, true, false),
            "key:[k], properties:[a=1, b=2], content:\n"
            "00000000  68 65 6c 6c 6f                                   hello");
}

TEST(MessageFormatTest, HexDumpsSixteenBytesALine) {
  std::string bytes;
  for (int i = 0; i < 17; ++i) bytes += static_cast<char>(i + 0x41);
  bytes[1] = '\n';
  EXPECT_EQ(hex_dump(bytes),
            "00000000  41 0a 43 44 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50  A.CDEFGHIJKLMNOP\n"
            "00000010  51                                               Q\n");
}

}  // namespace
}  // namespace magnetar::cli
