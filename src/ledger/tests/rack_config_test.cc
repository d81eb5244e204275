// The /bookies rack document (rack_config.h): parsing, serializing, limits, the
// compare-and-set update; TopologyWatcher following the node; and real bookies placed by
// region from it (ledger metadata checked), including a placement that cannot be made.

#include "ledger/rack_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "common/gate.h"
#include "common/metrics.h"
#include "ledger/bookkeeper.h"
#include "ledger/tests/ledger_test_support.h"
#include "ledger/topology_watcher.h"
#include "testing/test_name.h"

namespace magnetar::ledger {
namespace {

using magnetar::testing::test_name;
using test::Cluster;

// --- the document -------------------------------------------------------------------------

TEST(RackConfigTest, ParsesPulsarsDocument) {
  auto parsed = RackConfiguration::parse(R"({
      "default": {"10.0.0.1:3181": {"rack": "/eu/r1", "hostname": "bk1"},
                  "10.0.0.2:3181": {"rack": "r2"}},
      "isolated": {"10.0.0.3:3181": {"rack": "/us/r1/", "hostname": null, "extra": 1}}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->bookie_count(), 3u);
  EXPECT_EQ(*parsed->find("10.0.0.1:3181"), (BookieRackInfo{"/eu/r1", "bk1"}));
  EXPECT_EQ(*parsed->find("10.0.0.2:3181"), (BookieRackInfo{"/r2", std::nullopt}));
  EXPECT_EQ(parsed->find("10.0.0.3:3181")->rack, "/us/r1");
  EXPECT_EQ(parsed->find("10.0.0.9:3181"), nullptr);
  const BookieTopology t = parsed->topology();
  EXPECT_EQ(t.region_of("10.0.0.1:3181"), "eu");
  EXPECT_EQ(t.region_of("10.0.0.3:3181"), "us");
  EXPECT_EQ(t.location_of("10.0.0.2:3181"), "/r2");

  EXPECT_TRUE(RackConfiguration::parse("")->empty());
  EXPECT_TRUE(RackConfiguration::parse(" \n")->empty());
  EXPECT_TRUE(RackConfiguration::parse("{}")->empty());
  EXPECT_TRUE(RackConfiguration::parse(R"({"g":{}})")->empty());  // empty groups dropped
}

TEST(RackConfigTest, SerializesAsPulsarWritesIt) {
  RackConfiguration c;
  ASSERT_TRUE(c.update("default", "b:3181", {"/eu/r1", "bk-b"}).ok());
  ASSERT_TRUE(c.update("default", "a:3181", {"r0", std::nullopt}).ok());
  ASSERT_TRUE(c.update("other", "c:3181", {"/us/r1", ""}).ok());
  EXPECT_EQ(c.serialize(),
            R"({"default":{"a:3181":{"rack":"/r0"},"b:3181":{"rack":"/eu/r1","hostname":"bk-b"}},)"
            R"("other":{"c:3181":{"rack":"/us/r1","hostname":""}}})");
  auto again = RackConfiguration::parse(c.serialize());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->serialize(), c.serialize());
  EXPECT_EQ(RackConfiguration().serialize(), "{}");
}

TEST(RackConfigTest, UpdateMovesBetweenGroupsAndRemoveDropsEmptyGroups) {
  RackConfiguration c;
  ASSERT_TRUE(c.update("g1", "a:1", {"/r1", std::nullopt}).ok());
  ASSERT_TRUE(c.update("g2", "a:1", {"/r2", std::nullopt}).ok());
  EXPECT_EQ(c.groups().size(), 1u);  // g1 went away with its only bookie
  EXPECT_EQ(c.groups().begin()->first, "g2");
  EXPECT_EQ(c.find("a:1")->rack, "/r2");
  EXPECT_TRUE(c.remove("a:1"));
  EXPECT_FALSE(c.remove("a:1"));
  EXPECT_TRUE(c.empty());
}

TEST(RackConfigTest, NormalizesRacks) {
  EXPECT_EQ(normalize_rack("rack1"), "/rack1");
  EXPECT_EQ(normalize_rack("/rack1"), "/rack1");
  EXPECT_EQ(normalize_rack("eu/r1"), "/eu/r1");
  EXPECT_EQ(normalize_rack("/eu/r1//"), "/eu/r1");
  EXPECT_EQ(normalize_rack("/"), "/");
  EXPECT_EQ(normalize_rack("///"), "/");
  EXPECT_EQ(normalize_rack(""), "");
}

TEST(RackConfigTest, RefusesWhatBreaksTheGrammarOrTheLimits) {
  const std::string long_name(kMaxRackFieldLength + 1, 'x');
  struct Case {
    std::string group, bookie;
    BookieRackInfo info;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"default", "b:1", {"/eu/r\x01", std::nullopt}, "control character"},
      {"default", "b:1", {"/eu/r1", std::string("h\n")}, "control character"},
      {"default", std::string("b\x7f:1"), {"/r1", std::nullopt}, "control character"},
      {std::string("g\t"), "b:1", {"/r1", std::nullopt}, "control character"},
      {"default", "b:1", {"/a/b/c", std::nullopt}, "more than two components"},
      {"default", "b:1", {"/a//c", std::nullopt}, "empty component"},
      {"default", "", {"/r1", std::nullopt}, "bookie id is empty"},
      {"", "b:1", {"/r1", std::nullopt}, "bookie group is empty"},
      {"default", "a/b:1", {"/r1", std::nullopt}, "has a '/'"},
      {"default", long_name, {"/r1", std::nullopt}, "longer than"},
      {"default", "b:1", {"/" + long_name, std::nullopt}, "longer than"},
      {"default", "b:1", {"/r1", long_name}, "longer than"},
  };
  for (const Case& k : cases) {
    RackConfiguration c;
    Status st = c.update(k.group, k.bookie, k.info);
    EXPECT_TRUE(st.is(Errc::kInvalidArgument)) << k.says;
    EXPECT_NE(st.message().find(k.says), std::string::npos) << st.message();
    EXPECT_TRUE(c.empty());
  }
  for (std::string_view bad :
       {"[]", "nope", R"({"g":[]})", R"({"g":{"b:1":"r"}})", R"({"g":{"b:1":{"rack":1}}})",
        R"({"g":{"b:1":{"rack":"/r\u0001"}}})", R"({"g":{"b:1":{"rack":"/r"}},"h":{"b:1":{}}})"}) {
    auto parsed = RackConfiguration::parse(bad);
    EXPECT_TRUE(parsed.status().is(Errc::kInvalidArgument)) << bad;
  }
}

