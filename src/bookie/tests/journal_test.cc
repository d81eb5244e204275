#include "bookie/journal/journal.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/metrics.h"

namespace magnetar::bookie {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Counts callbacks down; wait() gives up after a generous deadline so a bug fails a test
// instead of hanging it.
class Latch {
 public:
  explicit Latch(size_t n) : left_(n) {}
  void count_down() {
    std::lock_guard lock(mu_);
    if (left_ > 0 && --left_ == 0) cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 20s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  size_t left_;
};

// A deterministic payload for (ledger, entry), `size` bytes.
Buffer payload_for(int64_t ledger, int64_t entry, size_t size) {
  std::string s(size, '\0');
  uint32_t x = static_cast<uint32_t>(ledger * 7919 + entry * 104729 + 1);
  for (auto& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 24);
  }
  return Buffer::copy_of(s);
}

JournalRecord record(int64_t ledger, int64_t entry, size_t size,
                     JournalRecordType type = JournalRecordType::kEntry) {
  return JournalRecord{type, LedgerId{ledger}, EntryId{entry}, payload_for(ledger, entry, size)};
}

struct Replayed {
  JournalRecord record;
  JournalPosition after;
};

// Wraps an Env and remembers, per file, how many bytes a successful sync covered (the file's
// size when the sync began), so tests can check that acked records were synced first. Syncs
// can be held: a test then knows a sync is in flight for as long as it wants.
class SyncTrackingEnv final : public Env {
 public:
  explicit SyncTrackingEnv(Env& base) : base_(base) {}

  // From now on every file sync() waits, before it starts, until release_syncs().
  void hold_syncs() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void release_syncs() {
    {
      std::lock_guard lock(mu_);
      held_ = false;
    }
    cv_.notify_all();
  }
  // Waits (bounded) until a sync() is waiting on the hold; false if none came.
  bool wait_for_held_sync() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 20s, [&] { return waiting_ > 0; });
  }

  uint64_t synced_size(const std::string& path) {
    std::lock_guard lock(mu_);
    auto it = synced_.find(path);
    return it == synced_.end() ? 0 : it->second;
  }

  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override {
    MAGNETAR_ASSIGN_OR_RETURN(auto f, base_.new_writable_file(path));
    return std::unique_ptr<WritableFile>(std::make_unique<File>(std::move(f), *this, path));
  }
  Result<std::unique_ptr<WritableFile>> reopen_writable_file(const std::string& path) override {
    MAGNETAR_ASSIGN_OR_RETURN(auto f, base_.reopen_writable_file(path));
    return std::unique_ptr<WritableFile>(std::make_unique<File>(std::move(f), *this, path));
  }
  Result<std::unique_ptr<RandomAccessFile>> open_file(const std::string& path) override {
    return base_.open_file(path);
  }
  Status create_dirs(const std::string& path) override { return base_.create_dirs(path); }
  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    return base_.list_dir(path);
  }
  Status remove_file(const std::string& path) override { return base_.remove_file(path); }
  Status rename(const std::string& from, const std::string& to) override {
    return base_.rename(from, to);
  }
  Status sync_dir(const std::string& path) override { return base_.sync_dir(path); }
  bool exists(const std::string& path) override { return base_.exists(path); }
  Result<DiskUsage> disk_usage(const std::string& path) override { return base_.disk_usage(path); }

 private:
  class File final : public WritableFile {
   public:
    File(std::unique_ptr<WritableFile> base, SyncTrackingEnv& env, std::string path)
        : base_(std::move(base)), env_(env), path_(std::move(path)) {}
    Status append(const void* data, size_t n) override { return base_->append(data, n); }
    Status sync() override {
      {
        std::unique_lock lock(env_.mu_);
        ++env_.waiting_;
        env_.cv_.notify_all();
        env_.cv_.wait(lock, [&] { return !env_.held_; });
        --env_.waiting_;
      }
      uint64_t covered = fs::file_size(path_);
      MAGNETAR_TRY(base_->sync());
      std::lock_guard lock(env_.mu_);
      auto& s = env_.synced_[path_];
      s = std::max(s, covered);
      return Status::OK();
    }
    Status preallocate(uint64_t size) override { return base_->preallocate(size); }
    Status zero_fill(uint64_t end) override { return base_->zero_fill(end); }
    uint64_t size() const override { return base_->size(); }
    Status close() override { return base_->close(); }

   private:
    std::unique_ptr<WritableFile> base_;
    SyncTrackingEnv& env_;
    std::string path_;
  };

  Env& base_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;  // guarded by mu_
  int waiting_ = 0;    // guarded by mu_: syncs waiting on the hold
  std::map<std::string, uint64_t> synced_;
};

// magnetar_bookie_journal_groups_total{journal=`dir`,reason=`reason`}: the groups the writer
// wrote for that reason (-1 when the series is missing).
int64_t groups_written(const std::string& dir, const std::string& reason) {
  const std::string text = metrics::default_registry().expose();
  const std::string series =
      "magnetar_bookie_journal_groups_total{journal=\"" + dir + "\",reason=\"" + reason + "\"} ";
  const size_t at = text.find(series);
  if (at == std::string::npos) return -1;
  return std::stoll(text.substr(at + series.size()));
}

class JournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("magnetar-journal-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    options_.dir = dir_;
    options_.max_group_wait = 1ms;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Journal> open(Env& env) {
    auto j = Journal::open(options_, env);
    EXPECT_TRUE(j.ok()) << j.status().to_string();
    return j.ok() ? std::move(*j) : nullptr;
  }

  std::vector<Replayed> replay(Env& env = posix_env(), JournalPosition* mark = nullptr) {
    std::vector<Replayed> out;
    auto r = Journal::replay(options_, env, [&](const JournalRecord& rec, JournalPosition after) {
      out.push_back({rec, after});
      return Status::OK();
    });
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    if (r.ok() && mark != nullptr) *mark = *r;
    return out;
  }

  // Appends `n` records of ledger `ledger` (entries first..first+n-1) one after another
  // without waiting, then waits for every callback; returns their statuses and positions.
  std::vector<std::pair<Status, JournalPosition>> append_and_wait(Journal& j, int64_t ledger,
                                                                  int64_t first, int n,
                                                                  size_t size = 100) {
    std::vector<std::pair<Status, JournalPosition>> results(n);
    Latch done(n);
    for (int i = 0; i < n; ++i) {
      j.append(record(ledger, first + i, size), [&, i](Status st, JournalPosition pos) {
        results[i] = {std::move(st), pos};
        done.count_down();
      });
    }
    EXPECT_TRUE(done.wait());
    return results;
  }

  std::vector<std::string> journal_files() {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir_ + "/current")) {
      if (e.path().extension() == ".txn") files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    return files;
  }

  std::string dir_;
  JournalOptions options_;
};

TEST_F(JournalTest, ConcurrentAppendsReplayInOrderByteExact) {
  constexpr int kThreads = 4, kPerThread = 250;
  std::mutex mu;
  std::map<std::pair<int64_t, int64_t>, JournalPosition> acked;
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    Latch done(kThreads * kPerThread);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          size_t size = static_cast<size_t>((i * 37 + t * 11) % 1500);  // includes empty payloads
          j->append(record(t, i, size), [&, t, i](Status st, JournalPosition pos) {
            EXPECT_TRUE(st.ok()) << st.to_string();
            std::lock_guard lock(mu);
            acked[{t, i}] = pos;
            done.count_down();
          });
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_TRUE(done.wait());
  }
  auto records = replay();
  ASSERT_EQ(records.size(), size_t{kThreads * kPerThread});
  std::vector<int64_t> next(kThreads, 0);
  JournalPosition prev;
  for (const auto& r : records) {
    int64_t t = r.record.ledger_id.value();
    ASSERT_GE(t, 0);
    ASSERT_LT(t, kThreads);
    EXPECT_EQ(r.record.entry_id.value(), next[t]++) << "each thread's records replay in its order";
    size_t size = static_cast<size_t>((r.record.entry_id.value() * 37 + t * 11) % 1500);
    EXPECT_EQ(r.record.payload, payload_for(t, r.record.entry_id.value(), size));
    EXPECT_EQ(r.record.type, JournalRecordType::kEntry);
    EXPECT_EQ(r.after, (acked[{t, r.record.entry_id.value()}])) << "replay position = acked position";
    EXPECT_LT(prev, r.after);
    prev = r.after;
  }
}

TEST_F(JournalTest, CallbacksRunOnlyAfterACoveringSyncNeverOnTheAppendersThread) {
  FaultInjectionEnv faults(posix_env());
  SyncTrackingEnv env(faults);
  auto j = open(env);
  ASSERT_TRUE(j);
  uint64_t syncs_at_open = faults.syncs;
  constexpr int kRecords = 300;
  std::atomic<int> uncovered{0}, wrong_thread{0}, failed{0};
  Latch done(kRecords);
  std::thread appender([&] {
    auto me = std::this_thread::get_id();
    for (int i = 0; i < kRecords; ++i) {
      j->append(record(1, i, 300), [&, me](Status st, JournalPosition pos) {
        if (!st.ok()) failed++;
        if (std::this_thread::get_id() == me) wrong_thread++;
        if (env.synced_size(journal_file_path(dir_, pos.file_id)) < pos.offset) uncovered++;
        if (faults.syncs <= syncs_at_open) uncovered++;
        done.count_down();
      });
      if (i % 50 == 0) std::this_thread::sleep_for(2ms);  // several groups
    }
  });
  appender.join();
  ASSERT_TRUE(done.wait());
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(uncovered, 0) << "a record was acked before a sync covered it";
  EXPECT_EQ(wrong_thread, 0);
  EXPECT_GE(j->last_durable().offset, 16u);
}

