// /admin/v2/bookies (admin/bookies.cc) against a whole BrokerServer, and the broker's ledger
// placement following the racks set there: region-aware brokers over three regions of two
// bookies, every ensemble checked from the ledger metadata in the store.

#include <fmt/format.h>

#include <regex>
#include <thread>

#include "broker/tests/broker_routes_fixture.h"
#include "ledger/bookkeeper.h"

namespace magnetar::broker::routes_test {
namespace {

const std::string kRacks = "/admin/v2/bookies/racks-info";

std::string body(const std::string& rack, const std::string& hostname) {
  return Json{{"rack", rack}, {"hostname", hostname}}.dump();
}

const std::string kRackShapeReason =
    "Bookie 'rack' parameter is invalid, When `RackawareEnsemblePlacementPolicy` is enabled, the "
    "rack name is not allowed to contain slash (`/`) except for the beginning and end of the "
    "rack name string. When `RegionawareEnsemblePlacementPolicy` is enabled, the rack name can "
    "only contain one slash (`/`) except for the beginning and end of the rack name string.";

// A broker with Pulsar's default placement keys (rack-aware).
using BookiesRoutesTest = BrokerRoutesTest;

TEST_F(BookiesRoutesTest, ListsTheRegisteredBookies) {
  Reply r = get("/admin/v2/bookies/all");
  ASSERT_EQ(r.status, 200) << r;
  const std::string id = cluster_.bookies().front()->id();
  EXPECT_EQ(r.json(), (Json{{"bookies", Json::array({Json{{"bookieId", id}}})}}));
}

TEST_F(BookiesRoutesTest, SetsGetsAndDeletesRacksAsPulsarDoes) {
  const std::string b0 = "127.0.0.1:3181";
  const std::string b1 = "127.0.0.2:3181";
  Reply empty = get(kRacks);
  ASSERT_EQ(empty.status, 200) << empty;
  EXPECT_EQ(empty.json(), Json::object());

  Reply missing = get(kRacks + "/" + b0);
  EXPECT_EQ(missing.status, 404) << missing;
  EXPECT_EQ(missing.reason(), "Bookie rack placement configuration not found: " + b0);
  Reply missing_delete = del(kRacks + "/" + b0);
  EXPECT_EQ(missing_delete.status, 404) << missing_delete;
  EXPECT_EQ(missing_delete.reason(), "Bookie rack placement configuration not found: " + b0);

  Reply no_group = post(kRacks + "/" + b0, body("/rack1", "127.0.0.1"));
  EXPECT_EQ(no_group.status, 412) << no_group;
  EXPECT_EQ(no_group.reason(), "Bookie 'group' parameters is missing");

  // Rack-aware: "/rack" only.
  Reply deep = post(kRacks + "/" + b0 + "?group=default", body("/rack/a", "127.0.0.2"));
  EXPECT_EQ(deep.status, 412) << deep;
  EXPECT_EQ(deep.reason(), kRackShapeReason);

  ASSERT_EQ(post(kRacks + "/" + b0 + "?group=default", body("/rack1", "127.0.0.1")).status, 204);
  Reply one = get(kRacks + "/" + b0);
  ASSERT_EQ(one.status, 200) << one;
  EXPECT_EQ(one.json(), (Json{{"rack", "/rack1"}, {"hostname", "127.0.0.1"}}));
  // A rack without its leading '/' is stored as the policy reads it.
  ASSERT_EQ(post(kRacks + "/" + b1 + "?group=default", body("rack2", "127.0.0.2")).status, 204);
  EXPECT_EQ(get(kRacks + "/" + b1).json()["rack"], "/rack2");
  Reply all = get(kRacks);
  ASSERT_EQ(all.status, 200) << all;
  EXPECT_EQ(all.json(), (Json{{"default",
                               {{b0, {{"rack", "/rack1"}, {"hostname", "127.0.0.1"}}},
                                {b1, {{"rack", "/rack2"}, {"hostname", "127.0.0.2"}}}}}}));

  // Moving to another group takes the bookie out of the first one.
  ASSERT_EQ(post(kRacks + "/" + b1 + "?group=other", R"({"rack":"/rack3"})").status, 204);
  EXPECT_EQ(get(kRacks).json(),
            (Json{{"default", {{b0, {{"rack", "/rack1"}, {"hostname", "127.0.0.1"}}}}},
                  {"other", {{b1, {{"rack", "/rack3"}}}}}}));

  // Stored as Pulsar lays it out.
  auto node = cluster_.await(store_->get("/bookies"));
  ASSERT_TRUE(node.ok() && node->has_value());
  EXPECT_EQ(Json::parse((*node)->value)["other"][b1]["rack"], "/rack3");

  EXPECT_EQ(del(kRacks + "/" + b0).status, 204);
  EXPECT_EQ(get(kRacks + "/" + b0).status, 404);
  EXPECT_EQ(get(kRacks + "/" + b1).status, 200);
  EXPECT_EQ(del(kRacks + "/" + b1).status, 204);
  EXPECT_EQ(get(kRacks).json(), Json::object());
}

TEST_F(BookiesRoutesTest, RefusesBadRacksBodiesAndPaths) {
  const std::string b0 = kRacks + "/127.0.0.1:3181?group=default";
  Reply control = post(b0, body("/rack\x01", "h"));
  EXPECT_EQ(control.status, 412) << control;
  // Named by its field, the character shown escaped.
  EXPECT_NE(control.reason().find("rack of bookie '127.0.0.1:3181' '/rack\\x01' has a control "
                                  "character"),
            std::string::npos)
      << control;
  Reply long_host = post(b0, body("/rack", std::string(300, 'h')));
  EXPECT_EQ(long_host.status, 412) << long_host;
  EXPECT_ERROR(post(b0, "[1]"), 400);
  EXPECT_ERROR(post(b0, "{nope"), 400);
  EXPECT_ERROR(post(b0, R"({"rack":7})"), 400);
  EXPECT_EQ(get(kRacks).json(), Json::object());  // nothing was written
  EXPECT_ERROR(get("/admin/v2/bookies/"), 404);
  EXPECT_ERROR(get("/admin/v2/bookies/racks-info//x"), 404);
}

// --- region-aware brokers ---------------------------------------------------------------------

// Six bookies; the broker places ledgers E=3 Qw=3 Qa=2 region-aware, each ack quorum in two
// regions.
class RegionAwareBrokerTest : public BrokerRoutesTest {
 protected:
  RegionAwareBrokerTest() {
    for (int i = 0; i < 5; ++i) cluster_.add_bookie();
  }

