// AckSet: the bitmap set of individually acknowledged positions.

#include "mledger/position.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "testing/ids.h"

namespace magnetar::mledger {
namespace {

using magnetar::testing::E;
using magnetar::testing::L;

// A position is (ledger, entry) in that order, as types: the other order does not compile.
template <typename A, typename B>
concept MakesPosition = requires(A a, B b) {
  Position{a, b};
};
static_assert(MakesPosition<LedgerId, EntryId>);
static_assert(!MakesPosition<EntryId, LedgerId>);
static_assert(!MakesPosition<int64_t, int64_t>);

TEST(PositionTest, OrderAndText) {
  EXPECT_LT((Position{L(1), E(5)}), (Position{L(2), E(0)}));
  EXPECT_LT((Position{L(2), E(-1)}), (Position{L(2), E(0)}));
  EXPECT_EQ((Position{L(3), E(7)}).to_string(), "3:7");
}

TEST(AckSetTest, InsertContainsAndRanges) {
  AckSet s;
  EXPECT_TRUE(s.insert({L(1), E(3)}));
  EXPECT_FALSE(s.insert({L(1), E(3)}));
  s.insert({L(1), E(4)});
  s.insert({L(1), E(5)});
  s.insert({L(1), E(70)});
  s.insert({L(2), E(0)});
  EXPECT_EQ(s.size(), 5);
  EXPECT_TRUE(s.contains({L(1), E(4)}));
  EXPECT_FALSE(s.contains({L(1), E(6)}));
  EXPECT_FALSE(s.contains({L(3), E(0)}));
  auto r = s.ranges(10);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].ledger_id.value(), 1);
  EXPECT_EQ(r[0].first, 3);
  EXPECT_EQ(r[0].last, 5);
  EXPECT_EQ(r[1].first, 70);
  EXPECT_EQ(r[1].last, 70);
  EXPECT_EQ(r[2].ledger_id.value(), 2);
  EXPECT_EQ(s.range_count(), 3);
  EXPECT_EQ(s.ranges(2).size(), 2u);
}

TEST(AckSetTest, FirstAbsentCrossesWords) {
  AckSet s;
  s.insert_range(L(7), 10, 200);
  EXPECT_EQ(s.first_absent(L(7), 10), 201);
  EXPECT_EQ(s.first_absent(L(7), 9), 9);
  EXPECT_EQ(s.first_absent(L(7), 150), 201);
  EXPECT_EQ(s.first_absent(L(8), 0), 0);
  s.insert_range(L(7), 201, 255);  // ends exactly at a word boundary
  EXPECT_EQ(s.first_absent(L(7), 10), 256);
}

TEST(AckSetTest, RemoveThroughDropsLowerPositions) {
  AckSet s;
  s.insert_range(L(1), 0, 9);
  s.insert_range(L(2), 5, 100);
  s.remove_through({L(2), E(50)});
  EXPECT_FALSE(s.contains({L(1), E(3)}));
  EXPECT_FALSE(s.contains({L(2), E(50)}));
  EXPECT_TRUE(s.contains({L(2), E(51)}));
  EXPECT_EQ(s.size(), 50);
  s.remove_through({L(3), E(-1)});
  EXPECT_TRUE(s.empty());
}

TEST(AckSetTest, CountWithinBounds) {
  AckSet s;
  for (int e = 0; e < 1000; e += 2) s.insert({L(4), E(e)});
  EXPECT_EQ(s.count(L(4), 0, 999), 500);
  EXPECT_EQ(s.count(L(4), 1, 1), 0);
  EXPECT_EQ(s.count(L(4), 100, 199), 50);
  EXPECT_EQ(s.count(L(5), 0, 10), 0);
}

// Against a std::set model, with random inserts and truncations.
TEST(AckSetTest, MatchesModel) {
  std::mt19937 rng(42);
  AckSet s;
  std::set<Position> model;
  for (int round = 0; round < 20000; ++round) {
    Position p{L(static_cast<int64_t>(rng() % 4)), E(static_cast<int64_t>(rng() % 500))};
    if (rng() % 50 == 0) {
      s.remove_through(p);
      model.erase(model.begin(), model.upper_bound(p));
    } else {
      EXPECT_EQ(s.insert(p), model.insert(p).second);
    }
  }
  EXPECT_EQ(s.size(), static_cast<int64_t>(model.size()));
  for (const Position& p : model) ASSERT_TRUE(s.contains(p));
  int64_t covered = 0;
  s.for_each_range([&](const AckSet::Range& r) {
    for (int64_t e = r.first; e <= r.last; ++e)
      EXPECT_TRUE(model.count(Position{r.ledger_id, E(e)}));
    covered += r.last - r.first + 1;
    return true;
  });
  EXPECT_EQ(covered, static_cast<int64_t>(model.size()));
}

TEST(AckSetTest, MillionHolesStayCompact) {
  AckSet s;
  for (int64_t e = 0; e < 2000000; e += 2) s.insert({L(9), E(e)});
  EXPECT_EQ(s.size(), 1000000);
  EXPECT_EQ(s.range_count(), 1000000);
  // One bit per entry of the span: 2,000,000 / 8 bytes, plus slack.
  EXPECT_LT(s.memory_bytes(), 300u * 1024);
}

}  // namespace
}  // namespace magnetar::mledger
