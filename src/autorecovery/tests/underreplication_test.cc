// Under-replication markers as BookKeeper lays them out, their text format, the claim/lock
// protocol between workers (two sessions of one memory: store), and the auditor election.

#include <gtest/gtest.h>

#include <set>

#include "autorecovery/auditor.h"
#include "autorecovery/underreplication.h"
#include "metadata/metadata_store.h"
#include "testing/event_loop.h"
#include "testing/test_name.h"

namespace magnetar::autorecovery {
namespace {

using magnetar::testing::test_name;

class Sessions {
 public:
  explicit Sessions(const std::string& name) : url_("memory:urm-" + name) {}
  ~Sessions() {
    for (auto& s : stores_) (void)loop_.await(s->close());
  }
  metadata::MetadataStore& open() {
    stores_.push_back(loop_.await(metadata::open_store(url_)).value());
    return *stores_.back();
  }
  template <typename T>
  T await(Task<T> task) {
    return loop_.await(std::move(task));
  }
  void run(Task<void> task) {
    auto wrapped = [](Task<void> t) -> Task<bool> {
      co_await std::move(t);
      co_return true;
    };
    (void)loop_.await(wrapped(std::move(task)));
  }
  testing::EventLoop& loop() { return loop_; }

 private:
  testing::EventLoop loop_;
  std::string url_;
  std::vector<std::unique_ptr<metadata::MetadataStore>> stores_;
};

TEST(UnderreplicationTest, MarkerAndLockPathsAreBookKeepers) {
  EXPECT_EQ(marker_path(1), "/ledgers/underreplication/ledgers/0000/0000/0000/0001/urL0000000001");
  EXPECT_EQ(marker_path(0x12345), "/ledgers/underreplication/ledgers/0000/0000/0001/2345/"
                                  "urL0000074565");
  const int64_t big = static_cast<int64_t>(0x4afebeef0000feedULL);
  EXPECT_EQ(marker_path(big),
            "/ledgers/underreplication/ledgers/4afe/beef/0000/feed/urL" + std::to_string(big));
  EXPECT_EQ(lock_path(42), "/ledgers/underreplication/locks/urL0000000042");
  EXPECT_EQ(ledger_id_from_marker_name("urL0000000042"), 42);
  EXPECT_EQ(ledger_id_from_marker_name("urL" + std::to_string(big)), big);
  EXPECT_FALSE(ledger_id_from_marker_name("urL"));
  EXPECT_FALSE(ledger_id_from_marker_name("urL12x"));
  EXPECT_FALSE(ledger_id_from_marker_name("L0000000042"));
  EXPECT_FALSE(ledger_id_from_marker_name("urL99999999999999999999"));
}

TEST(UnderreplicationTest, MarkerTextIsProtobufTextFormat) {
  MarkerData data;
  data.replicas = {"10.0.0.1:3181", "10.0.0.2:3181"};
  data.ctime_ms = 1700000000123;
  EXPECT_EQ(encode_marker(data),
            "replica: \"10.0.0.1:3181\"\nreplica: \"10.0.0.2:3181\"\nctime: 1700000000123\n");
  auto back = parse_marker(encode_marker(data));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->replicas, data.replicas);
  EXPECT_EQ(back->ctime_ms, data.ctime_ms);
  // One line, an unknown field, no ctime (older BookKeeper versions wrote none).
  auto other = parse_marker("replica: \"a:1\" replica: 'b:2' future_field: 7");
  ASSERT_TRUE(other.ok()) << other.status().to_string();
  EXPECT_EQ(other->replicas, (std::vector<std::string>{"a:1", "b:2"}));
  EXPECT_EQ(other->ctime_ms, -1);
  EXPECT_FALSE(parse_marker("replica \"a\"").ok());
  EXPECT_FALSE(parse_marker("replica: \"unterminated").ok());
  EXPECT_FALSE(parse_marker("ctime: soon").ok());
  EXPECT_EQ(encode_bookie_id("10.0.0.1:3181"), "bookieId: \"10.0.0.1:3181\"\n");
  EXPECT_EQ(parse_bookie_id("bookieId: \"10.0.0.1:3181\"\n"), "10.0.0.1:3181");
  EXPECT_FALSE(parse_bookie_id("hostname: \"x\""));
}

TEST(UnderreplicationTest, LayoutIsWrittenOnceAndAForeignOneIsRefused) {
  Sessions s(test_name());
  auto& store = s.open();
  UnderreplicationManager urm(store, "w1");
  ASSERT_TRUE(s.await(urm.ensure_layout()).ok());
  auto layout = s.await(store.get(std::string(kLayoutPath)));
  ASSERT_TRUE(layout.ok() && layout->has_value());
  EXPECT_EQ((*layout)->value, "type: \"BASIC\"\nversion: 1\n");
  EXPECT_TRUE(s.await(store.exists(std::string(kMarkersRoot))).value());
  EXPECT_TRUE(s.await(store.exists(std::string(kLocksRoot))).value());
  ASSERT_TRUE(s.await(urm.ensure_layout()).ok());  // again: unchanged
  ASSERT_TRUE(s.await(store.put(std::string(kLayoutPath), "type: \"BASIC\"\nversion: 2\n")).ok());
  Status st = s.await(urm.ensure_layout());
  EXPECT_TRUE(st.is(Errc::kNotSupported)) << st.to_string();
}

TEST(UnderreplicationTest, MarkingAgainAddsOnlyNewMissingBookies) {
  Sessions s(test_name());
  UnderreplicationManager urm(s.open(), "w1");
  ASSERT_TRUE(s.await(urm.ensure_layout()).ok());
  ASSERT_TRUE(s.await(urm.mark(7, {"b1:3181"})).ok());
  auto first = s.await(urm.get(7)).value();
  ASSERT_TRUE(first.has_value());
  EXPECT_GT(first->data.ctime_ms, 0);
  ASSERT_TRUE(s.await(urm.mark(7, {"b1:3181"})).ok());
  EXPECT_EQ(s.await(urm.get(7)).value()->version, first->version);  // nothing new: untouched
  ASSERT_TRUE(s.await(urm.mark(7, {"b2:3181", "b1:3181"})).ok());
  auto merged = s.await(urm.get(7)).value();
  EXPECT_EQ(merged->data.replicas, (std::vector<std::string>{"b1:3181", "b2:3181"}));
  ASSERT_TRUE(s.await(urm.mark(3, {"b9:3181"})).ok());
  auto all = s.await(urm.list());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].ledger_id, 3);
  EXPECT_EQ((*all)[1].ledger_id, 7);
}

