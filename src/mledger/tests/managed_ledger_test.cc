// The managed ledger over real bookies (in-process): adds in order, reopen, rollover by
// entries and time, trimming under retention, terminate, fencing by a second owner, the
// entry cache serving tailing reads, batched backlog reads.

#include "mledger/managed_ledger.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "ledger/bookkeeper.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/ids.h"
#include "testing/test_name.h"

namespace magnetar::mledger {
namespace {

using magnetar::testing::E;
using magnetar::testing::L;

using ledger::test::Cluster;
using namespace std::chrono_literals;

using magnetar::testing::test_name;

BufferChain payload(int i) {
  return BufferChain(Buffer::copy_of("entry-" + std::to_string(i)));
}

ManagedLedgerConfig small_config() {
  ManagedLedgerConfig c;
  c.ensemble_size = 2;
  c.write_quorum = 2;
  c.ack_quorum = 2;
  c.min_ledger_rollover_time_minutes = 0;
  c.mark_delete_rate_limit = 0;   // every cursor update persisted at once
  c.retention_time_minutes = -1;  // tests that trim set their retention
  c.retention_size_mb = -1;
  return c;
}

struct Fixture {
  explicit Fixture(const std::string& name, int bookies = 2) : cluster(name) {
    for (int i = 0; i < bookies; ++i) cluster.add_bookie();
    bk = std::make_unique<ledger::BookKeeper>(cluster.store(), cluster.executor());
    factory = std::make_unique<ManagedLedgerFactory>(cluster.store(), *bk, factory_config());
  }
  ~Fixture() {
    if (factory) (void)cluster.await(factory->close());
    factory.reset();
    bk.reset();
  }
  static ManagedLedgerFactoryConfig factory_config() {
    ManagedLedgerFactoryConfig f;
    f.cache_size_mb = 64;
    f.retention_check_interval_seconds = 3600;
    f.cache_eviction_time_threshold_ms = 600000;  // tests evict by position, not age
    return f;
  }
  std::shared_ptr<ManagedLedger> open(const std::string& name, ManagedLedgerConfig c) {
    auto ml = cluster.await(factory->open(name, c));
    EXPECT_TRUE(ml.ok()) << ml.status().to_string();
    return ml.ok() ? *ml : nullptr;
  }
  // A second "broker": its own BookKeeper client and factory over the same store.
  void restart_factory() {
    (void)cluster.await(factory->close());
    factory = std::make_unique<ManagedLedgerFactory>(cluster.store(), *bk, factory_config());
  }
  Position add(ManagedLedger& ml, int i) {
    auto p = cluster.await(ml.add(payload(i)));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? *p : Position{};
  }
  std::vector<std::string> read_all(ManagedCursor& cursor) {
    std::vector<std::string> out;
    while (true) {
      auto entries = cluster.await(cursor.read(50));
      EXPECT_TRUE(entries.ok()) << entries.status().to_string();
      if (!entries.ok() || entries->empty()) break;
      for (auto& e : *entries) out.push_back(e.data.to_string());
    }
    return out;
  }

