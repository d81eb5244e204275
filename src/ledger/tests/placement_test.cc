#include "ledger/placement.h"

#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "metadata/metadata_store.h"

namespace magnetar::ledger {
namespace {

constexpr int kSeeds = 200;

// "<prefix><i>:3181" for i in [0, n).
std::vector<std::string> bookies(int n, std::string_view prefix = "b") {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(fmt::format("{}{}:3181", prefix, i));
  return out;
}

// `groups` groups of `per_group` bookies; bookie "<g>-<i>:3181" at location(g, i).
struct Topology {
  std::vector<std::string> bookies;
  BookieTopology topology;
};

Topology cluster(int groups, int per_group,
                const std::function<std::string(int, int)>& location) {
  Topology c;
  for (int g = 0; g < groups; ++g) {
    for (int i = 0; i < per_group; ++i) {
      std::string id = fmt::format("g{}-{}:3181", g, i);
      c.topology.location[id] = location(g, i);
      c.bookies.push_back(std::move(id));
    }
  }
  return c;
}

// Racks "/default-region/rack<g>".
Topology racks(int count, int per_rack) {
  return cluster(count, per_rack, [](int g, int) { return fmt::format("/default-region/rack{}", g); });
}

// Regions "/region<g>/rack<i>": every bookie on its own rack.
Topology regions(int count, int per_region) {
  return cluster(count, per_region,
                 [](int g, int i) { return fmt::format("/region{}/rack{}", g, i); });
}

// The E write sets of an ensemble: cyclic windows of Qw positions.
std::vector<std::vector<std::string>> write_sets(const std::vector<std::string>& ensemble, int qw) {
  std::vector<std::vector<std::string>> out;
  const size_t e = ensemble.size();
  for (size_t start = 0; start < e; ++start) {
    std::vector<std::string> set;
    for (int i = 0; i < qw; ++i) set.push_back(ensemble[(start + i) % e]);
    out.push_back(std::move(set));
  }
  return out;
}

size_t distinct_racks(const BookieTopology& t, const std::vector<std::string>& set) {
  std::set<std::string> racks;
  for (const auto& b : set) racks.insert(t.location_of(b));
  return racks.size();
}

size_t distinct_regions(const BookieTopology& t, const std::vector<std::string>& set) {
  std::set<std::string> regions;
  for (const auto& b : set) regions.insert(t.region_of(b));
  return regions.size();
}

// The fewest regions any `qa` bookies of `set` span (every ack quorum of the write set).
size_t min_regions_of_ack_quorums(const BookieTopology& t, const std::vector<std::string>& set,
                                  int qa) {
  size_t fewest = set.size();
  for (uint32_t mask = 0; mask < (1u << set.size()); ++mask) {
    if (std::popcount(mask) != qa) continue;
    std::vector<std::string> subset;
    for (size_t i = 0; i < set.size(); ++i) {
      if (mask & (1u << i)) subset.push_back(set[i]);
    }
    fewest = std::min(fewest, distinct_regions(t, subset));
  }
  return fewest;
}

void expect_distinct(const std::vector<std::string>& ensemble, size_t size) {
  EXPECT_EQ(ensemble.size(), size);
  EXPECT_EQ(std::set<std::string>(ensemble.begin(), ensemble.end()).size(), ensemble.size());
}

// --- default ------------------------------------------------------------------------------

TEST(PlacementTest, DefaultPicksDistinctBookiesAndHonoursExclusions) {
  const auto all = bookies(6);
  const std::set<std::string> excluded = {all[0], all[3]};
  std::set<std::string> ever_chosen;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto policy = make_default_placement(seed);
    auto ens = policy->new_ensemble(3, 2, 2, all, excluded);
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    expect_distinct(*ens, 3);
    for (const auto& b : *ens) {
      EXPECT_FALSE(excluded.count(b)) << b;
      ever_chosen.insert(b);
    }
  }
  EXPECT_EQ(ever_chosen.size(), 4u);  // random: every allowed bookie gets picked sometimes
}

TEST(PlacementTest, DefaultIsReproducibleForASeed) {
  const auto all = bookies(10);
  auto a = make_default_placement(7)->new_ensemble(5, 3, 2, all, {});
  auto b = make_default_placement(7)->new_ensemble(5, 3, 2, all, {});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(PlacementTest, DefaultFailsWithoutEnoughBookies) {
  auto policy = make_default_placement(1);
  auto all = bookies(5);
  all.push_back(all[0]);  // duplicates count once
  auto r = policy->new_ensemble(5, 2, 2, all, {all[1]});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kUnavailable));
  EXPECT_NE(r.status().message().find("not enough bookies: need 5, have 4"), std::string::npos)
      << r.status().to_string();
  EXPECT_TRUE(r.status().retriable());
}