TEST_F(JournalTest, InlineAndHandedOffGroupsCompleteInAppendOrderAfterTheirSync) {
  // Small groups on an idle journal are synced by the writer itself; groups over 64 KiB go to
  // the sync thread. Mixed, every record still completes after a sync that covers it, in the
  // order it was appended.
  FaultInjectionEnv faults(posix_env());
  SyncTrackingEnv env(faults);
  auto j = open(env);
  ASSERT_TRUE(j);
  constexpr int kRecords = 400;
  std::mutex mu;
  std::vector<int> completed;
  std::atomic<int> uncovered{0}, failed{0};
  Latch done(kRecords);
  for (int i = 0; i < kRecords; ++i) {
    const size_t size = i % 7 == 3 ? 80 * 1024 : 200;
    j->append(record(1, i, size), [&, i](Status st, JournalPosition pos) {
      if (!st.ok()) failed++;
      if (env.synced_size(journal_file_path(dir_, pos.file_id)) < pos.offset) uncovered++;
      std::lock_guard lock(mu);
      completed.push_back(i);
      done.count_down();
    });
    if (i % 13 == 0) std::this_thread::sleep_for(1ms);  // let the journal go idle now and then
  }
  ASSERT_TRUE(done.wait());
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(uncovered, 0) << "a record was acked before a sync covered it";
  std::vector<int> expected(kRecords);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(completed, expected);
}

TEST_F(JournalTest, GroupCommitNeedsFarFewerSyncsThanRecords) {
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  uint64_t before = env.syncs;
  constexpr int kThreads = 8, kPerThread = 125;
  Latch done(kThreads * kPerThread);
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        j->append(record(t, i, 200), [&](Status st, JournalPosition) {
          if (!st.ok()) failed++;
          done.count_down();
        });
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(done.wait());
  uint64_t syncs = env.syncs - before;
  EXPECT_EQ(failed, 0);
  EXPECT_GE(syncs, 1u);
  EXPECT_LT(syncs, 100u) << "1000 records took " << syncs << " syncs";
}

TEST_F(JournalTest, AnIdleJournalWritesALoneRecordWithoutWaitingForTheGroupTimer) {
  options_.max_group_wait = 10s;  // were the timer in the way, the record would wait for it
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  const uint64_t syncs_at_open = env.syncs;
  for (int i = 0; i < 3; ++i) {
    auto r = append_and_wait(*j, 1, i, 1);
    ASSERT_TRUE(r[0].first.ok()) << r[0].first.to_string();
    // The callback ran after the record's own sync, the one this group took.
    EXPECT_EQ(env.syncs, syncs_at_open + static_cast<uint64_t>(i) + 1);
  }
  EXPECT_EQ(groups_written(dir_, "idle"), 3) << "each lone record was written at once";
  EXPECT_EQ(groups_written(dir_, "timer"), 0);
  EXPECT_EQ(groups_written(dir_, "size"), 0);
}