  Cluster cluster;
  std::unique_ptr<ledger::BookKeeper> bk;
  std::unique_ptr<ManagedLedgerFactory> factory;
};

TEST(ManagedLedgerTest, AddsCompleteInOrderAndSurviveReopen) {
  Fixture f(test_name());
  auto ml = f.open("tenant/ns/persistent/t1", small_config());
  ASSERT_TRUE(ml);
  std::vector<Position> positions;
  int done = 0;
  for (int i = 0; i < 300; ++i) {
    ml->async_add(payload(i), [&, i](Result<Position> p) {
      ASSERT_TRUE(p.ok()) << p.status().to_string();
      EXPECT_EQ(done, i) << "completions out of order";
      ++done;
      positions.push_back(*p);
    });
  }
  f.cluster.loop().run_until([&] { return done == 300; }, 20s);
  ASSERT_EQ(done, 300);
  for (size_t i = 1; i < positions.size(); ++i) EXPECT_LT(positions[i - 1], positions[i]);
  EXPECT_EQ(ml->last_confirmed(), positions.back());
  EXPECT_EQ(ml->number_of_entries(), 300);

  f.restart_factory();
  auto again = f.open("tenant/ns/persistent/t1", small_config());
  ASSERT_TRUE(again);
  EXPECT_EQ(again->number_of_entries(), 300);
  EXPECT_EQ(again->last_confirmed(), positions.back());
  // The reopened ledger writes to a new ledger after the recovered one.
  EXPECT_GT(again->current_ledger_id(), positions.back().ledger_id);
  auto reader = again->new_non_durable_cursor(again->first_position());
  auto all = f.read_all(*reader);
  ASSERT_EQ(all.size(), 300u);
  for (int i = 0; i < 300; ++i)
    EXPECT_EQ(all[static_cast<size_t>(i)], "entry-" + std::to_string(i));
  auto p = f.add(*again, 300);
  EXPECT_EQ(p.ledger_id, again->current_ledger_id());
  EXPECT_EQ(p.entry_id.value(), 0);
}

TEST(ManagedLedgerTest, RolloverByEntryCount) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_entries_per_ledger = 10;
  auto ml = f.open("t/ns/persistent/roll", config);
  ASSERT_TRUE(ml);
  auto cursor = f.cluster.await(ml->open_cursor("sub", InitialPosition::kEarliest));
  ASSERT_TRUE(cursor.ok());
  for (int i = 0; i < 35; ++i) f.add(*ml, i);
  // 10 + 10 + 10 + 5: three full ledgers and the current one.
  ASSERT_EQ(ml->ledgers().size(), 4u);
  auto it = ml->ledgers().begin();
  for (int i = 0; i < 3; ++i, ++it) {
    EXPECT_EQ(it->second.entries, 10);
    EXPECT_GT(it->second.timestamp_ms, 0);
  }
  EXPECT_EQ(it->second.entries, 5);
  auto all = f.read_all(**cursor);
  ASSERT_EQ(all.size(), 35u);
  EXPECT_EQ(all[34], "entry-34");
  // The ledger list in the metadata store matches (reopen).
  f.restart_factory();
  auto again = f.open("t/ns/persistent/roll", config);
  EXPECT_EQ(again->number_of_entries(), 35);
  auto stats = again->internal_stats();
  EXPECT_EQ(stats["numberOfEntries"], 35);
  EXPECT_EQ(stats["ledgers"].size(), 5u);  // 4 + the new current ledger
}

TEST(ManagedLedgerTest, RolloverByTimeOnlyWithEntries) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_ledger_rollover_time_minutes = 0.005;  // 300 ms (x up to 1.05)
  config.retention_time_minutes = -1;               // keep the rolled ledger for the check
  auto ml = f.open("t/ns/persistent/timed", config);
  ASSERT_TRUE(ml);
  const LedgerId first = ml->current_ledger_id();
  f.cluster.loop().run_for(700ms);
  EXPECT_EQ(ml->current_ledger_id(), first) << "an empty ledger is not rolled over";
  f.add(*ml, 0);
  f.cluster.loop().run_until(
      [&] {
        return ml->current_ledger_id() != first &&
               ml->state() == ManagedLedger::State::kLedgerOpened;
      },
      5s);
  EXPECT_NE(ml->current_ledger_id(), first);
  EXPECT_EQ(ml->ledgers().at(first).entries, 1);
  EXPECT_EQ(ml->state(), ManagedLedger::State::kLedgerOpened);
}

