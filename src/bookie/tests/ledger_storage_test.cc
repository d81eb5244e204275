#include "bookie/storage/ledger_storage.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bookie/storage/entry_log.h"
#include "common/metrics.h"
#include "testing/ids.h"

namespace magnetar::bookie {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using magnetar::testing::E;
using magnetar::testing::L;

// Deterministic entry bytes, different for every (ledger, entry).
Buffer make_entry(int64_t ledger, int64_t entry, size_t size = 100) {
  std::string s = fmt::format("ledger={} entry={};", ledger, entry);
  while (s.size() < size) s.push_back(static_cast<char>('a' + (s.size() + entry) % 26));
  s.resize(size);
  return Buffer::copy_of(s);
}

class LedgerStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            fmt::format("magnetar-storage-{}-{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  LedgerStorageOptions options() const {
    LedgerStorageOptions o;
    o.dir = dir_;
    o.write_cache_bytes = 1 << 20;
    o.entry_log_max_size = 1 << 20;
    o.max_throttle = 5000ms;
    return o;
  }

  // A 2 KiB write cache (halves of 1 KiB: three 300-byte entries fill one) that only an
  // explicit flush() empties; a full half throttles adds for `throttle`.
  LedgerStorageOptions small_cache(std::chrono::milliseconds throttle) const {
    LedgerStorageOptions o = options();
    o.write_cache_bytes = 2048;
    o.max_throttle = throttle;
    o.flush_when_full = false;
    return o;
  }

  std::unique_ptr<LedgerStorage> open(const LedgerStorageOptions& o, Env& env = posix_env()) {
    auto r = LedgerStorage::open(o, env);
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return r.ok() ? std::move(r).value() : nullptr;
  }

  std::vector<std::string> log_files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_ + "/current")) {
      if (parse_entry_log_file_name(e.path().filename().string())) {
        names.push_back(e.path().filename().string());
      }
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  static void add_range(LedgerStorage& s, int64_t ledger, int64_t first, int64_t last,
                        size_t size = 100) {
    for (int64_t e = first; e <= last; ++e) {
      ASSERT_TRUE(s.add_entry(L(ledger), E(e), make_entry(ledger, e, size), E(e - 1)).ok());
    }
  }

  static void expect_range(const LedgerStorage& s, int64_t ledger, int64_t first, int64_t last,
                           size_t size = 100) {
    for (int64_t e = first; e <= last; ++e) {
      auto r = s.read_entry(L(ledger), E(e));
      ASSERT_TRUE(r.ok()) << "entry " << e << ": " << r.status().to_string();
      EXPECT_EQ(*r, make_entry(ledger, e, size)) << "entry " << e;
    }
  }

  std::string dir_;
};

// The storage API takes typed ids: an add or read with the ledger and entry swapped does not
// compile.
template <typename Ledger, typename Entry>
concept CanAdd = requires(LedgerStorage& s, Ledger l, Entry e, Buffer b) {
  s.add_entry(l, e, b, e);
};
template <typename Ledger, typename Entry>
concept CanRead = requires(const LedgerStorage& s, Ledger l, Entry e) {
  s.read_entry(l, e);
};
static_assert(CanAdd<LedgerId, EntryId> && !CanAdd<EntryId, LedgerId> && !CanAdd<int64_t, int64_t>);
static_assert(CanRead<LedgerId, EntryId> && !CanRead<EntryId, LedgerId>);

TEST_F(LedgerStorageTest, RoundTripBeforeAndAfterFlushAndReopen) {
  auto s = open(options());
  ASSERT_TRUE(s->set_master_key(L(1), "key").ok());
  add_range(*s, 1, 0, 9);
  expect_range(*s, 1, 0, 9);  // from the write cache
  ASSERT_TRUE(s->flush().ok());
  expect_range(*s, 1, 0, 9);  // from the entry log
  add_range(*s, 1, 10, 14);   // never flushed
  expect_range(*s, 1, 0, 14);

  s.reset();
  s = open(options());
  expect_range(*s, 1, 0, 9);
  auto gone = s->read_entry(L(1), E(12));
  EXPECT_TRUE(gone.status().is(Errc::kNotFound));
  EXPECT_EQ(s->ledger_info(L(1))->last_entry_id, E(9));
  EXPECT_EQ(s->ledgers(), std::vector<LedgerId>{L(1)});

  // The journal replays what was lost; the restarted storage takes it in a new log.
  add_range(*s, 1, 10, 14);
  ASSERT_TRUE(s->flush().ok());
  expect_range(*s, 1, 0, 14);
  EXPECT_EQ(log_files().size(), 2u);
}