TEST(RackConfigTest, BoundsTheNumberOfBookies) {
  RackConfiguration c;
  for (size_t i = 0; i < kMaxRackBookies; ++i) {
    ASSERT_TRUE(c.update("default", fmt::format("b{}:1", i), {"/r", std::nullopt}).ok());
  }
  EXPECT_TRUE(c.update("default", "one-more:1", {"/r", std::nullopt}).is(Errc::kInvalidArgument));
  EXPECT_TRUE(c.update("default", "b0:1", {"/r2", std::nullopt}).ok());  // a change is fine
  auto parsed = RackConfiguration::parse(c.serialize());
  ASSERT_TRUE(parsed.ok());
  nlohmann::json doc = nlohmann::json::parse(c.serialize());
  doc["default"]["one-more:1"] = {{"rack", "/r"}};
  EXPECT_TRUE(RackConfiguration::parse(doc.dump()).status().is(Errc::kInvalidArgument));
}

// --- in the store ---------------------------------------------------------------------------

TEST(RackConfigTest, UpdatesAreCompareAndSet) {
  Cluster c(test_name());
  auto& store = c.store();
  auto put = [&](std::string bookie, std::string rack) {
    return c.await(update_rack_configuration(store, [&](RackConfiguration& config) {
      return config.update("default", bookie, {rack, std::nullopt});
    }));
  };
  ASSERT_TRUE(put("a:1", "/r1").ok());  // creates /bookies
  // A writer that lost the race reads again: both changes survive.
  int rounds = 0;
  auto raced = c.await(update_rack_configuration(store, [&](RackConfiguration& config) {
    if (++rounds == 1) {
      // Someone else writes between this read and the write (on an event loop of its own).
      auto other = run_sync<Result<RackConfiguration>>([&store]() {
        return update_rack_configuration(store, [](RackConfiguration& x) {
          return x.update("default", "b:1", {"/r2", std::nullopt});
        });
      });
      EXPECT_TRUE(other.ok()) << other.status().to_string();
    }
    return config.update("default", "c:1", {"/r3", std::nullopt});
  }));
  ASSERT_TRUE(raced.ok()) << raced.status().to_string();
  EXPECT_EQ(rounds, 2);
  auto stored = c.await(load_rack_configuration(store));
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->config.bookie_count(), 3u);
  // A refusal writes nothing.
  auto refused = c.await(update_rack_configuration(store, [](RackConfiguration& config) {
    config.remove("a:1");
    return Status(Errc::kNotFound, "no");
  }));
  EXPECT_TRUE(refused.status().is(Errc::kNotFound));
  EXPECT_NE(c.await(load_rack_configuration(store))->config.find("a:1"), nullptr);
}