TEST(PlacementTest, InvalidQuorumsAreInvalidArguments) {
  auto policy = make_default_placement(1);
  const auto all = bookies(5);
  EXPECT_TRUE(policy->new_ensemble(3, 4, 2, all, {}).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(policy->new_ensemble(3, 2, 3, all, {}).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(policy->new_ensemble(3, 2, 0, all, {}).status().is(Errc::kInvalidArgument));
  const std::vector<std::string> ens = {all[0], all[1], all[2]};
  EXPECT_TRUE(policy->replace_bookie(ens, 3, 2, 2, all, {}).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(policy->replace_bookie(ens, -1, 2, 2, all, {}).status().is(Errc::kInvalidArgument));
  EXPECT_TRUE(policy->replace_bookie(ens, 0, 4, 2, all, {}).status().is(Errc::kInvalidArgument));
}

TEST(PlacementTest, DefaultReplacementIsNeitherAMemberNorExcluded) {
  const auto all = bookies(5);
  const std::vector<std::string> ens = {all[0], all[1], all[2]};
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto r = make_default_placement(seed)->replace_bookie(ens, 1, 2, 2, all, {all[3]});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(*r, all[4]);
  }
  auto none = make_default_placement(1)->replace_bookie(ens, 1, 2, 2, all, {all[3], all[4]});
  EXPECT_TRUE(none.status().is(Errc::kUnavailable)) << none.status().to_string();
}

// --- rack-aware ---------------------------------------------------------------------------

TEST(PlacementTest, RackAwareEveryWriteSetSpansTwoRacks) {
  const Topology c = racks(3, 2);
  for (bool enforce : {false, true}) {
    for (uint64_t seed = 0; seed < kSeeds; ++seed) {
      auto policy = make_rack_aware_placement(c.topology, 2, enforce, seed);
      auto ens = policy->new_ensemble(3, 2, 2, c.bookies, {});
      ASSERT_TRUE(ens.ok()) << ens.status().to_string();
      expect_distinct(*ens, 3);
      for (const auto& set : write_sets(*ens, 2)) {
        EXPECT_EQ(distinct_racks(c.topology, set), 2u) << "seed " << seed;
      }
    }
  }
}

TEST(PlacementTest, RackAwareLargerEnsembles) {
  const Topology c = racks(3, 3);
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    // min racks 3 > Qw: each write set of 2 needs 2 racks; of 3 needs 3.
    auto policy = make_rack_aware_placement(c.topology, 3, true, seed);
    auto ens = policy->new_ensemble(6, 2, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    for (const auto& set : write_sets(*ens, 2)) EXPECT_EQ(distinct_racks(c.topology, set), 2u);
    // Every 3 consecutive on 3 racks forces the period ABCABC: E must be a multiple of 3.
    auto ens3 = policy->new_ensemble(6, 3, 2, c.bookies, {});
    ASSERT_TRUE(ens3.ok()) << ens3.status().to_string();
    expect_distinct(*ens3, 6);
    for (const auto& set : write_sets(*ens3, 3)) EXPECT_EQ(distinct_racks(c.topology, set), 3u);
  }
}

TEST(PlacementTest, RackAwareFindsTheOnlyValidArrangement) {
  // Two racks of two, E=4, Qw=2: only alternating racks around the ring works.
  const Topology c = racks(2, 2);
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto ens = make_rack_aware_placement(c.topology, 2, true, seed)->new_ensemble(4, 2, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    for (const auto& set : write_sets(*ens, 2)) EXPECT_EQ(distinct_racks(c.topology, set), 2u);
  }
  // Full write sets (Qw = E) only need two racks in the whole ensemble.
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto ens = make_rack_aware_placement(c.topology, 2, true, seed)->new_ensemble(3, 3, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    EXPECT_EQ(distinct_racks(c.topology, *ens), 2u);
  }
}

TEST(PlacementTest, RackAwareOneRackFallsBackToRandomUnlessEnforced) {
  const Topology c = racks(1, 5);
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto ens = make_rack_aware_placement(c.topology, 2, false, seed)->new_ensemble(3, 2, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    expect_distinct(*ens, 3);
  }
  auto enforced = make_rack_aware_placement(c.topology, 2, true, 1)->new_ensemble(3, 2, 2, c.bookies, {});
  ASSERT_FALSE(enforced.ok());
  EXPECT_TRUE(enforced.status().is(Errc::kUnavailable)) << enforced.status().to_string();
}

TEST(PlacementTest, RackAwareUnevenRacksDegradeOrFail) {
  // Rack 0 has five bookies, rack 1 one: E=4, Qw=2 would need two bookies of rack 1.
  Topology c = racks(1, 5);
  c.bookies.push_back("lonely:3181");
  c.topology.location["lonely:3181"] = "/default-region/rack1";
  auto enforced = make_rack_aware_placement(c.topology, 2, true, 3)->new_ensemble(4, 2, 2, c.bookies, {});
  EXPECT_TRUE(enforced.status().is(Errc::kUnavailable)) << enforced.status().to_string();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto relaxed = make_rack_aware_placement(c.topology, 2, false, seed)->new_ensemble(4, 2, 2, c.bookies, {});
    ASSERT_TRUE(relaxed.ok()) << relaxed.status().to_string();
    expect_distinct(*relaxed, 4);
  }
}

TEST(PlacementTest, RackAwareEnforcedNeverPicksUnknownRacks) {
  Topology c = racks(2, 2);
  const auto unknown = bookies(4, "unknown");
  c.bookies.insert(c.bookies.end(), unknown.begin(), unknown.end());
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto ens = make_rack_aware_placement(c.topology, 2, true, seed)->new_ensemble(4, 2, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    for (const auto& b : *ens) EXPECT_EQ(b.rfind("unknown", 0), std::string::npos) << b;
  }
  // Without enforce they are ordinary candidates (in the default rack).
  auto more = make_rack_aware_placement(c.topology, 2, false, 1)->new_ensemble(7, 2, 2, c.bookies, {});
  EXPECT_TRUE(more.ok()) << more.status().to_string();
  auto too_many = make_rack_aware_placement(c.topology, 2, true, 1)->new_ensemble(5, 2, 2, c.bookies, {});
  EXPECT_NE(too_many.status().message().find("need 5, have 4"), std::string::npos)
      << too_many.status().to_string();
}

TEST(PlacementTest, RackAwareReplacementKeepsTwoRacksPerWriteSet) {
  const Topology c = racks(3, 3);
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto policy = make_rack_aware_placement(c.topology, 2, true, seed);
    auto ens = policy->new_ensemble(3, 2, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    const int index = static_cast<int>(seed % 3);
    auto r = policy->replace_bookie(*ens, index, 2, 2, c.bookies, {});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(std::count(ens->begin(), ens->end(), *r), 0);
    auto changed = *ens;
    changed[index] = *r;
    for (const auto& set : write_sets(changed, 2)) EXPECT_EQ(distinct_racks(c.topology, set), 2u);
  }
}

TEST(PlacementTest, RackAwareReplacementWithOnlyBadCandidates) {
  const Topology c = racks(2, 3);  // rack0: g0-0..2, rack1: g1-0..2
  // E=2, Qw=2: replacing g1-0 must come from rack 1, but all of rack 1 is excluded.
  const std::vector<std::string> ens = {"g0-0:3181", "g1-0:3181"};
  const std::set<std::string> excluded = {"g1-1:3181", "g1-2:3181"};
  auto enforced = make_rack_aware_placement(c.topology, 2, true, 1)->replace_bookie(ens, 1, 2, 2, c.bookies, excluded);
  EXPECT_TRUE(enforced.status().is(Errc::kUnavailable)) << enforced.status().to_string();
  auto relaxed = make_rack_aware_placement(c.topology, 2, false, 1)->replace_bookie(ens, 1, 2, 2, c.bookies, excluded);
  ASSERT_TRUE(relaxed.ok()) << relaxed.status().to_string();
  EXPECT_EQ(c.topology.location_of(*relaxed), "/default-region/rack0");
  // Without exclusions the replacement comes from rack 1.
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto r = make_rack_aware_placement(c.topology, 2, true, seed)->replace_bookie(ens, 1, 2, 2, c.bookies, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(c.topology.location_of(*r), "/default-region/rack1");
  }
}

// --- region-aware -------------------------------------------------------------------------

TEST(PlacementTest, RegionAwareEveryAckQuorumSpansTwoRegions) {
  const Topology c = regions(2, 3);
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto policy = make_region_aware_placement(c.topology, 2, true, seed);
    auto ens = policy->new_ensemble(4, 4, 3, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    expect_distinct(*ens, 4);
    for (const auto& set : write_sets(*ens, 4)) {
      EXPECT_EQ(distinct_regions(c.topology, set), 2u);
      EXPECT_EQ(min_regions_of_ack_quorums(c.topology, set, 3), 2u) << "seed " << seed;
    }
  }
}

TEST(PlacementTest, RegionAwareStripedEnsembles) {
  const Topology c = regions(2, 4);
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto policy = make_region_aware_placement(c.topology, 2, true, seed);
    // Qw=3 over two regions needs Qa=3; the ring must never hold three of a region in a row.
    auto ens = policy->new_ensemble(6, 3, 3, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    for (const auto& set : write_sets(*ens, 3)) EXPECT_EQ(distinct_regions(c.topology, set), 2u);
    // Qw=4, Qa=3: every write set is two and two.
    auto ens4 = policy->new_ensemble(8, 4, 3, c.bookies, {});
    ASSERT_TRUE(ens4.ok()) << ens4.status().to_string();
    for (const auto& set : write_sets(*ens4, 4)) {
      EXPECT_EQ(min_regions_of_ack_quorums(c.topology, set, 3), 2u);
    }
  }
}

TEST(PlacementTest, RegionAwareSpreadsTheEnsembleEvenly) {
  const Topology c = regions(3, 4);
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto ens = make_region_aware_placement(c.topology, 2, true, seed)->new_ensemble(6, 3, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    std::map<std::string, int> per_region;
    for (const auto& b : *ens) ++per_region[c.topology.region_of(b)];
    EXPECT_EQ(per_region, (std::map<std::string, int>{{"region0", 2}, {"region1", 2}, {"region2", 2}}));
    // Three regions relax Qa: any 2 of a write set of 3 span 2 regions (one copy per region).
    for (const auto& set : write_sets(*ens, 3)) {
      EXPECT_EQ(min_regions_of_ack_quorums(c.topology, set, 2), 2u) << "seed " << seed;
    }
  }
}

TEST(PlacementTest, RegionAwareRejectsAnAckQuorumTooSmallForTwoRegions) {
  const Topology c = regions(2, 3);
  // Qa=2 of Qw=4 over 2 regions: two acks could both come from one region.
  auto r = make_region_aware_placement(c.topology, 2, true, 1)->new_ensemble(4, 4, 2, c.bookies, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kUnavailable));
  EXPECT_NE(r.status().message().find("Qa > Qw - floor(Qw / 2)"), std::string::npos)
      << r.status().to_string();
  // Not enforced: still spread 2 + 2, durability best effort.
  auto relaxed = make_region_aware_placement(c.topology, 2, false, 1)->new_ensemble(4, 4, 2, c.bookies, {});
  ASSERT_TRUE(relaxed.ok()) << relaxed.status().to_string();
  EXPECT_EQ(distinct_regions(c.topology, *relaxed), 2u);
}