TEST_F(JournalTest, RecordsGroupWhileASyncIsInFlightAndAreAckedOnlyAfterTheirOwnSync) {
  options_.max_group_wait = 10s;
  FaultInjectionEnv faults(posix_env());
  SyncTrackingEnv env(faults);
  auto j = open(env);
  ASSERT_TRUE(j);
  const uint64_t syncs_at_open = faults.syncs;
  env.hold_syncs();
  std::atomic<int> acked{0}, uncovered{0};
  Latch done(4);
  auto cb = [&](Status st, JournalPosition pos) {
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (env.synced_size(journal_file_path(dir_, pos.file_id)) < pos.offset) uncovered++;
    acked++;
    done.count_down();
  };
  j->append(record(1, 0, 100), cb);
  // The idle journal wrote the first record at once; its sync is now in flight, held.
  ASSERT_TRUE(env.wait_for_held_sync());
  for (int i = 1; i < 4; ++i) j->append(record(1, i, 100), cb);
  EXPECT_EQ(acked, 0) << "nothing is acknowledged before the sync that covers it";
  env.release_syncs();
  ASSERT_TRUE(done.wait());
  EXPECT_EQ(uncovered, 0) << "a record was acked before a sync covered it";
  // The three that came during the first sync went out as one group, at the moment the
  // journal went idle again, with one more sync; the group timer never fired.
  EXPECT_EQ(groups_written(dir_, "idle"), 2);
  EXPECT_EQ(groups_written(dir_, "timer"), 0);
  EXPECT_EQ(faults.syncs, syncs_at_open + 2);
  j.reset();
  auto records = replay();
  ASSERT_EQ(records.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(records[i].record.entry_id.value(), int64_t(i));
}

TEST_F(JournalTest, PacedSyncsGroupATrickleAndNeverDelayALoneRecordAfterAQuietSpell) {
  options_.sync_pacing = 200ms;
  options_.max_group_wait = 10s;  // bounds the pacing too
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  const uint64_t syncs_at_open = env.syncs;
  // After a quiet spell (the first sync ever): at once.
  auto start = Clock::now();
  auto first = append_and_wait(*j, 1, 0, 1);
  ASSERT_TRUE(first[0].first.ok());
  EXPECT_LT(Clock::now() - start, 150ms) << "a lone record waited for the pacing";
  // A trickle right after it waits out the interval and goes as one group with one sync.
  Latch done(3);
  std::atomic<int> failed{0};
  for (int i = 1; i <= 3; ++i) {
    j->append(record(1, i, 10), [&](Status st, JournalPosition) {
      if (!st.ok()) failed++;
      done.count_down();
    });
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(done.wait());
  EXPECT_GE(Clock::now() - start, 190ms) << "the trickle did not wait for the pacing interval";
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(env.syncs, syncs_at_open + 2);
  // Quiet for longer than the interval: at once again.
  std::this_thread::sleep_for(250ms);
  start = Clock::now();
  auto later = append_and_wait(*j, 1, 4, 1);
  ASSERT_TRUE(later[0].first.ok());
  EXPECT_LT(Clock::now() - start, 150ms);
  EXPECT_EQ(env.syncs, syncs_at_open + 3);
}

TEST_F(JournalTest, RollsAtMaxFileSizeAndReplayCrossesFiles) {
  options_.max_file_size = 4096;
  options_.prealloc_size = 1024;
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    auto results = append_and_wait(*j, 7, 0, 200, 200);
    for (const auto& [st, pos] : results) ASSERT_TRUE(st.ok()) << st.to_string();
    EXPECT_LT(results.front().second.file_id, results.back().second.file_id);
  }
  auto files = journal_files();
  EXPECT_GE(files.size(), 8u);
  for (const auto& f : files) EXPECT_LE(fs::file_size(f), 4096u) << f;
  auto records = replay();
  ASSERT_EQ(records.size(), 200u);
  for (int i = 0; i < 200; ++i) {
    EXPECT_EQ(records[i].record.entry_id.value(), i);
    EXPECT_EQ(records[i].record.payload, payload_for(7, i, 200));
  }
}

TEST_F(JournalTest, CheckpointDeletesOldFilesKeepsBackupsAndReplayStartsAtTheMark) {
  options_.max_file_size = 4096;
  options_.prealloc_size = 0;
  options_.max_backups = 2;
  auto j = open(posix_env());
  ASSERT_TRUE(j);
  for (const auto& [st, pos] : append_and_wait(*j, 3, 0, 100, 200)) ASSERT_TRUE(st.ok());
  JournalPosition mark = j->last_durable();
  for (const auto& [st, pos] : append_and_wait(*j, 3, 100, 100, 200)) ASSERT_TRUE(st.ok());
  size_t files_before = journal_files().size();
  size_t older = 0;
  for (const auto& f : journal_files()) {
    older += fs::path(f).filename().string() <
             fs::path(journal_file_path(dir_, mark.file_id)).filename().string();
  }
  ASSERT_GT(older, 2u);

  ASSERT_TRUE(j->checkpoint_complete(mark).ok());
  EXPECT_EQ(journal_files().size(), files_before - (older - 2)) << "two backups are kept";
  EXPECT_TRUE(fs::exists(journal_file_path(dir_, mark.file_id)));

  // An older mark never moves lastMark back; one beyond the durable end is refused.
  ASSERT_TRUE(j->checkpoint_complete(JournalPosition{mark.file_id, 16}).ok());
  JournalPosition beyond{j->last_durable().file_id + 1, 0};
  EXPECT_TRUE(j->checkpoint_complete(beyond).is(Errc::kInvalidArgument));
  j.reset();

  JournalPosition replay_mark;
  auto records = replay(posix_env(), &replay_mark);
  EXPECT_EQ(replay_mark, mark);
  ASSERT_EQ(records.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(records[i].record.entry_id.value(), 100 + i);
}

TEST_F(JournalTest, TruncatedTailEndsReplayWithoutTheTornRecord) {
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    for (const auto& [st, pos] : append_and_wait(*j, 1, 0, 10)) ASSERT_TRUE(st.ok());
  }
  auto files = journal_files();
  ASSERT_EQ(files.size(), 1u);
  fs::resize_file(files[0], fs::file_size(files[0]) - 30);  // mid last record
  auto records = replay();
  ASSERT_EQ(records.size(), 9u);
  EXPECT_EQ(records.back().record.entry_id.value(), 8);
}

// The writer keeps zeros written ahead of its data (so fdatasync has no file size change to
// commit); a crash leaves them behind the last record, and replay ends there. A clean close
// trims them.
TEST_F(JournalTest, ZerosWrittenAheadEndReplayAndAreTrimmedOnClose) {
  uint64_t data_end = 0;
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    auto acks = append_and_wait(*j, 1, 0, 10);
    for (const auto& [st, pos] : acks) ASSERT_TRUE(st.ok());
    data_end = acks.back().second.offset;
    auto files = journal_files();
    ASSERT_EQ(files.size(), 1u);
    EXPECT_GE(fs::file_size(files[0]), data_end + (512u << 10)) << "zeros ahead of the data";
  }
  auto files = journal_files();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(fs::file_size(files[0]), data_end) << "trimmed by the clean close";
  // As after a crash: the zeros are still there.
  fs::resize_file(files[0], data_end + (4u << 20));
  auto records = replay();
  ASSERT_EQ(records.size(), 10u);
  EXPECT_EQ(records.back().record.payload, payload_for(1, 9, 100));
  // A new run appends to a new file and both replay.
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    for (const auto& [st, pos] : append_and_wait(*j, 1, 10, 5)) ASSERT_TRUE(st.ok());
  }
  records = replay();
  ASSERT_EQ(records.size(), 15u);
  EXPECT_EQ(records.back().record.entry_id.value(), 14);
}

