// The bookie's request semantics through its API (no network), and its durability across
// a crash (a forked child acknowledges entries, then exits without any shutdown).

#include "bookie/bookie.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <future>
#include <numeric>
#include <set>

#include "bookie/bookie_config.h"
#include "bookie/journal/journal.h"
#include "common/config.h"
#include "protocol/bookie_entry.h"
#include "testing/ids.h"

namespace magnetar::bookie {
namespace {

using magnetar::testing::L;

using bookie_wire::BookieStatus;

Buffer entry(int64_t ledger, int64_t id, int64_t lac, std::string_view payload) {
  return protocol::package_entry(protocol::EntryHeader{ledger, id, lac, 0},
                                 BufferChain(Buffer::copy_of(payload)))
      .flatten();
}

bookie_wire::AddRequest add_req(int64_t ledger, int64_t id, std::string key = "key",
                                bool recovery = false) {
  bookie_wire::AddRequest r;
  r.set_ledger_id(ledger);
  r.set_entry_id(id);
  r.set_master_key(key);
  r.set_recovery(recovery);
  return r;
}

class BookieTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("magnetar-bookie-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    config_.journal_directories = {(dir_ / "journal").string()};
    config_.ledger_directories = {(dir_ / "ledgers").string()};
    config_.flush_interval_ms = 3600000;  // checkpoints only when a test asks
    config_.journal_max_group_wait_msec = 1;
  }
  void TearDown() override {
    bookie_.reset();
    std::filesystem::remove_all(dir_);
  }

  void open(Env& env = posix_env()) {
    auto b = Bookie::open(config_, env);
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    bookie_ = std::move(b).value();
  }

  BookieStatus add(int64_t ledger, int64_t id, int64_t lac, std::string_view payload,
                   std::string key = "key", bool recovery = false) {
    return add_to(*bookie_, ledger, id, lac, payload, std::move(key), recovery);
  }
  static BookieStatus add_to(Bookie& b, int64_t ledger, int64_t id, int64_t lac,
                             std::string_view payload, std::string key = "key",
                             bool recovery = false) {
    std::promise<BookieStatus> p;
    b.add_entry(add_req(ledger, id, key, recovery), entry(ledger, id, lac, payload),
                [&](BookieStatus s) { p.set_value(s); });
    return p.get_future().get();
  }