TEST(UnderreplicationTest, WorkersClaimDistinctLedgersAndSkipLockedOnes) {
  Sessions s(test_name());
  UnderreplicationManager a(s.open(), "worker-a");
  UnderreplicationManager b(s.open(), "worker-b");
  ASSERT_TRUE(s.await(a.ensure_layout()).ok());
  for (int64_t id : {int64_t{1}, int64_t{2}, int64_t{70000}, int64_t{1} << 40}) ASSERT_TRUE(s.await(a.mark(id, {"x:1"})).ok());
  std::set<int64_t> claimed;
  for (int i = 0; i < 2; ++i) {
    for (auto* m : {&a, &b}) {
      auto c = s.await(m->claim());
      ASSERT_TRUE(c.ok()) << c.status().to_string();
      ASSERT_TRUE(c->has_value());
      EXPECT_TRUE(claimed.insert((*c)->ledger_id).second) << "claimed twice: " << (*c)->ledger_id;
    }
  }
  EXPECT_EQ(claimed, (std::set<int64_t>{1, 2, 70000, 1ll << 40}));
  EXPECT_FALSE(s.await(a.claim()).value().has_value());  // every one locked
  EXPECT_FALSE(s.await(b.claim()).value().has_value());
  // The lock records its holder.
  for (int64_t id : claimed) {
    auto owner = s.await(a.lock_owner(id)).value();
    ASSERT_TRUE(owner.has_value());
    EXPECT_EQ(*owner, a.holds(id) ? "worker-a" : "worker-b");
  }
  // A release makes the ledger claimable again; a completion removes it for good.
  int64_t held_by_a = *std::find_if(claimed.begin(), claimed.end(), [&](int64_t id) { return a.holds(id); });
  ASSERT_TRUE(s.await(a.release(held_by_a)).ok());
  auto again = s.await(b.claim()).value();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->ledger_id, held_by_a);
  ASSERT_TRUE(s.await(b.complete(held_by_a)).ok());
  EXPECT_FALSE(s.await(b.get(held_by_a)).value().has_value());
  EXPECT_FALSE(s.await(b.lock_owner(held_by_a)).value().has_value());
}