// Pages of `path` in [0, end) the page cache holds (mincore over a mapping that touches none).
size_t resident_pages(const std::string& path, uint64_t end) {
  const long page = ::sysconf(_SC_PAGESIZE);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SIZE_MAX;
  void* map = ::mmap(nullptr, end, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return SIZE_MAX;
  std::vector<unsigned char> in_core((end + page - 1) / page);
  const int rc = ::mincore(map, end, in_core.data());
  ::munmap(map, end);
  if (rc != 0) return SIZE_MAX;
  return static_cast<size_t>(
      std::count_if(in_core.begin(), in_core.end(), [](unsigned char c) { return (c & 1) != 0; }));
}

// journalRemovePagesFromCache (the default): what is synced leaves the page cache, a step
// (2 MiB) at a time, and replays the same; with it off nothing is dropped.
TEST_F(JournalTest, SyncedPagesLeaveThePageCacheAndReplayTheSame) {
  constexpr int kRecords = 800;  // ~8 MiB
  constexpr size_t kSize = 10000;
  uint64_t data_end = 0;
  {
    FaultInjectionEnv env(posix_env());
    auto j = open(env);
    ASSERT_TRUE(j);
    auto acks = append_and_wait(*j, 1, 0, kRecords, kSize);
    for (const auto& [st, pos] : acks) ASSERT_TRUE(st.ok()) << st.to_string();
    data_end = acks.back().second.offset;
    // Below the last drop's end, which is less than two steps below the data's end.
    const uint64_t surely_dropped = data_end - (4u << 20);
    EXPECT_GE(env.dropped_bytes.load(), surely_dropped);
    auto files = journal_files();
    ASSERT_EQ(files.size(), 1u);
    // A hint the kernel may pass over for a page now and then (one run in ~80 kept 279 of
    // ~1,000); kept, the range would be wholly resident.
    const size_t pages = surely_dropped / 4096;
    EXPECT_LT(resident_pages(files[0], surely_dropped), pages / 2)
        << "synced journal pages are still in the page cache";
  }
  auto records = replay();
  ASSERT_EQ(records.size(), size_t{kRecords});
  for (int i = 0; i < kRecords; ++i) {
    ASSERT_EQ(records[i].record.payload, payload_for(1, i, kSize)) << "record " << i;
  }
  options_.remove_pages_from_cache = false;
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  for (const auto& [st, pos] : append_and_wait(*j, 1, kRecords, kRecords, kSize)) {
    ASSERT_TRUE(st.ok()) << st.to_string();
  }
  EXPECT_EQ(env.dropped_bytes.load(), 0u);
}

std::vector<std::string> spare_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir + "/current")) {
    if (e.path().extension() == ".spare") files.push_back(e.path().string());
  }
  return files;
}

// journalReuseFiles: a checkpoint keeps one released file as a spare, and the next roll
// writes it again. A crash then leaves the file's earlier records behind the new ones; their
// CRCs carry the earlier file id, so replay ends at the first of them.
TEST_F(JournalTest, AReusedFileReplaysOnlyWhatWasWrittenSinceItsReuse) {
  options_.max_file_size = 64 << 10;
  options_.prealloc_size = 0;
  options_.max_backups = 0;
  options_.reuse_files = true;
  std::string crashed_copy;  // the reused file as a crash would leave it
  JournalPosition mark;
  int64_t next = 0;
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    for (const auto& [st, pos] : append_and_wait(*j, 4, next, 1200, 200)) ASSERT_TRUE(st.ok());
    next += 1200;
    ASSERT_GE(journal_files().size(), 3u);
    mark = j->last_durable();
    ASSERT_TRUE(j->checkpoint_complete(mark).ok());
    ASSERT_EQ(journal_files().size(), 1u) << "older files released";
    auto spares = spare_files(dir_);
    ASSERT_EQ(spares.size(), 1u) << "one kept for reuse, the others removed";
    const uint64_t spare_size = fs::file_size(spares[0]);
    ASSERT_GT(spare_size, 60u << 10);

    // Fill the current file until the journal rolls into the spare, then a few records more.
    std::vector<std::pair<Status, JournalPosition>> acks;
    while (!spare_files(dir_).empty()) {
      acks = append_and_wait(*j, 4, next, 10, 200);
      for (const auto& [st, pos] : acks) ASSERT_TRUE(st.ok());
      next += 10;
    }
    auto files = journal_files();
    ASSERT_EQ(files.size(), 2u);
    const uint64_t data_end = acks.back().second.offset;
    ASSERT_EQ(acks.back().second.file_id, j->last_durable().file_id);
    EXPECT_GE(fs::file_size(files.back()), spare_size) << "the spare's blocks, written again";
    EXPECT_LT(data_end, spare_size / 2) << "earlier records lie past the new data";
    crashed_copy = files.back() + ".crashed";
    fs::copy_file(files.back(), crashed_copy);
  }
  auto files = journal_files();
  ASSERT_EQ(files.size(), 2u);
  EXPECT_LT(fs::file_size(files.back()), 60u << 10) << "a clean close trims the old contents";
  fs::rename(crashed_copy, files.back());  // as after a crash

  JournalPosition replay_mark;
  auto records = replay(posix_env(), &replay_mark);
  EXPECT_EQ(replay_mark, mark);
  ASSERT_EQ(records.size(), static_cast<size_t>(next - 1200));
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ(records[i].record.entry_id.value(), 1200 + static_cast<int64_t>(i));
    EXPECT_EQ(records[i].record.payload, payload_for(4, records[i].record.entry_id.value(), 200));
  }
}

