// Entry cache accounting and eviction.

#include "mledger/entry_cache.h"

#include <gtest/gtest.h>

#include "testing/ids.h"

namespace magnetar::mledger {
namespace {

using magnetar::testing::E;
using magnetar::testing::L;

Buffer bytes(size_t n) {
  return Buffer::copy_of(std::string(n, 'x'));
}

TEST(EntryCacheTest, InsertGetAndEvictBefore) {
  EntryCacheManager manager(1000);
  EntryCache cache(manager);
  for (int e = 0; e < 5; ++e) EXPECT_TRUE(cache.insert({L(1), E(e)}, bytes(100), 0));
  EXPECT_EQ(manager.used_bytes(), 500);
  EXPECT_TRUE(cache.get({L(1), E(3)}).has_value());
  EXPECT_FALSE(cache.get({L(1), E(7)}).has_value());
  cache.evict_before({L(1), E(3)});
  EXPECT_FALSE(cache.get({L(1), E(2)}).has_value());
  EXPECT_EQ(cache.count(), 2u);
  EXPECT_EQ(manager.used_bytes(), 200);
}

TEST(EntryCacheTest, BudgetSharedAndRefused) {
  EntryCacheManager manager(250);
  EntryCache a(manager), b(manager);
  EXPECT_TRUE(a.insert({L(1), E(0)}, bytes(100), 0));
  EXPECT_TRUE(b.insert({L(2), E(0)}, bytes(100), 0));
  EXPECT_FALSE(a.insert({L(1), E(1)}, bytes(100), 0));  // would exceed 250
  EXPECT_EQ(manager.used_bytes(), 200);
  EXPECT_EQ(manager.excess_bytes(), 0);  // watermark 0.9 * 250 = 225
  b.clear();
  EXPECT_EQ(manager.used_bytes(), 100);
}

TEST(EntryCacheTest, TimeAndSizeEviction) {
  EntryCacheManager manager(10000);
  EntryCache cache(manager);
  for (int e = 0; e < 10; ++e) cache.insert({L(1), E(e)}, bytes(10), e * 100);
  cache.evict_older_than(500);
  EXPECT_EQ(cache.count(), 5u);
  EXPECT_EQ(cache.evict_bytes(25), 30);
  EXPECT_EQ(cache.count(), 2u);
  EXPECT_FALSE(cache.insert({L(1), E(3)}, bytes(10), 0));  // out of order
}

TEST(EntryCacheTest, DisabledWithZeroBudget) {
  EntryCacheManager manager(0);
  EntryCache cache(manager);
  EXPECT_FALSE(cache.insert({L(1), E(0)}, bytes(1), 0));
}

}  // namespace
}  // namespace magnetar::mledger
