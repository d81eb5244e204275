// The broker's placement keys (service/bookie_placement.h): what they build, what they refuse
// (naming the key), the rack shapes the admin API accepts, and a broker that does not start
// on a configuration that cannot be satisfied.

#include "broker/service/bookie_placement.h"

#include <gtest/gtest.h>

#include "broker/broker.h"
#include "common/config.h"
#include "testing/test_name.h"

namespace magnetar::broker {
namespace {

using Kind = ledger::PlacementSettings::Kind;

BrokerConfig region_aware(int e, int qw, int qa, int min_regions, std::string regions = "") {
  BrokerConfig c;
  c.bookkeeper_client_regionaware_policy_enabled = true;
  c.managed_ledger.ensemble_size = e;
  c.managed_ledger.write_quorum = qw;
  c.managed_ledger.ack_quorum = qa;
  c.repp_minimum_regions_for_durability = min_regions;
  c.repp_regions_to_write = std::move(regions);
  return c;
}

// The error of placement_settings(c), "" when it accepts.
std::string refusal(const BrokerConfig& c) {
  auto s = placement_settings(c);
  if (s.ok()) return "";
  EXPECT_TRUE(s.status().is(Errc::kInvalidArgument)) << s.status().to_string();
  return s.status().message();
}

TEST(BookiePlacementTest, PulsarsDefaultsAreRackAware) {
  auto s = placement_settings(BrokerConfig{});
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->kind, Kind::kRackAware);
  EXPECT_EQ(s->min_racks_per_write_quorum, 2);
  EXPECT_FALSE(s->enforce_min_racks);

  BrokerConfig random;
  random.bookkeeper_client_rackaware_policy_enabled = false;
  EXPECT_EQ(placement_settings(random)->kind, Kind::kDefault);

  BrokerConfig enforced;
  enforced.bookkeeper_client_min_num_racks_per_write_quorum = 3;
  enforced.bookkeeper_client_enforce_min_num_racks_per_write_quorum = true;
  auto e = placement_settings(enforced);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->min_racks_per_write_quorum, 3);
  EXPECT_TRUE(e->enforce_min_racks);
}

TEST(BookiePlacementTest, RegionAwareSettingsFollowTheReppKeys) {
  BrokerConfig c = region_aware(3, 3, 2, 2, " r1 ; r2;r3");
  c.bookkeeper_client_rackaware_policy_enabled = false;  // region-aware wins either way
  c.repp_enable_validation = false;
  c.repp_enable_durability_enforcement_in_replace = false;
  auto s = placement_settings(c);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->kind, Kind::kRegionAware);
  EXPECT_EQ(s->region.regions_to_write, (std::set<std::string>{"r1", "r2", "r3"}));
  EXPECT_EQ(s->region.min_regions_for_durability, 2);
  EXPECT_FALSE(s->region.enforce);
  EXPECT_FALSE(s->region.enforce_in_replace);
}

TEST(BookiePlacementTest, RefusesWhatCannotBeSatisfiedNamingTheKeys) {
  // Without bookkeeper_enforceMinNumFaultDomainsForWrite, 3/3/2 needs three regions for two
  // per ack quorum: fine without a list (up to Qw), fine over three listed regions, not over
  // two. With it (the default) the acknowledgements span the regions, over two as well.
  EXPECT_EQ(refusal(region_aware(3, 3, 2, 2)), "");
  EXPECT_EQ(refusal(region_aware(3, 3, 2, 2, "a;b;c")), "");
  EXPECT_EQ(refusal(region_aware(3, 3, 2, 2, "a;b")), "");
  BrokerConfig strict = region_aware(3, 3, 2, 2, "a;b");
  strict.enforce_min_num_fault_domains_for_write = false;
  std::string two = refusal(strict);
  EXPECT_NE(two.find("managedLedgerDefaultAckQuorum=2"), std::string::npos) << two;
  EXPECT_NE(two.find("reppMinimumRegionsForDurability=2"), std::string::npos) << two;
  EXPECT_NE(two.find("at least 3"), std::string::npos) << two;
  EXPECT_EQ(refusal(region_aware(3, 3, 3, 2, "a;b")), "");

  std::string qa1 = refusal(region_aware(3, 3, 1, 2));
  EXPECT_NE(qa1.find("managedLedgerDefaultAckQuorum=1 is below "
                     "reppMinimumRegionsForDurability=2"),
            std::string::npos)
      << qa1;
  strict = region_aware(3, 3, 1, 2);
  strict.enforce_min_num_fault_domains_for_write = false;
  qa1 = refusal(strict);
  EXPECT_NE(qa1.find("managedLedgerDefaultAckQuorum=1"), std::string::npos) << qa1;

  std::string qw1 = refusal(region_aware(1, 1, 1, 2));
  EXPECT_NE(qw1.find("managedLedgerDefaultWriteQuorum=1 cannot span "
                     "reppMinimumRegionsForDurability=2"),
            std::string::npos)
      << qw1;

  std::string few = refusal(region_aware(3, 3, 3, 3, "a;b"));
  EXPECT_NE(few.find("reppRegionsToWrite 'a;b' names 2 region(s), fewer than "
                     "reppMinimumRegionsForDurability=3"),
            std::string::npos)
      << few;

  // No constraint with a minimum of 1 (or 0).
  EXPECT_EQ(refusal(region_aware(1, 1, 1, 1)), "");
  EXPECT_EQ(refusal(region_aware(1, 1, 1, 0)), "");
}