TEST(ManagedLedgerTest, TrimsConsumedLedgersUnderRetention) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_entries_per_ledger = 5;
  config.retention_time_minutes = 0;
  config.retention_size_mb = 0;
  auto ml = f.open("t/ns/persistent/trim", config);
  auto cursor = *f.cluster.await(ml->open_cursor("sub", InitialPosition::kEarliest));
  std::vector<Position> positions;
  for (int i = 0; i < 23; ++i) positions.push_back(f.add(*ml, i));
  ASSERT_EQ(ml->ledgers().size(), 5u);
  const LedgerId first_ledger = ml->ledgers().begin()->first;
  // Consume the first two ledgers and a bit of the third.
  ASSERT_TRUE(f.cluster.await(cursor->mark_delete(positions[11])).ok());
  f.cluster.loop().run_until([&] { return ml->ledgers().size() == 3; }, 5s);
  ASSERT_EQ(ml->ledgers().size(), 3u);
  EXPECT_EQ(ml->ledgers().begin()->first, positions[10].ledger_id);
  // The BookKeeper ledgers are gone too.
  auto exists = f.cluster.await(f.bk->read_metadata(first_ledger));
  EXPECT_TRUE(exists.status().is(Errc::kNotFound)) << exists.status().to_string();
  EXPECT_EQ(ml->counters().ledgers_trimmed, 2);
  // A non-durable reader does not hold data back, and is moved past deleted ledgers.
  auto reader = ml->new_non_durable_cursor(positions[0]);
  ASSERT_TRUE(f.cluster.await(cursor->mark_delete(positions[22])).ok());
  f.cluster.loop().run_until([&] { return ml->ledgers().size() == 1; }, 5s);
  EXPECT_EQ(ml->ledgers().size(), 1u) << "only the current ledger is left";
  // The reader skips the deleted ledgers; the current ledger (entries 20..22) stays.
  auto rest = f.read_all(*reader);
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest.front(), "entry-20");
  EXPECT_EQ(cursor->backlog_entries(), 0);
}

TEST(ManagedLedgerTest, RetentionSizeAndTimeKeepConsumedLedgers) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_entries_per_ledger = 4;
  config.retention_time_minutes = -1;
  config.retention_size_mb = -1;  // keep everything
  auto ml = f.open("t/ns/persistent/keep", config);
  auto cursor = *f.cluster.await(ml->open_cursor("sub", InitialPosition::kEarliest));
  Position last;
  for (int i = 0; i < 12; ++i) last = f.add(*ml, i);
  ASSERT_TRUE(f.cluster.await(cursor->mark_delete(last)).ok());
  ASSERT_TRUE(f.cluster.await(ml->trim()).ok());
  EXPECT_EQ(ml->ledgers().size(), 4u) << "infinite retention keeps consumed ledgers";

  // Time retention: consumed ledgers older than 0.01 min (600 ms) go.
  ml->set_retention(0.01, -1);
  ASSERT_TRUE(f.cluster.await(ml->trim()).ok());
  EXPECT_EQ(ml->ledgers().size(), 4u) << "not old enough yet";
  f.cluster.loop().run_for(800ms);
  ASSERT_TRUE(f.cluster.await(ml->trim()).ok());
  EXPECT_EQ(ml->ledgers().size(), 1u);
}

TEST(ManagedLedgerTest, RetentionBySizeKeepsNewestConsumedLedgers) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_entries_per_ledger = 2;
  config.retention_time_minutes = -1;
  config.retention_size_mb = 1;
  auto ml = f.open("t/ns/persistent/size", config);
  auto cursor = *f.cluster.await(ml->open_cursor("sub", InitialPosition::kEarliest));
  const std::string big(300 * 1024, 'b');  // 2 per ledger: 600 KiB per ledger
  Position last;
  for (int i = 0; i < 8; ++i) {
    last = *f.cluster.await(ml->add(BufferChain(Buffer::copy_of(big))));
  }
  ASSERT_TRUE(f.cluster.await(cursor->mark_delete(last)).ok());
  ASSERT_TRUE(f.cluster.await(ml->trim()).ok());
  // 2.4 MB consumed: ledgers are dropped oldest first while >= 1 MB would remain.
  EXPECT_LE(ml->total_size(), 2 * 600 * 1024);
  EXPECT_GE(ml->total_size(), 1024 * 1024);
}

