#include "protocol/topic_name.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <unordered_set>

#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

TopicName must_parse(std::string_view name) {
  auto r = TopicName::parse(name);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  if (!r.ok()) return *TopicName::parse("persistent://parse/failed/see-above");
  return std::move(r).value();
}

// Parsing fails with kInvalidTopicName and a message that quotes the input and mentions
// `reason`.
void expect_invalid(std::string_view name, std::string_view reason) {
  auto r = TopicName::parse(name);
  ASSERT_FALSE(r.ok()) << "accepted '" << name << "' as " << r->to_string();
  EXPECT_EQ(r.status().code(), make_error_code(Error::kInvalidTopicName));
  const Status status = r.status();
  EXPECT_NE(status.message().find(reason), std::string::npos) << status.message();
}

void expect_invalid_quoted(std::string_view name, std::string_view reason) {
  expect_invalid(name, reason);
  std::string quoted = "'";
  quoted.append(name).append("'");
  const Status status = TopicName::parse(name).status();
  EXPECT_NE(status.message().find(quoted), std::string::npos) << status.message();
}

// --- accepted forms -------------------------------------------------------------------------

TEST(TopicNameTest, ParsesTheFullPersistentForm) {
  TopicName t = must_parse("persistent://acme/orders/created");
  EXPECT_EQ(t.domain(), TopicDomain::kPersistent);
  EXPECT_TRUE(t.is_persistent());
  EXPECT_EQ(t.tenant(), "acme");
  EXPECT_EQ(t.cluster(), "");
  EXPECT_FALSE(t.is_legacy());
  EXPECT_EQ(t.namespace_portion(), "orders");
  EXPECT_EQ(t.namespace_name(), "acme/orders");
  EXPECT_EQ(t.local_name(), "created");
  EXPECT_EQ(t.to_string(), "persistent://acme/orders/created");
  EXPECT_EQ(t.partition_index(), -1);
  EXPECT_FALSE(t.is_partition());
  EXPECT_EQ(t.encoded_local_name(), "created");
  EXPECT_EQ(t.persistence_name(), "acme/orders/persistent/created");
  EXPECT_EQ(t.rest_path(), "persistent/acme/orders/created");
}

TEST(TopicNameTest, ParsesTheNonPersistentForm) {
  TopicName t = must_parse("non-persistent://acme/metrics/cpu");
  EXPECT_EQ(t.domain(), TopicDomain::kNonPersistent);
  EXPECT_FALSE(t.is_persistent());
  EXPECT_EQ(t.to_string(), "non-persistent://acme/metrics/cpu");
  EXPECT_EQ(t.persistence_name(), "acme/metrics/non-persistent/cpu");
  EXPECT_EQ(t.rest_path(), "non-persistent/acme/metrics/cpu");
  EXPECT_NE(t, must_parse("persistent://acme/metrics/cpu"));
}

TEST(TopicNameTest, ShortFormIsPersistent) {
  TopicName t = must_parse("acme/orders/created");
  EXPECT_EQ(t.to_string(), "persistent://acme/orders/created");
  EXPECT_EQ(t, must_parse("persistent://acme/orders/created"));
}

TEST(TopicNameTest, BareTopicLivesInPublicDefault) {
  TopicName t = must_parse("my-topic");
  EXPECT_EQ(t.to_string(), "persistent://public/default/my-topic");
  EXPECT_EQ(t.tenant(), "public");
  EXPECT_EQ(t.namespace_portion(), "default");
  EXPECT_EQ(t.local_name(), "my-topic");
  EXPECT_EQ(t.persistence_name(), "public/default/persistent/my-topic");
}

TEST(TopicNameTest, ParsesTheLegacyFormWithACluster) {
  TopicName t = must_parse("persistent://acme/us-west/orders/created");
  EXPECT_TRUE(t.is_legacy());
  EXPECT_EQ(t.tenant(), "acme");
  EXPECT_EQ(t.cluster(), "us-west");
  EXPECT_EQ(t.namespace_portion(), "orders");
  EXPECT_EQ(t.namespace_name(), "acme/us-west/orders");
  EXPECT_EQ(t.local_name(), "created");
  EXPECT_EQ(t.to_string(), "persistent://acme/us-west/orders/created");
  EXPECT_EQ(t.persistence_name(), "acme/us-west/orders/persistent/created");
  EXPECT_EQ(t.rest_path(), "persistent/acme/us-west/orders/created");
}

