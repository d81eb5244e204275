#include "common/ids.h"

#include <gtest/gtest.h>

#include <sstream>
#include <type_traits>

namespace magnetar {
namespace {

// What the types exist for: neither id converts to the other or from a bare integer, so a
// call with (entry, ledger) instead of (ledger, entry) does not compile.
static_assert(!std::is_convertible_v<LedgerId, EntryId>);
static_assert(!std::is_convertible_v<EntryId, LedgerId>);
static_assert(!std::is_convertible_v<int64_t, LedgerId>);
static_assert(!std::is_convertible_v<int64_t, EntryId>);
static_assert(!std::is_convertible_v<LedgerId, int64_t>);
static_assert(!std::is_constructible_v<LedgerId, EntryId>);
static_assert(std::is_trivially_copyable_v<LedgerId> && sizeof(LedgerId) == sizeof(int64_t));

template <typename T>
concept Counts = requires(T id) {
  id.next();
};
static_assert(Counts<EntryId>);
static_assert(!Counts<LedgerId>, "ledger ids are names, not counters");

void takes_pair(LedgerId, EntryId) {}
template <typename A, typename B>
concept PairCall = requires(A a, B b) {
  takes_pair(a, b);
};
static_assert(PairCall<LedgerId, EntryId>);
static_assert(!PairCall<EntryId, LedgerId>);

TEST(IdsTest, DefaultIsNoneAndOrderFollowsTheInteger) {
  EXPECT_EQ(LedgerId{}.value(), -1);
  EXPECT_FALSE(EntryId{}.valid());
  EXPECT_TRUE(EntryId{0}.valid());
  EXPECT_LT(EntryId{3}, EntryId{4});
  EXPECT_LT(LedgerId{-1}, LedgerId{0});
}

TEST(IdsTest, EntryIdsCount) {
  EntryId e{7};
  EXPECT_EQ(e.next(), EntryId{8});
  EXPECT_EQ(e.prev(), EntryId{6});
  EXPECT_EQ(e + 3, EntryId{10});
  EXPECT_EQ(EntryId{10} - e, 3);
  ++e;
  EXPECT_EQ(e.value(), 8);
}

TEST(IdsTest, FormatsAsTheInteger) {
  EXPECT_EQ(fmt::format("{}:{}", LedgerId{12}, EntryId{-1}), "12:-1");
  std::ostringstream out;
  out << LedgerId{5} << "/" << EntryId{6};
  EXPECT_EQ(out.str(), "5/6");
  EXPECT_EQ(std::hash<LedgerId>{}(LedgerId{9}), std::hash<int64_t>{}(9));
}

}  // namespace
}  // namespace magnetar