  void configure(BrokerConfig& c) override {
    c.bookkeeper_client_regionaware_policy_enabled = true;
    c.repp_minimum_regions_for_durability = 2;
    c.managed_ledger.ensemble_size = 3;
    c.managed_ledger.write_quorum = 3;
    c.managed_ledger.ack_quorum = 2;
  }

  // Bookie i on rack "/<region of i>/k<i>" through the admin API.
  void place(const std::function<std::string(int)>& region_of) {
    for (int i = 0; i < 6; ++i) {
      const std::string id = cluster_.bookies()[i]->id();
      Reply r = post(kRacks + "/" + id + "?group=default",
                     body(fmt::format("/{}/k{}", region_of(i), i), "host" + std::to_string(i)));
      ASSERT_EQ(r.status, 204) << r;
    }
  }

  // The topology as the admin API reports it.
  ledger::BookieTopology topology() {
    ledger::BookieTopology t;
    const Json racks = get(kRacks).json();
    for (const auto& [group, bookies] : racks.items()) {
      for (const auto& [bookie, info] : bookies.items()) {
        t.location[bookie] = info.at("rack").get<std::string>();
      }
    }
    return t;
  }

  // Creates a producer on `topic` and sends `n` messages; false when the producer failed.
  bool produce_on(const std::string& topic, int n, std::string* failure = nullptr) {
    auto c = client();
    if (!c) return false;
    auto p = c->create_producer("persistent://public/default/" + topic, 1);
    if (!p.ok()) {
      if (failure) *failure = p.status().to_string();
      return false;
    }
    for (int i = 0; i < n; ++i) {
      auto r = c->send_message(1, static_cast<uint64_t>(i), "m-" + std::to_string(i));
      if (!r.ok()) {
        if (failure) *failure = r.status().to_string();
        return false;
      }
    }
    return true;
  }