TEST(PlacementTest, RegionAwareImpossibleRingIsUnavailable) {
  // E=5, Qw=4, Qa=3 over two regions: some write set always leaves out a bookie of the
  // smaller region and holds three of the larger one.
  const Topology c = regions(2, 3);
  auto r = make_region_aware_placement(c.topology, 2, true, 1)->new_ensemble(5, 4, 3, c.bookies, {});
  EXPECT_TRUE(r.status().is(Errc::kUnavailable)) << r.status().to_string();
}

TEST(PlacementTest, RegionAwareOneRegionOrUnknownRegions) {
  const Topology one = regions(1, 6);
  auto r = make_region_aware_placement(one.topology, 2, true, 1)->new_ensemble(4, 4, 3, one.bookies, {});
  EXPECT_TRUE(r.status().is(Errc::kUnavailable)) << r.status().to_string();
  auto relaxed = make_region_aware_placement(one.topology, 2, false, 1)->new_ensemble(4, 4, 3, one.bookies, {});
  EXPECT_TRUE(relaxed.ok()) << relaxed.status().to_string();

  // Bookies with no (or a rack-only) location are in no known region: never chosen when
  // enforced, even though "default-region" would look like a second region.
  Topology c = one;
  c.bookies.push_back("nowhere-1:3181");
  c.bookies.push_back("nowhere-2:3181");
  c.bookies.push_back("rackonly:3181");
  c.topology.location["rackonly:3181"] = "/rack9";
  auto enforced = make_region_aware_placement(c.topology, 2, true, 1)->new_ensemble(4, 4, 3, c.bookies, {});
  EXPECT_TRUE(enforced.status().is(Errc::kUnavailable)) << enforced.status().to_string();
}