TEST(ManagedLedgerTest, TailingReadsComeFromTheCacheBacklogFromBookiesInBatches) {
  Fixture f(test_name());
  auto ml = f.open("t/ns/persistent/cache", small_config());
  auto cursor = *f.cluster.await(ml->open_cursor("sub"));
  for (int i = 0; i < 200; ++i) f.add(*ml, i);
  auto all = f.read_all(*cursor);
  ASSERT_EQ(all.size(), 200u);
  EXPECT_EQ(ml->counters().entries_read_from_bookies, 0) << "tailing reads touched a bookie";
  EXPECT_EQ(ml->counters().entries_read_from_cache, 200);
  // Everything read by every active cursor is evicted.
  EXPECT_EQ(ml->internal_stats()["cacheEntries"], 0);

  // Backlog: a fresh process has an empty cache.
  f.restart_factory();
  auto again = f.open("t/ns/persistent/cache", small_config());
  auto earliest = again->new_non_durable_cursor(again->first_position());
  // The first batch comes from the bookies, and the next one is read ahead meanwhile.
  auto first_batch = f.cluster.await(earliest->read(100));
  ASSERT_TRUE(first_batch.ok());
  ASSERT_EQ(first_batch->size(), 100u);
  f.cluster.loop().run_until([&] { return again->counters().entries_read_from_bookies == 200; },
                             5s);
  EXPECT_EQ(again->counters().entries_read_from_bookies, 200) << "no read-ahead";
  int batches = 1;
  size_t total = 100;
  while (true) {
    auto entries = f.cluster.await(earliest->read(100));
    ASSERT_TRUE(entries.ok());
    if (entries->empty()) break;
    ++batches;
    total += entries->size();
  }
  EXPECT_EQ(total, 200u);
  EXPECT_EQ(again->counters().entries_read_from_bookies, 200);
  EXPECT_EQ(again->counters().bookie_read_batches, batches);
  EXPECT_EQ(batches, 2);
}

TEST(ManagedLedgerTest, ReadOrWaitWakesOnAdd) {
  Fixture f(test_name());
  auto ml = f.open("t/ns/persistent/wait", small_config());
  auto cursor = *f.cluster.await(ml->open_cursor("sub"));
  std::optional<Result<std::vector<Entry>>> got;
  asio::co_spawn(
      f.cluster.executor(), [&]() -> Task<void> { got.emplace(co_await cursor->read_or_wait(10)); },
      asio::detached);
  f.cluster.loop().run_for(100ms);
  EXPECT_FALSE(got.has_value());
  f.add(*ml, 7);
  f.cluster.loop().run_until([&] { return got.has_value(); }, 5s);
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok());
  ASSERT_EQ((*got)->size(), 1u);
  EXPECT_EQ((*got)->front().data.to_string(), "entry-7");

  // Cancelled waits end with kCancelled.
  got.reset();
  asio::co_spawn(
      f.cluster.executor(), [&]() -> Task<void> { got.emplace(co_await cursor->read_or_wait(10)); },
      asio::detached);
  f.cluster.loop().run_for(50ms);
  cursor->cancel_wait();
  f.cluster.loop().run_until([&] { return got.has_value(); }, 5s);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status().code(), make_error_code(Error::kCancelled));
}

TEST(ManagedLedgerTest, TerminateEndsAddsAndReads) {
  Fixture f(test_name());
  auto ml = f.open("t/ns/persistent/term", small_config());
  auto cursor = *f.cluster.await(ml->open_cursor("sub", InitialPosition::kEarliest));
  Position last;
  for (int i = 0; i < 5; ++i) last = f.add(*ml, i);
  auto end = f.cluster.await(ml->terminate());
  ASSERT_TRUE(end.ok()) << end.status().to_string();
  EXPECT_EQ(*end, last);
  auto rejected = f.cluster.await(ml->add(payload(99)));
  EXPECT_EQ(rejected.status().code(), make_error_code(Error::kTerminated));
  EXPECT_EQ(f.read_all(*cursor).size(), 5u);
  auto at_end = f.cluster.await(cursor->read_or_wait(10));
  EXPECT_EQ(at_end.status().code(), make_error_code(Error::kNoMoreEntries));

  f.restart_factory();
  auto again = f.open("t/ns/persistent/term", small_config());
  EXPECT_TRUE(again->terminated());
  EXPECT_EQ(again->last_confirmed(), last);
  EXPECT_EQ(f.cluster.await(again->add(payload(100))).status().code(),
            make_error_code(Error::kTerminated));
}