  // Runs `body` against a bookie opened on config_ in a forked child, which then exits with
  // no checkpoint, flush or destructor: what a SIGKILL leaves. True when `body` returned true.
  bool in_crashing_child(const std::function<bool(Bookie&)>& body) {
    BookieConfig config = config_;
    pid_t pid = ::fork();
    if (pid == 0) {
      auto b = Bookie::open(config);
      ::_exit(b.ok() && body(**b) ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  struct ReadResult {
    BookieStatus status;
    Buffer entry;
    int64_t lac;
  };
  std::future<ReadResult> read_async(bookie_wire::ReadRequest r) {
    auto p = std::make_shared<std::promise<ReadResult>>();
    auto f = p->get_future();
    bookie_->read_entry(r, [p](BookieStatus s, Buffer e, int64_t lac) {
      p->set_value(ReadResult{s, std::move(e), lac});
    });
    return f;
  }
  ReadResult read(int64_t ledger, int64_t id) {
    bookie_wire::ReadRequest r;
    r.set_ledger_id(ledger);
    r.set_entry_id(id);
    return read_async(r).get();
  }

  std::filesystem::path dir_;
  BookieConfig config_;
  FaultInjectionEnv faulty_{posix_env()};  // declared before bookie_: outlives it
  std::unique_ptr<Bookie> bookie_;
};

TEST_F(BookieTest, AddThenReadBackWithLac) {
  open();
  ASSERT_EQ(add(1, 0, -1, "zero"), bookie_wire::OK);
  ASSERT_EQ(add(1, 1, 0, "one"), bookie_wire::OK);
  ReadResult r = read(1, 1);
  ASSERT_EQ(r.status, bookie_wire::OK);
  auto payload = protocol::unpack_entry(r.entry, 1, 1);
  ASSERT_TRUE(payload.ok()) << payload.status().to_string();
  EXPECT_EQ(payload->view(), "one");
  EXPECT_EQ(r.lac, 0);
  EXPECT_EQ(read(1, -1).status, bookie_wire::OK);  // the last entry
  EXPECT_EQ(read(1, 5).status, bookie_wire::NO_ENTRY);
  EXPECT_EQ(read(2, 0).status, bookie_wire::NO_LEDGER);
  auto lac = bookie_->read_lac(L(1));
  EXPECT_EQ(lac.status(), bookie_wire::OK);
  EXPECT_EQ(lac.lac(), 0);
  EXPECT_EQ(lac.last_entry_id(), 1);
}

TEST_F(BookieTest, WrongMasterKeyIsUnauthorized) {
  open();
  ASSERT_EQ(add(1, 0, -1, "x", "right"), bookie_wire::OK);
  EXPECT_EQ(add(1, 1, 0, "y", "wrong"), bookie_wire::UNAUTHORIZED);
}

TEST_F(BookieTest, EntryHeaderMustMatchTheRequest) {
  open();
  std::promise<BookieStatus> p;
  bookie_->add_entry(add_req(1, 3), entry(1, 4, -1, "mismatch"),
                     [&](BookieStatus s) { p.set_value(s); });
  EXPECT_EQ(p.get_future().get(), bookie_wire::BAD_REQUEST);
}

TEST_F(BookieTest, FenceStopsNormalAddsButNotRecoveryAdds) {
  open();
  ASSERT_EQ(add(7, 0, -1, "a"), bookie_wire::OK);
  bookie_wire::ReadRequest fence;
  fence.set_ledger_id(7);
  fence.set_entry_id(-1);
  fence.set_fence(true);
  fence.set_master_key("key");
  ReadResult r = read_async(fence).get();
  EXPECT_EQ(r.status, bookie_wire::OK);
  EXPECT_EQ(add(7, 1, 0, "b"), bookie_wire::FENCED);
  EXPECT_EQ(add(7, 1, 0, "b", "key", /*recovery=*/true), bookie_wire::OK);
  // Fencing survives a restart (journal record, then storage).
  bookie_.reset();
  open();
  EXPECT_EQ(add(7, 2, 1, "c"), bookie_wire::FENCED);
}

TEST_F(BookieTest, FenceOfALedgerWithoutEntriesSurvivesACrash) {
  ASSERT_TRUE(in_crashing_child([](Bookie& b) {
    bookie_wire::ReadRequest fence;
    fence.set_ledger_id(21);
    fence.set_entry_id(-1);
    fence.set_fence(true);
    fence.set_master_key("key");
    std::promise<BookieStatus> p;
    b.read_entry(fence, [&](BookieStatus s, Buffer, int64_t) { p.set_value(s); });
    p.get_future().get();  // answered once the fence is durable (NO_ENTRY: nothing stored)
    return true;
  }));
  open();  // replays the fence record of a ledger storage never saw
  EXPECT_EQ(add(21, 0, -1, "old writer"), bookie_wire::FENCED);
  EXPECT_EQ(add(21, 0, -1, "recovery", "key", /*recovery=*/true), bookie_wire::OK);
}

TEST_F(BookieTest, LongPollReadWaitsForTheNextEntry) {
  open();
  ASSERT_EQ(add(3, 0, -1, "first"), bookie_wire::OK);
  bookie_wire::ReadRequest poll;
  poll.set_ledger_id(3);
  poll.set_entry_id(1);
  poll.set_previous_lac(-1);
  poll.set_timeout_ms(10000);
  auto pending = read_async(poll);
  EXPECT_EQ(pending.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
  ASSERT_EQ(add(3, 1, 0, "second"), bookie_wire::OK);
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  ReadResult r = pending.get();
  EXPECT_EQ(r.status, bookie_wire::OK);
  EXPECT_EQ(protocol::unpack_entry(r.entry, 3, 1)->view(), "second");
}

TEST_F(BookieTest, LongPollReadTimesOut) {
  open();
  ASSERT_EQ(add(4, 0, -1, "only"), bookie_wire::OK);
  bookie_wire::ReadRequest poll;
  poll.set_ledger_id(4);
  poll.set_entry_id(1);
  poll.set_previous_lac(-1);
  poll.set_timeout_ms(100);
  EXPECT_EQ(read_async(poll).get().status, bookie_wire::TIMED_OUT);
}

TEST_F(BookieTest, AcknowledgedEntriesSurviveACrash) {
  ASSERT_TRUE(in_crashing_child([](Bookie& b) {
    for (int i = 0; i < 200; ++i) {
      if (add_to(b, 9, i, i - 1, fmt::format("entry-{}", i)) != bookie_wire::OK) return false;
    }
    return true;
  }));
  open();  // replays the journal
  for (int i = 0; i < 200; ++i) {
    ReadResult r = read(9, i);
    ASSERT_EQ(r.status, bookie_wire::OK) << i;
    EXPECT_EQ(protocol::unpack_entry(r.entry, 9, i)->view(), fmt::format("entry-{}", i));
  }
  // And again after a checkpoint trimmed the journal.
  ASSERT_TRUE(bookie_->checkpoint().ok());
  bookie_.reset();
  open();
  EXPECT_EQ(read(9, 199).status, bookie_wire::OK);
}

// add_entries_inline(), as the in-process bookie stores adds on its caller's event loop: the
// same answers as add_entries(), every acknowledged entry back after a SIGKILL, and a new
// ledger's key journaled with its first entry (replay knows the key: a wrong one is refused).
TEST_F(BookieTest, InlineAddsAnswerLikeQueuedOnesAndSurviveACrash) {
  ASSERT_TRUE(in_crashing_child([](Bookie& b) {
    constexpr int kEntries = 200;
    std::vector<std::promise<BookieStatus>> answers(kEntries + 2);
    std::vector<Bookie::Add> adds;
    for (int i = 0; i < kEntries; ++i) {
      adds.push_back(Bookie::Add{add_req(7, i), entry(7, i, i - 1, fmt::format("inline-{}", i)),
                                 [&answers, i](BookieStatus s) { answers[i].set_value(s); }});
      if (i % 10 == 9) b.add_entries_inline(std::exchange(adds, {}));
    }
    // Refusals are answered too: a header that does not match, a wrong key.
    adds.push_back(Bookie::Add{add_req(7, 500), entry(7, 501, -1, "mismatch"),
                               [&answers](BookieStatus s) { answers[kEntries].set_value(s); }});
    adds.push_back(Bookie::Add{add_req(7, 600, "other-key"), entry(7, 600, -1, "x"),
                               [&answers](BookieStatus s) { answers[kEntries + 1].set_value(s); }});
    b.add_entries_inline(std::move(adds));
    for (int i = 0; i < kEntries; ++i) {
      if (answers[i].get_future().get() != bookie_wire::OK) return false;
    }
    return answers[kEntries].get_future().get() == bookie_wire::BAD_REQUEST &&
           answers[kEntries + 1].get_future().get() == bookie_wire::UNAUTHORIZED;
  }));
  open();  // replays the journal
  for (int i = 0; i < 200; ++i) {
    ReadResult r = read(7, i);
    ASSERT_EQ(r.status, bookie_wire::OK) << i;
    EXPECT_EQ(protocol::unpack_entry(r.entry, 7, i)->view(), fmt::format("inline-{}", i));
  }
  EXPECT_EQ(add(7, 200, 199, "wrong key", "other-key"), bookie_wire::UNAUTHORIZED)
      << "the ledger's key was journaled with its first inline add";
  EXPECT_EQ(add(7, 200, 199, "right key"), bookie_wire::OK);
}

// Adds that would wait (a write cache too small for them, on a disk whose syncs take 600 ms)
// go to the storage workers, and the adds after them follow them there: the caller never
// waits for a flush, and all are stored, none lost or answered out of turn.
TEST_F(BookieTest, InlineAddsThatWouldWaitGoToTheWorkersInOrder) {
  config_.write_cache_max_size_mb = 1;  // halves of 512 KiB: two 200 KiB entries each
  open(faulty_);
  faulty_.sync_delay_ms = 600;  // a flush takes at least that long
  constexpr int kEntries = 12;
  const std::string payload(200 << 10, 'p');
  std::mutex mu;
  std::vector<int> order;
  std::vector<std::promise<BookieStatus>> answers(kEntries);
  std::vector<Bookie::Add> adds;
  for (int i = 0; i < kEntries; ++i) {
    adds.push_back(Bookie::Add{add_req(3, i), entry(3, i, i - 1, payload), [&, i](BookieStatus s) {
                                 {
                                   std::lock_guard lock(mu);
                                   order.push_back(i);
                                 }
                                 answers[i].set_value(s);
                               }});
  }
  const auto start = std::chrono::steady_clock::now();
  bookie_->add_entries_inline(std::move(adds));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300))
      << "the caller waited for room in the write cache";
  for (int i = 0; i < kEntries; ++i) EXPECT_EQ(answers[i].get_future().get(), bookie_wire::OK);
  {
    std::lock_guard lock(mu);
    std::vector<int> expected(kEntries);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(order, expected) << "answered out of turn";
  }
  for (int i = 0; i < kEntries; ++i) ASSERT_EQ(read(3, i).status, bookie_wire::OK) << i;
  faulty_.sync_delay_ms = 0;
}

// journalReuseFiles: after a checkpoint the next roll writes over a released journal file;
// a crash then leaves that file's earlier records behind the new ones, and replay must bring
// back exactly what was acknowledged since.
TEST_F(BookieTest, AcknowledgedEntriesSurviveACrashInAReusedJournalFile) {
  config_.journal_reuse_files = true;
  config_.journal_max_size_mb = 1;
  config_.journal_pre_alloc_size_mb = 1;
  config_.journal_max_backups = 0;
  const std::string filler(1000, 'r');
  auto payload = [&](int i) { return fmt::format("entry-{}-{}", i, filler); };
  ASSERT_TRUE(in_crashing_child([&](Bookie& b) {
    // ~990 entries fill a file: the reused one (the first) takes entries from ~1980 on and
    // is half written at the crash, its older records behind.
    for (int i = 0; i < 2500; ++i) {
      if (i == 1500 && !b.checkpoint().ok()) return false;  // releases the files before it
      if (add_to(b, 12, i, i - 1, payload(i)) != bookie_wire::OK) return false;
    }
    return true;
  }));
  const auto journal = dir_ / "journal" / "current";
  size_t txn = 0;
  for (const auto& e : std::filesystem::directory_iterator(journal)) {
    EXPECT_NE(e.path().extension(), ".spare") << "the spare was taken by a later roll";
    txn += e.path().extension() == ".txn" ? 1 : 0;
  }
  EXPECT_GE(txn, 2u);
  // The journal gives back the entries added since the checkpoint, in order, and none of the
  // older ones the reused file held before.
  JournalOptions o;
  o.dir = config_.journal_directories[0];
  std::vector<int64_t> ids;
  auto replayed = Journal::replay(o, posix_env(), [&](const JournalRecord& r, JournalPosition) {
    if (r.type == JournalRecordType::kEntry) ids.push_back(r.entry_id.value());
    return Status::OK();
  });
  ASSERT_TRUE(replayed.ok()) << replayed.status().to_string();
  ASSERT_FALSE(ids.empty());
  EXPECT_LE(ids.front(), 1500);
  EXPECT_EQ(ids.back(), 2499);
  for (size_t i = 1; i < ids.size(); ++i) ASSERT_EQ(ids[i], ids[i - 1] + 1) << i;
  open();  // replays the journal
  for (int i = 0; i < 2500; ++i) {
    ReadResult r = read(12, i);
    ASSERT_EQ(r.status, bookie_wire::OK) << i;
    ASSERT_EQ(protocol::unpack_entry(r.entry, 12, i)->view(), payload(i)) << i;
  }
  EXPECT_EQ(read(12, 2500).status, bookie_wire::NO_ENTRY) << "nothing of the file's past";
}

TEST_F(BookieTest, SeveralJournalDirectoriesShareTheLedgersAndAllReplay) {
  config_.journal_directories = {(dir_ / "journal-a").string(), (dir_ / "journal-b").string()};
  ASSERT_TRUE(in_crashing_child([](Bookie& b) {
    for (int64_t ledger : {10, 11}) {  // ledger id modulo 2 picks the journal
      for (int i = 0; i < 50; ++i) {
        if (add_to(b, ledger, i, i - 1, fmt::format("e{}", i)) != bookie_wire::OK) return false;
      }
    }
    return true;
  }));
  // Each journal holds exactly one ledger's entries: 10 (even) in the first, 11 in the second.
  for (int64_t ledger : {10, 11}) {
    JournalOptions o;
    o.dir = config_.journal_directories[static_cast<size_t>(ledger % 2)];
    std::set<int64_t> ledgers;
    int entries = 0;
    auto replayed = Journal::replay(o, posix_env(), [&](const JournalRecord& r, JournalPosition) {
      ledgers.insert(r.ledger_id.value());
      entries += r.type == JournalRecordType::kEntry ? 1 : 0;
      return Status::OK();
    });
    ASSERT_TRUE(replayed.ok()) << replayed.status().to_string();
    EXPECT_EQ(ledgers, std::set<int64_t>{ledger}) << o.dir;
    EXPECT_EQ(entries, 50) << o.dir;
  }
  open();  // replays both journals
  for (int64_t ledger : {10, 11}) {
    for (int i = 0; i < 50; ++i) {
      ReadResult r = read(ledger, i);
      ASSERT_EQ(r.status, bookie_wire::OK) << ledger << ":" << i;
      EXPECT_EQ(protocol::unpack_entry(r.entry, ledger, i)->view(), fmt::format("e{}", i));
    }
  }
  ASSERT_TRUE(bookie_->checkpoint().ok());
  bookie_.reset();
  open();
  EXPECT_EQ(read(11, 49).status, bookie_wire::OK);
}

TEST_F(BookieTest, MoreThanOneLedgerDirectoryIsRefusedClearly) {
  config_.ledger_directories = {(dir_ / "l1").string(), (dir_ / "l2").string()};
  auto b = Bookie::open(config_);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("ledgerDirectories"), std::string::npos)
      << b.status().to_string();
}

TEST_F(BookieTest, FailedJournalSyncMakesTheBookieReadOnlyWithoutFalseAcks) {
  FaultInjectionEnv& env = faulty_;
  open(env);
  ASSERT_EQ(add(5, 0, -1, "ok"), bookie_wire::OK);
  bool notified = false;
  bookie_->on_read_only([&] { notified = true; });
  env.fail_sync = true;
  EXPECT_NE(add(5, 1, 0, "lost"), bookie_wire::OK);
  EXPECT_TRUE(bookie_->read_only());
  EXPECT_TRUE(notified);
  env.fail_sync = false;
  EXPECT_EQ(add(5, 2, 1, "after"), bookie_wire::READ_ONLY);
  EXPECT_EQ(read(5, 0).status, bookie_wire::OK);  // reads go on
  EXPECT_TRUE(bookie_->info().read_only());
}

TEST_F(BookieTest, FullDiskTurnsReadOnly) {
  FaultInjectionEnv& env = faulty_;
  config_.disk_check_interval_ms = 100;
  config_.disk_usage_threshold = 0.5;
  env.free_bytes_override = 1;  // as good as full
  open(env);
  for (int i = 0; i < 50 && !bookie_->read_only(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(bookie_->read_only());
  EXPECT_EQ(add(1, 0, -1, "x"), bookie_wire::READ_ONLY);
}

TEST(BookieConfigTest, GroupWaitTakesFractionsOfAMillisecond) {
  BookieConfig config;
  ConfigSchema schema("bookie");
  bind_bookie_config(schema, &config);
  ASSERT_TRUE(schema.load_text("journalMaxGroupWaitMSec=0.2\n", "bookie.conf").ok());
  EXPECT_DOUBLE_EQ(config.journal_max_group_wait_msec, 0.2);
  ASSERT_TRUE(schema.load_text("journalMaxGroupWaitMSec=2\n", "bookie.conf").ok());
  EXPECT_DOUBLE_EQ(config.journal_max_group_wait_msec, 2.0);
  Status bad = schema.load_text("journalMaxGroupWaitMSec=-1\n", "bookie.conf");
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace magnetar::bookie