TEST(TopicNameTest, OnlyTheFirstThreeSlashesSeparateParts) {
  // A fourth part makes the name legacy, and the topic part keeps every later slash.
  TopicName t = must_parse("persistent://a/b/c/d");
  EXPECT_EQ(t.cluster(), "b");
  EXPECT_EQ(t.namespace_portion(), "c");
  EXPECT_EQ(t.local_name(), "d");
  t = must_parse("persistent://acme/global/orders/eu/2024/created");
  EXPECT_EQ(t.local_name(), "eu/2024/created");
  EXPECT_EQ(t.encoded_local_name(), "eu%2F2024%2Fcreated");
  EXPECT_EQ(t.persistence_name(), "acme/global/orders/persistent/eu%2F2024%2Fcreated");
  // Pulsar splits the same way even when "://" shows up again later.
  t = must_parse("persistent://t/ns/x://y");
  EXPECT_EQ(t.cluster(), "ns");
  EXPECT_EQ(t.namespace_portion(), "x:");
  EXPECT_EQ(t.local_name(), "/y");
}

TEST(TopicNameTest, DomainIgnoresCaseAndIsCanonicalised) {
  EXPECT_EQ(must_parse("PERSISTENT://t/ns/x").to_string(), "persistent://t/ns/x");
  EXPECT_EQ(must_parse("Non-Persistent://t/ns/x").to_string(), "non-persistent://t/ns/x");
  // Tenants, namespaces and topics keep their case.
  EXPECT_NE(must_parse("persistent://T/NS/X"), must_parse("persistent://t/ns/x"));
}

TEST(TopicNameTest, EntityNamesAllowLettersDigitsAndFiveMarks) {
  TopicName t = must_parse("persistent://My_Tenant-1/ns.v=2:x/topic");
  EXPECT_EQ(t.tenant(), "My_Tenant-1");
  EXPECT_EQ(t.namespace_portion(), "ns.v=2:x");
  EXPECT_TRUE(TopicName::parse("persistent://t/c:1.x=y_z-w/ns/topic").ok());
}

TEST(TopicNameTest, LocalNameMayHoldAnyPrintableCharacters) {
  for (std::string_view local : {"a+b", "100%", "x@y#z?", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac",
                                 "ends-with-", "-partition-"}) {
    std::string name = "persistent://t/ns/";
    name.append(local);
    auto r = TopicName::parse(name);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->local_name(), local);
  }
}

// --- partitions -----------------------------------------------------------------------------

TEST(TopicNameTest, RecognisesPartitions) {
  TopicName p = must_parse("persistent://acme/orders/created-partition-3");
  EXPECT_TRUE(p.is_partition());
  EXPECT_EQ(p.partition_index(), 3);
  EXPECT_EQ(p.partitioned_topic_name(), must_parse("persistent://acme/orders/created"));
  EXPECT_EQ(p.partitioned_topic_name().partition_index(), -1);
  EXPECT_EQ(p.partition(3), p);
  EXPECT_EQ(must_parse("t-partition-0").partition_index(), 0);
  EXPECT_EQ(must_parse("t-partition-2147483647").partition_index(), 2147483647);
  EXPECT_EQ(must_parse("persistent://t/c/ns/x-partition-4").partition_index(), 4);
}

TEST(TopicNameTest, MakesPartitionNames) {
  TopicName base = must_parse("acme/orders/created");
  TopicName p = base.partition(7);
  EXPECT_EQ(p.to_string(), "persistent://acme/orders/created-partition-7");
  EXPECT_EQ(p.partition_index(), 7);
  EXPECT_EQ(p.local_name(), "created-partition-7");
  EXPECT_EQ(p, must_parse("persistent://acme/orders/created-partition-7"));
  EXPECT_EQ(p.partitioned_topic_name(), base);
  EXPECT_EQ(p.persistence_name(), "acme/orders/persistent/created-partition-7");
  EXPECT_EQ(base.partitioned_topic_name(), base);
  TopicName legacy = must_parse("persistent://acme/west/orders/created").partition(0);
  EXPECT_EQ(legacy.to_string(), "persistent://acme/west/orders/created-partition-0");
  EXPECT_EQ(legacy.cluster(), "west");
}