TEST_F(JournalTest, WithoutReuseSparesAreRemovedAndAnUnusableSpareIsSkipped) {
  fs::create_directories(dir_ + "/current");
  {
    std::ofstream(dir_ + "/current/0000000000000001.spare") << std::string(1000, 'x');
  }
  auto j = open(posix_env());
  ASSERT_TRUE(j);
  EXPECT_TRUE(spare_files(dir_).empty()) << "journalReuseFiles=false: nothing kept";
  j.reset();

  // A "spare" that cannot be opened for writing (a directory) is skipped with a warning.
  fs::create_directories(dir_ + "/current/0000000000000002.spare");
  options_.reuse_files = true;
  j = open(posix_env());
  ASSERT_TRUE(j);
  for (const auto& [st, pos] : append_and_wait(*j, 1, 0, 5)) ASSERT_TRUE(st.ok());
  j.reset();
  EXPECT_EQ(replay().size(), 5u);
}

// Files written before reuse existed (version 1: CRCs without the file id) still replay.
TEST_F(JournalTest, VersionOneFilesStillReplay) {
  fs::create_directories(dir_ + "/current");
  const uint64_t id = 0x42;
  std::string bytes = "MGJL";
  auto be32 = [&](uint32_t v) {
    for (int i = 3; i >= 0; --i) bytes.push_back(static_cast<char>(v >> (8 * i)));
  };
  auto be64 = [&](uint64_t v) {
    for (int i = 7; i >= 0; --i) bytes.push_back(static_cast<char>(v >> (8 * i)));
  };
  be32(1);
  be64(id);
  std::string body(1, '\x01');
  for (int i = 7; i >= 0; --i) body.push_back(static_cast<char>(uint64_t{9} >> (8 * i)));
  for (int i = 7; i >= 0; --i) body.push_back(static_cast<char>(uint64_t{3} >> (8 * i)));
  body += "v1-payload";
  be32(static_cast<uint32_t>(body.size()));
  be32(crc32c::value(body.data(), body.size()));
  bytes += body;
  {
    std::ofstream out(journal_file_path(dir_, id), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  auto records = replay();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].record.ledger_id.value(), 9);
  EXPECT_EQ(records[0].record.entry_id.value(), 3);
  EXPECT_EQ(records[0].record.payload.to_string(), "v1-payload");
}

TEST_F(JournalTest, GarbageAfterTheLastRecordEndsReplayCleanly) {
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    for (const auto& [st, pos] : append_and_wait(*j, 1, 0, 10)) ASSERT_TRUE(st.ok());
  }
  auto files = journal_files();
  ASSERT_EQ(files.size(), 1u);
  {
    std::ofstream out(files[0], std::ios::binary | std::ios::app);
    // A plausible length (117 = 17 + 100) with a wrong CRC, then random bytes.
    const char fake[] = {0, 0, 0, 117, 1, 2, 3, 4};
    out.write(fake, sizeof fake);
    std::string junk = payload_for(9, 9, 300).to_string();
    out.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto records = replay();
  ASSERT_EQ(records.size(), 10u);
  EXPECT_EQ(records.back().record.payload, payload_for(1, 9, 100));
}

TEST_F(JournalTest, FailedSyncFailsTheGroupAndEveryLaterAppend) {
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  std::atomic<int> failures_reported{0};
  j->on_failure([&](const Status& st) {
    EXPECT_TRUE(st.is(Errc::kIoError));
    failures_reported++;
  });
  for (const auto& [st, pos] : append_and_wait(*j, 1, 0, 5)) ASSERT_TRUE(st.ok());

  env.fail_sync = true;
  auto in_flight = append_and_wait(*j, 1, 5, 20);
  for (const auto& [st, pos] : in_flight) {
    EXPECT_TRUE(st.is(Errc::kIoError)) << st.to_string();
  }
  env.fail_sync = false;  // the disk "recovers": the journal must stay failed
  auto later = append_and_wait(*j, 1, 25, 20);
  for (const auto& [st, pos] : later) EXPECT_TRUE(st.is(Errc::kIoError)) << st.to_string();

  EXPECT_TRUE(j->failure().is(Errc::kIoError));
  EXPECT_NE(j->failure().message().find(".txn"), std::string::npos) << "names the file";
  EXPECT_EQ(failures_reported, 1);
  j->on_failure([&](const Status&) { failures_reported++; });  // already notified
  j.reset();
  EXPECT_EQ(failures_reported, 1);

  auto records = replay();
  ASSERT_GE(records.size(), 5u) << "acked records survive";
  for (int i = 0; i < 5; ++i) EXPECT_EQ(records[i].record.entry_id.value(), i);
}