TEST(PlacementTest, RegionAwareReplacementStaysInTheFailedRegion) {
  const Topology c = regions(2, 4);
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    auto policy = make_region_aware_placement(c.topology, 2, true, seed);
    auto ens = policy->new_ensemble(4, 4, 3, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    const int index = static_cast<int>(seed % 4);
    auto r = policy->replace_bookie(*ens, index, 4, 3, c.bookies, {});
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(std::count(ens->begin(), ens->end(), *r), 0);
    EXPECT_EQ(c.topology.region_of(*r), c.topology.region_of((*ens)[index]));
    auto changed = *ens;
    changed[index] = *r;
    for (const auto& set : write_sets(changed, 4)) {
      EXPECT_EQ(min_regions_of_ack_quorums(c.topology, set, 3), 2u);
    }
  }
}

TEST(PlacementTest, RegionAwareReplacementWithTheFailedRegionExhausted) {
  const Topology c = regions(2, 2);  // region0: g0-0, g0-1; region1: g1-0, g1-1
  const std::vector<std::string> ens = {"g0-0:3181", "g1-0:3181", "g0-1:3181", "g1-1:3181"};
  Topology bigger = c;
  for (const char* extra : {"g1-2:3181", "g1-3:3181"}) {
    bigger.bookies.push_back(extra);
    bigger.topology.location[extra] = "/region1/rack9";
  }
  // Region 0 has no spare bookie: a region-1 bookie would put 3 of 4 copies in region 1.
  auto enforced = make_region_aware_placement(bigger.topology, 2, true, 1)
                      ->replace_bookie(ens, 0, 4, 3, bigger.bookies, {});
  EXPECT_TRUE(enforced.status().is(Errc::kUnavailable)) << enforced.status().to_string();
  auto relaxed = make_region_aware_placement(bigger.topology, 2, false, 1)
                     ->replace_bookie(ens, 0, 4, 3, bigger.bookies, {});
  ASSERT_TRUE(relaxed.ok()) << relaxed.status().to_string();
  EXPECT_EQ(bigger.topology.region_of(*relaxed), "region1");
}

// --- topology -----------------------------------------------------------------------------

TEST(PlacementTopologyTest, LocationsAndRegions) {
  BookieTopology t;
  t.location = {{"a:1", "/eu/r1"}, {"b:1", "/r2"}, {"c:1", ""}, {"d:1", "/"}};
  EXPECT_EQ(t.location_of("a:1"), "/eu/r1");
  EXPECT_EQ(t.region_of("a:1"), "eu");
  EXPECT_EQ(t.location_of("b:1"), "/r2");
  EXPECT_EQ(t.region_of("b:1"), "default-region");
  EXPECT_EQ(t.location_of("c:1"), kDefaultLocation);
  EXPECT_EQ(t.location_of("d:1"), kDefaultLocation);
  EXPECT_EQ(t.location_of("missing:1"), kDefaultLocation);
  EXPECT_EQ(t.region_of("missing:1"), "default-region");

  for (std::string_view ok : {"", "/", "/r1", "/eu/r1"}) {
    EXPECT_TRUE(validate_location(ok).ok()) << ok;
  }
  for (std::string_view bad : {"eu/r1", "/eu/r1/", "/eu//r1", "/a/b/c", "/eu/r\n1"}) {
    EXPECT_TRUE(validate_location(bad).is(Errc::kInvalidArgument)) << bad;
  }
}