TEST(TopicNameTest, PartitionOfAPartitionGainsASecondSuffix) {
  TopicName p = must_parse("t-partition-1").partition(2);
  EXPECT_EQ(p.local_name(), "t-partition-1-partition-2");
  EXPECT_EQ(p.partition_index(), 2);
  EXPECT_EQ(p.partitioned_topic_name().local_name(), "t-partition-1");
  EXPECT_EQ(p.partitioned_topic_name().partition_index(), 1);
}

TEST(TopicNameTest, SuffixesThatAreNotCanonicalNumbersAreNotPartitions) {
  // Valid topic names, as in Pulsar, just not partitions.
  for (std::string_view name : {"t-partition-x", "t-partition-", "t-partition-01", "t-partition--1",
                                "t-partition-+1", "t-partition-2147483648", "t-partition-1x",
                                "t-partition-99999999999", "t-partition-3a", "-partition-x"}) {
    TopicName t = must_parse(name);
    EXPECT_EQ(t.partition_index(), -1) << name;
    EXPECT_FALSE(t.is_partition()) << name;
    EXPECT_EQ(t.partitioned_topic_name(), t) << name;
  }
}

// --- encoding -------------------------------------------------------------------------------

// Expected strings are java.net.URLEncoder.encode(s, UTF_8) on OpenJDK 17.
TEST(TopicNameTest, EncodesTheLocalNameLikeJavasUrlEncoder) {
  struct Case {
    std::string_view local;
    std::string_view encoded;
  };
  for (const Case& c : {
           Case{"plain-name_1.2*", "plain-name_1.2*"},
           Case{"a%c/d~e*f.g-h_i:j=k+l", "a%25c%2Fd%7Ee*f.g-h_i%3Aj%3Dk%2Bl"},
           Case{"caf\xc3\xa9", "caf%C3%A9"},
           Case{"\xe6\x97\xa5\xe6\x9c\xac", "%E6%97%A5%E6%9C%AC"},
           Case{"\xf0\x9f\x98\x80", "%F0%9F%98%80"},
           Case{"x!'()#?&@,;$[]\"<>\\^`{|}",
                "x%21%27%28%29%23%3F%26%40%2C%3B%24%5B%5D%22%3C%3E%5C%5E%60%7B%7C%7D"},
       }) {
    // The legacy form is the one that lets '/' into a local name.
    std::string name = "persistent://t/c/ns/";
    name.append(c.local);
    TopicName t = must_parse(name);
    EXPECT_EQ(t.local_name(), c.local);
    EXPECT_EQ(t.encoded_local_name(), c.encoded) << c.local;
  }
}

TEST(TopicNameTest, PersistenceNameAndRestPathUseTheEncodedLocalName) {
  TopicName t = must_parse("persistent://acme/orders/new:order%1");
  EXPECT_EQ(t.to_string(), "persistent://acme/orders/new:order%1");
  EXPECT_EQ(t.persistence_name(), "acme/orders/persistent/new%3Aorder%251");
  EXPECT_EQ(t.rest_path(), "persistent/acme/orders/new%3Aorder%251");
}

// --- equality and hashing -------------------------------------------------------------------

TEST(TopicNameTest, EqualNamesHashTheSame) {
  std::unordered_set<TopicName> set;
  set.insert(must_parse("orders"));
  set.insert(must_parse("public/default/orders"));
  set.insert(must_parse("persistent://public/default/orders"));
  set.insert(must_parse("PERSISTENT://public/default/orders"));
  EXPECT_EQ(set.size(), 1u);
  set.insert(must_parse("non-persistent://public/default/orders"));
  set.insert(must_parse("orders-partition-0"));
  EXPECT_EQ(set.size(), 3u);
  EXPECT_EQ(std::hash<TopicName>{}(must_parse("orders")),
            std::hash<TopicName>{}(must_parse("persistent://public/default/orders")));
}

// --- rejected names -------------------------------------------------------------------------

TEST(TopicNameTest, RejectsMissingParts) {
  expect_invalid("", "empty");
  expect_invalid_quoted("persistent://", "expected <domain>://<tenant>/<namespace>/<topic>");
  expect_invalid_quoted("persistent://a", "expected <domain>://<tenant>/<namespace>/<topic>");
  expect_invalid_quoted("persistent://a/b", "expected <domain>://<tenant>/<namespace>/<topic>");
  expect_invalid_quoted("persistent:///ns/topic", "the tenant is empty");
  expect_invalid_quoted("persistent://t//topic", "the namespace is empty");
  expect_invalid_quoted("persistent://t/ns/", "the topic part is empty");
  expect_invalid_quoted("persistent://t//ns/topic", "the cluster is empty");
  expect_invalid_quoted("persistent://t/c/ns/", "the topic part is empty");
  expect_invalid_quoted("/ns/topic", "the tenant is empty");
  expect_invalid_quoted("t//topic", "the namespace is empty");
  expect_invalid_quoted("t/ns/", "the topic part is empty");
  expect_invalid_quoted("//topic", "the tenant is empty");
}