// --- following changes ------------------------------------------------------------------------

TEST(TopologyWatcherTest, FollowsCreationChangesAndDeletion) {
  Cluster c(test_name());
  Gate gate;
  std::vector<BookieTopology> seen;
  TopologyWatcher watcher(c.store(), c.executor(), gate,
                          [&](const BookieTopology& t) { seen.push_back(t); });
  ASSERT_TRUE(c.await(watcher.start()).ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen.back().location.empty());

  ASSERT_TRUE(c.await(set_bookie_location(c.store(), "a:1", "/eu/r1")).ok());
  ASSERT_TRUE(
      c.loop().run_until([&] { return seen.size() >= 2 && !seen.back().location.empty(); }));
  EXPECT_EQ(seen.back().location_of("a:1"), "/eu/r1");

  ASSERT_TRUE(c.await(set_bookie_location(c.store(), "a:1", "/us/r1")).ok());
  ASSERT_TRUE(c.loop().run_until([&] { return seen.back().location_of("a:1") == "/us/r1"; }));

  // A bad document keeps the last topology in force.
  const size_t before = seen.size();
  ASSERT_TRUE(c.await(c.store().put("/bookies", "{not json")).ok());
  c.loop().run_for(std::chrono::milliseconds(200));
  EXPECT_EQ(seen.size(), before);

  ASSERT_TRUE(c.await(c.store().remove("/bookies")).ok());
  ASSERT_TRUE(c.loop().run_until([&] { return seen.back().location.empty(); }));

  watcher.stop();
  gate.close();
  ASSERT_TRUE(c.loop().run_until([&] { return gate.count() == 0; }));
  const size_t after_stop = seen.size();
  ASSERT_TRUE(c.await(set_bookie_location(c.store(), "b:1", "/eu/r2")).ok());
  c.loop().run_for(std::chrono::milliseconds(100));
  EXPECT_EQ(seen.size(), after_stop);
}

// --- real bookies placed by region ----------------------------------------------------------

// The placement failures counted so far for `op`.
double placement_failures(const std::string& op) {
  const std::string text = metrics::default_registry().expose();
  std::smatch m;
  const std::regex line("magnetar_ledger_placement_failures_total\\{op=\"" + op +
                        "\"\\} ([0-9.e+]+)");
  if (!std::regex_search(text, m, line)) return 0;
  return std::stod(m[1]);
}

class RegionPlacementTest : public ::testing::Test {
 protected:
  RegionPlacementTest() : c_(test_name()) {
    for (int i = 0; i < 6; ++i) c_.add_bookie();
  }