TEST_F(LedgerStorageTest, ReadOfMinusOneReturnsTheLastEntry) {
  auto s = open(options());
  for (int64_t e : {2, 0, 4, 1, 3})
    ASSERT_TRUE(s->add_entry(L(7), E(e), make_entry(7, e), E(-1)).ok());
  EXPECT_EQ(*s->read_entry(L(7), E(-1)), make_entry(7, 4));
  ASSERT_TRUE(s->flush().ok());
  EXPECT_EQ(*s->read_entry(L(7), E(-1)), make_entry(7, 4));
  s.reset();
  s = open(options());
  EXPECT_EQ(*s->read_entry(L(7), E(-1)), make_entry(7, 4));

  ASSERT_TRUE(s->set_master_key(L(8), "k").ok());
  auto empty = s->read_entry(L(8), E(-1));
  EXPECT_TRUE(empty.status().is(Errc::kNotFound));
}

TEST_F(LedgerStorageTest, NotFoundSaysWhetherLedgerOrEntry) {
  auto s = open(options());
  add_range(*s, 1, 0, 2);
  ASSERT_TRUE(s->flush().ok());
  auto no_ledger = s->read_entry(L(2), E(0));
  EXPECT_TRUE(no_ledger.status().is(Errc::kNotFound));
  EXPECT_NE(no_ledger.status().message().find("ledger 2 not found"), std::string::npos)
      << no_ledger.status().message();
  auto no_entry = s->read_entry(L(1), E(3));
  EXPECT_TRUE(no_entry.status().is(Errc::kNotFound));
  EXPECT_NE(no_entry.status().message().find("entry 3 of ledger 1"), std::string::npos)
      << no_entry.status().message();
  EXPECT_TRUE(s->ledger_info(L(2)).status().is(Errc::kNotFound));
}

TEST_F(LedgerStorageTest, MasterKeyMismatchIsPermissionDenied) {
  auto s = open(options());
  ASSERT_TRUE(s->set_master_key(L(3), "secret").ok());
  EXPECT_TRUE(s->set_master_key(L(3), "secret").ok());
  EXPECT_TRUE(s->set_master_key(L(3), "other").is(Errc::kPermissionDenied));
  ASSERT_TRUE(s->flush().ok());
  s.reset();
  s = open(options());
  EXPECT_EQ(s->ledger_info(L(3))->master_key, "secret");
  EXPECT_TRUE(s->set_master_key(L(3), "other").is(Errc::kPermissionDenied));
  EXPECT_TRUE(s->set_master_key(L(3), "secret").ok());
}

TEST_F(LedgerStorageTest, LedgerCreatedByAddTakesTheFirstKey) {
  auto s = open(options());
  add_range(*s, 4, 0, 0);  // journal replay can add before the key is known
  EXPECT_EQ(s->ledger_info(L(4))->master_key, "");
  EXPECT_TRUE(s->set_master_key(L(4), "k").ok());
  EXPECT_TRUE(s->set_master_key(L(4), "x").is(Errc::kPermissionDenied));
}

TEST_F(LedgerStorageTest, FencePersistsAcrossFlushAndReopen) {
  auto s = open(options());
  EXPECT_TRUE(s->set_fenced(L(5)).status().is(Errc::kNotFound));
  ASSERT_TRUE(s->set_master_key(L(5), "k").ok());
  EXPECT_EQ(*s->set_fenced(L(5)), true);
  EXPECT_EQ(*s->set_fenced(L(5)), false);
  EXPECT_TRUE(s->ledger_info(L(5))->fenced);
  ASSERT_TRUE(s->flush().ok());
  s.reset();
  s = open(options());
  EXPECT_TRUE(s->ledger_info(L(5))->fenced);
  EXPECT_EQ(*s->set_fenced(L(5)), false);
}

TEST_F(LedgerStorageTest, FenceAfterAFlushReachesTheNextOne) {
  auto s = open(options());
  add_range(*s, 5, 0, 3);
  ASSERT_TRUE(s->flush().ok());
  EXPECT_EQ(*s->set_fenced(L(5)), true);
  ASSERT_TRUE(s->flush().ok());  // nothing cached: only the ledger record changes
  s.reset();
  s = open(options());
  EXPECT_TRUE(s->ledger_info(L(5))->fenced);
  expect_range(*s, 5, 0, 3);
}

