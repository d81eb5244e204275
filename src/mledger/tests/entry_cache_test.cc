// Entry cache accounting and eviction.

#include "mledger/entry_cache.h"

#include <gtest/gtest.h>

namespace magnetar::mledger {
namespace {

Buffer bytes(size_t n) {
  return Buffer::copy_of(std::string(n, 'x'));
}

TEST(EntryCacheTest, InsertGetAndEvictBefore) {
  EntryCacheManager manager(1000);
  EntryCache cache(manager);
  for (int e = 0; e < 5; ++e) EXPECT_TRUE(cache.insert({1, e}, bytes(100), 0));
  EXPECT_EQ(manager.used_bytes(), 500);
  EXPECT_TRUE(cache.get({1, 3}).has_value());
  EXPECT_FALSE(cache.get({1, 7}).has_value());
  cache.evict_before({1, 3});
  EXPECT_FALSE(cache.get({1, 2}).has_value());
  EXPECT_EQ(cache.count(), 2u);
  EXPECT_EQ(manager.used_bytes(), 200);
}

TEST(EntryCacheTest, BudgetSharedAndRefused) {
  EntryCacheManager manager(250);
  EntryCache a(manager), b(manager);
  EXPECT_TRUE(a.insert({1, 0}, bytes(100), 0));
  EXPECT_TRUE(b.insert({2, 0}, bytes(100), 0));
  EXPECT_FALSE(a.insert({1, 1}, bytes(100), 0));  // would exceed 250
  EXPECT_EQ(manager.used_bytes(), 200);
  EXPECT_EQ(manager.excess_bytes(), 0);  // watermark 0.9 * 250 = 225
  b.clear();
  EXPECT_EQ(manager.used_bytes(), 100);
}

TEST(EntryCacheTest, TimeAndSizeEviction) {
  EntryCacheManager manager(10000);
  EntryCache cache(manager);
  for (int e = 0; e < 10; ++e) cache.insert({1, e}, bytes(10), e * 100);
  cache.evict_older_than(500);
  EXPECT_EQ(cache.count(), 5u);
  EXPECT_EQ(cache.evict_bytes(25), 30);
  EXPECT_EQ(cache.count(), 2u);
  EXPECT_FALSE(cache.insert({1, 3}, bytes(10), 0));  // out of order
}

TEST(EntryCacheTest, DisabledWithZeroBudget) {
  EntryCacheManager manager(0);
  EntryCache cache(manager);
  EXPECT_FALSE(cache.insert({1, 0}, bytes(1), 0));
}

}  // namespace
}  // namespace magnetar::mledger