using StorePtr = std::unique_ptr<metadata::MetadataStore>;

StorePtr open_memory_store(std::string name) {
  auto store = run_sync<Result<StorePtr>>([&]() { return metadata::open_store("memory:" + name); });
  MAGNETAR_ASSERT(store.ok(), store.status().to_string());
  return std::move(store).value();
}

TEST(PlacementTopologyTest, LoadsWhatWasSet) {
  StorePtr store = open_memory_store("placement-topology-load");
  auto empty = run_sync<Result<BookieTopology>>([&]() { return load_topology(*store); });
  ASSERT_TRUE(empty.ok()) << empty.status().to_string();
  EXPECT_TRUE(empty->location.empty());

  auto set = [&](std::string bookie, std::string location, std::string group = "default") {
    return run_sync<Status>(
        [&]() { return set_bookie_location(*store, bookie, location, group, "h-" + bookie); });
  };
  ASSERT_TRUE(set("b1:3181", "/eu/r1").ok());
  ASSERT_TRUE(set("b2:3181", "/us/r1").ok());
  ASSERT_TRUE(set("b2:3181", "/us/r2", "other").ok());  // overwrite, and move to another group
  ASSERT_TRUE(set("b3:3181", "us/r3/").ok());           // normalized to /us/r3
  EXPECT_TRUE(set("b4:3181", "/a/b/c").is(Errc::kInvalidArgument));
  EXPECT_TRUE(set("b5:3181", "/us/r\n1").is(Errc::kInvalidArgument));
  EXPECT_TRUE(set("b6:3181", "/us/r\x7f").is(Errc::kInvalidArgument));
  EXPECT_TRUE(set("b8:3181", std::string("/us/r") + '\x01').is(Errc::kInvalidArgument));
  EXPECT_TRUE(set("", "/us/r2").is(Errc::kInvalidArgument));
  EXPECT_TRUE(set("a/b", "/us/r2").is(Errc::kInvalidArgument));

  auto loaded = run_sync<Result<BookieTopology>>([&]() { return load_topology(*store); });
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  EXPECT_EQ(loaded->location.at("b1:3181"), "/eu/r1");
  EXPECT_EQ(loaded->location.at("b2:3181"), "/us/r2");
  EXPECT_EQ(loaded->location.at("b3:3181"), "/us/r3");
  EXPECT_EQ(loaded->location.count("b8:3181"), 0u);
  EXPECT_EQ(loaded->region_of("b2:3181"), "us");

  // The layout is Pulsar's: /bookies = {group: {bookie: {rack, hostname}}}.
  auto raw = run_sync<Result<std::optional<metadata::GetResult>>>(
      [&]() { return store->get("/bookies"); });
  ASSERT_TRUE(raw.ok() && raw->has_value());
  const auto doc = nlohmann::json::parse((*raw)->value);
  EXPECT_EQ(doc["default"]["b1:3181"]["rack"], "/eu/r1");
  EXPECT_EQ(doc["default"]["b1:3181"]["hostname"], "h-b1:3181");
  EXPECT_EQ(doc["other"]["b2:3181"]["rack"], "/us/r2");
  EXPECT_FALSE(doc["default"].contains("b2:3181"));
}

TEST(PlacementTopologyTest, CorruptDocumentNamesTheNodeAndTheBookie) {
  StorePtr store = open_memory_store("placement-topology-corrupt");
  auto put = run_sync<Result<metadata::PutResult>>([&]() {
    return store->put_recursive("/bookies", R"({"default":{"bad:3181":{"rack":"/a/b/c"}}})");
  });
  ASSERT_TRUE(put.ok()) << put.status().to_string();
  auto loaded = run_sync<Result<BookieTopology>>([&]() { return load_topology(*store); });
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(loaded.status().is(Errc::kCorruption));
  EXPECT_NE(loaded.status().message().find("/bookies"), std::string::npos)
      << loaded.status().to_string();
  EXPECT_NE(loaded.status().message().find("bad:3181"), std::string::npos)
      << loaded.status().to_string();
}

TEST(PlacementTopologyTest, LoadedTopologyDrivesRackAwarePlacement) {
  StorePtr store = open_memory_store("placement-topology-drive");
  const auto all = bookies(4);
  for (int i = 0; i < 4; ++i) {
    std::string location = fmt::format("/default-region/rack{}", i % 2);
    ASSERT_TRUE(run_sync<Status>([&]() { return set_bookie_location(*store, all[i], location); }).ok());
  }
  auto topology = run_sync<Result<BookieTopology>>([&]() { return load_topology(*store); });
  ASSERT_TRUE(topology.ok()) << topology.status().to_string();
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto ens = make_rack_aware_placement(*topology, 2, true, seed)->new_ensemble(4, 2, 2, all, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    for (const auto& set : write_sets(*ens, 2)) EXPECT_EQ(distinct_racks(*topology, set), 2u);
  }
}