  // Bookie i in region r<i/2>: three regions of two bookies.
  void spread_over_three_regions() {
    for (int i = 0; i < 6; ++i) {
      const std::string id = c_.bookies()[i]->id();
      ASSERT_TRUE(c_.await(set_bookie_location(c_.store(), id, fmt::format("/r{}/k{}", i / 2, i),
                                               "default", "host-" + std::to_string(i)))
                      .ok());
    }
  }

  std::set<std::string> regions_of(const std::vector<std::string>& ensemble,
                                   const BookieTopology& topology) {
    std::set<std::string> out;
    for (const auto& b : ensemble) out.insert(topology.region_of(b));
    return out;
  }

  Cluster c_;
};

TEST_F(RegionPlacementTest, EveryEnsembleSpansThreeRegionsOnceTheWatcherHasThem) {
  // The policy starts without racks (every bookie of unknown region): creation fails with
  // a clear error and is counted.
  auto policy =
      std::shared_ptr<PlacementPolicy>(make_region_aware_placement(BookieTopology{}, 2, true, 11));
  BookKeeperOptions options;
  options.placement = policy;
  BookKeeper bk(c_.store(), c_.executor(), options);
  const double failures_before = placement_failures("new_ensemble");
  auto refused = c_.await(bk.create(3, 3, 2, "pw"));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().is(Errc::kUnavailable));
  EXPECT_NE(refused.status().message().find("cannot create a ledger with E=3 Qw=3 Qa=2"),
            std::string::npos)
      << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("no region in /bookies"), std::string::npos)
      << refused.status().to_string();
  EXPECT_EQ(placement_failures("new_ensemble"), failures_before + 1);

  // The watcher hands /bookies to the policy on this loop; ensembles follow it.
  Gate gate;
  BookieTopology current;
  TopologyWatcher watcher(c_.store(), c_.executor(), gate, [&](const BookieTopology& t) {
    current = t;
    policy->update_topology(t);
  });
  ASSERT_TRUE(c_.await(watcher.start()).ok());
  spread_over_three_regions();
  ASSERT_TRUE(c_.loop().run_until([&] { return current.location.size() == 6; }));

  for (int i = 0; i < 10; ++i) {
    auto lh = c_.await(bk.create(3, 3, 2, "pw"));
    ASSERT_TRUE(lh.ok()) << lh.status().to_string();
    // Checked from the stored metadata, not from the handle.
    auto md = c_.await(bk.read_metadata((*lh)->id()));
    ASSERT_TRUE(md.ok()) << md.status().to_string();
    for (const Segment& segment : md->segments) {
      EXPECT_EQ(regions_of(segment.ensemble, current).size(), 3u);
    }
    auto added = c_.await((*lh)->add(BufferChain(Buffer::copy_of("entry"))));
    ASSERT_TRUE(added.ok()) << added.status().to_string();
    ASSERT_TRUE(c_.await((*lh)->close()).ok());
  }

  // Moving region r2's bookies into r0 leaves two regions: 3/3/2 can no longer make every
  // ack quorum span two regions, and creation says so.
  for (int i = 4; i < 6; ++i) {
    ASSERT_TRUE(
        c_.await(set_bookie_location(c_.store(), c_.bookies()[i]->id(), fmt::format("/r0/k{}", i)))
            .ok());
  }
  ASSERT_TRUE(
      c_.loop().run_until([&] { return current.region_of(c_.bookies()[5]->id()) == "r0"; }));
  auto two_regions = c_.await(bk.create(3, 3, 2, "pw"));
  ASSERT_FALSE(two_regions.ok());
  EXPECT_NE(two_regions.status().message().find("span 2 regions with bookies in 2 regions"),
            std::string::npos)
      << two_regions.status().to_string();

  watcher.stop();
  gate.close();
  ASSERT_TRUE(c_.loop().run_until([&] { return gate.count() == 0; }));
}

}  // namespace
}  // namespace magnetar::ledger