TEST(UnderreplicationTest, CompletionKeepsALedgerMarkedAgainMeanwhileAndPrunesEmptyDirs) {
  Sessions s(test_name());
  auto& store = s.open();
  UnderreplicationManager worker(store, "w");
  UnderreplicationManager auditor(s.open(), "auditor");
  ASSERT_TRUE(s.await(worker.ensure_layout()).ok());
  ASSERT_TRUE(s.await(auditor.mark(5, {"b1:1"})).ok());
  auto c = s.await(worker.claim()).value();
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(s.await(auditor.mark(5, {"b2:1"})).ok());  // another bookie lost meanwhile
  ASSERT_TRUE(s.await(worker.complete(5)).ok());
  auto still = s.await(worker.get(5)).value();
  ASSERT_TRUE(still.has_value());
  EXPECT_EQ(still->data.replicas.size(), 2u);
  EXPECT_FALSE(s.await(worker.lock_owner(5)).value().has_value());  // released all the same
  // Claimed again at the new version, completed: gone, and so are its four directories.
  ASSERT_TRUE(s.await(worker.claim()).value().has_value());
  ASSERT_TRUE(s.await(worker.complete(5)).ok());
  EXPECT_FALSE(s.await(worker.get(5)).value().has_value());
  EXPECT_TRUE(s.await(store.children(std::string(kMarkersRoot))).value().empty());
  EXPECT_FALSE(s.await(worker.complete(5)).ok());  // not held any more
}

TEST(UnderreplicationTest, ALockDiesWithItsWorkersSession) {
  Sessions s(test_name());
  auto& first = s.open();
  UnderreplicationManager a(first, "a");
  UnderreplicationManager b(s.open(), "b");
  ASSERT_TRUE(s.await(a.ensure_layout()).ok());
  ASSERT_TRUE(s.await(a.mark(9, {"gone:1"})).ok());
  ASSERT_TRUE(s.await(a.claim()).value().has_value());
  EXPECT_FALSE(s.await(b.claim()).value().has_value());
  EXPECT_TRUE(s.await(b.lock(9)).is(Errc::kBadVersion));
  ASSERT_TRUE(s.await(first.close()).ok());  // the worker's process died
  auto taken = s.await(b.claim()).value();
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->ledger_id, 9);
}

TEST(UnderreplicationTest, DisableNodeAndLostBookieRecoveryDelayNode) {
  Sessions s(test_name());
  auto& store = s.open();
  UnderreplicationManager urm(store, "w");
  ASSERT_TRUE(s.await(urm.ensure_layout()).ok());
  EXPECT_TRUE(s.await(urm.replication_enabled()).value());
  ASSERT_TRUE(s.await(urm.set_replication_enabled(false)).ok());
  EXPECT_TRUE(s.await(store.exists("/ledgers/underreplication/disable")).value());
  EXPECT_FALSE(s.await(urm.replication_enabled()).value());
  ASSERT_TRUE(s.await(urm.set_replication_enabled(true)).ok());
  EXPECT_TRUE(s.await(urm.replication_enabled()).value());

  EXPECT_FALSE(s.await(urm.lost_bookie_recovery_delay()).value().has_value());
  ASSERT_TRUE(s.await(urm.init_lost_bookie_recovery_delay(30)).ok());
  ASSERT_TRUE(s.await(urm.init_lost_bookie_recovery_delay(60)).ok());  // exists: kept
  EXPECT_EQ(s.await(urm.lost_bookie_recovery_delay()).value(), 30);
  ASSERT_TRUE(s.await(urm.set_lost_bookie_recovery_delay(5)).ok());
  auto raw = s.await(store.get("/ledgers/underreplication/lostBookieRecoveryDelay")).value();
  EXPECT_EQ(raw->value, "5");
}

TEST(UnderreplicationTest, TheLowestVoteIsTheAuditorAndTheNextTakesOver) {
  Sessions s(test_name());
  auto& first_store = s.open();
  auto& second_store = s.open();
  Auditor first(first_store, s.loop().executor(), "10.0.0.1:3181", AuditorOptions{});
  Auditor second(second_store, s.loop().executor(), "10.0.0.2:3181", AuditorOptions{});
  EXPECT_FALSE(s.await(current_auditor(first_store)).value().has_value());
  ASSERT_TRUE(s.await(first.start()).ok());
  ASSERT_TRUE(s.await(second.start()).ok());
  ASSERT_TRUE(s.loop().run_until([&] { return first.is_auditor(); }));
  EXPECT_FALSE(second.is_auditor());
  EXPECT_EQ(s.await(current_auditor(second_store)).value(), "10.0.0.1:3181");
  auto votes = s.await(first_store.children(std::string(kAuditorElectionPath))).value();
  ASSERT_EQ(votes.size(), 2u);
  EXPECT_TRUE(votes[0].starts_with("V_")) << votes[0];
  s.run(first.stop());
  ASSERT_TRUE(s.loop().run_until([&] { return second.is_auditor(); }));
  EXPECT_EQ(s.await(current_auditor(first_store)).value(), "10.0.0.2:3181");
  s.run(second.stop());
  EXPECT_FALSE(s.await(current_auditor(first_store)).value().has_value());
}

}  // namespace
}  // namespace magnetar::autorecovery