// --- settings, options and topology updates ------------------------------------------------

TEST(PlacementTest, MinAckQuorumForRegions) {
  // Exactly R regions: BookKeeper's Qa > Qw - floor(Qw / R).
  EXPECT_EQ(min_ack_quorum_for_regions(3, 2, 2), 3);
  EXPECT_EQ(min_ack_quorum_for_regions(4, 2, 2), 3);
  EXPECT_EQ(min_ack_quorum_for_regions(5, 2, 2), 4);
  // More regions relax it: one copy per region, any 2 acks span 2 regions.
  EXPECT_EQ(min_ack_quorum_for_regions(3, 3, 2), 2);
  EXPECT_EQ(min_ack_quorum_for_regions(3, 3, 3), 3);
  EXPECT_EQ(min_ack_quorum_for_regions(6, 3, 2), 3);
  // Impossible: fewer regions (or copies) than the minimum.
  EXPECT_EQ(min_ack_quorum_for_regions(3, 1, 2), 4);
  EXPECT_EQ(min_ack_quorum_for_regions(2, 3, 3), 3);
  // No constraint.
  EXPECT_EQ(min_ack_quorum_for_regions(3, 1, 1), 1);
}

TEST(PlacementTest, RegionAwareWritesOnlyToTheListedRegions) {
  Topology c = regions(4, 2);  // region0..region3
  RegionAwareOptions options;
  options.regions_to_write = {"region1", "region2", "region3"};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto ens = make_region_aware_placement(c.topology, options, seed)
                   ->new_ensemble(3, 3, 2, c.bookies, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    for (const auto& b : *ens) EXPECT_NE(c.topology.region_of(b), "region0") << b;
    EXPECT_EQ(distinct_regions(c.topology, *ens), 3u);
  }
  // Too few bookies in the listed regions: the error says why the others do not count.
  options.regions_to_write = {"region1", "region9"};
  auto r = make_region_aware_placement(c.topology, options, 1)->new_ensemble(3, 3, 2, c.bookies, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().is(Errc::kUnavailable));
  EXPECT_NE(r.status().message().find("outside the regions to write"), std::string::npos)
      << r.status().to_string();
}

TEST(PlacementTest, RegionAwareUnknownRegionsAreExplained) {
  Topology c = regions(3, 2);
  std::vector<std::string> all = c.bookies;
  all.push_back("new:3181");  // registered, not in the topology
  BookieTopology empty;
  auto r = make_region_aware_placement(empty, 2, true, 1)->new_ensemble(3, 3, 2, all, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not enough bookies: need 3, have 0 (7 more registered "
                                      "bookies have no region in /bookies"),
            std::string::npos)
      << r.status().to_string();
}

TEST(PlacementTest, RegionAwareReplacementEnforcementHasItsOwnSwitch) {
  // Two regions of two bookies; E=Qw=Qa=2 (one copy per region); region1 exhausted.
  Topology c = regions(2, 2);
  const std::vector<std::string> ens = {"g0-0:3181", "g1-0:3181"};
  const std::set<std::string> excluded = {"g1-1:3181"};
  RegionAwareOptions strict;
  auto refused = make_region_aware_placement(c.topology, strict, 1)
                     ->replace_bookie(ens, 1, 2, 2, c.bookies, excluded);
  EXPECT_TRUE(refused.status().is(Errc::kUnavailable)) << refused.status().to_string();
  RegionAwareOptions relaxed;
  relaxed.enforce_in_replace = false;  // new ensembles still enforced
  auto replaced = make_region_aware_placement(c.topology, relaxed, 1)
                      ->replace_bookie(ens, 1, 2, 2, c.bookies, excluded);
  ASSERT_TRUE(replaced.ok()) << replaced.status().to_string();
  EXPECT_EQ(*replaced, "g0-1:3181");
}

TEST(PlacementTest, PoliciesFollowTopologyUpdates) {
  // Six bookies first all in one region: region-aware placement refuses; after an update
  // spreading them over three regions, every ensemble spans three.
  std::vector<std::string> all = bookies(6);
  BookieTopology one_region;
  for (const auto& b : all) one_region.location[b] = "/only/rack";
  auto policy = make_region_aware_placement(one_region, 2, true, 7);
  EXPECT_TRUE(policy->new_ensemble(3, 3, 2, all, {}).status().is(Errc::kUnavailable));

  BookieTopology spread;
  for (size_t i = 0; i < all.size(); ++i) spread.location[all[i]] = fmt::format("/r{}/k", i % 3);
  policy->update_topology(spread);
  for (int round = 0; round < 20; ++round) {
    auto ens = policy->new_ensemble(3, 3, 2, all, {});
    ASSERT_TRUE(ens.ok()) << ens.status().to_string();
    EXPECT_EQ(distinct_regions(spread, *ens), 3u);
  }

  // Rack-aware, enforced: unknown racks are not candidates until the update names them.
  auto racked = make_rack_aware_placement(BookieTopology{}, 2, true, 3);
  EXPECT_FALSE(racked->new_ensemble(2, 2, 2, all, {}).ok());
  BookieTopology two_racks;
  for (size_t i = 0; i < all.size(); ++i) two_racks.location[all[i]] = fmt::format("/k{}", i % 2);
  racked->update_topology(two_racks);
  auto ens = racked->new_ensemble(2, 2, 2, all, {});
  ASSERT_TRUE(ens.ok()) << ens.status().to_string();
  EXPECT_EQ(distinct_racks(two_racks, *ens), 2u);
}