TEST_F(LedgerStorageTest, TracksLacAndLastEntryId) {
  auto s = open(options());
  ASSERT_TRUE(s->set_master_key(L(6), "k").ok());
  EXPECT_EQ(s->ledger_info(L(6))->lac, E(-1));
  EXPECT_EQ(s->ledger_info(L(6))->last_entry_id, E(-1));
  ASSERT_TRUE(s->add_entry(L(6), E(0), make_entry(6, 0), E(-1)).ok());
  ASSERT_TRUE(s->add_entry(L(6), E(1), make_entry(6, 1), E(0)).ok());
  ASSERT_TRUE(s->add_entry(L(6), E(3), make_entry(6, 3), E(2)).ok());
  ASSERT_TRUE(s->add_entry(L(6), E(2), make_entry(6, 2), E(1)).ok());  // out of order
  EXPECT_EQ(s->ledger_info(L(6))->lac, E(2));
  EXPECT_EQ(s->ledger_info(L(6))->last_entry_id, E(3));
  ASSERT_TRUE(s->flush().ok());
  ASSERT_TRUE(s->add_entry(L(6), E(4), make_entry(6, 4), E(3)).ok());  // not flushed
  EXPECT_EQ(s->ledger_info(L(6))->lac, E(3));
  s.reset();
  s = open(options());
  EXPECT_EQ(s->ledger_info(L(6))->lac, E(2));
  EXPECT_EQ(s->ledger_info(L(6))->last_entry_id, E(3));
}

TEST_F(LedgerStorageTest, AddIsIdempotent) {
  auto s = open(options());
  ASSERT_TRUE(s->add_entry(L(1), E(0), make_entry(1, 0), E(-1)).ok());
  ASSERT_TRUE(s->add_entry(L(1), E(0), Buffer::copy_of("different"), E(-1)).ok());
  EXPECT_EQ(*s->read_entry(L(1), E(0)), make_entry(1, 0));
  ASSERT_TRUE(s->flush().ok());
  const auto size_after_first = fs::file_size(dir_ + "/current/" + log_files().front());
  // Journal replay of an entry flushed already: nothing is written again.
  ASSERT_TRUE(s->add_entry(L(1), E(0), make_entry(1, 0), E(-1)).ok());
  ASSERT_TRUE(s->flush().ok());
  EXPECT_EQ(fs::file_size(dir_ + "/current/" + log_files().front()), size_after_first);
  EXPECT_EQ(*s->read_entry(L(1), E(0)), make_entry(1, 0));
}

// Two adds of the same entries at once (a replayed journal beside a live add, a client's
// retry): each entry is stored once, whether it is past the ledger's last entry (no cache
// look-up) or not.
TEST_F(LedgerStorageTest, ConcurrentDuplicateAddsStoreEachEntryOnce) {
  auto o = options();
  o.write_cache_bytes = 256 << 10;  // flushes run meanwhile
  auto s = open(o);
  auto added = [&] {
    const std::string text = metrics::default_registry().expose();
    const std::string key = "magnetar_bookie_storage_entries_added_total{dir=\"" + dir_ + "\"} ";
    const size_t at = text.find(key);
    EXPECT_NE(at, std::string::npos) << key;
    return at == std::string::npos ? 0.0 : std::stod(text.substr(at + key.size()));
  };
  add_range(*s, 3, 0, 0);  // the ledger exists: later appends take the look-up-free path
  const double before = added();
  constexpr int kEntries = 3000;
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] { add_range(*s, 3, 1, kEntries); });
  }
  for (auto& w : writers) w.join();
  EXPECT_EQ(added() - before, kEntries);
  expect_range(*s, 3, 0, kEntries);
  ASSERT_TRUE(s->flush().ok());
  s.reset();
  s = open(o);
  expect_range(*s, 3, 0, kEntries);
  EXPECT_EQ(s->ledger_info(L(3))->last_entry_id, E(kEntries));
}

