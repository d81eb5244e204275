#include "bookie/storage/write_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

namespace magnetar::bookie {
namespace {

std::string payload(int64_t ledger, int64_t entry, size_t size = 64) {
  std::string s = fmt::format("{}:{}:", ledger, entry);
  while (s.size() < size) s.push_back(static_cast<char>('a' + (s.size() + entry) % 26));
  s.resize(size);
  return s;
}

void put(WriteCache& c, int64_t ledger, int64_t entry, size_t size = 64) {
  std::string p = payload(ledger, entry, size);
  ASSERT_TRUE(c.insert(ledger, entry, p.data(), p.size(), entry - 1));
}

std::string read(const WriteCache& c, int64_t ledger, int64_t entry) {
  const WriteCache::Slot* s = c.find(ledger, entry);
  return s == nullptr ? "<missing>" : c.bytes(*s).to_string();
}

TEST(WriteCacheTest, FindsWhatWasInsertedAndTheFirstWriteWins) {
  WriteCache c;
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.find(1, 0), nullptr);
  put(c, 1, 0);
  put(c, 1, 1, 0);  // an empty entry
  EXPECT_FALSE(c.insert(1, 0, "other", 5, 7));
  EXPECT_EQ(read(c, 1, 0), payload(1, 0));
  EXPECT_EQ(read(c, 1, 1), "");
  EXPECT_EQ(c.find(1, 0)->lac, -1);
  EXPECT_EQ(c.find(2, 0), nullptr);
  EXPECT_EQ(c.bytes(), WriteCache::charge(64) + WriteCache::charge(0));
  EXPECT_FALSE(c.empty());
}

TEST(WriteCacheTest, ManyEntriesAcrossChunksAndTableGrowth) {
  WriteCache c;
  for (int64_t e = 0; e < 20000; ++e) put(c, e % 7, e, 100 + static_cast<size_t>(e % 300));
  for (int64_t e = 0; e < 20000; ++e) {
    ASSERT_EQ(read(c, e % 7, e), payload(e % 7, e, 100 + static_cast<size_t>(e % 300))) << e;
  }
  EXPECT_EQ(c.find(0, 1), nullptr);  // entry 1 belongs to ledger 1
}

TEST(WriteCacheTest, SortedIsByLedgerThenEntry) {
  WriteCache c;
  for (int64_t e : {5, 1, 3}) put(c, 2, e);
  for (int64_t e : {9, 0}) put(c, 1, e);
  put(c, -1, 4);  // negative ids sort first, as signed integers
  std::vector<std::pair<int64_t, int64_t>> got;
  for (const WriteCache::Slot* s : c.sorted()) {
    got.emplace_back(s->ledger_id, s->entry_id);
    EXPECT_EQ(c.view(*s), payload(s->ledger_id, s->entry_id));
  }
  std::vector<std::pair<int64_t, int64_t>> want = {{-1, 4}, {1, 0}, {1, 9}, {2, 1}, {2, 3}, {2, 5}};
  EXPECT_EQ(got, want);
}

TEST(WriteCacheTest, EraseLedgerReleasesItsBytesAndKeepsTheOthersFindable) {
  WriteCache c;
  for (int64_t e = 0; e < 3000; ++e) put(c, e % 3, e);
  const size_t before = c.bytes();
  EXPECT_EQ(c.erase_ledger(1), 1000 * WriteCache::charge(64));
  EXPECT_EQ(c.bytes(), before - 1000 * WriteCache::charge(64));
  EXPECT_EQ(c.erase_ledger(1), 0u);
  for (int64_t e = 0; e < 3000; ++e) {
    if (e % 3 == 1) {
      EXPECT_EQ(c.find(1, e), nullptr) << e;
    } else {
      ASSERT_EQ(read(c, e % 3, e), payload(e % 3, e)) << e;
    }
  }
  EXPECT_EQ(c.sorted().size(), 2000u);
  put(c, 1, 1);  // the ledger's entries can come back
  EXPECT_EQ(read(c, 1, 1), payload(1, 1));
  const size_t all = c.bytes();
  size_t released = c.erase_ledger(0);
  released += c.erase_ledger(1);
  released += c.erase_ledger(2);
  EXPECT_EQ(released, all);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_TRUE(c.sorted().empty());
}

TEST(WriteCacheTest, LargeEntriesGetChunksOfTheirOwn) {
  WriteCache c;
  put(c, 1, 0, 100);
  put(c, 1, 1, 3 << 20);
  put(c, 1, 2, 100);
  put(c, 1, 3, 5 << 20);
  for (int64_t e = 0; e < 4; ++e) {
    size_t size = e == 1 ? 3 << 20 : e == 3 ? 5 << 20 : 100;
    EXPECT_EQ(read(c, 1, e), payload(1, e, size)) << e;
  }
}

TEST(WriteCacheTest, AReadersSliceOutlivesClearAndLaterInserts) {
  WriteCache c;
  put(c, 1, 0);
  Buffer held = c.bytes(*c.find(1, 0));
  c.clear();
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.bytes(), 0u);
  EXPECT_EQ(c.find(1, 0), nullptr);
  // Enough new entries to fill more than the chunks the cache had: the held chunk must not
  // be among those reused.
  for (int64_t e = 0; e < 40000; ++e) put(c, 2, e);
  EXPECT_EQ(held.to_string(), payload(1, 0));
  for (int64_t e = 0; e < 40000; e += 997) ASSERT_EQ(read(c, 2, e), payload(2, e)) << e;
  // And a round that reuses the chunks (nothing held) stays correct.
  c.clear();
  for (int64_t e = 0; e < 40000; ++e) put(c, 3, e);
  for (int64_t e = 0; e < 40000; e += 997) ASSERT_EQ(read(c, 3, e), payload(3, e)) << e;
}

}  // namespace
}  // namespace magnetar::bookie
