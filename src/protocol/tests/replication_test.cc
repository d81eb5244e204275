#include "protocol/replication.h"

#include <gtest/gtest.h>

namespace magnetar::protocol {
namespace {

TEST(ReplicationNamesTest, ProducerNameAndItsSource) {
  EXPECT_EQ(replicator_producer_name("us-east", "us-west"), "pulsar.repl.us-east-->us-west");
  EXPECT_EQ(replicator_source("pulsar.repl.us-east-->us-west"), "us-east");
  EXPECT_EQ(replicator_source("pulsar.repl.us-east"), "us-east") << "the older form";
  EXPECT_FALSE(replicator_source("pulsar.repl."));
  EXPECT_FALSE(replicator_source("pulsar.repl.-->b"));
  EXPECT_FALSE(replicator_source("my-producer"));
}

TEST(ReplicationNamesTest, SourcePositionRoundTripsAndRejectsGarbage) {
  wire::MessageMetadata md;
  EXPECT_FALSE(source_position(md));
  set_source_position(&md, {LedgerId{12}, EntryId{34}});
  set_source_position(&md, {LedgerId{12}, EntryId{35}});  // replaces
  ASSERT_EQ(md.properties_size(), 1);
  EXPECT_EQ(md.properties(0).value(), "12:35");
  EXPECT_EQ(source_position(md), (SourcePosition{LedgerId{12}, EntryId{35}}));
  for (const char* bad :
       {"", ":", "1:", ":2", "-1:2", "1:-2", "a:b", "1:2:3", "1 :2", "99999999999999999999:1"}) {
    md.mutable_properties(0)->set_value(bad);
    EXPECT_FALSE(source_position(md)) << bad;
  }
}

TEST(ReplicationNamesTest, WhichClustersAMessageGoesTo) {
  wire::MessageMetadata md;
  EXPECT_TRUE(replicates_to(md, "b")) << "no list: every replication cluster";
  md.add_replicate_to("b");
  md.add_replicate_to("c");
  EXPECT_TRUE(replicates_to(md, "c"));
  EXPECT_FALSE(replicates_to(md, "d"));
  wire::MessageMetadata local;
  local.add_replicate_to(std::string(kLocalOnlyCluster));
  EXPECT_FALSE(replicates_to(local, "b")) << "disableReplication";
  wire::MessageMetadata replicated;
  replicated.set_replicated_from("a");
  EXPECT_FALSE(replicates_to(replicated, "b")) << "never onward from a replica";
}

}  // namespace
}  // namespace magnetar::protocol