TEST(ManagedLedgerTest, SecondOwnerFencesTheFirst) {
  Fixture f(test_name());
  auto first = f.open("t/ns/persistent/owner", small_config());
  for (int i = 0; i < 10; ++i) f.add(*first, i);
  // Another broker (own client and factory) takes the ledger over.
  ledger::BookKeeper bk2(f.cluster.store(), f.cluster.executor());
  ManagedLedgerFactory factory2(f.cluster.store(), bk2, Fixture::factory_config());
  auto second = f.cluster.await(factory2.open("t/ns/persistent/owner", small_config()));
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_EQ((*second)->number_of_entries(), 10);
  // The old owner's next add fails: its ledger is fenced.
  auto late = f.cluster.await(first->add(payload(10)));
  EXPECT_FALSE(late.ok());
  EXPECT_TRUE(late.status().is(Errc::kFenced)) << late.status().to_string();
  EXPECT_EQ(first->state(), ManagedLedger::State::kFenced);
  // The new owner writes on.
  auto p = f.cluster.await((*second)->add(payload(11)));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ((*second)->number_of_entries(), 11);
  (void)f.cluster.await(factory2.close());
}

// The broker that takes a log over may hold a block of ledger ids reserved before the one the
// previous owner used: its new ledger must still come after every ledger of the log, or
// cursors (which order positions by ledger id) never reach what it writes.
TEST(ManagedLedgerTest, ATakeoverByABrokerWithOlderLedgerIdsKeepsTheLogInOrder) {
  Fixture f(test_name());
  // The second broker reserves its block of ids first (a ledger of another log).
  ledger::BookKeeper bk2(f.cluster.store(), f.cluster.executor());
  ManagedLedgerFactory factory2(f.cluster.store(), bk2, Fixture::factory_config());
  auto other = f.cluster.await(factory2.open("t/ns/persistent/elsewhere", small_config()));
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  auto first = f.open("t/ns/persistent/order", small_config());
  auto cursor = *f.cluster.await(first->open_cursor("sub", InitialPosition::kEarliest));
  for (int i = 0; i < 5; ++i) f.add(*first, i);
  const LedgerId first_ledger = first->current_ledger_id();
  ASSERT_GT(first_ledger, (*other)->current_ledger_id());
  // The first owner is gone; the second takes the log over and writes on.
  auto second = f.cluster.await(factory2.open("t/ns/persistent/order", small_config()));
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  for (int i = 5; i < 10; ++i) {
    auto p = f.cluster.await((*second)->add(payload(i)));
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_GT(p->ledger_id, first_ledger) << "a ledger older than the log's last one";
  }
  auto reader = f.cluster.await((*second)->open_cursor("late", InitialPosition::kEarliest));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto all = f.read_all(**reader);
  ASSERT_EQ(all.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], "entry-" + std::to_string(i));
  (void)f.cluster.await(factory2.close());
}

TEST(ManagedLedgerTest, WriteFailureClosesTheLedgerAndALaterAddStartsANewOne) {
  Fixture f(test_name());
  auto ml = f.open("t/ns/persistent/fail", small_config());
  auto cursor = *f.cluster.await(ml->open_cursor("sub", InitialPosition::kEarliest));
  for (int i = 0; i < 10; ++i) f.add(*ml, i);
  const LedgerId first = ml->current_ledger_id();
  // One of the two bookies stops taking writes: no ledger can reach its ack quorum of 2.
  f.cluster.bookies()[0]->bookie->set_read_only("test: refuse writes");
  auto failed = f.cluster.await(ml->add(payload(10)));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), make_error_code(Error::kWriteFailed))
      << failed.status().to_string();
  EXPECT_EQ(ml->state(), ManagedLedger::State::kClosedLedger);
  // The failed ledger was closed at its last acknowledged entry.
  auto md = f.cluster.await(f.bk->read_metadata(first));
  ASSERT_TRUE(md.ok()) << md.status().to_string();
  EXPECT_EQ(md->state, ledger::LedgerState::kClosed);
  EXPECT_EQ(md->last_entry_id, 9);
  // A writable bookie arrives: the next add creates a ledger and succeeds.
  f.cluster.add_bookie();
  f.cluster.loop().run_until(
      [&] {
        auto available = f.cluster.await(f.bk->available_bookies());
        return available.ok() && available->size() == 2;
      },
      10s);
  auto p = f.cluster.await(ml->add(payload(11)));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_NE(p->ledger_id, first);
  auto all = f.read_all(*cursor);
  ASSERT_EQ(all.size(), 11u);
  EXPECT_EQ(all[9], "entry-9");
  EXPECT_EQ(all[10], "entry-11");
  // Everything survives a reopen.
  f.restart_factory();
  EXPECT_EQ(f.open("t/ns/persistent/fail", small_config())->number_of_entries(), 11);
}