TEST(PlacementTest, MakePlacementBuildsTheKindAsked) {
  Topology c = regions(3, 2);
  PlacementSettings settings;
  settings.kind = PlacementSettings::Kind::kRegionAware;
  settings.region.min_regions_for_durability = 3;
  auto ens = make_placement(settings, c.topology, 5)->new_ensemble(3, 3, 3, c.bookies, {});
  ASSERT_TRUE(ens.ok()) << ens.status().to_string();
  EXPECT_EQ(distinct_regions(c.topology, *ens), 3u);
  // Qa 2 cannot make every ack quorum span 3 regions.
  EXPECT_TRUE(make_placement(settings, c.topology, 5)
                  ->new_ensemble(3, 3, 2, c.bookies, {})
                  .status()
                  .is(Errc::kUnavailable));
  settings.kind = PlacementSettings::Kind::kDefault;
  EXPECT_TRUE(make_placement(settings, c.topology, 5)->new_ensemble(3, 3, 2, c.bookies, {}).ok());
  EXPECT_EQ(to_string(PlacementSettings::Kind::kRackAware), "rack-aware");
}

TEST(PlacementTest, FourFourThreeSurvivesARegionLossWhereThreeThreeTwoDoesNot) {
  // Three regions of two bookies, then region2's bookies gone: what docs/geo-replication.md
  // advises.
  Topology c = regions(3, 2);
  std::vector<std::string> left;
  for (const auto& b : c.bookies) {
    if (c.topology.region_of(b) != "region2") left.push_back(b);
  }
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto policy = make_region_aware_placement(c.topology, 2, true, seed);
    auto all = policy->new_ensemble(4, 4, 3, c.bookies, {});
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    EXPECT_EQ(distinct_regions(c.topology, *all), 3u);
    EXPECT_EQ(min_regions_of_ack_quorums(c.topology, *all, 3), 2u);
    auto degraded = policy->new_ensemble(4, 4, 3, left, {});
    ASSERT_TRUE(degraded.ok()) << degraded.status().to_string();
    EXPECT_EQ(min_regions_of_ack_quorums(c.topology, *degraded, 3), 2u);
    EXPECT_TRUE(policy->new_ensemble(3, 3, 2, c.bookies, {}).ok());
    EXPECT_TRUE(policy->new_ensemble(3, 3, 2, left, {}).status().is(Errc::kUnavailable));
  }
}

TEST(PlacementTest, ThreeThreeTwoSurvivesARegionLossWhenTheAcksSpanRegions) {
  // bookkeeper_enforceMinNumFaultDomainsForWrite: the placement keeps one copy per region while
  // three regions have bookies, goes 2+1 over the two left after a loss (where the strict goal
  // refuses), and the acknowledgements then carry the two-region goal.
  Topology c = regions(3, 2);
  std::vector<std::string> left;
  for (const auto& b : c.bookies) {
    if (c.topology.region_of(b) != "region2") left.push_back(b);
  }
  RegionAwareOptions options;
  options.acks_span_regions = true;
  for (uint64_t seed = 0; seed < 50; ++seed) {
    auto policy = make_region_aware_placement(c.topology, options, seed);
    ASSERT_TRUE(policy->checks_acks());
    auto all = policy->new_ensemble(3, 3, 2, c.bookies, {});
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    EXPECT_EQ(distinct_regions(c.topology, *all), 3u);
    auto degraded = policy->new_ensemble(3, 3, 2, left, {});
    ASSERT_TRUE(degraded.ok()) << degraded.status().to_string();
    EXPECT_EQ(distinct_regions(c.topology, *degraded), 2u);
    // A lost region's bookie is replaced from the two left, keeping two regions per write set.
    const int index = static_cast<int>(seed % 3);
    std::set<std::string> lost;
    for (const auto& b : c.bookies) {
      if (c.topology.region_of(b) == c.topology.region_of((*all)[index])) lost.insert(b);
    }
    std::vector<std::string> survivors;
    for (const auto& b : c.bookies) {
      if (!lost.count(b)) survivors.push_back(b);
    }
    auto r = policy->replace_bookie(*all, index, 3, 2, survivors, lost);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    auto changed = *all;
    changed[index] = *r;
    EXPECT_EQ(distinct_regions(c.topology, changed), 2u);
    // With the lost region back, the replacement goes there again.
    auto back = policy->replace_bookie(*all, index, 3, 2, c.bookies, {});
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(c.topology.region_of(*back), c.topology.region_of((*all)[index]));
    // One region only cannot hold a write set that must span two.
    std::vector<std::string> one(left.begin(), left.begin() + 2);
    one.push_back("g0-9:3181");
    c.topology.location["g0-9:3181"] = "/region0/rack9";
    EXPECT_TRUE(make_region_aware_placement(c.topology, options, seed)
                    ->new_ensemble(3, 3, 2, one, {})
                    .status()
                    .is(Errc::kUnavailable));
    c.topology.location.erase("g0-9:3181");
  }
  // The strict goal (the option off) refuses the degraded ensemble, as BookKeeper does.
  EXPECT_TRUE(make_region_aware_placement(c.topology, RegionAwareOptions{}, 1)
                  ->new_ensemble(3, 3, 2, left, {})
                  .status()
                  .is(Errc::kUnavailable));
  // Qa below R cannot make its acknowledgements span R regions.
  auto qa1 = make_region_aware_placement(c.topology, options, 1)->new_ensemble(3, 3, 1, c.bookies, {});
  EXPECT_TRUE(qa1.status().is(Errc::kUnavailable)) << qa1.status().to_string();
}