TEST(TopicNameTest, RejectsShortNamesWithTheWrongNumberOfParts) {
  for (std::string_view name : {"a/b", "a/b/c/d", "/topic", "topic/", "a/b/c/"}) {
    expect_invalid_quoted(name, "'<topic>' or '<tenant>/<namespace>/<topic>'");
  }
}

TEST(TopicNameTest, RejectsUnknownDomains) {
  expect_invalid_quoted("foo://a/b/c", "unknown domain 'foo'");
  expect_invalid_quoted("://a/b/c", "unknown domain ''");
  expect_invalid_quoted("persistent:/a/b/c/d", "'<topic>' or '<tenant>/<namespace>/<topic>'");
  expect_invalid_quoted("http://a/b/c", "unknown domain 'http'");
  expect_invalid_quoted("persistentx://a/b/c", "unknown domain");
}

TEST(TopicNameTest, RejectsIllegalCharactersInTenantClusterAndNamespace) {
  expect_invalid_quoted("persistent://te nant/ns/x", "the tenant 'te nant' contains ' '");
  expect_invalid_quoted("persistent://t/n$s/x", "the namespace 'n$s' contains '$'");
  expect_invalid_quoted("persistent://t/ns@/x", "the namespace 'ns@' contains '@'");
  expect_invalid_quoted("persistent://t/c l/ns/x", "the cluster 'c l' contains ' '");
  expect_invalid_quoted("ten#ant/ns/x", "the tenant 'ten#ant' contains '#'");
  expect_invalid_quoted("persistent://t/n%20s/x", "contains '%'");
  expect_invalid_quoted("persistent://t/ns+1/x", "contains '+'");
  // Java's \w is ASCII-only, so letters beyond it are refused too (shown escaped).
  expect_invalid("persistent://t\xc3\xa9/ns/x", "the tenant 't\\xC3\\xA9' contains '\\xC3'");
}

TEST(TopicNameTest, RejectsSpacesAndControlCharactersInTheLocalName) {
  for (std::string_view local :
       {std::string_view("a b"), std::string_view(" lead"), std::string_view("trail "),
        std::string_view("tab\there"), std::string_view("nl\n"), std::string_view("nul\0x", 5),
        std::string_view("del\x7f")}) {
    std::string name = "persistent://t/ns/";
    name.append(local);
    auto r = TopicName::parse(name);
    ASSERT_FALSE(r.ok()) << local;
    EXPECT_TRUE(r.status().message().find("a space or a control character") != std::string::npos)
        << r.status().to_string();
  }
}

TEST(TopicNameTest, RejectsAPartitionSuffixWithoutATopic) {
  expect_invalid_quoted("persistent://t/ns/-partition-3",
                        "partition of a topic whose name is empty");
  expect_invalid_quoted("-partition-0", "partition of a topic whose name is empty");
}

TEST(TopicNameTest, RejectsLocalNamesThatAreNotUtf8) {
  for (std::string_view local : {std::string_view("a\xff"), std::string_view("\xc0\xaf"),
                                 std::string_view("\xed\xa0\x80"), std::string_view("\xe6\x97"),
                                 std::string_view("\xf4\x90\x80\x80"), std::string_view("\x80")}) {
    std::string name = "persistent://t/ns/";
    name.append(local);
    expect_invalid(name, "not valid UTF-8");
  }
  // Non-printable bytes are escaped in the message.
  const Status status = TopicName::parse("persistent://t/ns/a\xff").status();
  EXPECT_NE(status.message().find("a\\xFF'"), std::string::npos) << status.message();
}

TEST(TopicNameTest, LongNamesAreCutInMessages) {
  std::string name = "persistent://t/n s/" + std::string(1000, 'x');
  const Status status = TopicName::parse(name).status();
  ASSERT_FALSE(status.ok());
  EXPECT_LT(status.message().size(), 400u) << status.message();
  EXPECT_NE(status.message().find("'..."), std::string::npos);
}

}  // namespace
}  // namespace magnetar::protocol