TEST(ManagedLedgerTest, FindNewestMatchingSearchesAcrossLedgers) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_entries_per_ledger = 7;
  auto ml = f.open("t/ns/persistent/find", config);
  std::vector<Position> positions;
  for (int i = 0; i < 50; ++i) positions.push_back(f.add(*ml, i));
  auto value = [](const Entry& e) { return std::stoi(e.data.to_string().substr(6)); };
  auto found = f.cluster.await(ml->find_newest_matching(
      ml->first_position(), [&](const Entry& e) { return value(e) <= 23; }));
  ASSERT_TRUE(found.ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ(**found, positions[23]);
  auto none = f.cluster.await(
      ml->find_newest_matching(ml->first_position(), [&](const Entry& e) { return value(e) < 0; }));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(ManagedLedgerTest, DeleteRemovesLedgersCursorsAndNode) {
  Fixture f(test_name());
  auto config = small_config();
  config.max_entries_per_ledger = 3;
  auto ml = f.open("t/ns/persistent/del", config);
  auto cursor = *f.cluster.await(ml->open_cursor("sub"));
  Position p;
  for (int i = 0; i < 10; ++i) p = f.add(*ml, i);
  ASSERT_TRUE(f.cluster.await(cursor->mark_delete(p)).ok());
  ASSERT_TRUE(f.cluster.await(f.factory->remove("t/ns/persistent/del", config)).ok());
  auto ledgers = f.cluster.await(f.bk->list_ledgers());
  ASSERT_TRUE(ledgers.ok());
  EXPECT_TRUE(ledgers->empty()) << ledgers->size() << " ledgers left";
  auto node = f.cluster.await(f.cluster.store().exists("/managed-ledgers/t/ns/persistent/del"));
  EXPECT_FALSE(*node);
}

}  // namespace
}  // namespace magnetar::mledger

namespace magnetar::mledger {
namespace {

// A topic reloaded while its unload still closes the managed ledger: the closing ledger
// refuses adds at once, and the factory opens a fresh one (after the close) instead of
// handing out the closing one.
TEST(ManagedLedgerCloseTest, AReopenDuringCloseGetsAFreshLedgerThatTakesAdds) {
  Fixture f(test_name());
  auto ml = f.open("tenant/ns/persistent/closing", small_config());
  ASSERT_NE(ml, nullptr);
  f.add(*ml, 0);
  // Start the close and, before it finishes, an add and a second open (all on the loop).
  struct Outcome {
    bool add_refused = false;
    std::shared_ptr<ManagedLedger> reopened;
  };
  ManagedLedgerFactory* factory = f.factory.get();
  auto scenario = [ml, factory]() -> Task<Outcome> {
    Outcome out;
    auto closing = [ml]() -> Task<void> { (void)co_await ml->close(); };
    auto executor = co_await asio::this_coro::executor;
    asio::co_spawn(executor, std::move(closing), asio::detached);
    co_await asio::post(executor, asio::use_awaitable);  // close() runs to its first wait
    bool refused = false;
    ml->async_add(payload(1), [&refused](Result<Position> p) { refused = !p.ok(); });
    out.add_refused = refused;  // refused at once, not queued
    auto reopened = co_await factory->open("tenant/ns/persistent/closing", small_config());
    if (reopened.ok()) out.reopened = *reopened;
    co_return out;
  };
  Outcome outcome = f.cluster.await(scenario());
  EXPECT_TRUE(outcome.add_refused);
  std::shared_ptr<ManagedLedger> reopened = outcome.reopened;
  ASSERT_NE(reopened, nullptr);
  EXPECT_NE(reopened, ml) << "the factory handed out the ledger being closed";
  EXPECT_EQ(ml->state(), ManagedLedger::State::kClosed);
  // The fresh one has the entry stored before the close and takes new ones.
  EXPECT_EQ(reopened->number_of_entries(), 1);
  f.add(*reopened, 2);
  EXPECT_EQ(reopened->number_of_entries(), 2);
}

}  // namespace
}  // namespace magnetar::mledger