TEST_F(JournalTest, DiskFullFailsWithResourceExhausted) {
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  std::atomic<int> failures_reported{0};
  j->on_failure([&](const Status& st) {
    EXPECT_TRUE(st.is(Errc::kResourceExhausted)) << st.to_string();
    failures_reported++;
  });
  for (const auto& [st, pos] : append_and_wait(*j, 1, 0, 5)) ASSERT_TRUE(st.ok());
  env.disk_full = true;
  for (const auto& [st, pos] : append_and_wait(*j, 1, 5, 10)) {
    EXPECT_TRUE(st.is(Errc::kResourceExhausted)) << st.to_string();
  }
  env.disk_full = false;
  for (const auto& [st, pos] : append_and_wait(*j, 1, 15, 10)) {
    EXPECT_TRUE(st.is(Errc::kResourceExhausted)) << st.to_string();
  }
  EXPECT_TRUE(j->failure().is(Errc::kResourceExhausted));
  j.reset();
  EXPECT_EQ(failures_reported, 1);
}

TEST_F(JournalTest, ReopenAfterCleanCloseContinuesInANewFile) {
  JournalPosition first_end;
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    auto r = append_and_wait(*j, 1, 0, 10);
    first_end = r.back().second;
  }
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    auto r = append_and_wait(*j, 1, 10, 10);
    for (const auto& [st, pos] : r) ASSERT_TRUE(st.ok());
    EXPECT_GT(r.front().second.file_id, first_end.file_id);
  }
  EXPECT_EQ(journal_files().size(), 2u);
  auto records = replay();
  ASSERT_EQ(records.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(records[i].record.entry_id.value(), i);
}

TEST_F(JournalTest, WithoutSyncDataAcksPrecedeTheSyncAndCloseSyncs) {
  options_.sync_data = false;
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  uint64_t at_open = env.syncs;
  JournalPosition durable_at_open = j->last_durable();
  std::atomic<int> synced_before_ack{0};
  Latch done(10);
  for (int i = 0; i < 10; ++i) {
    j->append(record(1, i, 100), [&](Status st, JournalPosition) {
      EXPECT_TRUE(st.ok());
      if (env.syncs != at_open) synced_before_ack++;
      done.count_down();
    });
  }
  ASSERT_TRUE(done.wait());
  EXPECT_EQ(synced_before_ack, 0);
  EXPECT_EQ(j->last_durable(), durable_at_open) << "nothing synced yet";
  j.reset();
  EXPECT_GT(env.syncs, at_open) << "close syncs";
  EXPECT_EQ(replay().size(), 10u);
}