TEST_F(LedgerStorageTest, ConcurrentAddsWhileFlushesRun) {
  auto o = options();
  o.write_cache_bytes = 64 << 10;  // small: the background flusher and throttling both run
  o.entry_log_max_size = 256 << 10;
  auto s = open(o);
  constexpr int kThreads = 4;
  constexpr int kEntries = 400;
  std::atomic<bool> done{false};
  std::thread flusher([&] {
    while (!done) {
      EXPECT_TRUE(s->flush().ok());
      std::this_thread::sleep_for(1ms);
    }
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int e = 0; e < kEntries; ++e) {
        // Two threads per ledger, interleaving entry ids.
        int64_t ledger = t / 2;
        int64_t entry = e * 2 + t % 2;
        Status st = s->add_entry(L(ledger), E(entry), make_entry(ledger, entry, 200), E(entry - 1));
        ASSERT_TRUE(st.ok()) << st.to_string();
        if (e % 50 == 0) {
          EXPECT_TRUE(s->read_entry(L(ledger), E(entry)).ok());
        }
      }
    });
  }
  for (auto& w : writers) w.join();
  done = true;
  flusher.join();
  for (int64_t ledger = 0; ledger < kThreads / 2; ++ledger) {
    expect_range(*s, ledger, 0, kEntries * 2 - 1, 200);
    EXPECT_EQ(s->ledger_info(L(ledger))->last_entry_id, E(kEntries * 2 - 1));
  }
  ASSERT_TRUE(s->flush().ok());
  s.reset();
  s = open(o);
  for (int64_t ledger = 0; ledger < kThreads / 2; ++ledger) {
    expect_range(*s, ledger, 0, kEntries * 2 - 1, 200);
  }
}

TEST_F(LedgerStorageTest, FlippedByteOnDiskIsCorruptionNotWrongData) {
  auto s = open(options());
  add_range(*s, 1, 0, 2);
  ASSERT_TRUE(s->flush().ok());
  ASSERT_EQ(log_files().size(), 1u);
  {
    // Records are sorted: entry 0 of ledger 1 comes first, right after the log header.
    std::fstream f(dir_ + "/current/" + log_files().front(),
                   std::ios::in | std::ios::out | std::ios::binary);
    const auto at =
        static_cast<std::streamoff>(kEntryLogHeaderSize + kEntryLogRecordHeaderSize + 5);
    f.seekg(at);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x20;
    f.seekp(at);
    f.write(&c, 1);
  }
  auto r = s->read_entry(L(1), E(0));
  EXPECT_TRUE(r.status().is(Errc::kCorruption)) << r.status().to_string();
  expect_range(*s, 1, 1, 2);  // its neighbours are intact
}

TEST_F(LedgerStorageTest, RotatesEntryLogsAtTheSizeLimit) {
  auto o = options();
  o.entry_log_max_size = 4096;
  auto s = open(o);
  add_range(*s, 1, 0, 59, 200);  // ~13.4 KiB of records
  ASSERT_TRUE(s->flush().ok());
  auto files = log_files();
  EXPECT_GE(files.size(), 4u);
  for (const auto& f : files) {
    EXPECT_LE(fs::file_size(dir_ + "/current/" + f), 4096u) << f;
  }
  expect_range(*s, 1, 0, 59, 200);
  s.reset();
  s = open(o);
  expect_range(*s, 1, 0, 59, 200);
}

TEST_F(LedgerStorageTest, GarbageCollectionDeletesLogsOfDeletedLedgers) {
  auto o = options();
  o.entry_log_max_size = 8192;
  auto s = open(o);
  add_range(*s, 1, 0, 99, 200);  // logs holding only ledger 1
  ASSERT_TRUE(s->flush().ok());
  add_range(*s, 2, 0, 9, 200);
  ASSERT_TRUE(s->flush().ok());
  const auto before = log_files();
  ASSERT_GE(before.size(), 3u);

  ASSERT_TRUE(s->delete_ledger(L(1)).ok());
  EXPECT_TRUE(s->read_entry(L(1), E(0)).status().is(Errc::kNotFound));
  auto reclaimed = s->garbage_collect();
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().to_string();
  EXPECT_GT(*reclaimed, 100u * 200u);
  const auto after = log_files();
  EXPECT_LT(after.size(), before.size());
  EXPECT_FALSE(fs::exists(dir_ + "/current/" + before.front()));
  expect_range(*s, 2, 0, 9, 200);
  EXPECT_EQ(s->ledgers(), std::vector<LedgerId>{L(2)});

  // Nothing left to collect; the state survives a restart.
  EXPECT_EQ(*s->garbage_collect(), 0u);
  s.reset();
  s = open(o);
  EXPECT_EQ(s->ledgers(), std::vector<LedgerId>{L(2)});
  expect_range(*s, 2, 0, 9, 200);
  EXPECT_EQ(*s->garbage_collect(), 0u);
}