TEST(BookiePlacementTest, ParsesReppRegionsToWrite) {
  EXPECT_TRUE(regions_to_write("")->empty());
  EXPECT_TRUE(regions_to_write("  ")->empty());
  EXPECT_EQ(*regions_to_write("a"), (std::set<std::string>{"a"}));
  EXPECT_EQ(*regions_to_write("a; b ;c"), (std::set<std::string>{"a", "b", "c"}));
  for (std::string_view bad : {"a;;b", "a;", ";a", "a;a", "a/b;c", "a\x01"}) {
    auto r = regions_to_write(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("reppRegionsToWrite"), std::string::npos)
        << r.status().message();
  }
  BrokerConfig c = region_aware(3, 3, 2, 2, "a;;b");
  EXPECT_NE(refusal(c).find("reppRegionsToWrite"), std::string::npos);
}

TEST(BookiePlacementTest, ReppRegionsToWriteMustNameRegionsOfBookies) {
  ledger::BookieTopology topology;
  topology.location = {{"127.0.0.1:3181", "/east/r1"}, {"127.0.0.1:3182", "/west/r1"}};
  EXPECT_TRUE(check_regions_known(region_aware(2, 2, 2, 2, "east;west"), topology).ok());
  EXPECT_TRUE(check_regions_known(region_aware(2, 2, 2, 2), topology).ok());
  // Nothing to check against yet, or a policy without regions.
  EXPECT_TRUE(check_regions_known(region_aware(2, 2, 2, 2, "east;north"), {}).ok());
  BrokerConfig rack;
  rack.repp_regions_to_write = "north";
  EXPECT_TRUE(check_regions_known(rack, topology).ok());
  Status unknown = check_regions_known(region_aware(2, 2, 2, 2, "east;nort"), topology);
  EXPECT_TRUE(unknown.is(Errc::kInvalidArgument));
  EXPECT_NE(unknown.message().find("reppRegionsToWrite names region 'nort', which no bookie of "
                                   "/bookies is in (regions there: east, west)"),
            std::string::npos)
      << unknown.to_string();
}

TEST(BookiePlacementTest, ParsesBookieAddressOverrides) {
  EXPECT_TRUE(bookie_address_overrides("")->empty());
  auto two = bookie_address_overrides(" 127.0.0.1:3181=127.0.0.1:4001 ,127.0.0.2:3181=10.0.0.9:99,");
  ASSERT_TRUE(two.ok()) << two.status().to_string();
  EXPECT_EQ(*two, (std::map<std::string, std::string>{{"127.0.0.1:3181", "127.0.0.1:4001"},
                                                      {"127.0.0.2:3181", "10.0.0.9:99"}}));
  for (std::string_view bad :
       {"127.0.0.1:3181", "127.0.0.1:3181=", "=127.0.0.1:1", "host:3181=127.0.0.1:1",
        "127.0.0.1:3181=127.0.0.1:0", "127.0.0.1:1=127.0.0.1:2,127.0.0.1:1=127.0.0.1:3"}) {
    auto r = bookie_address_overrides(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("bookkeeperClientBookieAddressOverrides"),
              std::string::npos)
        << r.status().message();
  }
}

