// The ledger client against real bookies: quorum adds, striping, ensemble change on a dead
// bookie, recovery fencing the old writer, a corrupt replica, parallel reads, pipelined
// recovery of a long tail and the length a recovery records.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>

#include "common/metrics.h"
#include "ledger/bookkeeper.h"
#include "net/fault_relay.h"
#include "ledger/tests/ledger_test_support.h"
#include "testing/ids.h"
#include "testing/test_name.h"

namespace magnetar::ledger {
namespace {

using magnetar::testing::E;
using magnetar::testing::L;

using test::Cluster;
using test::TestBookie;

BufferChain payload(int i) {
  return BufferChain(Buffer::copy_of("entry-" + std::to_string(i)));
}

using magnetar::testing::test_name;

// Payloads of different sizes, so that a length that counts entries (not bytes) shows.
std::string sized_payload(int i) {
  return std::string(static_cast<size_t>(1 + (i * 37) % 200), static_cast<char>('a' + i % 26)) +
         std::to_string(i);
}

// Issues the adds of `payloads` at once, as a busy writer pipelines them (so most go out
// carrying a LAC far behind), and waits for all of them. Returns how many succeeded.
size_t add_concurrently(Cluster& c, const std::shared_ptr<LedgerHandle>& lh,
                        const std::vector<std::string>& payloads) {
  size_t finished = 0, succeeded = 0;
  for (const std::string& p : payloads) {
    asio::co_spawn(
        c.executor(),
        [&, lh, p]() -> Task<void> {
          BufferChain chain(Buffer::copy_of(p));
          auto r = co_await lh->add(std::move(chain));
          if (r.ok()) ++succeeded;
          ++finished;
        },
        asio::detached);
  }
  c.await([&]() -> Task<bool> {
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (finished < payloads.size()) {
      t.expires_after(std::chrono::milliseconds(5));
      co_await t.async_wait(asio::use_awaitable);
    }
    co_return true;
  }());
  return succeeded;
}

std::vector<std::string> numbered(int first, int count) {
  std::vector<std::string> out;
  for (int i = first; i < first + count; ++i) out.push_back("entry-" + std::to_string(i));
  return out;
}

void expect_entries(const Result<std::vector<LedgerEntry>>& entries,
                    const std::vector<std::string>& payloads) {
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) {
    ASSERT_EQ((*entries)[i].entry_id.value(), static_cast<int64_t>(i));
    ASSERT_EQ((*entries)[i].payload.view(), payloads[i]) << "entry " << i;
  }
}

int64_t total_size(const std::vector<std::string>& payloads) {
  return std::accumulate(
      payloads.begin(), payloads.end(), int64_t{0},
      [](int64_t n, const std::string& p) { return n + static_cast<int64_t>(p.size()); });
}

TEST(LedgerHandleTest, AddReadCloseAndReopen) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, "secret"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  for (int i = 0; i < 100; ++i) {
    auto id = c.await((*lh)->add(payload(i)));
    ASSERT_TRUE(id.ok()) << id.status().to_string();
    EXPECT_EQ(id->value(), i);
  }
  EXPECT_EQ((*lh)->last_add_confirmed().value(), 99);
  auto entries = c.await((*lh)->read(E(0), E(99)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  ASSERT_EQ(entries->size(), 100u);
  EXPECT_EQ((*entries)[42].payload.view(), "entry-42");
  ASSERT_TRUE(c.await((*lh)->close()).ok());

  auto again = c.await(bk.open((*lh)->id(), "secret", false));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_TRUE((*again)->closed());
  EXPECT_EQ((*again)->metadata().last_entry_id, 99);
  EXPECT_EQ(c.await((*again)->read(E(99), E(99)))->front().payload.view(), "entry-99");
  EXPECT_FALSE(c.await((*again)->read(E(100), E(100))).ok());
  EXPECT_EQ(c.await(bk.open((*lh)->id(), "wrong", false)).status().code(),
            make_error_code(Errc::kPermissionDenied));
}

TEST(LedgerHandleTest, ConcurrentAddsCompleteInOrder) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, ""));
  ASSERT_TRUE(lh.ok());
  std::vector<int64_t> completed;
  int finished = 0;
  for (int i = 0; i < 200; ++i) {
    asio::co_spawn(
        c.executor(),
        [&, h = *lh, i]() -> Task<void> {
          BufferChain p = payload(i);
          auto r = co_await h->add(std::move(p));
          if (r.ok()) completed.push_back(r->value());
          ++finished;
        },
        asio::detached);
  }
  c.await([&]() -> Task<bool> {
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (finished < 200) {
      t.expires_after(std::chrono::milliseconds(5));
      co_await t.async_wait(asio::use_awaitable);
    }
    co_return true;
  }());
  ASSERT_EQ(completed.size(), 200u);
  EXPECT_TRUE(std::is_sorted(completed.begin(), completed.end()));
  auto entries = c.await((*lh)->read(E(0), E(199)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  for (int i = 0; i < 200; ++i)
    EXPECT_EQ((*entries)[i].payload.view(), "entry-" + std::to_string(i));
}

TEST(LedgerHandleTest, DeadBookieIsReplacedAndEveryAckedEntryReadsBack) {
  Cluster c(test_name());
  for (int i = 0; i < 4; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  std::string victim = (*lh)->metadata().segments.front().ensemble[1];
  c.find(victim)->stop();
  c.unregister(victim);
  for (int i = 50; i < 100; ++i) {
    auto id = c.await((*lh)->add(payload(i)));
    ASSERT_TRUE(id.ok()) << "entry " << i << ": " << id.status().to_string();
  }
  const auto& segments = (*lh)->metadata().segments;
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(std::count(segments.back().ensemble.begin(), segments.back().ensemble.end(), victim),
            0);
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  auto reader = c.await(bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok());
  auto entries = c.await((*reader)->read(E(0), E(99)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ((*entries)[i].payload.view(), "entry-" + std::to_string(i));
}

TEST(LedgerHandleTest, WithoutASpareBookieWritesGoOnAtTheAckQuorum) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  std::string victim = (*lh)->metadata().segments.front().ensemble[0];
  c.find(victim)->stop();
  c.unregister(victim);
  // No replacement exists, but every write set still has Qa = 2 live bookies.
  for (int i = 50; i < 100; ++i) {
    auto id = c.await((*lh)->add(payload(i)));
    ASSERT_TRUE(id.ok()) << "entry " << i << ": " << id.status().to_string();
  }
  EXPECT_EQ((*lh)->metadata().segments.size(), 1u);
  auto entries = c.await((*lh)->read(E(0), E(99)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  EXPECT_EQ((*entries)[99].payload.view(), "entry-99");
  // A spare appears: the retried ensemble change replaces the dead bookie.
  c.add_bookie();
  for (int i = 100; i < 200 && (*lh)->metadata().segments.size() == 1; ++i) {
    ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
    c.await([&]() -> Task<bool> {
      asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(20));
      co_await t.async_wait(asio::use_awaitable);
      co_return true;
    }());
  }
  ASSERT_EQ((*lh)->metadata().segments.size(), 2u);
  const auto& now = (*lh)->metadata().segments.back().ensemble;
  EXPECT_EQ(std::count(now.begin(), now.end(), victim), 0);
  ASSERT_TRUE(c.await((*lh)->close()).ok());
}

TestBookie& bookie_at(Cluster& c, int i) {
  return *c.bookies().at(static_cast<size_t>(i));
}

// Region-aware placement whose acknowledgements must span two regions
// (bookkeeper_enforceMinNumFaultDomainsForWrite): bookies 0 and 1 in region "a", the rest in
// region "b".
BookieTopology two_regions(Cluster& c, int bookies) {
  BookieTopology topology;
  for (int i = 0; i < bookies; ++i) {
    topology.location[bookie_at(c, i).id()] = i < 2 ? "/a/r1" : fmt::format("/b/r{}", i);
  }
  return topology;
}

std::shared_ptr<PlacementPolicy> two_region_policy(Cluster& c, int bookies, bool acks_span) {
  BookieTopology topology = two_regions(c, bookies);
  RegionAwareOptions options;
  options.acks_span_regions = acks_span;
  options.enforce = false;  // so that one region's two bookies may be used without the rule
  return make_region_aware_placement(std::move(topology), options, 1);
}

// E=3 Qw=3 Qa=2 over regions a (two bookies) and b (one): once b's bookie dies and no bookie
// of b can replace it, the two acknowledgements of region a alone are enough without the rule
// and never enough with it, where the add fails instead of being acknowledged in one region.
// Over the cluster's first three bookies (two_regions): a BookKeeper placing with
// two_region_policy and an E=3 Qw=3 Qa=2 ledger holding entries 0..19.
struct TwoRegionLedger {
  TwoRegionLedger(Cluster& c, bool acks_span)
      : bk(c.store(), c.executor(), BookKeeperOptions{{}, two_region_policy(c, 3, acks_span)}) {
    auto created = c.await(bk.create(3, 3, 2, "p"));
    EXPECT_TRUE(created.ok()) << created.status().to_string();
    if (!created.ok()) return;
    lh = *created;
    for (int i = 0; i < 20; ++i) EXPECT_TRUE(c.await(lh->add(payload(i))).ok()) << i;
  }
  BookKeeper bk;
  std::shared_ptr<LedgerHandle> lh;
};

// Region b's bookie 2 dies and its registration goes.
void lose_bookie_2(Cluster& c) {
  const std::string id = bookie_at(c, 2).id();
  bookie_at(c, 2).stop();
  c.unregister(id);
}

TEST(LedgerHandleTest, AcknowledgementsThatMustSpanRegionsAreNotTakenFromOneRegion) {
  for (bool acks_span : {false, true}) {
    SCOPED_TRACE(acks_span ? "acks must span two regions" : "any two acks");
    Cluster c(test_name() + (acks_span ? "-span" : "-any"));
    for (int i = 0; i < 3; ++i) c.add_bookie();
    TwoRegionLedger l(c, acks_span);
    ASSERT_TRUE(l.lh);
    lose_bookie_2(c);
    auto id = c.await(l.lh->add(payload(20)));
    if (acks_span) {
      EXPECT_TRUE(id.status().is(Errc::kUnavailable)) << id.status().to_string();
      EXPECT_EQ(l.lh->last_add_confirmed().value(), 19);
    } else {
      ASSERT_TRUE(id.ok()) << id.status().to_string();
      EXPECT_EQ(id->value(), 20);
    }
    // Closed, and its once-a-second retry of the ensemble change (no spare: degraded) run
    // out, before the BookKeeper and the loop go.
    (void)c.await(l.lh->close());
    c.loop().run_for(std::chrono::milliseconds(1200));
  }
}

// The same with a spare bookie in region b: the add waits for the replacement's copy, and the
// ledger's new segment spans both regions again.
TEST(LedgerHandleTest, AcknowledgementsThatMustSpanRegionsWaitForTheReplacementInTheOtherRegion) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  TwoRegionLedger l(c, true);
  ASSERT_TRUE(l.lh);
  TestBookie& spare = c.add_bookie();
  l.bk.placement().update_topology(two_regions(c, 4));
  lose_bookie_2(c);
  for (int i = 20; i < 40; ++i) {
    auto id = c.await(l.lh->add(payload(i)));
    ASSERT_TRUE(id.ok()) << "entry " << i << ": " << id.status().to_string();
  }
  ASSERT_EQ(l.lh->metadata().segments.size(), 2u);
  const auto& now = l.lh->metadata().segments.back().ensemble;
  EXPECT_EQ(std::count(now.begin(), now.end(), spare.id()), 1);
  auto entries = c.await(l.lh->read(E(0), E(39)));
  expect_entries(entries, numbered(0, 40));
  ASSERT_TRUE(c.await(l.lh->close()).ok());
}

TEST(LedgerHandleTest, AFailedWriterStillClosesAtItsLastConfirmedEntry) {
  Cluster c(test_name());
  for (int i = 0; i < 2; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(2, 2, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  for (int i = 0; i < 50; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  std::string victim = (*lh)->metadata().segments.front().ensemble[1];
  c.find(victim)->stop();
  c.unregister(victim);
  // No replacement and no ack quorum left: the handle fails.
  auto failed = c.await((*lh)->add(payload(50)));
  ASSERT_FALSE(failed.ok());
  EXPECT_FALSE(failed.status().is(Errc::kFenced));
  auto closed = c.await((*lh)->close());
  ASSERT_TRUE(closed.ok()) << closed.to_string();
  // Another client sees a closed ledger ending at the last acknowledged entry, all readable.
  BookKeeper other(c.store(), c.executor());
  auto reader = c.await(other.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  EXPECT_TRUE((*reader)->closed());
  EXPECT_EQ((*reader)->metadata().last_entry_id, 49);
  auto entries = c.await((*reader)->read(E(0), E(49)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  EXPECT_EQ((*entries)[49].payload.view(), "entry-49");
}

// Recovery fences the old writer, and both agree on the end. Again with one bookie the
// recovering client cannot reach (its link cut, the bookie alive: a partition): every write set
// has Qw - Qa + 1 = 2 fenced without it, and the recovery goes on. That bookie never answers
// (its relay holds every byte until the end) and the request timeout is far longer than the
// test's own: recovery that waited for it would not finish.
TEST(LedgerHandleTest, RecoveryFencesTheOldWriterAndBothAgreeOnTheEnd) {
  for (bool one_cut : {false, true}) {
    SCOPED_TRACE(one_cut ? "one bookie cut off from the recovering client" : "all reachable");
    Cluster c(test_name() + (one_cut ? "-cut" : ""));
    for (int i = 0; i < 3; ++i) c.add_bookie();
    BookKeeper writer_bk(c.store(), c.executor());
    auto writer = c.await(writer_bk.create(3, 3, 2, "p"));
    ASSERT_TRUE(writer.ok());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.await((*writer)->add(payload(i))).ok());

    BookKeeperOptions options;
    std::unique_ptr<net::FaultRelay> relay;
    if (one_cut) {
      const std::string cut = (*writer)->metadata().segments[0].ensemble[2];
      net::FaultRelayOptions relay_options;
      relay_options.target_port = std::stoi(cut.substr(cut.rfind(':') + 1));
      auto started = net::FaultRelay::start(relay_options);
      ASSERT_TRUE(started.ok()) << started.status().to_string();
      relay = std::move(started).value();
      relay->cut();
      options.bookie_client.request_timeout = std::chrono::minutes(30);
      options.bookie_client.dial_overrides[cut] = relay->address();
    }
    BookKeeper reader_bk(c.store(), c.executor(), options);
    auto recovered = c.await(reader_bk.open((*writer)->id(), "p", true));
    ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
    EXPECT_TRUE((*recovered)->closed());
    EXPECT_EQ((*recovered)->metadata().last_entry_id, 19);
    if (relay) EXPECT_EQ(relay->stats().bytes_from_target, 0) << "the cut bookie answered";

    auto late = c.await((*writer)->add(payload(20)));
    ASSERT_FALSE(late.ok());
    EXPECT_TRUE(late.status().is(Errc::kFenced)) << late.status().to_string();
    EXPECT_EQ((*writer)->last_add_confirmed().value(), (*recovered)->metadata().last_entry_id);
    auto all = c.await((*recovered)->read(E(0), E(19)));
    ASSERT_TRUE(all.ok()) << all.status().to_string();
    EXPECT_EQ(all->back().payload.view(), "entry-19");
    // Opening for recovery again is a no-op on a closed ledger.
    auto again = c.await(reader_bk.open((*writer)->id(), "p", true));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ((*again)->metadata().last_entry_id, 19);
    if (relay) relay->heal();
  }
}

TEST(LedgerHandleTest, CorruptCopyIsReadFromAnotherReplica) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 3, "p"));
  ASSERT_TRUE(lh.ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  // Entry 0 is read from the first bookie of its write set first: corrupt that copy on disk.
  std::string first = (*lh)->metadata().ensemble_for(
      0)[static_cast<size_t>((*lh)->metadata().write_set(0).front())];
  test::TestBookie* b = c.find(first);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(b->bookie->checkpoint().ok());  // entries now live in entry logs
  int flipped = 0;
  for (auto& f : std::filesystem::recursive_directory_iterator(b->config.ledger_directories[0])) {
    if (f.path().extension() != ".log") continue;
    std::fstream file(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    size_t at = bytes.find("entry-0");
    if (at == std::string::npos) continue;
    file.seekp(static_cast<std::streamoff>(at + 6));
    file.put('X');
    ++flipped;
  }
  ASSERT_EQ(flipped, 1);
  auto entries = c.await((*lh)->read(E(0), E(0)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  EXPECT_EQ(entries->front().payload.view(), "entry-0");
}

TEST(LedgerHandleTest, NotEnoughBookiesIsAClearError) {
  Cluster c(test_name());
  for (int i = 0; i < 2; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, ""));
  ASSERT_FALSE(lh.ok());
  EXPECT_TRUE(lh.status().is(Errc::kUnavailable)) << lh.status().to_string();
}

TEST(LedgerHandleTest, DeleteRemovesTheMetadata) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, ""));
  ASSERT_TRUE(lh.ok());
  auto before = c.await(bk.list_ledgers());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->size(), 1u);
  ASSERT_TRUE(c.await(bk.remove((*lh)->id())).ok());
  EXPECT_TRUE(c.await(bk.list_ledgers())->empty());
  EXPECT_TRUE(c.await(bk.remove((*lh)->id())).is(Errc::kNotFound));
}

TEST(LedgerHandleTest, ListingFindsLedgersOfBothLayoutsAndNothingElse) {
  Cluster c(test_name());
  BookKeeper bk(c.store(), c.executor());
  const int64_t max = std::numeric_limits<int64_t>::max();
  const std::vector<int64_t> hierarchical = {
      0, 42, 10001, 1234567890, 2147483646, 2147483647, int64_t{1} << 40, max};
  const std::vector<int64_t> flat = {7, 99, 5000000000};
  std::vector<std::string> paths = {"/ledgers/available/127.0.0.1:3181",
                                    "/ledgers/cookies/127.0.0.1:3181",
                                    "/ledgers/INSTANCEID",
                                    "/ledgers/00/0000/Lxyz1",
                                    "/ledgers/00/abcd/L0001",
                                    "/ledgers/00/0001",  // left empty by a deleted ledger
                                    "/ledgers/L42"};
  for (int64_t id : hierarchical) paths.push_back(ledger_path(id));
  for (int64_t id : flat) paths.push_back(metadata::flat_ledger_path(id));
  for (const std::string& path : paths) {
    ASSERT_TRUE(c.await(c.store().put_recursive(path, "{}")).ok()) << path;
  }
  auto listed = c.await(bk.list_ledgers());
  ASSERT_TRUE(listed.ok()) << listed.status().to_string();
  std::vector<LedgerId> expected;
  for (int64_t id : hierarchical) expected.emplace_back(id);
  for (int64_t id : flat) expected.emplace_back(id);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(*listed, expected);
}

TEST(LedgerHandleTest, ALedgerOfTheFlatLayoutIsRecoveredListedAndDeletedWhereItIs) {
  Cluster c(test_name());
  for (int i = 0; i < 2; ++i) c.add_bookie();
  BookKeeper writer_bk(c.store(), c.executor());
  auto lh = c.await(writer_bk.create(2, 2, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  // As an earlier version left it: an open ledger whose metadata sits at the flat path.
  const LedgerId id = (*lh)->id();
  auto node = c.await(c.store().get(ledger_path(id.value())));
  ASSERT_TRUE(node.ok() && node->has_value());
  ASSERT_TRUE(c.await(c.store().remove(ledger_path(id.value()))).ok());
  ASSERT_TRUE(
      c.await(c.store().put_recursive(metadata::flat_ledger_path(id.value()), (*node)->value))
          .ok());

  BookKeeper bk(c.store(), c.executor());
  auto recovered = c.await(bk.open(id, "p", true));
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  EXPECT_TRUE((*recovered)->closed());
  expect_entries(c.await((*recovered)->read(E(0), E(9))), numbered(0, 10));
  // The close was written where the ledger is; nothing appeared at the new path.
  auto closed = c.await(bk.read_metadata(id));
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  EXPECT_EQ(closed->last_entry_id, 9);
  EXPECT_FALSE(*c.await(c.store().exists(ledger_path(id.value()))));
  EXPECT_EQ(*c.await(bk.list_ledgers()), std::vector<LedgerId>{id});

  ASSERT_TRUE(c.await(bk.remove(id)).ok());
  EXPECT_FALSE(*c.await(c.store().exists(metadata::flat_ledger_path(id.value()))));
  EXPECT_TRUE(c.await(bk.list_ledgers())->empty());
  EXPECT_TRUE(c.await(bk.remove(id)).is(Errc::kNotFound));
}

TEST(LedgerHandleTest, TwoThousandEntriesReadBackInOneCallInEntryOrder) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const std::vector<std::string> payloads = numbered(0, 2000);
  ASSERT_EQ(add_concurrently(c, *lh, payloads), payloads.size());
  ASSERT_EQ((*lh)->last_add_confirmed().value(), 1999);
  expect_entries(c.await((*lh)->read(E(0), E(1999))), payloads);
  ASSERT_TRUE(c.await((*lh)->close()).ok());

  // Another client, with a window that does not divide the range.
  BookKeeperOptions options;
  options.max_parallel_reads = 7;
  BookKeeper reader_bk(c.store(), c.executor(), options);
  auto reader = c.await(reader_bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  expect_entries(c.await((*reader)->read(E(0), E(1999))), payloads);
}

double bookie_requests(const std::string& op) {
  auto family = metrics::default_registry().counter("magnetar_ledger_bookie_requests_total",
                                                    "Requests sent to bookies", {"op"});
  return family.ok() ? (*family)->get(op)->value() : -1;
}

// Waits until every bookie of the ledger's first ensemble answers a read of `entry`: with
// Qa < Qw, an add completes before the last replica of its write set stored it.
void wait_until_every_replica_has(Cluster& c, BookKeeper& bk, int64_t ledger, int64_t entry,
                                  const std::vector<std::string>& ensemble) {
  for (const std::string& bookie : ensemble) {
    bool stored = c.await([&]() -> Task<bool> {
      asio::steady_timer t(co_await asio::this_coro::executor);
      for (int attempt = 0; attempt < 1000; ++attempt) {
        bookie_wire::ReadRequest request;
        request.set_ledger_id(ledger);
        request.set_entry_id(entry);
        auto r = co_await bk.client().read(bookie, std::move(request));
        if (r.ok() && r->status == bookie_wire::OK) co_return true;
        t.expires_after(std::chrono::milliseconds(10));
        co_await t.async_wait(asio::use_awaitable);
      }
      co_return false;
    }());
    ASSERT_TRUE(stored) << bookie << " never stored entry " << entry;
  }
}

TEST(LedgerHandleTest, AnEnsembleThatStoresEveryEntryIsReadInRanges) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const std::vector<std::string> payloads = numbered(0, 500);
  ASSERT_EQ(add_concurrently(c, *lh, payloads), payloads.size());
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  // Adds are stored in order on each bookie, so the last entry on all three means all of it.
  wait_until_every_replica_has(c, bk, (*lh)->id().value(), 499,
                               (*lh)->metadata().segments.front().ensemble);
  const double ranges_before = bookie_requests("read_range");
  const double reads_before = bookie_requests("read");
  auto reader = c.await(bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  expect_entries(c.await((*reader)->read(E(0), E(499))), payloads);
  // 500 entries in pieces of 32: 16 range requests, no single-entry read.
  EXPECT_EQ(bookie_requests("read_range") - ranges_before, 16);
  EXPECT_EQ(bookie_requests("read") - reads_before, 0);
  // A middle slice, and a range that ends inside a piece.
  auto middle = c.await((*reader)->read(E(100), E(140)));
  ASSERT_TRUE(middle.ok()) << middle.status().to_string();
  ASSERT_EQ(middle->size(), 41u);
  EXPECT_EQ(middle->front().payload.view(), "entry-100");
  EXPECT_EQ(middle->back().payload.view(), "entry-140");
}

TEST(LedgerHandleTest, AReplicaWithoutPartOfTheLedgerCostsSingleReadsOnlyForWhatItLacks) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  // The second bookie is away while entries 100..299 are written (no spare: they reach the
  // other two, Qa), then back with only 0..99, as a replica that lags far behind would be.
  const std::string away = (*lh)->metadata().segments.front().ensemble[1];
  test::TestBookie* lagging = c.find(away);
  ASSERT_NE(lagging, nullptr);
  lagging->stop();
  for (int i = 100; i < 300; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  ASSERT_EQ((*lh)->metadata().segments.size(), 1u);
  c.start(*lagging);
  ASSERT_EQ(lagging->id(), away);

  BookKeeper reader_bk(c.store(), c.executor());
  auto reader = c.await(reader_bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  const double ranges_before = bookie_requests("read_range");
  const double reads_before = bookie_requests("read");
  expect_entries(c.await((*reader)->read(E(0), E(299))), numbered(0, 300));
  // 10 pieces of 32 rotating over the ensemble, 4 in flight: the returned bookie is asked
  // for [32, 63], which it has, then [128, 159] and (sent before that one came back)
  // [224, 255], which it answers without. Those 64 entries are read one by one (at most two
  // replicas each); the pieces sent later go to the other two bookies. Giving up on ranges
  // at the first short piece would have read 172 entries one by one.
  EXPECT_EQ(bookie_requests("read_range") - ranges_before, 10);
  const double single_reads = bookie_requests("read") - reads_before;
  EXPECT_GE(single_reads, 64);
  EXPECT_LE(single_reads, 128);
}

TEST(LedgerHandleTest, RangeReadsFallBackToSingleReadsWhereABookieIsMissingEntries) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const std::vector<std::string> payloads = numbered(0, 200);
  ASSERT_EQ(add_concurrently(c, *lh, payloads), payloads.size());
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  // One bookie of three is gone: its pieces fail and those entries come from the others.
  c.find((*lh)->metadata().segments.front().ensemble[1])->stop();
  BookKeeper reader_bk(c.store(), c.executor());
  auto reader = c.await(reader_bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  expect_entries(c.await((*reader)->read(E(0), E(199))), payloads);
  expect_entries(c.await((*reader)->read(E(0), E(199))), payloads);  // the bookie is now a suspect
}

TEST(LedgerHandleTest, ParallelReadFallsBackWhenABookieIsStopped) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const std::vector<std::string> payloads = numbered(0, 300);
  ASSERT_EQ(add_concurrently(c, *lh, payloads), payloads.size());
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  // Every entry keeps one live copy out of two.
  c.find((*lh)->metadata().segments.front().ensemble[0])->stop();

  BookKeeperOptions options;
  options.max_parallel_reads = 16;
  BookKeeper reader_bk(c.store(), c.executor(), options);
  auto reader = c.await(reader_bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  expect_entries(c.await((*reader)->read(E(0), E(299))), payloads);
}

TEST(LedgerHandleTest, ParallelReadFailsOnAnEntryNoReplicaServesAndTheHandleStaysUsable) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, "p"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const std::vector<std::string> payloads = numbered(0, 30);
  ASSERT_EQ(add_concurrently(c, *lh, payloads), payloads.size());
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  // Write sets are {0,1}, {1,2}, {2,0}: entries 0, 3, 6, ... lose both copies.
  const auto ensemble = (*lh)->metadata().segments.front().ensemble;
  c.find(ensemble[0])->stop();
  c.find(ensemble[1])->stop();

  BookKeeper reader_bk(c.store(), c.executor());
  auto reader = c.await(reader_bk.open((*lh)->id(), "p", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  auto all = c.await((*reader)->read(E(0), E(29)));
  ASSERT_FALSE(all.ok());
  EXPECT_TRUE(all.status().is(Errc::kUnavailable)) << all.status().to_string();
  auto some = c.await((*reader)->read(E(1), E(2)));
  ASSERT_TRUE(some.ok()) << some.status().to_string();
  EXPECT_EQ(some->front().payload.view(), "entry-1");
  EXPECT_EQ(some->back().payload.view(), "entry-2");
}

TEST(LedgerHandleTest, RecoveryFindsEveryEntryOfALongUnconfirmedTail) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper writer_bk(c.store(), c.executor());
  auto writer = c.await(writer_bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  const std::vector<std::string> payloads = numbered(0, 500);
  ASSERT_EQ(add_concurrently(c, *writer, payloads), payloads.size());
  // The writer confirmed all 500, but the bookies learnt a LAC far behind (each entry carries
  // the LAC of the moment it was sent): recovery must find the tail by reading forward.
  BookKeeper reader_bk(c.store(), c.executor());
  auto peek = c.await(reader_bk.open((*writer)->id(), "p", false));
  ASSERT_TRUE(peek.ok()) << peek.status().to_string();
  EXPECT_LT((*peek)->last_add_confirmed().value(), 400);

  auto recovered = c.await(reader_bk.open((*writer)->id(), "p", true));
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  EXPECT_TRUE((*recovered)->closed());
  EXPECT_EQ((*recovered)->metadata().last_entry_id, 499);
  EXPECT_EQ((*recovered)->metadata().length, total_size(payloads));
  expect_entries(c.await((*recovered)->read(E(0), E(499))), payloads);
  auto late = c.await((*writer)->add(payload(500)));
  ASSERT_FALSE(late.ok());
  EXPECT_TRUE(late.status().is(Errc::kFenced)) << late.status().to_string();
}

TEST(LedgerHandleTest, RecoveredLengthIsTheSumOfPayloadSizesAsAWritersClose) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  std::vector<std::string> payloads;
  for (int i = 0; i < 150; ++i) payloads.push_back(sized_payload(i));
  const int64_t expected = total_size(payloads);

  // A writer that closes records its running count of payload bytes.
  BookKeeper bk(c.store(), c.executor());
  auto closed = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(closed.ok()) << closed.status().to_string();
  for (const std::string& p : payloads) {
    ASSERT_TRUE(c.await((*closed)->add(BufferChain(Buffer::copy_of(p)))).ok());
  }
  ASSERT_TRUE(c.await((*closed)->close()).ok());
  EXPECT_EQ((*closed)->metadata().length, expected);

  // The same entries, the writer gone without closing: a confirmed prefix (added one by one)
  // and an unconfirmed tail (pipelined).
  auto abandoned = c.await(bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(abandoned.ok()) << abandoned.status().to_string();
  for (size_t i = 0; i < 100; ++i) {
    ASSERT_TRUE(c.await((*abandoned)->add(BufferChain(Buffer::copy_of(payloads[i])))).ok());
  }
  const std::vector<std::string> tail(payloads.begin() + 100, payloads.end());
  ASSERT_EQ(add_concurrently(c, *abandoned, tail), tail.size());

  BookKeeper recovery_bk(c.store(), c.executor());
  auto recovered = c.await(recovery_bk.open((*abandoned)->id(), "p", true));
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  EXPECT_EQ((*recovered)->metadata().last_entry_id, 149);
  EXPECT_EQ((*recovered)->metadata().length, expected);
  auto stored = c.await(recovery_bk.read_metadata((*abandoned)->id()));
  ASSERT_TRUE(stored.ok()) << stored.status().to_string();
  EXPECT_EQ(stored->state, LedgerState::kClosed);
  EXPECT_EQ(stored->last_entry_id, 149);
  EXPECT_EQ(stored->length, expected);
}

TEST(LedgerHandleTest, RecoveryReadsThePrefixAcrossAnEnsembleChange) {
  Cluster c(test_name());
  for (int i = 0; i < 4; ++i) c.add_bookie();
  BookKeeper writer_bk(c.store(), c.executor());
  auto writer = c.await(writer_bk.create(3, 3, 2, "p"));
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  std::vector<std::string> payloads;
  for (int i = 0; i < 160; ++i) payloads.push_back(sized_payload(i));
  for (size_t i = 0; i < 60; ++i) {
    ASSERT_TRUE(c.await((*writer)->add(BufferChain(Buffer::copy_of(payloads[i])))).ok());
  }
  std::string victim = (*writer)->metadata().segments.front().ensemble[1];
  c.find(victim)->stop();
  c.unregister(victim);
  for (size_t i = 60; i < 110; ++i) {
    ASSERT_TRUE(c.await((*writer)->add(BufferChain(Buffer::copy_of(payloads[i])))).ok());
  }
  ASSERT_EQ((*writer)->metadata().segments.size(), 2u);
  const std::vector<std::string> tail(payloads.begin() + 110, payloads.end());
  ASSERT_EQ(add_concurrently(c, *writer, tail), tail.size());

  BookKeeper reader_bk(c.store(), c.executor());
  auto recovered = c.await(reader_bk.open((*writer)->id(), "p", true));
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  EXPECT_EQ((*recovered)->metadata().last_entry_id, 159);
  EXPECT_EQ((*recovered)->metadata().length, total_size(payloads));
  expect_entries(c.await((*recovered)->read(E(0), E(159))), payloads);
}

TEST(LedgerHandleTest, RecoveringAnEmptyLedgerClosesItEmpty) {
  Cluster c(test_name());
  for (int i = 0; i < 3; ++i) c.add_bookie();
  BookKeeper writer_bk(c.store(), c.executor());
  auto writer = c.await(writer_bk.create(3, 2, 2, "p"));
  ASSERT_TRUE(writer.ok()) << writer.status().to_string();
  BookKeeper reader_bk(c.store(), c.executor());
  auto recovered = c.await(reader_bk.open((*writer)->id(), "p", true));
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  EXPECT_TRUE((*recovered)->closed());
  EXPECT_EQ((*recovered)->metadata().last_entry_id, -1);
  EXPECT_EQ((*recovered)->metadata().length, 0);
}

}  // namespace
}  // namespace magnetar::ledger

namespace magnetar::ledger {
namespace {

// The unconfirmed tail of an open ledger is re-replicated by recovery to a replacement when a
// bookie of its write set is dead: before, that entry could reach only Qa - 1 copies and the
// recovery failed until the bookie came back.
TEST(LedgerHandleTest, RecoveryWritesTheTailToAReplacementWhenABookieOfItsWriteSetIsDead) {
  Cluster c(test_name());
  for (int i = 0; i < 4; ++i) c.add_bookie();
  BookKeeper writer(c.store(), c.executor());
  auto lh = c.await(writer.create(3, 2, 2, "pw"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  constexpr int kEntries = 50;  // the last, entry 49, goes to positions 1 and 2
  for (int i = 0; i < kEntries; ++i) ASSERT_TRUE(c.await((*lh)->add(payload(i))).ok());
  const std::vector<std::string> ensemble = (*lh)->metadata().segments[0].ensemble;
  const std::string dead = ensemble[(kEntries - 1) % 3];
  c.find(dead)->stop();
  c.unregister(dead);

  BookKeeper reader(c.store(), c.executor());
  auto recovered = c.await(reader.open((*lh)->id(), "pw", true));
  ASSERT_TRUE(recovered.ok()) << recovered.status().to_string();
  const LedgerMetadata& md = (*recovered)->metadata();
  EXPECT_EQ(md.last_entry_id, kEntries - 1);
  ASSERT_EQ(md.segments.size(), 2u);
  EXPECT_EQ(md.segments[1].first_entry_id, kEntries - 1);  // the tail past the bookies' LAC
  EXPECT_EQ(std::count(md.segments[1].ensemble.begin(), md.segments[1].ensemble.end(), dead), 0);
  EXPECT_EQ(md.segments[0].ensemble, ensemble);  // what the dead bookie held before: unchanged
  auto entries = c.await((*recovered)->read(E(0), E(kEntries - 1)));
  ASSERT_TRUE(entries.ok()) << entries.status().to_string();
  for (int i = 0; i < kEntries; ++i) {
    EXPECT_EQ((*entries)[static_cast<size_t>(i)].payload.view(), "entry-" + std::to_string(i));
  }
}

}  // namespace
}  // namespace magnetar::ledger