TEST_F(LedgerStorageTest, CompactionKeepsLiveEntriesReadable) {
  auto o = options();
  o.entry_log_max_size = 64 << 10;
  o.compaction_threshold = 0.5;
  auto s = open(o);
  add_range(*s, 1, 0, 9, 500);   // live
  add_range(*s, 2, 0, 89, 500);  // to be deleted; same log as ledger 1
  ASSERT_TRUE(s->flush().ok());
  const auto first_log = log_files().front();
  add_range(*s, 3, 0, 39, 500);  // rolls to a second log, so the first is not current
  ASSERT_TRUE(s->flush().ok());
  ASSERT_GE(log_files().size(), 2u);

  ASSERT_TRUE(s->delete_ledger(L(2)).ok());
  auto reclaimed = s->garbage_collect();
  ASSERT_TRUE(reclaimed.ok()) << reclaimed.status().to_string();
  EXPECT_GT(*reclaimed, 80u * 500u);
  EXPECT_FALSE(fs::exists(dir_ + "/current/" + first_log));
  expect_range(*s, 1, 0, 9, 500);
  expect_range(*s, 3, 0, 39, 500);
  EXPECT_TRUE(s->read_entry(L(2), E(0)).status().is(Errc::kNotFound));

  s.reset();
  s = open(o);
  expect_range(*s, 1, 0, 9, 500);
  expect_range(*s, 3, 0, 39, 500);
  EXPECT_EQ(*s->garbage_collect(), 0u);
}

TEST_F(LedgerStorageTest, FullCacheThrottlesThenRejects) {
  auto s = open(small_cache(100ms));
  add_range(*s, 1, 0, 2, 300);
  auto start = std::chrono::steady_clock::now();
  Status st = s->add_entry(L(1), E(3), make_entry(1, 3, 300), E(2));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(st.is(Errc::kResourceExhausted)) << st.to_string();
  EXPECT_GE(waited, 90ms);
  EXPECT_TRUE(s->failure().ok());  // throttling is not a failure

  ASSERT_TRUE(s->flush().ok());
  EXPECT_TRUE(s->add_entry(L(1), E(3), make_entry(1, 3, 300), E(2)).ok());
  expect_range(*s, 1, 0, 3, 300);
}