TEST(PlacementTest, AcknowledgementsAdhereWhenTheySpanTheRegionsTheWriteSetCan) {
  Topology c = regions(3, 2);  // g<region>-<i>:3181 at /region<region>/rack<i>
  RegionAwareOptions options;
  options.acks_span_regions = true;
  auto policy = make_region_aware_placement(c.topology, options, 1);
  const std::vector<std::string> spread = {"g0-0:3181", "g1-0:3181", "g2-0:3181"};
  EXPECT_TRUE(policy->acks_adhere(spread, {"g0-0:3181", "g2-0:3181"}));
  const std::vector<std::string> two_one = {"g0-0:3181", "g0-1:3181", "g1-0:3181"};
  EXPECT_FALSE(policy->acks_adhere(two_one, {"g0-0:3181", "g0-1:3181"}));
  EXPECT_TRUE(policy->acks_adhere(two_one, {"g0-0:3181", "g0-1:3181", "g1-0:3181"}));
  EXPECT_TRUE(policy->acks_adhere(two_one, {"g0-1:3181", "g1-0:3181"}));
  // A write set in one region (placement not enforced) asks for that one region only.
  EXPECT_TRUE(policy->acks_adhere({"g0-0:3181", "g0-1:3181"}, {"g0-0:3181", "g0-1:3181"}));
  // Without the option (or with a minimum of one region) nothing is checked.
  EXPECT_FALSE(make_region_aware_placement(c.topology, RegionAwareOptions{}, 1)->checks_acks());
  options.min_regions_for_durability = 1;
  EXPECT_FALSE(make_region_aware_placement(c.topology, options, 1)->checks_acks());
  EXPECT_FALSE(make_rack_aware_placement(c.topology)->checks_acks());
}

TEST(PlacementTest, AutoRecoveryReplacementsKeepTheRegionsTheLostBookieGave) {
  // Auto-recovery's options: a segment with one copy per region waits for a bookie of the lost
  // bookie's region; a segment already 2+1 takes any bookie that keeps two regions.
  Topology c = regions(3, 2);
  RegionAwareOptions options;
  options.acks_span_regions = true;
  options.replace_keeps_spread = true;
  const std::vector<std::string> spread = {"g0-0:3181", "g1-0:3181", "g2-0:3181"};
  const std::vector<std::string> two_one = {"g0-0:3181", "g0-1:3181", "g1-0:3181"};
  const std::set<std::string> region2_lost = {"g2-0:3181", "g2-1:3181"};
  std::vector<std::string> without_region2;
  for (const auto& b : c.bookies) {
    if (!region2_lost.count(b)) without_region2.push_back(b);
  }
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto policy = make_region_aware_placement(c.topology, options, seed);
    // Region 2 gone: no replacement for the spread segment's copy there...
    auto waits = policy->replace_bookie(spread, 2, 3, 2, without_region2, region2_lost);
    EXPECT_TRUE(waits.status().is(Errc::kUnavailable)) << waits.status().to_string();
    EXPECT_NE(waits.status().message().find("region2"), std::string::npos);
    // ...until a bookie of region 2 joins.
    std::vector<std::string> joined = without_region2;
    joined.push_back("g2-9:3181");
    c.topology.location["g2-9:3181"] = "/region2/rack9";
    policy->update_topology(c.topology);
    auto back = policy->replace_bookie(spread, 2, 3, 2, joined, region2_lost);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, "g2-9:3181");
    // The 2+1 segment loses its region-1 copy: region 2's bookie (or region 1's) keeps two
    // regions, and the failed bookie's region is preferred.
    auto two = policy->replace_bookie(two_one, 2, 3, 2, c.bookies, {"g1-0:3181"});
    ASSERT_TRUE(two.ok()) << two.status().to_string();
    EXPECT_EQ(c.topology.region_of(*two), "region1");
    auto other = policy->replace_bookie(two_one, 2, 3, 2, {"g0-0:3181", "g0-1:3181", "g2-1:3181"},
                                        {"g1-0:3181"});
    ASSERT_TRUE(other.ok()) << other.status().to_string();
    EXPECT_EQ(*other, "g2-1:3181");
    c.topology.location.erase("g2-9:3181");
  }
}

}  // namespace
}  // namespace magnetar::ledger