  // Every ledger in the store, with its ensembles.
  std::vector<ledger::LedgerMetadata> ledgers() {
    ledger::BookKeeper bk(cluster_.store(), cluster_.executor());
    auto ids = cluster_.await(bk.list_ledgers());
    EXPECT_TRUE(ids.ok()) << ids.status().to_string();
    std::vector<ledger::LedgerMetadata> out;
    for (LedgerId id : ids.ok() ? *ids : std::vector<LedgerId>{}) {
      auto md = cluster_.await(bk.read_metadata(id));
      EXPECT_TRUE(md.ok()) << md.status().to_string();
      if (md.ok()) out.push_back(std::move(md).value());
    }
    return out;
  }

  double placement_failures() {
    Reply r = get("/metrics");
    std::smatch m;
    const std::regex line(
        R"re(magnetar_ledger_placement_failures_total\{op="new_ensemble"\} ([0-9.e+]+))re");
    if (!std::regex_search(r.body, m, line)) return 0;
    return std::stod(m[1]);
  }
};

TEST_F(RegionAwareBrokerTest, RackShapeMustBeRegionAndRack) {
  const std::string b0 = kRacks + "/127.0.0.1:3181?group=default";
  for (const char* bad : {"/rack", "/region/rack/a", "rack"}) {
    Reply r = post(b0, body(bad, "h"));
    EXPECT_EQ(r.status, 412) << bad << ": " << r;
    EXPECT_EQ(r.reason(), kRackShapeReason);
  }
  EXPECT_EQ(post(b0, body("/region/rack/", "h")).status, 204);
  EXPECT_EQ(get(kRacks + "/127.0.0.1:3181").json()["rack"], "/region/rack");
}

TEST_F(RegionAwareBrokerTest, EveryLedgerSpansThreeRegionsOnceTheRacksAreSet) {
  // No racks yet: no region known, so no ledger, and a clear error instead of a one-region
  // placement.
  const double failed_before = placement_failures();
  std::string failure;
  EXPECT_FALSE(produce_on("before-racks", 1, &failure));
  EXPECT_NE(failure.find("no region in /bookies"), std::string::npos) << failure;
  EXPECT_GT(placement_failures(), failed_before);
  EXPECT_TRUE(ledgers().empty());

  // Racks set through the admin API: the running broker follows them.
  place([](int i) { return fmt::format("region{}", i / 2); });
  bool produced = false;
  for (int attempt = 0; attempt < 100 && !produced; ++attempt) {
    produced = produce_on("geo-" + std::to_string(attempt), 5, &failure);
    if (!produced) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(produced) << failure;
  for (int t = 0; t < 4; ++t)
    ASSERT_TRUE(produce_on("more-" + std::to_string(t), 5, &failure)) << failure;

  const ledger::BookieTopology t = topology();
  const auto all = ledgers();
  ASSERT_GE(all.size(), 5u);
  for (const ledger::LedgerMetadata& md : all) {
    EXPECT_EQ(md.ensemble_size, 3);
    for (const ledger::Segment& segment : md.segments) {
      std::set<std::string> regions;
      for (const std::string& b : segment.ensemble) regions.insert(t.region_of(b));
      EXPECT_EQ(regions.size(), 3u) << "ledger " << md.ledger_id;
    }
  }
}

// With acknowledgements that must span two regions (bookkeeper_enforceMinNumFaultDomainsForWrite,
// the default) two regions hold 3/3/2: 2+1, every write set in both.
TEST_F(RegionAwareBrokerTest, TwoRegionsHoldThreeTwoTwoWhenTheAcknowledgementsSpanThem) {
  place([](int i) { return i < 3 ? std::string("east") : std::string("west"); });
  std::string failure;
  bool produced = false;
  for (int attempt = 0; attempt < 100 && !produced; ++attempt) {
    produced = produce_on("two-regions-" + std::to_string(attempt), 3, &failure);
    if (!produced) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(produced) << failure;
  const ledger::BookieTopology t = topology();
  const auto all = ledgers();
  ASSERT_FALSE(all.empty());
  for (const ledger::LedgerMetadata& md : all) {
    for (const ledger::Segment& segment : md.segments) {
      std::set<std::string> regions;
      for (const std::string& b : segment.ensemble) regions.insert(t.region_of(b));
      EXPECT_EQ(regions, (std::set<std::string>{"east", "west"})) << "ledger " << md.ledger_id;
    }
  }
}

// BookKeeper's default (acknowledgements not checked): every two acknowledgements of a write set
// must span two regions by placement alone, which two regions cannot do for 3/3/2.
class StrictRegionAwareBrokerTest : public RegionAwareBrokerTest {
 protected:
  void configure(BrokerConfig& c) override {
    RegionAwareBrokerTest::configure(c);
    c.enforce_min_num_fault_domains_for_write = false;
  }
};

TEST_F(StrictRegionAwareBrokerTest, TwoRegionsCannotHoldThreeTwoTwoAndTheErrorSaysSo) {
  place([](int i) { return i < 3 ? std::string("east") : std::string("west"); });
  // Let the broker see these racks: a third region for bookie 5 comes later.
  std::string failure;
  bool produced = false;
  const double failed_before = placement_failures();
  for (int attempt = 0; attempt < 20; ++attempt) {
    produced = produce_on("two-regions-" + std::to_string(attempt), 1, &failure);
    if (produced) break;
    if (failure.find("span 2 regions with bookies in 2 regions") != std::string::npos) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_FALSE(produced);
  EXPECT_NE(failure.find("span 2 regions with bookies in 2 regions"), std::string::npos) << failure;
  EXPECT_GT(placement_failures(), failed_before);
  EXPECT_TRUE(ledgers().empty());  // never placed in fewer regions

  // Bookie 5 moves to a third region: the same broker now places.
  ASSERT_EQ(post(kRacks + "/" + cluster_.bookies()[5]->id() + "?group=default",
                 body("/south/k5", "host5"))
                .status,
            204);
  for (int attempt = 0; attempt < 100 && !produced; ++attempt) {
    produced = produce_on("three-regions-" + std::to_string(attempt), 2, &failure);
    if (!produced) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(produced) << failure;
}

class RegionsToWriteTest : public RegionAwareBrokerTest {
 protected:
  void configure(BrokerConfig& c) override {
    RegionAwareBrokerTest::configure(c);
    c.repp_regions_to_write = "r1;r2;r3";
  }
};

TEST_F(RegionsToWriteTest, ARegionOutsideReppRegionsToWriteIsRefused) {
  const std::string b0 = kRacks + "/127.0.0.1:3181?group=default";
  Reply r = post(b0, body("/r9/k1", "h"));
  EXPECT_EQ(r.status, 412) << r;
  EXPECT_NE(r.reason().find("reppRegionsToWrite"), std::string::npos) << r;
  EXPECT_EQ(post(b0, body("/r2/k1", "h")).status, 204);
}

}  // namespace
}  // namespace magnetar::broker::routes_test