TEST(BookiePlacementTest, RackShapesAsPulsarChecksThem) {
  BrokerConfig rack;  // rack-aware (Pulsar's default)
  for (std::string_view ok : {"/rack1", "rack1", "/rack1/", ""}) {
    EXPECT_TRUE(rack_shape_fits(rack, ok)) << ok;
  }
  for (std::string_view bad : {"/region/rack", "a/b/c"}) EXPECT_FALSE(rack_shape_fits(rack, bad));
  BrokerConfig region = region_aware(3, 3, 2, 2);
  for (std::string_view ok : {"/region/rack", "region/rack", "/region/rack/"}) {
    EXPECT_TRUE(rack_shape_fits(region, ok)) << ok;
  }
  for (std::string_view bad : {"/rack", "/a/b/c", ""}) EXPECT_FALSE(rack_shape_fits(region, bad));
  BrokerConfig random;
  random.bookkeeper_client_rackaware_policy_enabled = false;
  EXPECT_TRUE(rack_shape_fits(random, "/a/b/c"));
}

TEST(BookiePlacementTest, BrokerConfKeysAreBoundNotIgnored) {
  BrokerConfig c;
  ConfigSchema s("broker");
  bind_broker_config(s, &c);
  ASSERT_TRUE(s.load_text("bookkeeperClientRegionawarePolicyEnabled=true\n"
                          "bookkeeperClientRackawarePolicyEnabled=false\n"
                          "bookkeeperClientMinNumRacksPerWriteQuorum=3\n"
                          "bookkeeperClientEnforceMinNumRacksPerWriteQuorum=true\n"
                          "reppRegionsToWrite=a;b;c\n"
                          "reppMinimumRegionsForDurability=3\n"
                          "reppEnableValidation=false\n"
                          "reppEnableDurabilityEnforcementInReplace=false\n"
                          "bookkeeper_enforceMinNumFaultDomainsForWrite=false\n"
                          "bookkeeperClientBookieAddressOverrides=127.0.0.1:1=127.0.0.1:2\n",
                          "broker.conf")
                  .ok());
  EXPECT_TRUE(c.bookkeeper_client_regionaware_policy_enabled);
  EXPECT_FALSE(c.bookkeeper_client_rackaware_policy_enabled);
  EXPECT_EQ(c.bookkeeper_client_min_num_racks_per_write_quorum, 3);
  EXPECT_TRUE(c.bookkeeper_client_enforce_min_num_racks_per_write_quorum);
  EXPECT_EQ(c.repp_regions_to_write, "a;b;c");
  EXPECT_EQ(c.repp_minimum_regions_for_durability, 3);
  EXPECT_FALSE(c.repp_enable_validation);
  EXPECT_FALSE(c.repp_enable_durability_enforcement_in_replace);
  EXPECT_FALSE(c.enforce_min_num_fault_domains_for_write);
  EXPECT_EQ(c.bookie_address_overrides, "127.0.0.1:1=127.0.0.1:2");
  EXPECT_TRUE(s.ignored().empty()) << s.ignored_warning();
  Status zero = s.load_text("bookkeeperClientMinNumRacksPerWriteQuorum=0\n", "broker.conf");
  EXPECT_NE(zero.message().find("bookkeeperClientMinNumRacksPerWriteQuorum"), std::string::npos)
      << zero.to_string();
}

TEST(BookiePlacementTest, ABrokerDoesNotStartOnAnUnsatisfiableConfiguration) {
  auto store = run_sync<Result<std::unique_ptr<metadata::MetadataStore>>>(
      [] { return metadata::open_store("memory:" + magnetar::testing::test_name()); });
  ASSERT_TRUE(store.ok());
  std::shared_ptr<metadata::MetadataStore> shared = std::move(store).value();
  BrokerConfig c = region_aware(3, 3, 1, 2);
  c.broker_service_port = 0;
  c.bind_address = "127.0.0.1";
  c.num_io_threads = 1;
  auto b = Broker::start(c, metadata::MetadataStores{shared, shared});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("managedLedgerDefaultAckQuorum=1"), std::string::npos)
      << b.status().to_string();
  // A region to write that no bookie of /bookies is in (a typo): refused as well.
  ASSERT_TRUE(run_sync<Status>([&] {
                return ledger::set_bookie_location(*shared, "127.0.0.1:3181", "/east/rack1");
              }).ok());
  c = region_aware(2, 2, 2, 2, "east;esat");
  c.broker_service_port = 0;
  c.bind_address = "127.0.0.1";
  c.num_io_threads = 1;
  b = Broker::start(c, metadata::MetadataStores{shared, shared});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("reppRegionsToWrite names region 'esat'"), std::string::npos)
      << b.status().to_string();
  (void)run_sync<Status>([&] { return shared->close(); });
}

}  // namespace
}  // namespace magnetar::broker