TEST_F(LedgerStorageTest, TryAddNeverWaitsForRoomOrAnIndexRead) {
  auto s = open(small_cache(5000ms));
  for (int64_t e = 0; e <= 2; ++e) {
    auto r = s->try_add_entry(L(1), E(e), make_entry(1, e, 300), E(e - 1));
    ASSERT_TRUE(r.ok() && *r) << e;
  }
  // The half is full: add_entry() would wait up to max_throttle; try_add_entry() refuses.
  const auto start = std::chrono::steady_clock::now();
  auto full = s->try_add_entry(L(1), E(3), make_entry(1, 3, 300), E(2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);
  ASSERT_TRUE(full.ok()) << full.status().to_string();
  EXPECT_FALSE(*full);
  EXPECT_FALSE(s->read_entry(L(1), E(3)).ok()) << "a refused add stored nothing";
  // An entry already cached is stored already: no room needed.
  auto again = s->try_add_entry(L(1), E(1), make_entry(1, 1, 300), E(0));
  ASSERT_TRUE(again.ok() && *again);

  ASSERT_TRUE(s->flush().ok());
  auto room = s->try_add_entry(L(1), E(3), make_entry(1, 3, 300), E(2));
  ASSERT_TRUE(room.ok() && *room);
  // An entry at or below the ledger's durable end needs the index from disk: refused, and
  // add_entry() does it.
  auto flushed = s->try_add_entry(L(1), E(0), make_entry(1, 0, 300), E(-1));
  ASSERT_TRUE(flushed.ok());
  EXPECT_FALSE(*flushed);
  EXPECT_TRUE(s->add_entry(L(1), E(0), make_entry(1, 0, 300), E(-1)).ok());
  expect_range(*s, 1, 0, 3, 300);
  // Errors are errors, not refusals.
  EXPECT_TRUE(s->try_add_entry(L(1), E(-5), make_entry(1, 0, 10), E(-1))
                  .status()
                  .is(Errc::kInvalidArgument));
}

TEST_F(LedgerStorageTest, ThrottledAddProceedsWhenAFlushMakesRoom) {
  auto s = open(small_cache(5000ms));
  add_range(*s, 1, 0, 2, 300);
  std::thread flusher([&] {
    std::this_thread::sleep_for(50ms);
    EXPECT_TRUE(s->flush().ok());
  });
  EXPECT_TRUE(s->add_entry(L(1), E(3), make_entry(1, 3, 300), E(2)).ok());
  flusher.join();
  expect_range(*s, 1, 0, 3, 300);
}

TEST_F(LedgerStorageTest, BackgroundFlushWhenTheCacheFills) {
  auto o = options();
  o.write_cache_bytes = 8192;
  o.max_throttle = 5000ms;
  auto s = open(o);
  add_range(*s, 1, 0, 199, 300);  // ~64 KiB through an 8 KiB cache, no explicit flush
  expect_range(*s, 1, 0, 199, 300);
  EXPECT_FALSE(log_files().empty());
}

TEST_F(LedgerStorageTest, FailedSyncDuringFlushIsSticky) {
  FaultInjectionEnv env(posix_env());
  auto s = open(options(), env);
  add_range(*s, 1, 0, 4);
  ASSERT_TRUE(s->flush().ok());
  add_range(*s, 1, 5, 9);
  env.fail_sync = true;
  Status st = s->flush();
  EXPECT_TRUE(st.is(Errc::kIoError)) << st.to_string();
  env.fail_sync = false;
  EXPECT_TRUE(s->failure().is(Errc::kIoError));
  EXPECT_TRUE(s->add_entry(L(1), E(10), make_entry(1, 10), E(9)).is(Errc::kIoError));
  EXPECT_FALSE(s->flush().ok());
  EXPECT_FALSE(s->delete_ledger(L(1)).ok());
  EXPECT_FALSE(s->garbage_collect().ok());
  expect_range(*s, 1, 0, 9);  // reads go on, from disk and from the cache
}

// A flush writes its entry locations to the index in batches of 4 096; a crash after the
// first of them leaves the index naming entries that the ledger's durable state does not
// cover yet. The journal's replay (add_entry of every entry again) must then restore
// everything, and GC must not drop the new log those locations point into.
TEST_F(LedgerStorageTest, ACrashBetweenTheIndexBatchesOfAFlushLosesNothing) {
  auto o = options();
  o.write_cache_bytes = 64 << 20;
  o.entry_log_max_size = 64 << 20;
  o.flush_when_full = false;
  {
    auto s = open(o);
    add_range(*s, 1, 0, 9);
    add_range(*s, 1, 5000, 5999);  // the durable last entry id becomes 5999
    ASSERT_TRUE(s->flush().ok());
  }
  const auto logs_before = log_files();
  FaultInjectionEnv env(posix_env());
  {
    auto s = open(o, env);         // a new entry log for what follows
    add_range(*s, 1, 10, 4999);    // 4 990 entries: one batch of 4 096 locations, then the rest
    env.syncs_before_failure = 1;  // the entry-log sync before the first batch succeeds
    EXPECT_FALSE(s->flush().ok());
    env.syncs_before_failure = -1;
    env.fail_sync = false;
  }
  EXPECT_GT(log_files().size(), logs_before.size()) << "the failed flush wrote to a new log";
  auto s = open(o);
  ASSERT_TRUE(s->garbage_collect().ok());
  add_range(*s, 1, 10, 4999);  // the journal's replay
  ASSERT_TRUE(s->garbage_collect().ok());
  expect_range(*s, 1, 0, 5999);
  ASSERT_TRUE(s->flush().ok());
  ASSERT_TRUE(s->garbage_collect().ok());
  expect_range(*s, 1, 0, 5999);
  s.reset();
  s = open(o);
  ASSERT_TRUE(s->garbage_collect().ok());
  expect_range(*s, 1, 0, 5999);
}

TEST_F(LedgerStorageTest, DiskFullDuringFlushIsSticky) {
  FaultInjectionEnv env(posix_env());
  auto s = open(options(), env);
  add_range(*s, 1, 0, 4);
  env.disk_full = true;
  Status st = s->flush();
  EXPECT_TRUE(st.is(Errc::kResourceExhausted)) << st.to_string();
  env.disk_full = false;
  EXPECT_TRUE(s->failure().is(Errc::kResourceExhausted));
  EXPECT_FALSE(s->add_entry(L(1), E(5), make_entry(1, 5), E(4)).ok());
  expect_range(*s, 1, 0, 4);
}

TEST_F(LedgerStorageTest, ExportsMetrics) {
  auto s = open(options());
  add_range(*s, 1, 0, 2);
  ASSERT_TRUE(s->flush().ok());
  std::string text = metrics::default_registry().expose();
  for (const char* name :
       {"magnetar_bookie_storage_entries_added_total", "magnetar_bookie_storage_flush_latency_ms",
        "magnetar_bookie_storage_write_cache_bytes", "magnetar_bookie_storage_entry_log_bytes",
        "magnetar_bookie_storage_gc_reclaimed_bytes_total"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
}

TEST_F(LedgerStorageTest, RejectsBadOptionsAndIds) {
  auto o = options();
  o.entry_log_max_size = 8;
  EXPECT_TRUE(LedgerStorage::open(o).status().is(Errc::kInvalidArgument));
  auto s = open(options());
  EXPECT_TRUE(s->add_entry(L(-1), E(0), make_entry(0, 0), E(-1)).is(Errc::kInvalidArgument));
  EXPECT_TRUE(s->add_entry(L(1), E(-1), make_entry(0, 0), E(-1)).is(Errc::kInvalidArgument));
  EXPECT_TRUE(s->read_entry(L(1), E(-2)).status().is(Errc::kInvalidArgument));
}

// ---- entry log format ----

class LedgerStorageEntryLogTest : public LedgerStorageTest {};

TEST_F(LedgerStorageEntryLogTest, FileNames) {
  EXPECT_EQ(entry_log_file_name(0), "0.log");
  EXPECT_EQ(entry_log_file_name(0x1a), "1a.log");
  EXPECT_EQ(parse_entry_log_file_name("1a.log"), 0x1au);
  EXPECT_EQ(parse_entry_log_file_name("ffffffff.log"), 0xffffffffu);
  EXPECT_FALSE(parse_entry_log_file_name("01a.log"));
  EXPECT_FALSE(parse_entry_log_file_name("1A.log"));
  EXPECT_FALSE(parse_entry_log_file_name("100000000.log"));
  EXPECT_FALSE(parse_entry_log_file_name(".log"));
  EXPECT_FALSE(parse_entry_log_file_name("index"));
}

TEST_F(LedgerStorageEntryLogTest, WriteReadAndScan) {
  ASSERT_TRUE(posix_env().create_dirs(dir_).ok());
  const std::string path = dir_ + "/2.log";
  auto w = EntryLogWriter::create(posix_env(), path, 2, 1 << 16);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  std::vector<uint32_t> offsets;
  for (int e = 0; e < 5; ++e) {
    auto off = (*w)->add(9, e, make_entry(9, e, 10 + e).view());
    ASSERT_TRUE(off.ok());
    offsets.push_back(*off);
  }
  EXPECT_EQ(offsets.front(), kEntryLogHeaderSize);
  ASSERT_TRUE((*w)->sync().ok());
  EXPECT_EQ(fs::file_size(path), (*w)->size());

  auto r = EntryLogReader::open(posix_env(), path, 2);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*(*r)->read(offsets[3], 9, 3), make_entry(9, 3, 13));
  EXPECT_TRUE((*r)->read(offsets[3], 9, 4).status().is(Errc::kCorruption));  // wrong id
  EXPECT_TRUE((*r)->read(offsets[3] + 1, 9, 3).status().is(Errc::kCorruption));
  EXPECT_TRUE(EntryLogReader::open(posix_env(), path, 3).status().is(Errc::kCorruption));

  // A torn tail (a crash mid-write) ends the scan quietly.
  (void)(*w)->add(9, 5, std::string(100, 'x'));
  ASSERT_TRUE((*w)->sync().ok());
  fs::resize_file(path, fs::file_size(path) - 50);
  int seen = 0;
  ASSERT_TRUE((*r)->scan([&](uint32_t offset, int64_t ledger, int64_t entry, Buffer bytes) {
                    EXPECT_EQ(offset, offsets[seen]);
                    EXPECT_EQ(ledger, 9);
                    EXPECT_EQ(entry, seen);
                    EXPECT_EQ(bytes, make_entry(9, entry, 10 + entry));
                    ++seen;
                    return Status::OK();
                  })
                  .ok());
  EXPECT_EQ(seen, 5);
}

}  // namespace
}  // namespace magnetar::bookie