TEST_F(JournalTest, WithoutSyncDataATimerSyncsWithinASecond) {
  options_.sync_data = false;
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  uint64_t at_open = env.syncs;
  auto r = append_and_wait(*j, 1, 0, 5);
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (j->last_durable() < r.back().second && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(j->last_durable(), r.back().second);
  EXPECT_EQ(env.syncs, at_open + 1) << "one timed sync, no spinning";
}

TEST_F(JournalTest, WithoutSyncDataASlowTimedSyncDoesNotHoldAcksBack) {
  options_.sync_data = false;
  FaultInjectionEnv env(posix_env());
  auto j = open(env);
  ASSERT_TRUE(j);
  const uint64_t started_at_open = env.syncs_started;
  append_and_wait(*j, 1, 0, 1);  // leaves unsynced data: the timer syncs it within a second
  env.sync_delay_ms = 3000;      // and that sync takes three seconds
  auto deadline = std::chrono::steady_clock::now() + 3s;
  while (env.syncs_started == started_at_open && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_GT(env.syncs_started, started_at_open) << "the timed sync never started";
  // The sync is under way: a new record is acknowledged once written, not after it.
  Latch acked(1);
  const auto appended = std::chrono::steady_clock::now();
  j->append(record(1, 1, 100), [&](Status st, JournalPosition) {
    EXPECT_TRUE(st.ok()) << st.to_string();
    acked.count_down();
  });
  ASSERT_TRUE(acked.wait());
  EXPECT_LT(std::chrono::steady_clock::now() - appended, 1500ms);
  env.sync_delay_ms = 0;
}

TEST_F(JournalTest, QueueFullMakesTheAppenderWaitInsteadOfFailing) {
  options_.queue_size = 4;
  auto j = open(posix_env());
  ASSERT_TRUE(j);
  Latch first_started(1), release(1);
  Latch all(5);
  std::vector<Status> results(5, Status(Errc::kInternal, "not completed"));
  // The first callback holds the callback thread, so nothing completes meanwhile.
  j->append(record(1, 0, 10), [&](Status st, JournalPosition) {
    results[0] = st;
    first_started.count_down();
    release.wait();
    all.count_down();
  });
  ASSERT_TRUE(first_started.wait());
  for (int i = 1; i < 4; ++i) {
    j->append(record(1, i, 10), [&, i](Status st, JournalPosition) {
      results[i] = std::move(st);
      all.count_down();
    });
  }
  // Four records are in flight: the fifth append waits for one of them to complete.
  std::atomic<bool> returned{false};
  std::thread fifth([&] {
    j->append(record(1, 4, 10), [&](Status st, JournalPosition) {
      results[4] = std::move(st);
      all.count_down();
    });
    returned = true;
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(returned) << "append returned while the queue was full";
  release.count_down();
  fifth.join();
  EXPECT_TRUE(returned);
  ASSERT_TRUE(all.wait());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(results[i].ok()) << i << results[i].to_string();
  auto records = [&] {
    j.reset();
    return replay();
  }();
  ASSERT_EQ(records.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(records[static_cast<size_t>(i)].record.entry_id.value(), i);
}

TEST_F(JournalTest, TryAppendTakesNothingWhileTheQueueIsFullAndNeverWaits) {
  options_.queue_size = 2;
  auto j = open(posix_env());
  ASSERT_TRUE(j);
  Latch first_started(1), release(1), all(3);
  std::vector<Status> results(3, Status(Errc::kInternal, "not completed"));
  // The first callback holds the callback thread, so nothing completes meanwhile.
  JournalRecord r0 = record(1, 0, 10);
  Journal::AppendCallback cb0 = [&](Status st, JournalPosition) {
    results[0] = st;
    first_started.count_down();
    release.wait();
    all.count_down();
  };
  ASSERT_TRUE(j->try_append(r0, cb0));
  ASSERT_TRUE(first_started.wait());
  JournalRecord r1 = record(1, 1, 10);
  Journal::AppendCallback cb1 = [&](Status st, JournalPosition) {
    results[1] = std::move(st);
    all.count_down();
  };
  ASSERT_TRUE(j->try_append(r1, cb1));
  // Two in flight: a third is refused at once, and left to its caller whole.
  JournalRecord r2 = record(1, 2, 10);
  bool called = false;
  Journal::AppendCallback cb2 = [&](Status st, JournalPosition) {
    called = true;
    results[2] = std::move(st);
    all.count_down();
  };
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(j->try_append(r2, cb2));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50ms) << "try_append waited";
  EXPECT_EQ(r2.payload.size(), 10u) << "the refused record was moved from";
  ASSERT_TRUE(cb2) << "the refused callback was moved from";
  EXPECT_FALSE(called);
  release.count_down();
  // Once there is room again, the same record and callback go in (append() waits instead).
  j->append(std::move(r2), std::move(cb2));
  ASSERT_TRUE(all.wait());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(results[i].ok()) << i << results[i].to_string();
  j.reset();
  auto records = replay();
  ASSERT_EQ(records.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(records[static_cast<size_t>(i)].record.entry_id.value(), i);
}

TEST_F(JournalTest, RecordTypesAndNegativeIdsRoundTrip) {
  {
    auto j = open(posix_env());
    ASSERT_TRUE(j);
    Latch done(3);
    auto cb = [&](Status st, JournalPosition) {
      EXPECT_TRUE(st.ok());
      done.count_down();
    };
    j->append(record(5, -0x1000, 20, JournalRecordType::kMasterKey), cb);
    j->append(record(5, -0x2000, 0, JournalRecordType::kFence), cb);
    j->append(record(5, -0x4000, 8, JournalRecordType::kExplicitLac), cb);
    ASSERT_TRUE(done.wait());
  }
  auto records = replay();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].record.type, JournalRecordType::kMasterKey);
  EXPECT_EQ(records[0].record.entry_id.value(), -0x1000);
  EXPECT_EQ(records[0].record.payload, payload_for(5, -0x1000, 20));
  EXPECT_EQ(records[1].record.type, JournalRecordType::kFence);
  EXPECT_TRUE(records[1].record.payload.empty());
  EXPECT_EQ(records[2].record.type, JournalRecordType::kExplicitLac);
}

TEST_F(JournalTest, ExportsMetrics) {
  auto j = open(posix_env());
  ASSERT_TRUE(j);
  for (const auto& [st, pos] : append_and_wait(*j, 1, 0, 10)) ASSERT_TRUE(st.ok());
  std::string text = metrics::default_registry().expose();
  std::string label = "{journal=\"" + dir_ + "\"}";
  EXPECT_NE(text.find("magnetar_bookie_journal_add_total" + label + " 10"), std::string::npos)
      << text;
  EXPECT_NE(text.find("magnetar_bookie_journal_sync_latency_ms_count" + label), std::string::npos);
  // Each record's append-to-callback time, observed before its callback ran.
  EXPECT_NE(text.find("magnetar_bookie_journal_add_latency_ms_count" + label + " 10"),
            std::string::npos);
  EXPECT_NE(text.find("magnetar_bookie_journal_add_latency_ms_bucket{journal=\"" + dir_ +
                      "\",le=\"0.25\"}"),
            std::string::npos);
  EXPECT_NE(text.find("magnetar_bookie_journal_group_size_bucket"), std::string::npos);
  EXPECT_NE(text.find("magnetar_bookie_journal_queue_size" + label), std::string::npos);
  EXPECT_GE(groups_written(dir_, "idle"), 1);
}

}  // namespace
}  // namespace magnetar::bookie
